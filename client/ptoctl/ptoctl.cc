// ptoctl: the command-line client of ptoserve.
//
//   ptoctl [--server=HOST:PORT | HOST:PORT] capabilities | health | tand |
//          txor | run JOB.json|PROGRAM.pto|- [--tile ...] [--trace=OUT.json]
//          [--ub-map] | fmt PROGRAM.pto|- |
//          stream JOBS.jsonl|- | list [SERVICE] | describe SYMBOL |
//          [call] SERVICE/METHOD -d JSON|@FILE|-
//
// As grpcurl: the address may come first, -plaintext is taken, -d is the
// request, -H 'NAME: VALUE' a header, and SERVICE/METHOD alone a call.
//
// See `ptoctl --help`, `ptoctl help COMMAND` and docs/CLI.md for the flags
// of each command.
#include <grpc/support/log.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "client/ptoctl/commands.h"
#include "client/ptoctl/connect.h"
#include "client/ptoctl/flags.h"
#include "client/ptoctl/job_commands.h"
#include "client/ptoctl/print.h"
#include "client/ptoctl/reflection.h"
#include "client/ptoctl/server_commands.h"
#include "common/cli_help.h"
#include "core/ops.h"

namespace ptoserve {
namespace ptoctl {
namespace {

// Whether `arg`, where a command is expected, is a server's address as
// grpcurl takes it first (HOST:PORT, or a gRPC name): commands hold no ':'.
bool LooksLikeAddress(absl::string_view arg) {
  const size_t colon = arg.rfind(':');
  if (colon == absl::string_view::npos) return false;
  int port = 0;
  return absl::SimpleAtoi(arg.substr(colon + 1), &port) ||
         absl::StartsWith(arg, "dns:") || absl::StartsWith(arg, "unix:") ||
         absl::StartsWith(arg, "ipv4:") || absl::StartsWith(arg, "ipv6:");
}

// grpcurl's forms: the address before the verb (taken as --server, which
// `server_given` says is on the command line too), a method's name alone
// for call. An error, or empty.
std::string GrpcurlForms(std::vector<char*>* args, bool server_given) {
  if (args->size() >= 2 && LooksLikeAddress((*args)[1])) {
    if (server_given) {
      return absl::StrCat("the server is given twice: --server and ",
                          (*args)[1]);
    }
    std::string error;
    absl::FindCommandLineFlag("server")->ParseFrom((*args)[1], &error);
    args->erase(args->begin() + 1);
  }
  static char kCall[] = "call";
  if (args->size() >= 2 && absl::StrContains((*args)[1], '/')) {
    args->insert(args->begin() + 1, kCall);
  }
  return "";
}

// A flag given with a command that does not take it, or a value no flag's
// type checks. An error, or empty.
std::string MisusedFlag(const std::string& command, bool tiles, bool ub_map) {
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "dec" && format != "hex") {
    return absl::StrCat("--format=", format, " is not dec or hex");
  }
  if (tiles && command != "run") return "--tile is for run only";
  if (!absl::GetFlag(FLAGS_trace).empty() && command != "run") {
    return "--trace is for run only";
  }
  if (ub_map && command != "run") return "--ub-map is for run only";
  if (ub_map && JsonOutput()) {
    return "--ub-map prints text, not JSON: with --json the result's events "
           "carry the operands";
  }
  if (!absl::GetFlag(FLAGS_d).empty() && command != "call") {
    return "-d is for call only";
  }
  return "";
}

// Checks the flags that only some commands take, and runs the command.
// `server_given`: --server is on the command line.
int Main(std::vector<char*> args, const std::vector<std::string>& tiles,
         bool ub_map, bool server_given) {
  if (const std::string error = GrpcurlForms(&args, server_given);
      !error.empty()) {
    return UsageError(error);
  }
  if (args.size() < 2) return UsageError("no command given");
  const std::string command = args[1];
  const size_t extra = args.size() - 2;
  if (const std::string error = MisusedFlag(command, !tiles.empty(), ub_map);
      !error.empty()) {
    return UsageError(error);
  }
  if (command == "list") {
    if (extra > 1) return UsageError("list takes at most one SERVICE");
    return List(extra == 1 ? args[2] : "");
  }
  if (command == "describe" || command == "call") {
    if (extra != 1) {
      return UsageError(command == "call" ? "call takes one SERVICE/METHOD"
                                          : "describe takes one SYMBOL");
    }
    return command == "call" ? CallMethod(args[2]) : Describe(args[2]);
  }
  if (command == "unregister") {
    if (extra != 1) return UsageError("unregister takes one region NAME");
    return Unregister(args[2]);
  }
  if (command == "run" || command == "fmt" || command == "stream") {
    if (extra != 1) {
      return UsageError(
          absl::StrCat(command, " takes one FILE (- for standard input)"));
    }
    if (command == "run") return RunJob(args[2], tiles, ub_map);
    if (command == "fmt") return Format(args[2]);
    return StreamJobs(args[2]);
  }
  if (extra != 0) {
    return UsageError(absl::StrCat("unexpected argument: ", args[2]));
  }
  const OpInfo* op = FindOpByMnemonic(command);
  if (!absl::GetFlag(FLAGS_out).empty() && op == nullptr) {
    return OutIsForInstructionsAndRun();
  }
  if (command == "capabilities") return Capabilities();
  if (command == "health") return Health();
  if (command == "regions") return Regions();
  if (op != nullptr) return Instruction(*op);
  const std::string near = NearestName(command, CommandNames());
  return UsageError(absl::StrCat(
      "unknown command: ", command,
      near.empty() ? "" : absl::StrCat("; did you mean ", near, "?")));
}

}  // namespace
}  // namespace ptoctl
}  // namespace ptoserve

int main(int argc, char** argv) {
  // gRPC logs failed handshakes on stderr as well; ptoctl reports them.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) {
    gpr_set_log_function([](gpr_log_func_args*) {});
  }
  ptoserve::ptoctl::HandleHelp(argc, argv);
  ptoserve::HandleHelpAndVersion(argc, argv, "ptoctl",
                                 ptoserve::ptoctl::Usage(),
                                 "client/ptoctl/flags.cc");
  absl::SetProgramUsageMessage("the command-line client of ptoserve");
  // --tile may repeat, which Abseil flags do not allow, and --ub-map has a
  // hyphen, which Abseil's flag names do not: take those first.
  // So may -H (grpcurl's header), which repeats too.
  std::vector<std::string> tiles, headers;
  bool ub_map = false, server_given = false;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      for (; i < argc; ++i) rest.push_back(argv[i]);
      break;
    }
    if (arg == "--ub-map") {
      ub_map = true;
    } else if (arg == "--tile" && i + 1 < argc) {
      tiles.push_back(argv[++i]);
    } else if (absl::StartsWith(arg, "--tile=")) {
      tiles.push_back(std::string(absl::StripPrefix(arg, "--tile=")));
    } else if ((arg == "-H" || arg == "--H") && i + 1 < argc) {
      headers.push_back(argv[++i]);
    } else if (absl::StartsWith(arg, "-H=") || absl::StartsWith(arg, "--H=")) {
      headers.push_back(arg.substr(arg.find('=') + 1));
    } else {
      server_given = server_given || absl::StartsWith(arg, "--server") ||
                     absl::StartsWith(arg, "-server");
      rest.push_back(argv[i]);
    }
  }
  ptoserve::ptoctl::SetHeaders(std::move(headers));
  rest.push_back(nullptr);
  const int count = static_cast<int>(rest.size()) - 1;
  const bool json = ptoserve::FlagGiven(count, rest.data(), "json");
  ptoserve::CheckFlagsOrExit(count, rest.data(), "ptoctl",
                             {"client/ptoctl/flags.cc"},
                             [json](const std::string& message) {
                               ptoserve::ptoctl::PrintUsageError(message, json);
                             });
  return ptoserve::ptoctl::Main(
      absl::ParseCommandLine(static_cast<int>(rest.size()) - 1, rest.data()),
      tiles, ub_map, server_given);
}
