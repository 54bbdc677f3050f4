// Jobs as ptoctl reads them from files: proto3 JSON, its errors placed at
// line:column, told apart from assembly, and --target applied.
#ifndef PTOSERVE_CLIENT_PTOCTL_JOBS_H_
#define PTOSERVE_CLIENT_PTOCTL_JOBS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {
namespace ptoctl {

// How messages name the input `path`: "<stdin>" for "-".
std::string InputName(const std::string& path);

// The job in `text`, line `first_line` of file `where`; errors say
// "where:line:column: what".
absl::StatusOr<v1::Job> ParseJsonJob(absl::string_view text,
                                     absl::string_view where,
                                     int first_line = 1);

// A file is JSON if it is named *.json, assembly if *.pto; otherwise (and
// for standard input) JSON if its first non-blank character is '{'.
bool LooksLikeJson(const std::string& path, absl::string_view text);

// --target for a job that leaves its target unset; a job that names
// another target is a usage error.
absl::Status ApplyTarget(v1::Target target, absl::string_view where,
                         v1::Job* job);

}  // namespace ptoctl
}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_PTOCTL_JOBS_H_
