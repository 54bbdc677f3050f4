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

// ptoctl's own errors carry no gRPC code: "ptoctl: message" on stderr, or
// with --json {"error": "message"} on stdout; the exit status tells them
// apart from a server's.
//
// A mistake on the command line: the message and a pointer to --help.
// Returns 2, the exit status of a usage error.
int UsageError(absl::string_view message);
// A mistake in a file or input ptoctl reads ("job.json:3:12: ..."), which
// names it: a usage error without the pointer to --help. Returns 2.
int InputError(absl::string_view message);
// What ptoctl itself failed to do once the server answered (a file it
// cannot write). Returns 1.
int LocalError(absl::string_view message);
// A usage error as UsageError prints it: with `json`, as {"error": ...} on
// stdout, else with the --help hint on stderr.
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
