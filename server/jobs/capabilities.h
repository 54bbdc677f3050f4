// GetCapabilities' answer: the targets an engine runs, their rules, and
// the limits a server holds its calls to. Fixed for a server's lifetime.
#ifndef PTOSERVE_SERVER_JOBS_CAPABILITIES_H_
#define PTOSERVE_SERVER_JOBS_CAPABILITIES_H_

#include "core/engine.h"
#include "ptoserve/v1/service.pb.h"
#include "server/exec/limits.h"
#include "server/exec/scheduler.h"
#include "server/shm/shared_memory.h"

namespace ptoserve {

v1::Capabilities CapabilitiesOf(const Engine& engine,
                                const SchedulerOptions& scheduling,
                                const ServiceLimits& limits,
                                const SharedMemoryOptions& shared_memory);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_JOBS_CAPABILITIES_H_
