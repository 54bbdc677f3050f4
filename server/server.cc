#include "server/server.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/setting_names.h"
#include "proto/codec.h"
#include "proto/descriptor_set.h"
#include "server/exec/memory_budget.h"
#include "server/exec/task_pool.h"
#include "server/http/http_api.h"
#include "server/identity/client_address.h"
#include "server/identity/peer_credentials.h"
#include "server/intake/intake.h"
#include "server/jobs/dispatcher.h"
#include "server/jobs/engine_runner.h"
#include "server/jobs/gauges.h"
#include "server/log/log.h"
#include "server/metrics/grpc_metrics.h"
#include "server/metrics/metrics.h"
#include "server/metrics/metrics_endpoint.h"
#include "server/metrics/process_metrics.h"
#include "server/metrics/service_metrics.h"
#include "server/rpc/inference_service.h"
#include "server/rpc/shared_memory_service.h"
#include "server/rpc/tile_compute_service.h"
#include "server/shm/shared_memory.h"
#include "server/transport/address.h"
#include "server/transport/grpc_server.h"
#include "server/transport/reflection.h"

namespace ptoserve {

namespace {

// The shared-memory options as the registry takes them: on or off decided,
// and how often leases are looked at.
SharedMemoryOptions SharedMemoryFrom(const ServerOptions& options) {
  SharedMemoryOptions shm = options.shared_memory;
  shm.enabled = shm.enabled.value_or(IsLoopbackAddress(options.grpc.address));
  // Leases are looked at four times a grace, between 20 times a second and
  // once a second.
  shm.lease_sweep =
      std::clamp(shm.lease_grace / 4, absl::Milliseconds(50), absl::Seconds(1));
  return shm;
}

// gRPC's credentials for `options`, and the proxies it names trusted,
// checked before anything starts: INVALID_ARGUMENT (or a file's error)
// for security options that cannot work.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const ServerOptions& options) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ServerCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  if (!options.tls_client_names.empty() && options.tls.client_ca.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(SettingName(Setting::kTlsClientNames), " needs ",
                     SettingName(Setting::kTlsClientCa), " (mutual TLS)"));
  }
  absl::StatusOr<std::vector<AddressPrefix>> proxies =
      ParseAddressPrefixes(options.trusted_proxies);
  if (!proxies.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(SettingName(Setting::kTrustedProxies), ": ",
                     proxies.status().message()));
  }
  TrustProxies(*std::move(proxies));
  return credentials;
}

// The gRPC services reflection lists and the metrics count.
std::vector<std::string> ServiceNames() {
  return {v1::TileCompute::service_full_name(),
          v1::SharedMemory::service_full_name(),
          inference::GRPCInferenceService::service_full_name(),
          "grpc.health.v1.Health",
          grpc::reflection::v1::ServerReflection::service_full_name(),
          grpc::reflection::v1alpha::ServerReflection::service_full_name()};
}

}  // namespace

// Everything a server holds, in the order it is built (and the reverse of
// the order it is destroyed in).
struct Server::Parts {
  explicit Parts(const ServerOptions& options)
      : engine(options.engine),
        metrics(&registry),
        runner(&engine, &metrics),
        scheduler(options.scheduling, &runner),
        budget(options.limits.memory_budget_bytes,
               options.limits.ClientMemoryBytes()),
        shared(SharedMemoryFrom(options), &budget),
        decoders(std::max(1u, std::thread::hardware_concurrency()),
                 kDecoderQueue, kDecodesPerClient),
        finishers(std::max(1u, std::thread::hardware_concurrency() / 2),
                  kFinisherQueue) {}

  // The decoders parse requests too large to parse on the thread that read
  // them (server/intake/intake.h), one thread a core. At most 256 wait, each
  // at most --max_message_mb and held against its client's share, and one
  // client may have a quarter of them (kDecodesPerClient): one client's
  // large requests never leave the others' refused as "busy".
  static constexpr size_t kDecoderQueue = 256;
  // The finishers build heavy results (server/jobs/dispatcher.h) on half
  // the cores at most, so that the scheduler's workers keep the rest.
  // Every job admitted posts at most one task, so the queue is as long as
  // the scheduler's (--queue_capacity's default); a full one builds on the
  // worker instead.
  static constexpr size_t kFinisherQueue = 65536;

  const Engine engine;
  MetricsRegistry registry;
  ServiceMetrics metrics;
  EngineRunner runner;
  Scheduler scheduler;
  MemoryBudget budget;
  SharedMemoryRegistry shared;
  std::optional<TokenAuthenticator> auth;
  TaskPool decoders;
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<Intake> intake;
  std::unique_ptr<TileComputeService> service;
  std::unique_ptr<ModelCatalog> models;
  std::unique_ptr<InferenceService> inference;
  UnservedMethods unserved;
  std::unique_ptr<SharedMemoryService> shared_service;
  std::unique_ptr<ReflectionService> reflection;
  std::unique_ptr<GrpcMetrics> grpc_metrics;
  std::unique_ptr<MetricsEndpoint> metrics_endpoint;
  // Its requests call the dispatcher: stopped before it.
  std::unique_ptr<HttpApi> http;
  // Its tasks call the dispatcher and the service: destroyed before them.
  TaskPool finishers;
  RunningServer running;
  bool stopped = false;
  // From the start of a shutdown delay on: NOT_SERVING, still taking jobs.
  std::atomic<bool> not_serving{false};

  // What health checks are told: SERVING until a shutdown begins.
  bool Serving() const { return !not_serving && !scheduler.Stopping(); }

  // Refuses new work from now on: a request the decoders took is decoded
  // and reaches the scheduler first, then the scheduler refuses every new
  // job. Returns once both refuse (the decoders' queue is bounded).
  void StopAccepting() {
    decoders.Shutdown();
    scheduler.StopAccepting();
  }

  // Returns once every job accepted has been answered.
  void Drain() {
    scheduler.Shutdown();
    finishers.Shutdown();
  }

  // Server::Start's steps, in order: the tokens (and with TLS the gate on
  // calls' metadata); the pipeline and the services; their metrics; the
  // HTTP doors (metrics, the API); gRPC, serving.
  absl::Status Authenticate(const ServerOptions& options,
                            grpc::ServerCredentials& credentials);
  void Assemble(const ServerOptions& options);
  void Measure();
  absl::Status StartHttp(const ServerOptions& options);
  absl::Status StartGrpc(const ServerOptions& options,
                         std::shared_ptr<grpc::ServerCredentials> credentials);

  const TokenAuthenticator* token_auth() const {
    return auth.has_value() ? &*auth : nullptr;
  }
  std::vector<grpc::Service*> services;  // what gRPC serves
};

absl::StatusOr<std::unique_ptr<Server>> Server::Start(
    const ServerOptions& options) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      Credentials(options);
  if (!credentials.ok()) return credentials.status();
  auto parts = std::make_unique<Parts>(options);
  if (absl::Status authenticated = parts->Authenticate(options, **credentials);
      !authenticated.ok()) {
    return authenticated;
  }
  parts->Assemble(options);
  parts->Measure();
  // The gRPC port is the one a user names first, so it is the first that
  // a second server on the same ports fails on; the metrics and HTTP ports
  // then start before gRPC, so that a port that is taken stops the server
  // before it serves.
  if (absl::Status free = CheckCanListen(options.grpc.address); !free.ok()) {
    return free;
  }
  if (absl::Status http = parts->StartHttp(options); !http.ok()) return http;
  if (absl::Status grpc = parts->StartGrpc(options, *std::move(credentials));
      !grpc.ok()) {
    return grpc;
  }
  return std::unique_ptr<Server>(new Server(std::move(parts)));
}

absl::Status Server::Parts::Authenticate(const ServerOptions& options,
                                         grpc::ServerCredentials& credentials) {
  if (!options.auth_token_file.empty()) {
    absl::StatusOr<TokenAuthenticator> tokens =
        TokenAuthenticator::FromFile(options.auth_token_file);
    if (!tokens.ok()) return tokens.status();
    auth.emplace(std::move(*tokens));
  }
  // With TLS, calls are refused on their metadata, before their request
  // is read.
  if (!options.tls.cert.empty() &&
      (auth.has_value() || !options.tls_client_names.empty())) {
    credentials.SetAuthMetadataProcessor(
        CallGate(token_auth(), options.tls_client_names));
  }
  return absl::OkStatus();
}

void Server::Parts::Assemble(const ServerOptions& options) {
  dispatcher =
      std::make_unique<Dispatcher>(&engine, &scheduler, options.limits,
                                   &metrics, &budget, &shared, &finishers);
  intake =
      std::make_unique<Intake>(dispatcher.get(), &metrics, &budget, &decoders);
  service =
      std::make_unique<TileComputeService>(intake.get(), &budget, token_auth());
  shared_service = std::make_unique<SharedMemoryService>(&shared, token_auth());
  reflection = std::make_unique<ReflectionService>(
      ServiceNames(), DescriptorSetWithComments(), token_auth());
  models = std::make_unique<ModelCatalog>(dispatcher->capabilities());
  inference = std::make_unique<InferenceService>(
      intake.get(), models.get(), service.get(), [this] { return Serving(); });
  services = {service.get(), shared_service.get(), inference.get()};
  if (options.reflection) {
    for (grpc::Service* s : reflection->services()) services.push_back(s);
  }
}

void Server::Parts::Measure() {
  AddSchedulerGauges(&scheduler, &registry);
  AddMemoryBudgetGauges(&budget, &registry);
  AddSharedMemoryGauges(&shared, &registry);
  registry.AddCallbackCounter(
      "ptoserve_calls_stalled_total",
      absl::StrCat("Calls cancelled because their client read no answer "
                   "for ",
                   SettingName(Setting::kStallTimeout), "."),
      [stalls = &service->stalls()] {
        return static_cast<double>(stalls->cancelled());
      });
  // The services whose handlers take their requests as bytes, which the
  // metrics' interceptor is handed as such: TileCompute's job methods,
  // gRPC's health service (1.51 parses its requests itself) and reflection
  // (server/transport/reflection.h).
  const std::string tile_compute = v1::TileCompute::service_full_name();
  grpc_metrics = std::make_unique<GrpcMetrics>(
      &registry, ServiceNames(),
      std::vector<std::string>{
          absl::StrCat("/", tile_compute, "/Execute"),
          absl::StrCat("/", tile_compute, "/ExecuteStream"),
          absl::StrCat("/", tile_compute, "/ExecuteBatches"),
          absl::StrCat("/",
                       inference::GRPCInferenceService::service_full_name(),
                       "/ModelInfer"),
          absl::StrCat("/",
                       inference::GRPCInferenceService::service_full_name(),
                       "/ModelStreamInfer"),
          "/grpc.health.v1.Health/",
          absl::StrCat(
              "/", grpc::reflection::v1::ServerReflection::service_full_name(),
              "/"),
          absl::StrCat(
              "/",
              grpc::reflection::v1alpha::ServerReflection::service_full_name(),
              "/")});
  auto counted = [&](absl::string_view method) {
    return grpc_metrics->CountedByHandler(
        absl::StrCat("/", tile_compute, "/", method));
  };
  TileComputeService::CountedCalls own;
  own.execute = counted("Execute");
  own.stream = counted("ExecuteStream");
  own.batches = counted("ExecuteBatches");
  service->CountOwnCalls(own);
  const std::string oip = inference::GRPCInferenceService::service_full_name();
  inference->CountOwnCalls(
      {grpc_metrics->CountedByHandler(absl::StrCat("/", oip, "/ModelInfer")),
       grpc_metrics->CountedByHandler(
           absl::StrCat("/", oip, "/ModelStreamInfer"))});
  AddProcessMetrics(&registry);
  registry.AddCallbackCounter(
      "ptoserve_log_lines_dropped_total",
      absl::StrCat("Log lines not written because more than ",
                   SettingName(Setting::kLogRate), " came in a second."),
      [] { return static_cast<double>(Log::Get().dropped()); });
  // What the health service and /v2/health/ready answer: 0 from SIGTERM on
  // (the alert rules' NOT_SERVING).
  registry.AddGauge(
      "ptoserve_serving",
      "1 while the server takes jobs (health SERVING), 0 once it drains "
      "for shutdown (NOT_SERVING).",
      {}, [this] { return Serving() ? 1.0 : 0.0; });
}

absl::Status Server::Parts::StartHttp(const ServerOptions& options) {
  if (!options.metrics.address.empty()) {
    HttpDaemonOptions metrics = options.metrics;
    metrics.flag = std::string(SettingName(Setting::kMetricsAddress));
    metrics.client_of = SocketClient;
    absl::StatusOr<std::unique_ptr<MetricsEndpoint>> started =
        MetricsEndpoint::Start(metrics, &registry,
                               [this] { return Serving(); });
    if (!started.ok()) return started.status();
    metrics_endpoint = std::move(*started);
  }
  if (!options.http.address.empty()) {
    if (!options.tls.client_ca.empty() &&
        !IsLoopbackAddress(options.http.address)) {
      return absl::InvalidArgumentError(absl::StrCat(
          SettingName(Setting::kHttpAddress), "=", options.http.address,
          " is not a loopback address: the HTTP/JSON API checks no client "
          "certificates (",
          SettingName(Setting::kTlsClientCa),
          "), so beside mutual TLS it serves loopback only; leave ",
          SettingName(Setting::kHttpAddress), " empty or give it 127.0.0.1"));
    }
    HttpDaemonOptions daemon = options.http;
    daemon.flag = std::string(SettingName(Setting::kHttpAddress));
    daemon.client_of = SocketClient;
    HttpApiParts http_parts;
    http_parts.intake = intake.get();
    http_parts.budget = &budget;
    http_parts.registry = &registry;
    http_parts.auth = token_auth();
    http_parts.ready = [this] { return Serving(); };
    http_parts.models = models.get();
    if (metrics_endpoint != nullptr) {
      http_parts.metrics_url = metrics_endpoint->url();
    }
    absl::StatusOr<std::unique_ptr<HttpApi>> started =
        HttpApi::Start(daemon, options.tls, http_parts);
    if (!started.ok()) return started.status();
    this->http = std::move(*started);
  }
  return absl::OkStatus();
}

absl::Status Server::Parts::StartGrpc(
    const ServerOptions& options,
    std::shared_ptr<grpc::ServerCredentials> credentials) {
  GrpcWiring wiring;
  wiring.max_message_bytes = options.limits.max_message_bytes;
  wiring.memory_quota_bytes = options.limits.TransportMemoryBytes();
  wiring.credentials = std::move(credentials);
  wiring.tls = !options.tls.cert.empty();
  wiring.interceptor = grpc_metrics.get();
  wiring.unserved = &unserved;
  absl::StatusOr<RunningServer> running =
      StartGrpcServer(options.grpc, wiring, services);
  if (!running.ok()) return running.status();
  this->running = std::move(*running);
  // The connections gRPC serves, counted in the kernel's socket tables at
  // scrape time (TCP only: a unix: address has no port to count on).
  const std::string& bound = this->running.address;
  int port = 0;
  if (!absl::StartsWith(bound, "unix:") &&
      absl::SimpleAtoi(absl::string_view(bound).substr(bound.rfind(':') + 1),
                       &port)) {
    registry.AddGauge(
        "ptoserve_grpc_connections",
        "TCP connections open to the gRPC port, those still sending their "
        "HTTP/2 preface included.",
        {}, [port] { return EstablishedConnectionsOnPort(port); });
  }
  // The health service knows a service only once its status has been set.
  for (const char* name : {v1::TileCompute::service_full_name(),
                           v1::SharedMemory::service_full_name()}) {
    this->running.server->GetHealthCheckService()->SetServingStatus(name, true);
  }
  return absl::OkStatus();
}

Server::Server(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

Server::~Server() {
  if (!parts_->stopped) Stop(absl::ZeroDuration());
}

const std::string& Server::address() const { return parts_->running.address; }

std::string Server::metrics_url() const {
  return parts_->metrics_endpoint != nullptr ? parts_->metrics_endpoint->url()
                                             : "";
}

std::string Server::http_url() const {
  return parts_->http != nullptr ? parts_->http->url() : "";
}

uint64_t Server::memory_budget_bytes() const { return parts_->budget.limit(); }

bool Server::shared_memory() const { return parts_->shared.enabled(); }

void Server::ServeUntilSignalled(absl::Duration grace, absl::Duration lame_duck,
                                 absl::Duration delay) {
  // Refusing new jobs while the accepted ones finish, rather than stopping
  // gRPC at once, answers late callers UNAVAILABLE instead of cancelling
  // them.
  ptoserve::ServeUntilSignalled(
      &parts_->running, grace, lame_duck, "ptoserve",
      [this] { parts_->StopAccepting(); }, [this] { parts_->Drain(); }, delay,
      [this] { parts_->not_serving = true; });
  parts_->stopped = true;
}

void Server::Stop(absl::Duration grace) {
  if (parts_->stopped) return;
  parts_->stopped = true;
  grpc::Server* server = parts_->running.server.get();
  parts_->StopAccepting();
  server->GetHealthCheckService()->SetServingStatus(false);
  parts_->Drain();
  if (parts_->running.listener != nullptr) parts_->running.listener->Stop();
  server->Shutdown(std::chrono::system_clock::now() +
                   absl::ToChronoMicroseconds(grace));
  server->Wait();
}

}  // namespace ptoserve
