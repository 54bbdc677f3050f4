// The shared-memory mode (--shm): every message in flight sends tiles of
// its own from one registered region, and the dst written there is checked.
#ifndef PTOSERVE_BENCH_SHM_MODE_H_
#define PTOSERVE_BENCH_SHM_MODE_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "bench/settings.h"
#include "bench/workload.h"
#include "client/options.h"
#include "ptoserve/v1/tile.pb.h"

namespace ptoserve {
namespace ptobench {

// Connects for the SharedMemory service as `connection` says, and replaces
// `workload`'s unit with units enough for `most` unary calls or streams at
// once in settings.mode: a unit per call, or per message a stream keeps in
// flight. Each job of a unit has its src0, src1 and dst in one region.
absl::Status UseSharedMemory(const Settings& settings, int most,
                             const ConnectionOptions& connection,
                             Workload* workload);

// Before `unit` goes out, picks the jobs whose answers will be compared
// (each job's first, then one in shm_check_every) and overwrites their dst
// with bytes that differ from the expected ones in every position, so that
// only the server's write makes them right.
void ArmChecks(const Workload& workload, Unit* unit);

// What is wrong with `dst`, the result tile of `unit`'s job `k` (unit
// null: a result that names no message), or "": it must name the job's
// dst slice and carry no elements, and a job picked by ArmChecks must
// find the expected elements in the region.
std::string CheckSharedDst(const Workload& workload, const v1::Tile& dst,
                           const Unit* unit, size_t k);

}  // namespace ptobench
}  // namespace ptoserve

#endif  // PTOSERVE_BENCH_SHM_MODE_H_
