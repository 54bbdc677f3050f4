// ptoctl's commands as --help and `ptoctl help COMMAND` describe them: one
// table, from which the whole usage and each command's help are written.
#ifndef PTOSERVE_CLIENT_PTOCTL_COMMANDS_H_
#define PTOSERVE_CLIENT_PTOCTL_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ptoserve {
namespace ptoctl {

// Options that are not Abseil flags (they repeat, or their names have a
// hyphen), with their help: --tile, --ub-map, -H.
struct OwnOption {
  const char* head;  // "--tile=NAME=DTYPE:RxC[:valid=RxC][:V]"
  const char* help;
};

struct CommandHelp {
  std::vector<std::string> names;  // {"tand", "txor"}: one row of the usage
  const char* synopsis;            // the usage's lines, after the names
  std::vector<std::string> flags;  // the Abseil flags it takes
  std::vector<OwnOption> own;      // and the options of ptoctl's own
};

// Every command, in the usage's order.
const std::vector<CommandHelp>& Commands();
// The row of `name`, or nullptr.
const CommandHelp* FindCommand(absl::string_view name);
// Every command's names, for "did you mean".
std::vector<std::string> CommandNames();

// `ptoctl --help`: the usage, the flags every command takes, then each
// command's own.
std::string Usage();
// `ptoctl help NAME`, `ptoctl NAME --help`: the usage of `command` (NAME's
// row), its flags, and where the flags every command takes are.
std::string HelpOf(const CommandHelp& command, absl::string_view name);

// If argv (up to "--") asks for help: `help [COMMAND]`, or --help, -h or
// --helpshort, with a command or without, prints it to stdout and exits 0
// (an unknown COMMAND: a usage error, exit 2). Otherwise returns.
void HandleHelp(int argc, char** argv);

}  // namespace ptoctl
}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_PTOCTL_COMMANDS_H_
