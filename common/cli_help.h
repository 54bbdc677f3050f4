// --help and --version for ptoserve's command-line programs.
//
// Abseil's own --help in Debian's Abseil lists only flags defined in a file
// named after the program and exits 1; --version prints the build mode and
// no version. Programs call HandleHelpAndVersion before ParseCommandLine.
#ifndef PTOSERVE_COMMON_CLI_HELP_H_
#define PTOSERVE_COMMON_CLI_HELP_H_

#include <string>

#include "absl/strings/string_view.h"

namespace ptoserve {

// Every flag defined in a source file whose path ends in `flag_file` (e.g.
// "server/main.cc"), sorted by name: "  --name=DEFAULT" and its help,
// indented and wrapped at 80 columns.
std::string FlagsHelp(absl::string_view flag_file);

// If argv holds --help (or -h, or --helpshort) or --version, prints
// `usage` and FlagsHelp(flag_file), or "<program> <version>", to stdout and
// exits 0. Otherwise returns.
void HandleHelpAndVersion(int argc, char** argv, absl::string_view program,
                          absl::string_view usage, absl::string_view flag_file);

}  // namespace ptoserve

#endif  // PTOSERVE_COMMON_CLI_HELP_H_
