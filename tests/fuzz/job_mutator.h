// Structure-aware mutation of Jobs for job_fuzzer. Mutating a Job's
// protobuf bytes mostly makes inputs that do not parse or decode; these
// mutations change one thing of a parsed Job at a time (a shape, a dtype, an
// operand, an event, the mode, ...) and keep each tile's elements the size
// its shape needs, so that most mutants get as far as execution.
#ifndef PTOSERVE_TESTS_FUZZ_JOB_MUTATOR_H_
#define PTOSERVE_TESTS_FUZZ_JOB_MUTATOR_H_

#include <random>

#include "ptoserve/v1/job.pb.h"

namespace ptoserve {
namespace fuzz {

// Changes `job` in one way that `rng` chooses.
void MutateJob(std::mt19937* rng, v1::Job* job);

}  // namespace fuzz
}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_FUZZ_JOB_MUTATOR_H_
