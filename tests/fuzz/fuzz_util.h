// Helpers shared by the fuzz targets' bodies (fuzz_targets.h): the engine
// they run on, ways to run a prepared job, and comparisons that name the
// first difference they find.
#ifndef PTOSERVE_TESTS_FUZZ_FUZZ_UTIL_H_
#define PTOSERVE_TESTS_FUZZ_FUZZ_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "core/engine.h"
#include "proto/wire.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {
namespace fuzz {

// An engine with limits small enough that any input runs in milliseconds:
// 64 KiB tiles, 64 tiles and 64 instructions a job. Host by default.
const Engine& SmallEngine();

// Runs every instruction of `job` once, in program order, each alone.
void RunInOrder(const Engine& engine, PreparedJob* job);

// Runs every instruction of `job` once in an order other than program
// order that its dependencies allow: the last ready instruction first, in
// one batch with every other ready one that has its BatchKey, as the
// scheduler may. INTERNAL if no instruction is ever ready (a cycle).
absl::Status RunReordered(const Engine& engine, PreparedJob* job);

// OK if both outcomes hold the same tiles (names, shapes, encodings,
// bytes) and events (ids, waits, traces, notes; times and batches aside);
// else INTERNAL naming the first difference.
absl::Status SameOutcome(const JobOutcome& expected, const JobOutcome& actual);

}  // namespace fuzz
}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_FUZZ_FUZZ_UTIL_H_
