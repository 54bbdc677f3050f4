#include "client/ptoctl/commands.h"

#include <cstdlib>
#include <iostream>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/ptoctl/print.h"
#include "common/cli_help.h"

namespace ptoserve {
namespace ptoctl {

namespace {

constexpr char kHead[] =
    "ptoctl: the command-line client of ptoserve.\n"
    "\n"
    "Usage: ptoctl [--server=HOST:PORT | HOST:PORT] [--json] COMMAND [flags]\n";

constexpr char kTail[] =
    "FILE may be - for standard input. The token may also come from\n"
    "$PTOSERVE_TOKEN. A server error exits 1, a usage error 2.\n"
    "As grpcurl: `ptoctl -plaintext 127.0.0.1:50051 list`, the address\n"
    "first; -plaintext (ptoctl's default); -d for call's request;\n"
    "-H 'NAME: VALUE' a header; SERVICE/METHOD alone calls it.\n"
    "`ptoctl help COMMAND` (or COMMAND --help): one command and its flags.\n";

// Every command takes these.
const std::vector<std::string>& EveryCommandsFlags() {
  static const auto* const kFlags = new std::vector<std::string>{
      "server",  "plaintext",       "tls",   "tls_ca",     "tls_cert",
      "tls_key", "tls_server_name", "token", "token_file", "timeout",
      "json"};
  return *kFlags;
}

constexpr OwnOption kHeader = {
    "-H 'NAME: VALUE'",
    "A header (gRPC metadata) sent with every call, as grpcurl's -H; "
    "repeatable. 'authorization: Bearer TOKEN' is the token."};
constexpr OwnOption kTile = {
    "--tile=NAME=DTYPE:RxC[:valid=RxC][:V]",
    "run with assembly: an input tile of the program; V as for --src0 "
    "(without V the tile starts zero-filled). Repeat for each tile."};
constexpr OwnOption kUbMap = {
    "--ub-map",
    "run: after the result, where each instruction's operands lay in the "
    "target's unified buffer ([0x1000, 0x1400)) and a table of the tiles by "
    "address; one line instead when the events carry no operands (a host "
    "job in auto mode has no buffer model)."};

// The server and its regions.
std::vector<CommandHelp> ServerCommands() {
  return {
      {{"capabilities"},
       "  capabilities     targets, element types, limits and version\n",
       {},
       {}},
      {{"health"},
       "  health           the gRPC health status (exit 0 when SERVING)\n",
       {"service"},
       {}},
      {{"regions"},
       "  regions          the shared-memory regions registered\n",
       {},
       {}},
      {{"unregister"},
       "  unregister NAME  unregisters a shared-memory region (e.g. one\n"
       "                   registered to outlive its connection)\n",
       {},
       {}},
  };
}

// Jobs: instructions, programs, streams.
std::vector<CommandHelp> JobCommands() {
  return {
      {{"tand", "txor"},
       "  tand, txor       --dtype=int16 --shape=16x16 [--valid=RxC] "
       "--src0=V\n"
       "                   --src1=V [--tmp=V] [--target=a2a3] [--out=FILE]\n"
       "                   [--shm]: tiles through shared memory\n"
       "                   V: one value for all elements, values one per\n"
       "                   element (1,2,0xff), or @FILE of raw bytes\n",
       {"dtype", "shape", "valid", "src0", "src1", "tmp", "target", "out",
        "shm", "format"},
       {}},
      {{"tor", "tnot"},
       "  tor, tnot        as tand, on the host target only (beyond the\n"
       "                   seeds); tnot takes --src0 alone: dst = ~src0\n",
       {"dtype", "shape", "valid", "src0", "src1", "target", "out", "shm",
        "format"},
       {}},
      {{"run"},
       "  run FILE         send a job: proto3 JSON (FILE.json, or text that\n"
       "                   starts with '{'), or a PTO assembly program with "
       "its\n"
       "                   input tiles (--tile, repeatable)\n"
       "                   [--trace=OUT.json]: also write the events as a\n"
       "                   Chrome trace (Perfetto, chrome://tracing)\n"
       "                   [--ub-map]: then print the unified buffer's "
       "layout\n",
       {"target", "out", "trace", "format"},
       {kTile, kUbMap}},
      {{"fmt"},
       "  fmt FILE         print a program in canonical AS level 2 form (no\n"
       "                   server)\n",
       {},
       {}},
      {{"stream"},
       "  stream FILE      send one JSON job per line over one stream; "
       "results\n"
       "                   print as jobs finish (a job without an id gets "
       "its\n"
       "                   line number)\n",
       {"target", "format"},
       {}},
  };
}

// Through server reflection, as grpcurl.
std::vector<CommandHelp> ReflectionCommands() {
  return {
      {{"list"},
       "  list [SERVICE]   the services the server lists, or SERVICE's "
       "methods\n"
       "                   (through server reflection, as grpcurl list)\n",
       {},
       {}},
      {{"describe"},
       "  describe SYMBOL  a service, method, message, field or enum with "
       "its\n"
       "                   comments (as grpcurl describe)\n",
       {},
       {}},
      {{"call"},
       "  [call] SERVICE/METHOD -d JSON|@FILE|-\n"
       "                   call any unary method the server lists, the "
       "request\n"
       "                   and response in proto3 JSON (as grpcurl -d)\n",
       {"d"},
       {}},

  };
}

}  // namespace

const std::vector<CommandHelp>& Commands() {
  static const auto* const kCommands = [] {
    auto* all = new std::vector<CommandHelp>(ServerCommands());
    for (auto part : {JobCommands(), ReflectionCommands()}) {
      all->insert(all->end(), part.begin(), part.end());
    }
    return all;
  }();
  return *kCommands;
}

const CommandHelp* FindCommand(absl::string_view name) {
  for (const CommandHelp& command : Commands()) {
    for (const std::string& n : command.names) {
      if (n == name) return &command;
    }
  }
  return nullptr;
}

std::vector<std::string> CommandNames() {
  std::vector<std::string> names = {"help"};
  for (const CommandHelp& command : Commands()) {
    names.insert(names.end(), command.names.begin(), command.names.end());
  }
  return names;
}

std::string Usage() {
  std::string out = kHead;
  for (const CommandHelp& command : Commands()) {
    absl::StrAppend(&out, command.synopsis);
  }
  absl::StrAppend(&out, kTail, "\nFlags of every command:\n");
  for (const std::string& flag : EveryCommandsFlags()) {
    absl::StrAppend(&out, FlagHelp(flag));
  }
  absl::StrAppend(&out, HelpEntry(kHeader.head, kHeader.help));
  // Each flag once, under the first command that takes it.
  std::vector<std::string> listed = EveryCommandsFlags();
  for (const CommandHelp& command : Commands()) {
    std::string entries;
    for (const std::string& flag : command.flags) {
      if (absl::c_linear_search(listed, flag)) continue;
      listed.push_back(flag);
      absl::StrAppend(&entries, FlagHelp(flag));
    }
    for (const OwnOption& option : command.own) {
      absl::StrAppend(&entries, HelpEntry(option.head, option.help));
    }
    if (entries.empty()) continue;
    absl::StrAppend(&out, "\n", absl::StrJoin(command.names, ", "), ":\n",
                    entries);
  }
  return absl::StrCat(out,
                      "\n--helpfull lists them in Abseil's format, with its "
                      "flag-file flags (--flagfile, --fromenv, ...).\n");
}

std::string HelpOf(const CommandHelp& command, absl::string_view name) {
  std::string out = absl::StrCat("Usage: ptoctl [--server=HOST:PORT] ", name,
                                 " [flags]\n", command.synopsis);
  if (!command.flags.empty() || !command.own.empty()) {
    absl::StrAppend(&out, "\nFlags:\n");
  }
  for (const std::string& flag : command.flags) {
    absl::StrAppend(&out, FlagHelp(flag));
  }
  for (const OwnOption& option : command.own) {
    absl::StrAppend(&out, HelpEntry(option.head, option.help));
  }
  return absl::StrCat(out,
                      "\nThe flags every command takes (the server, TLS, the "
                      "token,\n--timeout, --json, -H): ptoctl --help.\n");
}

void HandleHelp(int argc, char** argv) {
  bool asked = false;
  std::string command;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--help" || arg == "-h" || arg == "--helpshort") {
      asked = true;
    } else if (arg == "help" && command.empty()) {
      asked = true;
      command = "help";
    } else if (!absl::StartsWith(arg, "-") &&
               (command.empty() || command == "help") &&
               (FindCommand(arg) != nullptr || command == "help")) {
      command = std::string(arg);
    }
  }
  if (!asked) return;
  if (command.empty() || command == "help") {
    std::cout << Usage();
    std::exit(0);
  }
  const CommandHelp* found = FindCommand(command);
  if (found == nullptr) {
    std::exit(UsageError(absl::StrCat("help: no command ", command,
                                      "; the commands are ",
                                      absl::StrJoin(CommandNames(), ", "))));
  }
  std::cout << HelpOf(*found, command);
  std::exit(0);
}

}  // namespace ptoctl
}  // namespace ptoserve
