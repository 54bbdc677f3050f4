// Random TAND/TXOR jobs for the load and fault tests, each with the result a
// scalar loop computes for it, and broken jobs the server must refuse.
#ifndef PTOSERVE_TESTS_INTEGRATION_RANDOM_JOBS_H_
#define PTOSERVE_TESTS_INTEGRATION_RANDOM_JOBS_H_

#include <map>
#include <random>
#include <string>

#include "ptoserve/v1/service.pb.h"

namespace ptoserve {

// A job and the output tiles it must produce.
struct ExpectedJob {
  v1::Job job;
  // Output tile name -> its whole physical tile as raw bytes (zeros outside
  // the valid region: the server allocates every dst).
  std::map<std::string, std::string> outputs;
};

// One or two instructions (c = a op b, then maybe d = c op a) on a random
// target, element type, shape and valid region; tiles hold random data.
// `max_rows` bounds the tiles' rows (columns are 32 to 128 bytes).
ExpectedJob RandomValidJob(std::mt19937* rng, uint32_t max_rows = 8);

// A job with one random defect that the server answers INVALID_ARGUMENT.
v1::Job RandomInvalidJob(std::mt19937* rng);

// Empty if `result` holds exactly the outputs `expected` names, with the
// right bytes and one event per instruction; otherwise what differs.
std::string CheckResult(const ExpectedJob& expected,
                        const v1::JobResult& result);

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_INTEGRATION_RANDOM_JOBS_H_
