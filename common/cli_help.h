// --help and --version for ptoserve's command-line programs.
//
// Abseil's own --help in Debian's Abseil lists only flags defined in a file
// named after the program and exits 1; --version prints the build mode and
// no version. Programs call HandleHelpAndVersion before ParseCommandLine.
#ifndef PTOSERVE_COMMON_CLI_HELP_H_
#define PTOSERVE_COMMON_CLI_HELP_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ptoserve {

// Flags listed together in --help under a title, in the order given.
struct FlagGroup {
  std::string title;
  std::vector<std::string> flags;  // names, without "--"
};

// Every flag defined in a source file whose path ends in `flag_file` (e.g.
// "server/flags.cc"): "  --name=DEFAULT" and its help, indented and
// wrapped at 80 columns. With `groups`, each group's under its title
// first, then those of no group, sorted, under `rest_title` (none when it
// is empty); without, all of them sorted by name.
std::string FlagsHelp(absl::string_view flag_file,
                      const std::vector<FlagGroup>& groups = {},
                      absl::string_view rest_title = "Other flags");

// One entry of a flag list: "  HEAD" and `help` below it, indented and
// wrapped at 80 columns (for what is not an Abseil flag: ptoctl's --tile).
std::string HelpEntry(absl::string_view head, absl::string_view help);
// The entry of the flag `name`: "  --name=DEFAULT" and its help; empty if
// no such flag is defined.
std::string FlagHelp(absl::string_view name);

// If argv holds --help (or -h, or --helpshort) or --version, prints
// `usage` and FlagsHelp(flag_file, groups), or "<program> <version>", to
// stdout and exits 0. Otherwise returns.
void HandleHelpAndVersion(int argc, char** argv, absl::string_view program,
                          absl::string_view usage, absl::string_view flag_file,
                          const std::vector<FlagGroup>& groups = {});

// The name among `names` nearest to `typed` (at most 2 edits away, or one
// that starts with it), or "" if none is near: for "did you mean".
std::string NearestName(absl::string_view typed,
                        const std::vector<std::string>& names);

// Checks every --flag of argv (up to "--") before Abseil parses them, as a
// usage error should be: a flag no source file of the program defines
// ("unknown flag --dtyp; did you mean --dtype?") or a value its flag cannot
// take ("--timeout=abc: ..."). Prints "<program>: " and the error, and
// "(see <program> --help)", to stderr and exits 2; otherwise returns.
// Flags defined in files ending in one of `flag_files` are suggested.
// `report`, when given, prints the error instead (ptoctl --json prints it
// as JSON on stdout).
void CheckFlagsOrExit(
    int argc, char** argv, absl::string_view program,
    const std::vector<std::string>& flag_files,
    const std::function<void(const std::string&)>& report = nullptr);

// Whether argv (up to "--") sets the boolean flag --`name` true.
bool FlagGiven(int argc, char** argv, absl::string_view name);

}  // namespace ptoserve

#endif  // PTOSERVE_COMMON_CLI_HELP_H_
