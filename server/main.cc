// ptoserve: the gRPC server that executes PTO tile instructions. Its
// flags are server/flags.cc's.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/cli_help.h"
#include "core/ops.h"
#include "core/types.h"
#include "core/version.h"
#include "server/flags.h"
#include "server/log/log.h"
#include "server/process_setup.h"
#include "server/server.h"
#include "server/transport/grpc_server.h"

namespace ptoserve {
namespace {

// Exit status 2 for flags that cannot work, 1 for an address that cannot be
// listened on, 0 after a clean shutdown.
int Run() {
  if (std::vector<std::string> errors = FlagErrors(); !errors.empty()) {
    for (const std::string& e : errors) std::cerr << "ptoserve: " << e << "\n";
    return 2;
  }
  NameSettingsByFlags();
  const ServerOptions options = OptionsFromFlags();
  Log::Get().Configure(LogOptionsFromFlags());
  LogGrpcThroughServerLog();
  const std::string open_files = RaiseOpenFileLimit();
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
  if (!server.ok()) {
    std::cerr << "ptoserve: " << server.status().message() << "\n";
    return server.status().code() == absl::StatusCode::kUnavailable ? 1 : 2;
  }
  Log& log = Log::Get();
  log.Say(LogLevel::kInfo, "start",
          absl::StrCat("ptoserve ", kVersion, " listening on ",
                       (*server)->address(), " (default target ",
                       TargetName(options.engine.default_target), ")"));
  if (!(*server)->metrics_url().empty()) {
    log.Say(LogLevel::kInfo, "start",
            absl::StrCat("ptoserve metrics on ", (*server)->metrics_url()));
  }
  if (!(*server)->http_url().empty()) {
    log.Say(LogLevel::kInfo, "start",
            absl::StrCat("ptoserve HTTP/JSON API on ", (*server)->http_url()));
  }
  log.Say(LogLevel::kInfo, "start",
          absl::StrCat(
              "ptoserve: open files limit ", open_files, ", memory budget ",
              (*server)->memory_budget_bytes() >> 20, " MiB, shared memory ",
              (*server)->shared_memory() ? "on" : "off"));
  const ShutdownTimes shutdown = ShutdownFromFlags();
  (*server)->ServeUntilSignalled(shutdown.grace, shutdown.lame_duck,
                                 shutdown.delay);
  log.Say(LogLevel::kInfo, "stop", "ptoserve: stopped");
  return 0;
}

}  // namespace
}  // namespace ptoserve

int main(int argc, char** argv) {
  // The instructions and targets as their tables name them. Abseil's
  // --helpfull starts with the program's name itself.
  std::vector<absl::string_view> ops, targets;
  for (const ptoserve::OpInfo& op : ptoserve::kOps) ops.push_back(op.name);
  for (ptoserve::Target t : ptoserve::kEveryTarget) {
    targets.push_back(ptoserve::TargetName(t));
  }
  const std::string usage = absl::StrCat(
      "serves PTO tile instructions (", absl::StrJoin(ops, ", "),
      ") over gRPC and HTTP.\n\nUsage: ptoserve [--address=HOST:PORT] "
      "[--default_target=",
      absl::StrJoin(targets, "|"), "] [flags]\n");
  ptoserve::KeepLargeBlocksInHeap();
  ptoserve::HandleHelpAndVersion(argc, argv, "ptoserve",
                                 absl::StrCat("ptoserve: ", usage),
                                 ptoserve::kFlagsFile);
  absl::SetProgramUsageMessage(usage);
  ptoserve::CheckFlagsOrExit(argc, argv, "ptoserve", {ptoserve::kFlagsFile});
  absl::ParseCommandLine(argc, argv);
  // The scheduler's lock order is fixed by design (and checked by the test
  // builds); the serving build skips Abseil's per-lock cycle bookkeeping.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Before any thread starts, so that only the shutdown thread sees them.
  ptoserve::BlockShutdownSignals();
  return ptoserve::Run();
}
