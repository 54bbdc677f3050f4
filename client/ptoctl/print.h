// What ptoctl prints: results (tiles as grids, or files under --out, and
// their events), errors and enum values; proto3 JSON instead with --json.
#ifndef PTOSERVE_CLIENT_PTOCTL_PRINT_H_
#define PTOSERVE_CLIENT_PTOCTL_PRINT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "proto/words.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {
namespace ptoctl {

// Whether --json asks for proto3 JSON on stdout.
bool JsonOutput();

// `message` as proto3 JSON, every field printed: indented, or on one line
// that ends in a newline.
std::string ToJson(const google::protobuf::Message& message, bool pretty);

// A failed call: "ptoctl: CODE: message" on stderr, or with --json
// {"code": "CODE", "message": "..."} on stdout. Returns 1, the exit status.
int Fail(const absl::Status& status);

// "ptoctl: message" and a pointer to --help on stderr. Returns 2, the exit
// status of a usage error.
int UsageError(absl::string_view message);
// A usage error as UsageError prints it: with `json`, as a JobStatus
// (INVALID_ARGUMENT) on stdout, else with the --help hint on stderr.
void PrintUsageError(absl::string_view message, bool json);

// Enum values as printed: proto/words.h.

// "NAME: RxC DTYPE", then the valid region as a right-aligned grid, in
// decimal or, with --format=hex, the elements' bits.
void PrintTile(const std::string& name, const v1::Tile& tile);

// Writes `bytes` to `path` for --`flag`; an error names the flag.
absl::Status WriteFile(absl::string_view flag, const std::string& path,
                       const std::string& bytes);

// Prints `result`'s tiles named in `order` and its events, or writes the
// tiles where --out says: a file for `single` (tand/txor), else a directory.
// Returns the exit status.
int PrintResult(const v1::JobResult& result,
                const std::vector<std::string>& order,
                const std::string& single = "");

}  // namespace ptoctl
}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_PTOCTL_PRINT_H_
