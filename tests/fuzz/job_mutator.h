// Structure-aware mutation of Jobs for job_fuzzer. Mutating a Job's
// protobuf bytes mostly makes inputs that do not parse or decode; these
// mutations change one thing of a parsed Job at a time (a shape, a dtype, an
// operand, an event, the mode, an encoding, a line of assembly, ...) and
// keep each tile's elements the size its shape needs, so that most mutants
// get as far as execution. One mutant in five is hostile instead: a shape
// whose size overflows, many tiles declared without elements, an outputs
// list or a wait list at and past the limits, names at and past 256 bytes,
// assembly with huge lines, many lines or many statements.
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
