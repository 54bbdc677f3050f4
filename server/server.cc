#include "server/server.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "proto/codec.h"
#include "proto/descriptor_set.h"
#include "server/http/http_api.h"
#include "server/jobs/dispatcher.h"
#include "server/jobs/engine_runner.h"
#include "server/jobs/gauges.h"
#include "server/jobs/intake.h"
#include "server/jobs/memory_budget.h"
#include "server/jobs/shared_memory.h"
#include "server/jobs/task_pool.h"
#include "server/metrics/grpc_metrics.h"
#include "server/metrics/log.h"
#include "server/metrics/metrics.h"
#include "server/metrics/metrics_endpoint.h"
#include "server/metrics/process_metrics.h"
#include "server/metrics/service_metrics.h"
#include "server/rpc/shared_memory_service.h"
#include "server/rpc/tile_compute_service.h"
#include "server/transport/address.h"
#include "server/transport/client_address.h"
#include "server/transport/grpc_server.h"
#include "server/transport/peer_credentials.h"
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
        // Decodes requests too large to decode on gRPC's threads
        // (server/jobs/intake.h).
        // One client may have a quarter of their queue: one client's large
        // requests never leave the others' refused as "busy".
        decoders(std::max(1u, std::thread::hardware_concurrency()),
                 /*capacity=*/256, /*client_capacity=*/kDecodesPerClient),
        // Builds heavy results (dispatcher.h): half the cores at most, so
        // that the scheduler's workers keep the rest. Every job admitted
        // posts at most one task; a full queue builds on the worker.
        finishers(std::max(1u, std::thread::hardware_concurrency() / 2),
                  /*capacity=*/65536) {}

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
};

absl::StatusOr<std::unique_ptr<Server>> Server::Start(
    const ServerOptions& options) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ServerCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  if (!options.tls_client_names.empty() && options.tls.client_ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls_client_names needs --tls_client_ca (mutual TLS)");
  }
  absl::StatusOr<std::vector<AddressPrefix>> proxies =
      ParseAddressPrefixes(options.trusted_proxies);
  if (!proxies.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--trusted_proxies: ", proxies.status().message()));
  }
  TrustProxies(*std::move(proxies));
  auto parts = std::make_unique<Parts>(options);
  if (!options.auth_token_file.empty()) {
    absl::StatusOr<TokenAuthenticator> tokens =
        TokenAuthenticator::FromFile(options.auth_token_file);
    if (!tokens.ok()) return tokens.status();
    parts->auth.emplace(std::move(*tokens));
  }
  const TokenAuthenticator* auth = parts->auth ? &*parts->auth : nullptr;
  const bool tls = !options.tls.cert.empty();
  // With TLS, calls are refused on their metadata, before their request
  // is read.
  if (tls && (auth != nullptr || !options.tls_client_names.empty())) {
    (*credentials)
        ->SetAuthMetadataProcessor(CallGate(auth, options.tls_client_names));
  }
  AddSchedulerGauges(&parts->scheduler, &parts->registry);
  AddMemoryBudgetGauges(&parts->budget, &parts->registry);
  AddSharedMemoryGauges(&parts->shared, &parts->registry);

  parts->dispatcher = std::make_unique<Dispatcher>(
      &parts->engine, &parts->scheduler, options.limits, &parts->metrics,
      &parts->budget, &parts->shared, &parts->finishers);
  parts->intake =
      std::make_unique<Intake>(parts->dispatcher.get(), &parts->metrics,
                               &parts->budget, &parts->decoders);
  parts->service = std::make_unique<TileComputeService>(parts->intake.get(),
                                                        &parts->budget, auth);
  parts->shared_service =
      std::make_unique<SharedMemoryService>(&parts->shared, auth);
  parts->registry.AddCallbackCounter(
      "ptoserve_calls_stalled_total",
      "Calls cancelled because their client read no answer for "
      "--stall_timeout.",
      [stalls = &parts->service->stalls()] {
        return static_cast<double>(stalls->cancelled());
      });

  const std::vector<std::string> service_names = {
      v1::TileCompute::service_full_name(),
      v1::SharedMemory::service_full_name(), "grpc.health.v1.Health",
      grpc::reflection::v1::ServerReflection::service_full_name(),
      grpc::reflection::v1alpha::ServerReflection::service_full_name()};
  parts->reflection = std::make_unique<ReflectionService>(
      service_names, DescriptorSetWithComments(), auth);
  // The services whose handlers take their requests as bytes, which the
  // metrics' interceptor is handed as such: TileCompute's job methods,
  // gRPC's health service (1.51 parses its requests itself) and reflection
  // (server/transport/reflection.h).
  const std::string tile_compute = v1::TileCompute::service_full_name();
  parts->grpc_metrics = std::make_unique<GrpcMetrics>(
      &parts->registry, service_names,
      std::vector<std::string>{
          absl::StrCat("/", tile_compute, "/Execute"),
          absl::StrCat("/", tile_compute, "/ExecuteStream"),
          absl::StrCat("/", tile_compute, "/ExecuteBatches"),
          "/grpc.health.v1.Health/",
          absl::StrCat(
              "/", grpc::reflection::v1::ServerReflection::service_full_name(),
              "/"),
          absl::StrCat(
              "/",
              grpc::reflection::v1alpha::ServerReflection::service_full_name(),
              "/")});
  auto counted = [&](absl::string_view method) {
    return parts->grpc_metrics->CountedByHandler(
        absl::StrCat("/", tile_compute, "/", method));
  };
  TileComputeService::CountedCalls own;
  own.execute = counted("Execute");
  own.stream = counted("ExecuteStream");
  own.batches = counted("ExecuteBatches");
  parts->service->CountOwnCalls(own);
  AddProcessMetrics(&parts->registry);
  parts->registry.AddCallbackCounter(
      "ptoserve_log_lines_dropped_total",
      "Log lines not written because more than --log_rate came in a second.",
      [] { return static_cast<double>(Log::Get().dropped()); });
  // What the health service and /v2/health/ready answer: 0 from SIGTERM on
  // (the alert rules' NOT_SERVING).
  parts->registry.AddGauge(
      "ptoserve_serving",
      "1 while the server takes jobs (health SERVING), 0 once it drains "
      "for shutdown (NOT_SERVING).",
      {}, [parts = parts.get()] { return parts->Serving() ? 1.0 : 0.0; });
  std::vector<grpc::Service*> services = {parts->service.get(),
                                          parts->shared_service.get()};
  if (options.reflection) {
    for (grpc::Service* s : parts->reflection->services()) {
      services.push_back(s);
    }
  }

  // The gRPC port is the one a user names first, so it is the first that
  // a second server on the same ports fails on; the metrics and HTTP ports
  // then start before gRPC, so that a port that is taken stops the server
  // before it serves.
  if (absl::Status free = CheckCanListen(options.grpc.address); !free.ok()) {
    return free;
  }
  if (!options.metrics.address.empty()) {
    HttpDaemonOptions metrics = options.metrics;
    metrics.flag = "--metrics_address";
    metrics.client_of = SocketClient;
    absl::StatusOr<std::unique_ptr<MetricsEndpoint>> started =
        MetricsEndpoint::Start(
            metrics, &parts->registry,
            [parts = parts.get()] { return parts->Serving(); });
    if (!started.ok()) return started.status();
    parts->metrics_endpoint = std::move(*started);
  }
  if (!options.http.address.empty()) {
    if (!options.tls.client_ca.empty() &&
        !IsLoopbackAddress(options.http.address)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--http_address=", options.http.address,
          " is not a loopback address: the HTTP/JSON API checks no client "
          "certificates (--tls_client_ca), so beside mutual TLS it serves "
          "loopback only; leave --http_address empty or give it 127.0.0.1"));
    }
    HttpDaemonOptions http = options.http;
    http.flag = "--http_address";
    http.client_of = SocketClient;
    HttpApiParts http_parts;
    http_parts.intake = parts->intake.get();
    http_parts.budget = &parts->budget;
    http_parts.registry = &parts->registry;
    http_parts.auth = auth;
    http_parts.ready = [parts = parts.get()] { return parts->Serving(); };
    absl::StatusOr<std::unique_ptr<HttpApi>> started =
        HttpApi::Start(http, options.tls, http_parts);
    if (!started.ok()) return started.status();
    parts->http = std::move(*started);
  }
  GrpcWiring wiring;
  wiring.max_message_bytes = options.limits.max_message_bytes;
  wiring.memory_quota_bytes = options.limits.TransportMemoryBytes();
  wiring.credentials = *credentials;
  wiring.tls = tls;
  wiring.interceptor = parts->grpc_metrics.get();
  absl::StatusOr<RunningServer> running =
      StartGrpcServer(options.grpc, wiring, services);
  if (!running.ok()) return running.status();
  parts->running = std::move(*running);
  // The connections gRPC serves, counted in the kernel's socket tables at
  // scrape time (TCP only: a unix: address has no port to count on).
  const std::string& bound = parts->running.address;
  int port = 0;
  if (!absl::StartsWith(bound, "unix:") &&
      absl::SimpleAtoi(absl::string_view(bound).substr(bound.rfind(':') + 1),
                       &port)) {
    parts->registry.AddGauge(
        "ptoserve_grpc_connections",
        "TCP connections open to the gRPC port, those still sending their "
        "HTTP/2 preface included.",
        {}, [port] { return EstablishedConnectionsOnPort(port); });
  }
  // The health service knows a service only once its status has been set.
  for (const char* name : {v1::TileCompute::service_full_name(),
                           v1::SharedMemory::service_full_name()}) {
    parts->running.server->GetHealthCheckService()->SetServingStatus(name,
                                                                     true);
  }
  return std::unique_ptr<Server>(new Server(std::move(parts)));
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
