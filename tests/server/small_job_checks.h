// The small-job path held to the generic one, for the differential tests
// and the job fuzzer: a job it reads must be the job the generic path
// makes of the same bytes, and a reply it writes must be the bytes the
// generic message serializes to.
#ifndef PTOSERVE_TESTS_SERVER_SMALL_JOB_CHECKS_H_
#define PTOSERVE_TESTS_SERVER_SMALL_JOB_CHECKS_H_

#include <string>

#include "absl/status/status.h"
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

// OK when two specs are the same job, field by field (tile elements by
// their bytes); else the first field that differs, both ways.
absl::Status SameJobSpec(const JobSpec& expected, const JobSpec& actual);

// The reply ResultWriter writes for `outcome`.
std::string WrittenResult(absl::string_view id, const JobOutcome& outcome,
                          const ResultEncodings& encodings);

// `bytes` with the one-byte varint at `at` (a tag, a length) written in
// `width` bytes instead, the same value padded with continuation bytes:
// protobuf reads a tag or a length of at most 5 bytes.
std::string PaddedVarint(absl::string_view bytes, size_t at, int width);

// `message` serialized deterministically (map entries in key order): the
// same message, the same bytes, in every process (a protobuf map's order
// is seeded per process).
std::string DeterministicBytes(const google::protobuf::MessageLite& message);

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_SERVER_SMALL_JOB_CHECKS_H_
