// ptoserve's flags: each defined once here (where --help finds them),
// read into its one field of ServerOptions.
#include "server/flags.h"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/ranged_flag.h"
#include "common/setting_names.h"
#include "core/types.h"
#include "server/shm/shared_memory.h"

// The integer flags' types: each a range (common/ranged_flag.h).
using From0To1024 = ptoserve::RangedInt<0, 1024>;
using From0To10M = ptoserve::RangedInt<0, 10'000'000>;
using From0To1M = ptoserve::RangedInt<0, 1 << 20>;
using From0To4096 = ptoserve::RangedInt<0, 4096>;
using From0To65536 = ptoserve::RangedInt<0, 1 << 16>;
using From0ToMaxRegions = ptoserve::RangedInt<0, ptoserve::kMaxSharedRegions>;
using From1To1024 = ptoserve::RangedInt<1, 1024>;
using From1To16M = ptoserve::RangedInt<1, 1 << 24>;
using From1To1M = ptoserve::RangedInt<1, 1 << 20>;
using From1To256 = ptoserve::RangedInt<1, 256>;
using From1To3600000 = ptoserve::RangedInt<1, 3'600'000>;
using From1To65536 = ptoserve::RangedInt<1, 1 << 16>;
using From1ToMaxRegions = ptoserve::RangedInt<1, ptoserve::kMaxSharedRegions>;

ABSL_FLAG(std::string, address, "127.0.0.1:50051",
          "Address to listen on, HOST:PORT; port 0 picks a free port (the "
          "start-up line reports it). Use 0.0.0.0:50051 to accept remote "
          "clients.");
ABSL_FLAG(std::string, default_target, "host",
          "Target for jobs that leave it unset: host, a2a3 or a5.");
ABSL_FLAG(From1To1M, max_json_kb, 1024,
          "The largest job in JSON (an HTTP/JSON API body), in KiB: what one "
          "body costs a decoder. A larger job goes as protobuf, over gRPC.");
ABSL_FLAG(From1To1024, max_message_mb, 64,
          "Largest request or response message, in MiB; larger ones get "
          "RESOURCE_EXHAUSTED.");
ABSL_FLAG(From0To1024, workers, 0,
          "Scheduler threads that run batches; 0 means one per CPU core.");
ABSL_FLAG(From1To65536, max_batch_size, 64,
          "Most instructions of one batch key run as one backend call.");
ABSL_FLAG(From0To1M, max_batch_kb, 1024,
          "Most KiB of dst tiles one batch writes; a larger instruction runs "
          "alone (large tiles gain nothing from sharing a backend call, and "
          "a batch holds a worker until it ends). 0: no bound.");
ABSL_FLAG(From0To10M, max_queue_delay_us, 0,
          "How long a partial batch may wait for company, in microseconds; "
          "0 runs whatever is queued as soon as a worker is free.");
ABSL_FLAG(From1To16M, queue_capacity, 65536,
          "Instructions admitted and not yet run; a job that does not fit "
          "gets RESOURCE_EXHAUSTED at once.");
ABSL_FLAG(From1To1024, priority_levels, 4,
          "Job priorities are 0 (the default) to priority_levels - 1.");
ABSL_FLAG(From1To3600000, priority_aging_ms, 10,
          "Each this many milliseconds a queued instruction waits raise it one "
          "priority level, so that no level starves.");
ABSL_FLAG(From1To65536, stream_window, 128,
          "Jobs of one ExecuteStream or ExecuteBatches call in flight at "
          "once; the server reads no further while that many are unanswered.");
ABSL_FLAG(From1To65536, max_jobs_per_batch, 256,
          "Most jobs in one ExecuteBatches message (a JobBatch).");
ABSL_FLAG(From1To1024, max_tile_mb, 16, "Largest tile, in MiB.");
ABSL_FLAG(From1To65536, max_tiles_per_job, 1024, "Most tiles in one job.");
ABSL_FLAG(From1To1M, max_instructions_per_job, 4096,
          "Most instructions in one job.");
ABSL_FLAG(From1To1M, max_job_mb, 256,
          "The most memory one job may hold, in MiB: its request, the tiles "
          "the server makes for it, and its result (built and serialized). "
          "Larger jobs get RESOURCE_EXHAUSTED before any tile is made.");
ABSL_FLAG(From1To1M, memory_budget_mb, 768,
          "The memory all jobs in flight may hold together, in MiB (the same "
          "count as --max_job_mb). Over it, Execute answers "
          "RESOURCE_EXHAUSTED at once and a stream reads no further until "
          "its own results drain. Sized for the 1 GiB limit of "
          "deploy/k8s/, with room for gRPC's buffers.");
ABSL_FLAG(From0To1M, max_client_memory_mb, 0,
          "The most of --memory_budget_mb that one client's calls may hold "
          "together, in MiB; a client is a bearer token (--auth_token_file), "
          "or else the user of a loopback connection, or the address of "
          "another, on however many connections. 0: half the budget, and at "
          "least --max_job_mb. Over it, that client's Execute answers "
          "RESOURCE_EXHAUSTED and its streams read no further, while other "
          "clients go on.");
ABSL_FLAG(From0To1M, grpc_memory_mb, 0,
          "What gRPC may hold, in MiB, for requests no handler has taken yet "
          "(messages arriving, connections' buffers); at it, gRPC resets "
          "calls and connections. 0: a quarter of --memory_budget_mb, at "
          "least two messages of --max_message_mb.");
ABSL_FLAG(absl::Duration, max_job_time, absl::Minutes(2),
          "The longest any job may take from its arrival to its answer, on "
          "every door: a caller's deadline or timeout longer than this, or "
          "none, is cut to it (DEADLINE_EXCEEDED).");
ABSL_FLAG(absl::Duration, stall_timeout, absl::Seconds(30),
          "How long an answer may wait to be written to a client that does "
          "not read it (HTTP/2 flow control) before its call is cancelled "
          "and what it holds is freed; 0 never cancels.");
ABSL_FLAG(From0To4096, max_waits_per_instruction, 64,
          "The most events one instruction may wait on.");
ABSL_FLAG(From0To65536, max_assembly_kb, 1024,
          "The most bytes of PTO assembly one job may carry, in KiB.");
ABSL_FLAG(From1To1M, host_buffer_kb, 1024,
          "Size of the host target's unified buffer in KiB (manual-mode "
          "address bounds).");
ABSL_FLAG(std::string, shared_memory, "auto",
          "The shared-memory data path for clients on this host (the "
          "SharedMemory service, Tile.shared, Job.output_regions): true, "
          "false, or auto: on exactly when --address is a loopback one.");
ABSL_FLAG(std::string, shared_memory_prefix, "/ptoserve",
          "Every shared-memory key registered must start with this.");
ABSL_FLAG(From1ToMaxRegions, max_shared_regions, 64,
          "Most shared-memory regions registered at once, by all users.");
ABSL_FLAG(From0ToMaxRegions, max_shared_regions_per_user, 0,
          "Most shared-memory regions one user (the caller's uid) may have "
          "registered at once; 0: a quarter of --max_shared_regions (at "
          "least 1), so that one user's regions never refuse another's.");
ABSL_FLAG(absl::Duration, shared_region_grace, absl::Seconds(10),
          "How long a shared-memory region stays registered after the "
          "connection that registered it closes (unless its Register asked "
          "it to outlive the connection), so that a client that dies leaves "
          "no regions behind.");
ABSL_FLAG(std::string, tls_cert, "",
          "Server certificate chain (PEM). With --tls_key, serve TLS only.");
ABSL_FLAG(std::string, tls_key, "", "Private key of --tls_cert (PEM).");
ABSL_FLAG(std::string, tls_client_ca, "",
          "CA certificate (PEM): require clients to present a certificate it "
          "signed (mutual TLS).");
ABSL_FLAG(std::string, tls_client_names, "",
          "With --tls_client_ca: the common names (comma-separated) a client "
          "certificate may carry; others get PERMISSION_DENIED. Empty: any "
          "certificate the CA signed.");
ABSL_FLAG(std::string, auth_token_file, "",
          "File of bearer tokens, one per line: TileCompute calls must send "
          "\"authorization: Bearer <token>\" (else UNAUTHENTICATED). The "
          "health service stays open for probes.");
ABSL_FLAG(std::string, trusted_proxies, "",
          "Proxies (addresses or prefixes, comma-separated) whose "
          "X-Forwarded-For names each request's client; each of their "
          "connections counts as a client of its own.");
ABSL_FLAG(bool, reflection, true,
          "Serve gRPC server reflection (grpcurl list/describe); with "
          "--auth_token_file it asks for a token too.");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9464",
          "Where to serve Prometheus metrics, IP:PORT (GET /metrics over "
          "HTTP); port 0 picks a free port (the start-up lines report it). "
          "Empty: no metrics endpoint.");
ABSL_FLAG(std::string, http_address, "127.0.0.1:8000",
          "Where the HTTP/JSON API is served (POST /v1/jobs:execute, GET "
          "/v1/capabilities, /v1/health), with the playground (GET /) and the "
          "Open Inference Protocol's REST routes (/v2/...), IP:PORT; empty: "
          "nowhere. Like --metrics_address, on loopback unless given another "
          "address.");
ABSL_FLAG(From1To256, http_threads, 4,
          "Threads of the HTTP/JSON API: they poll its connections, parse "
          "bodies and run small jobs.");
ABSL_FLAG(From1To1M, http_max_connections, 1024,
          "HTTP connections open at once; past it, the newest connection of "
          "the client holding most is closed for a newcomer of another.");
ABSL_FLAG(From1To1M, http_max_connections_per_client, 64,
          "HTTP connections open at once of one client (a token's user is "
          "its connection's: the user of a loopback connection, else the "
          "address, an IPv6 /64 as one); more are closed at accept.");
ABSL_FLAG(absl::Duration, http_idle_timeout, absl::Seconds(15),
          "An HTTP connection that sends or reads nothing for this long is "
          "closed (whole seconds).");
ABSL_FLAG(absl::Duration, http_head_timeout, absl::Seconds(20),
          "An HTTP request's head must arrive whole within this of its "
          "connection being ready for it (opened, or its last answer sent), "
          "and its body, past the same grace, at --http_min_body_rate_kb; "
          "otherwise the connection is closed.");
ABSL_FLAG(From1To1M, http_min_body_rate_kb, 16,
          "The slowest an HTTP request's body may arrive, in KiB a second on "
          "average, once --http_head_timeout has passed since its head.");
ABSL_FLAG(std::string, http_allowed_hosts, "",
          "Host names HTTP requests may name (comma-separated), besides "
          "localhost and the address the connection reached: a request "
          "naming another is answered 421, so that a page of another site "
          "whose name points here cannot use the API (DNS rebinding). Name "
          "the server as its clients do (a proxy's name, a Service's DNS "
          "name); \"*\" accepts any, turning the check off.");
ABSL_FLAG(absl::Duration, handshake_timeout, absl::Seconds(10),
          "A connection that has not sent the HTTP/2 preface (or completed "
          "its TLS handshake) by then is closed, so that silent connections "
          "cannot pile up.");
ABSL_FLAG(absl::Duration, max_connection_idle, absl::Minutes(10),
          "A connection with no call for this long is closed (clients "
          "reconnect when they next call).");
ABSL_FLAG(From1To1M, max_connections_per_client, 128,
          "gRPC connections open at once of one client (its user on "
          "loopback, else its address, an IPv6 /64 as one); plaintext only.");
ABSL_FLAG(From1To1M, max_connections, 10000,
          "gRPC connections open at once; past it, the client holding most "
          "gives way to a newcomer (plaintext only).");
ABSL_FLAG(From0To65536, http2_window_kb, 1024,
          "The HTTP/2 flow-control window each gRPC call gets for request "
          "bytes the server has not read yet, in KiB, fixed (0: gRPC's own, "
          "grown by its bandwidth-delay probes, which lets a client with many "
          "calls in flight have megabytes wait unread).");
ABSL_FLAG(std::string, log_level, "info",
          "What the server writes on standard output: debug (also a line "
          "for every call answered OK), info (start-up, shutdown, and a "
          "line for every call answered with an error, with its message), "
          "warning (the server's own failures: INTERNAL, UNKNOWN), error.");
ABSL_FLAG(std::string, log_format, "text",
          "text, or json: one JSON object a line (time, level, event; a "
          "call's door, method, peer, client, code, duration_ms, bytes_in, "
          "bytes_out, message).");
ABSL_FLAG(From1To1M, log_rate, 100,
          "The most log lines written a second for one client; its lines "
          "past it are dropped and counted (ptoserve_log_lines_dropped_total)"
          ". The server's own lines and warnings are never dropped.");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(10),
          "On SIGINT/SIGTERM, after the lame-duck period, how long calls in "
          "flight may take to finish before they are cancelled.");
ABSL_FLAG(absl::Duration, shutdown_delay, absl::ZeroDuration(),
          "On SIGINT/SIGTERM, how long the server first answers health checks "
          "NOT_SERVING while it still takes jobs, so that a load balancer "
          "takes it out of rotation before it refuses any (a few of the "
          "balancer's check intervals; 0: refuse at once).");
ABSL_FLAG(absl::Duration, lame_duck, absl::Milliseconds(250),
          "On SIGINT/SIGTERM, once accepted jobs are answered, how long the "
          "server still takes calls (answering UNAVAILABLE) before it closes, "
          "so that late callers can retry elsewhere instead of being cut off.");

namespace ptoserve {
namespace {

// A size flag in units of 2^`shift` bytes, in bytes.
uint64_t Bytes(int64_t units, int shift) {
  return static_cast<uint64_t>(units) << shift;
}

// The memory flags that must agree: a job within the budget, a client's
// share between the two.
void AddMemoryErrors(std::vector<std::string>* errors) {
  const int64_t job_mb = absl::GetFlag(FLAGS_max_job_mb);
  const int64_t budget_mb = absl::GetFlag(FLAGS_memory_budget_mb);
  if (job_mb > budget_mb) {
    errors->push_back(absl::StrFormat(
        "--max_job_mb=%d is more than --memory_budget_mb=%d: such a job could "
        "never be admitted",
        job_mb, budget_mb));
  }
  if (const int64_t client = absl::GetFlag(FLAGS_max_client_memory_mb);
      client != 0 && (client < job_mb || client > budget_mb)) {
    errors->push_back(absl::StrFormat(
        "--max_client_memory_mb=%d is not between --max_job_mb=%d (a client "
        "could never run its largest job) and --memory_budget_mb=%d",
        client, job_mb, budget_mb));
  }
}

// The flags that name one of a set, or the start of a name.
void AddNameErrors(std::vector<std::string>* errors) {
  if (const std::string target = absl::GetFlag(FLAGS_default_target);
      !TargetFromName(target).has_value()) {
    errors->push_back(absl::StrCat("--default_target=", target,
                                   " is not one of ", TargetNames()));
  }
  if (const std::string level = absl::GetFlag(FLAGS_log_level);
      level != "debug" && level != "info" && level != "warning" &&
      level != "error") {
    errors->push_back(absl::StrFormat(
        "--log_level=%s is not one of debug, info, warning, error", level));
  }
  if (const std::string format = absl::GetFlag(FLAGS_log_format);
      format != "text" && format != "json") {
    errors->push_back(
        absl::StrFormat("--log_format=%s is not one of text, json", format));
  }
  const std::string shm = absl::GetFlag(FLAGS_shared_memory);
  if (shm != "auto" && shm != "true" && shm != "false") {
    errors->push_back(absl::StrFormat(
        "--shared_memory=%s is not one of auto, true, false", shm));
  }
  const std::string prefix = absl::GetFlag(FLAGS_shared_memory_prefix);
  if (prefix.size() < 2 || prefix[0] != '/' ||
      prefix.find('/', 1) != std::string::npos || prefix.size() > 200) {
    errors->push_back(absl::StrFormat(
        "--shared_memory_prefix=%s is not \"/\" and the start of a name "
        "(no other \"/\", at most 200 bytes)",
        prefix));
  }
}

// The durations, each within its range.
void AddDurationErrors(std::vector<std::string>* errors) {
  if (absl::GetFlag(FLAGS_stall_timeout) < absl::ZeroDuration()) {
    errors->push_back(absl::StrFormat(
        "--stall_timeout=%s is negative",
        absl::FormatDuration(absl::GetFlag(FLAGS_stall_timeout))));
  }
  if (absl::GetFlag(FLAGS_max_job_time) <= absl::ZeroDuration() ||
      absl::GetFlag(FLAGS_max_job_time) > absl::Hours(24)) {
    errors->push_back(absl::StrFormat(
        "--max_job_time=%s is out of range (0, 24h]",
        absl::FormatDuration(absl::GetFlag(FLAGS_max_job_time))));
  }
  for (auto [flag, name, min] :
       {std::tuple{&FLAGS_shutdown_grace, "shutdown_grace",
                   absl::ZeroDuration()},
        std::tuple{&FLAGS_lame_duck, "lame_duck", absl::ZeroDuration()},
        std::tuple{&FLAGS_shutdown_delay, "shutdown_delay",
                   absl::ZeroDuration()},
        std::tuple{&FLAGS_handshake_timeout, "handshake_timeout",
                   absl::Milliseconds(100)},
        std::tuple{&FLAGS_max_connection_idle, "max_connection_idle",
                   absl::Seconds(1)},
        std::tuple{&FLAGS_shared_region_grace, "shared_region_grace",
                   absl::ZeroDuration()},
        std::tuple{&FLAGS_http_idle_timeout, "http_idle_timeout",
                   absl::Seconds(1)},
        std::tuple{&FLAGS_http_head_timeout, "http_head_timeout",
                   absl::Seconds(1)}}) {
    const absl::Duration d = absl::GetFlag(*flag);
    if (d < min || d > absl::Hours(1)) {
      errors->push_back(absl::StrFormat("--%s=%s is out of range [%s, 1h]",
                                        name, absl::FormatDuration(d),
                                        absl::FormatDuration(min)));
    }
  }
}

}  // namespace

std::vector<std::string> FlagErrors() {
  std::vector<std::string> errors;
  AddNameErrors(&errors);
  AddMemoryErrors(&errors);
  AddDurationErrors(&errors);
  return errors;
}

LogOptions LogOptionsFromFlags() {
  LogOptions o;
  const std::string level = absl::GetFlag(FLAGS_log_level);
  o.level = level == "debug"     ? LogLevel::kDebug
            : level == "warning" ? LogLevel::kWarning
            : level == "error"   ? LogLevel::kError
                                 : LogLevel::kInfo;
  o.json = absl::GetFlag(FLAGS_log_format) == "json";
  o.lines_per_second = absl::GetFlag(FLAGS_log_rate);
  return o;
}

ServerOptions OptionsFromFlags() {
  ServerOptions o;
  o.grpc.address = absl::GetFlag(FLAGS_address);
  o.grpc.handshake_timeout = absl::GetFlag(FLAGS_handshake_timeout);
  o.grpc.max_connection_idle = absl::GetFlag(FLAGS_max_connection_idle);
  o.grpc.http2_window_bytes =
      static_cast<int>(Bytes(absl::GetFlag(FLAGS_http2_window_kb), 10));
  o.grpc.max_connections_per_client =
      absl::GetFlag(FLAGS_max_connections_per_client);
  o.grpc.max_connections = absl::GetFlag(FLAGS_max_connections);
  o.http.address = absl::GetFlag(FLAGS_http_address);
  o.http.threads = absl::GetFlag(FLAGS_http_threads);
  o.http.max_connections = absl::GetFlag(FLAGS_http_max_connections);
  o.http.max_connections_per_client =
      absl::GetFlag(FLAGS_http_max_connections_per_client);
  o.http.idle_timeout = absl::GetFlag(FLAGS_http_idle_timeout);
  o.http.head_timeout = absl::GetFlag(FLAGS_http_head_timeout);
  o.http.min_body_rate = Bytes(absl::GetFlag(FLAGS_http_min_body_rate_kb), 10);
  for (absl::string_view host :
       absl::StrSplit(absl::GetFlag(FLAGS_http_allowed_hosts), ',',
                      absl::SkipWhitespace())) {
    o.http.allowed_hosts.push_back(
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(host)));
  }
  o.metrics.address = absl::GetFlag(FLAGS_metrics_address);
  o.engine.default_target = TargetFromName(absl::GetFlag(FLAGS_default_target))
                                .value_or(o.engine.default_target);
  o.engine.host_buffer_bytes = Bytes(absl::GetFlag(FLAGS_host_buffer_kb), 10);
  o.engine.limits.max_tile_bytes = Bytes(absl::GetFlag(FLAGS_max_tile_mb), 20);
  o.engine.limits.max_tiles_per_job = absl::GetFlag(FLAGS_max_tiles_per_job);
  o.engine.limits.max_instructions_per_job =
      absl::GetFlag(FLAGS_max_instructions_per_job);
  o.engine.limits.max_waits_per_instruction =
      absl::GetFlag(FLAGS_max_waits_per_instruction);
  o.engine.limits.max_assembly_bytes =
      Bytes(absl::GetFlag(FLAGS_max_assembly_kb), 10);
  o.scheduling.workers = absl::GetFlag(FLAGS_workers);
  o.scheduling.max_batch_size = absl::GetFlag(FLAGS_max_batch_size);
  o.scheduling.max_batch_bytes = Bytes(absl::GetFlag(FLAGS_max_batch_kb), 10);
  o.scheduling.max_queue_delay =
      absl::Microseconds(absl::GetFlag(FLAGS_max_queue_delay_us).value);
  o.scheduling.queue_capacity = absl::GetFlag(FLAGS_queue_capacity);
  o.scheduling.priority_levels = absl::GetFlag(FLAGS_priority_levels);
  o.scheduling.priority_aging =
      absl::Milliseconds(absl::GetFlag(FLAGS_priority_aging_ms).value);
  o.limits.max_message_bytes = Bytes(absl::GetFlag(FLAGS_max_message_mb), 20);
  o.limits.max_json_bytes = Bytes(absl::GetFlag(FLAGS_max_json_kb), 10);
  o.limits.max_job_bytes = Bytes(absl::GetFlag(FLAGS_max_job_mb), 20);
  o.limits.memory_budget_bytes =
      Bytes(absl::GetFlag(FLAGS_memory_budget_mb), 20);
  o.limits.client_memory_bytes =
      Bytes(absl::GetFlag(FLAGS_max_client_memory_mb), 20);
  o.limits.transport_memory_bytes =
      Bytes(absl::GetFlag(FLAGS_grpc_memory_mb), 20);
  o.limits.max_job_time = absl::GetFlag(FLAGS_max_job_time);
  o.limits.stream_window = absl::GetFlag(FLAGS_stream_window);
  o.limits.max_jobs_per_batch = absl::GetFlag(FLAGS_max_jobs_per_batch);
  o.limits.stall_timeout = absl::GetFlag(FLAGS_stall_timeout);
  if (const std::string shm = absl::GetFlag(FLAGS_shared_memory);
      shm != "auto") {
    o.shared_memory.enabled = shm == "true";
  }
  o.shared_memory.key_prefix = absl::GetFlag(FLAGS_shared_memory_prefix);
  o.shared_memory.max_regions = absl::GetFlag(FLAGS_max_shared_regions);
  // 0: a quarter, so that one user's regions never refuse another's.
  const uint32_t per_user = absl::GetFlag(FLAGS_max_shared_regions_per_user);
  o.shared_memory.max_regions_per_user =
      per_user != 0 ? std::min(per_user, o.shared_memory.max_regions)
                    : std::max(1u, o.shared_memory.max_regions / 4);
  o.shared_memory.lease_grace = absl::GetFlag(FLAGS_shared_region_grace);
  o.tls = {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
           absl::GetFlag(FLAGS_tls_client_ca)};
  o.auth_token_file = absl::GetFlag(FLAGS_auth_token_file);
  o.trusted_proxies = absl::GetFlag(FLAGS_trusted_proxies);
  o.tls_client_names = absl::StrSplit(absl::GetFlag(FLAGS_tls_client_names),
                                      ',', absl::SkipEmpty());
  o.reflection = absl::GetFlag(FLAGS_reflection);
  return o;
}

void NameSettingsByFlags() {
  NameSettings({
      {Setting::kAuthTokenFile, "--auth_token_file"},
      {Setting::kClientMemory, "--max_client_memory_mb"},
      {Setting::kHttpAddress, "--http_address"},
      {Setting::kHttpAllowedHosts, "--http_allowed_hosts"},
      {Setting::kHttpHeadTimeout, "--http_head_timeout"},
      {Setting::kHttpMinBodyRate, "--http_min_body_rate_kb"},
      {Setting::kLogRate, "--log_rate"},
      {Setting::kMaxJobBytes, "--max_job_mb"},
      {Setting::kMaxJsonBytes, "--max_json_kb"},
      {Setting::kMaxMessageBytes, "--max_message_mb"},
      {Setting::kMaxSharedRegions, "--max_shared_regions"},
      {Setting::kMaxSharedRegionsPerUser, "--max_shared_regions_per_user"},
      {Setting::kMemoryBudget, "--memory_budget_mb"},
      {Setting::kMetricsAddress, "--metrics_address"},
      {Setting::kQueueCapacity, "--queue_capacity"},
      {Setting::kSharedMemory, "--shared_memory"},
      {Setting::kSharedMemoryPrefix, "--shared_memory_prefix"},
      {Setting::kSharedRegionGrace, "--shared_region_grace"},
      {Setting::kStallTimeout, "--stall_timeout"},
      {Setting::kTlsCert, "--tls_cert"},
      {Setting::kTlsClientCa, "--tls_client_ca"},
      {Setting::kTlsClientNames, "--tls_client_names"},
      {Setting::kTlsKey, "--tls_key"},
      {Setting::kTrustedProxies, "--trusted_proxies"},
  });
}

ShutdownTimes ShutdownFromFlags() {
  return {absl::GetFlag(FLAGS_shutdown_grace), absl::GetFlag(FLAGS_lame_duck),
          absl::GetFlag(FLAGS_shutdown_delay)};
}

}  // namespace ptoserve
