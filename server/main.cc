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

// --help's order: the flags most people set, then the rest under the
// titles of docs/FLAGS.md's sections (docs_test holds the two to one
// another).
std::vector<FlagGroup> HelpGroups() {
  return {
      {"Flags most people set",
       {"address", "http_address", "metrics_address", "default_target",
        "workers", "memory_budget_mb", "auth_token_file", "tls_cert", "tls_key",
        "log_format"}},
      {"Where it serves", {"host_buffer_kb", "reflection"}},
      {"What one job may be",
       {"max_message_mb", "max_json_kb", "max_tile_mb", "max_tiles_per_job",
        "max_instructions_per_job", "max_waits_per_instruction",
        "max_assembly_kb", "max_job_mb", "max_job_time"}},
      {"Memory, and what one client may hold",
       {"max_client_memory_mb", "grpc_memory_mb", "stall_timeout"}},
      {"Scheduling",
       {"max_batch_size", "max_batch_kb", "max_queue_delay_us",
        "queue_capacity", "priority_levels", "priority_aging_ms",
        "stream_window", "max_jobs_per_batch"}},
      {"Shared memory",
       {"shared_memory", "shared_memory_prefix", "max_shared_regions",
        "max_shared_regions_per_user", "shared_region_grace"}},
      {"gRPC connections",
       {"http2_window_kb", "handshake_timeout", "max_connection_idle",
        "max_connections_per_client", "max_connections"}},
      {"The HTTP/JSON API",
       {"http_threads", "http_max_connections",
        "http_max_connections_per_client", "http_idle_timeout",
        "http_head_timeout", "http_min_body_rate_kb", "http_allowed_hosts"}},
      {"TLS and tokens",
       {"tls_client_ca", "tls_client_names", "trusted_proxies"}},
      {"Logs", {"log_level", "log_rate"}},
      {"Shutdown", {"shutdown_delay", "lame_duck", "shutdown_grace"}},
  };
}

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
                                 ptoserve::kFlagsFile, ptoserve::HelpGroups());
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
