// ptoserve: the gRPC server that executes PTO tile instructions.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include <optional>

#include "common/cli_help.h"
#include "core/engine.h"
#include "core/version.h"
#include "server/auth.h"
#include "server/codec.h"
#include "server/grpc_metrics.h"
#include "server/grpc_server.h"
#include "server/metrics.h"
#include "server/metrics_endpoint.h"
#include "server/process_metrics.h"
#include "server/reflection.h"
#include "proto/descriptor_set.h"
#include "server/service.h"
#include "server/service_metrics.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50051",
          "Address to listen on, HOST:PORT; port 0 picks a free port (the "
          "start-up line reports it). Use 0.0.0.0:50051 to accept remote "
          "clients.");
ABSL_FLAG(std::string, default_target, "host",
          "Target for jobs that leave it unset: host, a2a3 or a5.");
ABSL_FLAG(int, max_message_mb, 64,
          "Largest request or response message, in MiB; larger ones get "
          "RESOURCE_EXHAUSTED.");
ABSL_FLAG(int, workers, 0,
          "Scheduler threads that run batches; 0 means one per CPU core.");
ABSL_FLAG(int, max_batch_size, 64,
          "Most instructions of one batch key run as one backend call.");
ABSL_FLAG(int, max_queue_delay_us, 0,
          "How long a partial batch may wait for company, in microseconds; "
          "0 runs whatever is queued as soon as a worker is free.");
ABSL_FLAG(int, queue_capacity, 65536,
          "Instructions admitted and not yet run; a job that does not fit "
          "gets RESOURCE_EXHAUSTED at once.");
ABSL_FLAG(int, priority_levels, 4,
          "Job priorities are 0 (the default) to priority_levels - 1.");
ABSL_FLAG(int, priority_aging_ms, 10,
          "Each this many milliseconds a queued instruction waits raise it one "
          "priority level, so that no level starves.");
ABSL_FLAG(int, stream_window, 128,
          "Jobs of one ExecuteStream call in flight at once; the server reads "
          "no further while that many are unanswered.");
ABSL_FLAG(int, max_tile_mb, 16, "Largest tile, in MiB.");
ABSL_FLAG(int, max_tiles_per_job, 1024, "Most tiles in one job.");
ABSL_FLAG(int, max_instructions_per_job, 4096, "Most instructions in one job.");
ABSL_FLAG(int, host_buffer_kb, 1024,
          "Size of the host target's unified buffer in KiB (manual-mode "
          "address bounds).");
ABSL_FLAG(std::string, tls_cert, "",
          "Server certificate chain (PEM). With --tls_key, serve TLS only.");
ABSL_FLAG(std::string, tls_key, "", "Private key of --tls_cert (PEM).");
ABSL_FLAG(std::string, tls_client_ca, "",
          "CA certificate (PEM): require clients to present a certificate it "
          "signed (mutual TLS).");
ABSL_FLAG(std::string, auth_token_file, "",
          "File of bearer tokens, one per line: TileCompute calls must send "
          "\"authorization: Bearer <token>\" (else UNAUTHENTICATED). The "
          "health service stays open for probes.");
ABSL_FLAG(bool, reflection, true,
          "Serve gRPC server reflection (grpcurl list/describe); with "
          "--auth_token_file it asks for a token too.");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9464",
          "Where to serve Prometheus metrics, IP:PORT (GET /metrics over "
          "HTTP); port 0 picks a free port (the start-up lines report it). "
          "Empty: no metrics endpoint.");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(10),
          "On SIGINT/SIGTERM, after the lame-duck period, how long calls in "
          "flight may take to finish before they are cancelled.");
ABSL_FLAG(absl::Duration, lame_duck, absl::Milliseconds(250),
          "On SIGINT/SIGTERM, once accepted jobs are answered, how long the "
          "server still takes calls (answering UNAVAILABLE) before it closes, "
          "so that late callers can retry elsewhere instead of being cut off.");

namespace ptoserve {
namespace {

absl::StatusOr<Target> ParseTarget(const std::string& name) {
  if (name == "host") return Target::kHost;
  if (name == "a2a3") return Target::kA2A3;
  if (name == "a5") return Target::kA5;
  return absl::InvalidArgumentError(absl::StrCat(
      "--default_target=", name, " is not one of host, a2a3, a5"));
}

int Run() {
  absl::StatusOr<Target> target = ParseTarget(absl::GetFlag(FLAGS_default_target));
  if (!target.ok()) {
    std::cerr << "ptoserve: " << target.status().message() << "\n";
    return 2;
  }
  EngineOptions options;
  options.default_target = *target;
  options.host_buffer_bytes = uint64_t{1024} * absl::GetFlag(FLAGS_host_buffer_kb);
  options.limits.max_tile_bytes =
      static_cast<size_t>(absl::GetFlag(FLAGS_max_tile_mb)) << 20;
  options.limits.max_tiles_per_job = absl::GetFlag(FLAGS_max_tiles_per_job);
  options.limits.max_instructions_per_job =
      absl::GetFlag(FLAGS_max_instructions_per_job);
  const Engine engine(options);

  SchedulerOptions scheduling;
  scheduling.workers = absl::GetFlag(FLAGS_workers) > 0
                           ? absl::GetFlag(FLAGS_workers)
                           : std::max(1u, std::thread::hardware_concurrency());
  scheduling.max_batch_size = std::max(1, absl::GetFlag(FLAGS_max_batch_size));
  scheduling.max_queue_delay =
      absl::Microseconds(std::max(0, absl::GetFlag(FLAGS_max_queue_delay_us)));
  scheduling.queue_capacity = std::max(1, absl::GetFlag(FLAGS_queue_capacity));
  scheduling.priority_levels = std::max(1, absl::GetFlag(FLAGS_priority_levels));
  scheduling.priority_aging =
      absl::Milliseconds(std::max(1, absl::GetFlag(FLAGS_priority_aging_ms)));
  MetricsRegistry registry;
  ServiceMetrics metrics(&registry);
  EngineRunner runner(&engine, &metrics);
  Scheduler scheduler(scheduling, &runner);
  metrics.WatchScheduler(&scheduler);

  ServerLimits limits;
  const int max_message_bytes = absl::GetFlag(FLAGS_max_message_mb) << 20;
  limits.max_message_bytes = max_message_bytes;
  limits.priority_levels = scheduling.priority_levels;
  limits.queue_capacity = scheduling.queue_capacity;
  limits.stream_window = std::max(1, absl::GetFlag(FLAGS_stream_window));
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ServerCredentials({absl::GetFlag(FLAGS_tls_cert),
                         absl::GetFlag(FLAGS_tls_key),
                         absl::GetFlag(FLAGS_tls_client_ca)});
  if (!credentials.ok()) {
    std::cerr << "ptoserve: " << credentials.status().message() << "\n";
    return 2;
  }
  std::optional<TokenAuthenticator> auth;
  if (!absl::GetFlag(FLAGS_auth_token_file).empty()) {
    absl::StatusOr<TokenAuthenticator> tokens =
        TokenAuthenticator::FromFile(absl::GetFlag(FLAGS_auth_token_file));
    if (!tokens.ok()) {
      std::cerr << "ptoserve: " << tokens.status().message() << "\n";
      return 2;
    }
    auth.emplace(std::move(*tokens));
  }
  TileComputeService service(&engine, &scheduler, limits, &metrics,
                             auth ? &*auth : nullptr);

  GrpcSettings settings;
  settings.address = absl::GetFlag(FLAGS_address);
  settings.max_message_bytes = max_message_bytes;
  settings.credentials = *credentials;
  const std::vector<std::string> service_names = {
      v1::TileCompute::service_full_name(), "grpc.health.v1.Health",
      grpc::reflection::v1::ServerReflection::service_full_name(),
      grpc::reflection::v1alpha::ServerReflection::service_full_name()};
  ReflectionService reflection(service_names, DescriptorSetWithComments(),
                               auth ? &*auth : nullptr);
  GrpcMetrics grpc_metrics(&registry, service_names);
  AddProcessMetrics(&registry);
  settings.interceptor = &grpc_metrics;
  std::vector<grpc::Service*> services = {&service};
  if (absl::GetFlag(FLAGS_reflection)) {
    for (grpc::Service* s : reflection.services()) services.push_back(s);
  }
  // Before gRPC: a port that is taken stops the server before it serves.
  std::unique_ptr<MetricsEndpoint> metrics_endpoint;
  if (!absl::GetFlag(FLAGS_metrics_address).empty()) {
    absl::StatusOr<std::unique_ptr<MetricsEndpoint>> started =
        MetricsEndpoint::Start(absl::GetFlag(FLAGS_metrics_address), &registry);
    if (!started.ok()) {
      std::cerr << "ptoserve: " << started.status().message() << "\n";
      return 1;
    }
    metrics_endpoint = std::move(*started);
  }
  absl::StatusOr<RunningServer> running = StartGrpcServer(settings, services);
  if (!running.ok()) {
    std::cerr << "ptoserve: " << running.status().message() << "\n";
    return 1;
  }
  // The health service knows a service only once its status has been set.
  running->server->GetHealthCheckService()->SetServingStatus(
      v1::TileCompute::service_full_name(), true);
  std::cout << "ptoserve " << kVersion << " listening on " << running->address
            << " (default target " << TargetName(*target) << ")" << std::endl;
  if (metrics_endpoint != nullptr) {
    std::cout << "ptoserve metrics on " << metrics_endpoint->url() << std::endl;
  }
  // Refusing new jobs while the accepted ones finish, rather than stopping
  // gRPC at once, answers late callers UNAVAILABLE instead of cancelling them.
  ServeUntilSignalled(running->server.get(),
                      absl::GetFlag(FLAGS_shutdown_grace),
                      absl::GetFlag(FLAGS_lame_duck), "ptoserve",
                      [&scheduler] { scheduler.Shutdown(); });
  std::cout << "ptoserve: stopped" << std::endl;
  return 0;
}

}  // namespace
}  // namespace ptoserve

int main(int argc, char** argv) {
  constexpr char kUsage[] =
      "ptoserve: serves PTO tile instructions (TAND, TXOR) over gRPC.\n"
      "\n"
      "Usage: ptoserve [--address=HOST:PORT] [--default_target=host|a2a3|a5] "
      "[flags]\n";
  ptoserve::HandleHelpAndVersion(argc, argv, "ptoserve", kUsage,
                                 "server/main.cc");
  absl::SetProgramUsageMessage(kUsage);
  absl::ParseCommandLine(argc, argv);
  // The scheduler's lock order is fixed by design (and checked by the test
  // builds); the serving build skips Abseil's per-lock cycle bookkeeping.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Before any thread starts, so that only the shutdown thread sees them.
  ptoserve::BlockShutdownSignals();
  return ptoserve::Run();
}
