// The gauges that read the jobs layer's state at each scrape: the
// scheduler's queue and clients, the memory budget and its shares, the
// shared-memory regions. docs/METRICS.md says what each one means.
#ifndef PTOSERVE_SERVER_JOBS_GAUGES_H_
#define PTOSERVE_SERVER_JOBS_GAUGES_H_

#include "server/exec/memory_budget.h"
#include "server/exec/scheduler.h"
#include "server/metrics/metrics.h"
#include "server/shm/shared_memory.h"

namespace ptoserve {

// Each adds its gauges to `registry`.
// REQUIRES: what they read outlives every later scrape of the registry.
void AddSchedulerGauges(const Scheduler* scheduler, MetricsRegistry* registry);
void AddMemoryBudgetGauges(const MemoryBudget* budget,
                           MetricsRegistry* registry);
void AddSharedMemoryGauges(const SharedMemoryRegistry* shared,
                           MetricsRegistry* registry);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_JOBS_GAUGES_H_
