// The small-job path held to the generic one, for the differential tests
// and the job fuzzer: a job it reads must be the job the generic path
// makes of the same bytes, and a reply it writes must be the bytes the
// generic message serializes to.
#ifndef PTOSERVE_TESTS_SERVER_SMALL_JOB_CHECKS_H_
#define PTOSERVE_TESTS_SERVER_SMALL_JOB_CHECKS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "core/job.h"
#include "proto/codec.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {

// Empty when ReadSmallJob declines `bytes`, or reads them as the generic
// path does (CheckJobWire passes them, protobuf parses them, and ToJobSpec
// makes an equal spec with the same id, priority and timeout); otherwise
// what differs.
std::string SmallJobDiffers(absl::string_view bytes,
                            const EngineLimits& limits);

// What differs between two specs, field by field; empty when nothing.
std::string SpecDiff(const JobSpec& a, const JobSpec& b);

// The reply ResultWriter writes for `outcome`.
std::string WrittenResult(absl::string_view id, const JobOutcome& outcome,
                          const ResultEncodings& encodings);

// `result` serialized deterministically (map entries in key order).
std::string DeterministicBytes(const v1::JobResult& result);

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_SERVER_SMALL_JOB_CHECKS_H_
