// HttpApi's routes: a request's head checked (Host, method, Origin, token,
// content type), a job's body held as it arrives, and each route's answer.
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/setting_names.h"
#include "core/quote.h"
#include "server/http/grpc_timeout.h"
#include "server/http/http_api.h"
#include "server/http/inference_routes.h"
#include "server/http/playground_page.h"
#include "server/httpd/route_table.h"
#include "server/identity/client_address.h"
#include "server/identity/socket_owner.h"
#include "server/intake/request_body.h"
#include "server/log/log.h"

namespace ptoserve {

namespace {

constexpr char kJson[] = "application/json";
// The most a repository index request's body may be ({"ready": true}).
constexpr uint64_t kMaxIndexBody = 4096;
// A result in JSON: base64 (4/3 of the bytes), or about 20 text bytes per
// 8-byte value.
constexpr uint64_t kJsonResultFactor = 3;

// The API's routes, one table (server/httpd/route_table.h).
enum Route : int {
  kPage,
  kExecute,
  kCapabilities,
  kHealth,
  kLive,
  kReady,
  // The Open Inference Protocol's (docs/INFERENCE.md).
  kServerMetadata,
  kModelMetadata,
  kModelReady,
  kInfer,
  kRepositoryIndex,
  kNotServed,   // its extensions this server has not
  kOther = -1,  // no route's
};

const RouteTable& Routes() {
  static const RouteTable* const routes = new RouteTable({
      {kPage, "GET", "/"},
      {kExecute, "POST", "/v1/jobs:execute"},
      {kCapabilities, "GET", "/v1/capabilities"},
      {kHealth, "GET", "/v1/health"},
      {kLive, "GET", "/v2/health/live"},
      {kReady, "GET", "/v2/health/ready"},
      {kServerMetadata, "GET", "/v2"},
      {kModelMetadata, "GET", "/v2/models/{model}"},
      {kModelMetadata, "GET", "/v2/models/{model}/versions/{version}", false},
      {kModelReady, "GET", "/v2/models/{model}/ready"},
      {kModelReady, "GET", "/v2/models/{model}/versions/{version}/ready",
       false},
      {kInfer, "POST", "/v2/models/{model}/infer"},
      {kInfer, "POST", "/v2/models/{model}/versions/{version}/infer", false},
      {kRepositoryIndex, "POST", "/v2/repository/index"},
      {kNotServed, "GET", "/v2/models/{model}/config", false},
      {kNotServed, "GET", "/v2/models/{model}/stats", false},
      {kNotServed, "GET", "/v2/models/stats", false},
      {kNotServed, "POST", "/v2/repository/models/{model}/load", false},
      {kNotServed, "POST", "/v2/repository/models/{model}/unload", false},
      {kNotServed, "GET", "/v2/systemsharedmemory/status", false},
      {kNotServed, "POST", "/v2/systemsharedmemory/region/{region}/register",
       false},
      {kNotServed, "GET", "/v2/cudasharedmemory/status", false},
      {kNotServed, "POST", "/v2/cudasharedmemory/region/{region}/register",
       false},
      {kNotServed, "GET", "/v2/trace/setting", false},
      {kNotServed, "GET", "/v2/logging", false},
  });
  return *routes;
}

// The page's own rules: its script and style are inline, and it may talk
// to this server only; no other site may frame it.
constexpr char kPageSecurity[] =
    "default-src 'none'; script-src 'unsafe-inline'; style-src "
    "'unsafe-inline'; connect-src 'self' blob:; img-src 'self' data: blob:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

HttpResponse Answer(int status, std::string body,
                    const char* content_type = kJson) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.content_type = content_type;
  r.headers = {{"Cache-Control", "no-store"},
               {"X-Content-Type-Options", "nosniff"}};
  return r;
}

HttpResponse Error(const absl::Status& status) {
  return Answer(HttpStatusOf(status), ErrorJson(status) + "\n");
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;  // compact
  // Cannot fail for the server's own messages.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

}  // namespace

// One request's own, from its head to its end.
struct HttpApi::Call {
  Route route = kOther;
  // Its route's row by path alone (RouteMatch::named), which names it in
  // metrics and logs; null: no route's path.
  const HttpRoute* named = nullptr;
  // A job's: its body, held against its client's share as it arrives, the
  // job parsed from it, its result and the call as the pipeline sees it.
  std::optional<IncomingBody> body;
  v1::Job job;
  v1::JobResult result;
  CallInfo info;
  // The job's part of the budget, and its JSON's, until the answer is sent.
  MemoryBudget::Hold hold;
  MemoryBudget::Hold json_hold;
  // Why the request was refused, and who its client is, for its log line.
  std::string error;
  std::string client;
  // An Open Inference Protocol request (a path under /v2): errors in its
  // form; an inference's protocol, the model and version its path names,
  // and a repository index's body bytes, counted and dropped.
  bool oip = false;
  std::unique_ptr<RestInferProtocol> infer;
  std::string model, version;
  uint64_t dropped_bytes = 0;
};

namespace {

// Answers `exchange` with `status`'s error (as `http_status` if given),
// noting it for the log.
void Refuse(HttpExchange* exchange, HttpApi::Call* call,
            const absl::Status& status, int http_status = 0) {
  call->error = std::string(status.message());
  HttpResponse answer = call->oip ? Answer(HttpStatusOf(status),
                                           RestError(status.message()) + "\n")
                                  : Error(status);
  if (http_status != 0) answer.status = http_status;
  exchange->Respond(std::move(answer));
}

// The answer to an inference: its JSON, and the outputs asked for as
// binary after it (Inference-Header-Content-Length says where they start).
HttpResponse InferAnswer(const HttpApi::Call& call,
                         const v1::JobResult& result) {
  InferBody answer = InferAnswerBody(*call.infer, result);
  if (!answer.binary()) return Answer(200, std::move(answer.body) + "\n");
  HttpResponse r =
      Answer(200, std::move(answer.body), "application/octet-stream");
  r.headers.push_back(
      {"Inference-Header-Content-Length", absl::StrCat(answer.json_bytes)});
  return r;
}

// gRPC's name for a peer ("ipv4:127.0.0.1:40112"), of the socket's far end.
// The 404's words: the paths served here; for /metrics, where it is.
std::string NoSuchPath(absl::string_view path, absl::string_view metrics_url) {
  if (path == "/metrics") {
    return metrics_url.empty()
               ? absl::StrFormat(
                     "no such path: \"/metrics\": the metrics "
                     "are off (%s is empty)",
                     SettingName(Setting::kMetricsAddress))
               : absl::StrFormat(
                     "no such path: \"/metrics\": the metrics "
                     "are served at %s (%s), not on this port",
                     metrics_url, SettingName(Setting::kMetricsAddress));
  }
  return absl::StrFormat(
      "no such path: %s (this server's: %s; GET / is the "
      "playground)",
      ShortQuote(path, 200), Routes().Listing());
}

std::string PeerOf(int fd) {
  std::string name = PeerName(fd);
  return name.empty() ? "an unknown peer" : name;
}

}  // namespace

absl::Status HttpApi::Admit(HttpExchange* exchange, Call* call) const {
  // A page of another site may send a request here (a browser sends the
  // Origin of the page with it): only this server's own pages may. The
  // Host was checked already, so it names this server.
  if (const absl::string_view origin = exchange->header("Origin");
      !origin.empty()) {
    const absl::string_view host = exchange->header("Host");
    if (origin != absl::StrCat("http://", host) &&
        origin != absl::StrCat("https://", host)) {
      return absl::PermissionDeniedError(absl::StrFormat(
          "a page of %s may not call this API (only pages this server "
          "serves may)",
          ShortQuote(origin, 200)));
    }
  }
  std::string client;
  if (parts_.auth != nullptr) {
    const absl::string_view value = exchange->header("Authorization");
    const absl::string_view* sent = value.empty() ? nullptr : &value;
    if (absl::Status checked = parts_.auth->CheckHeader(sent); !checked.ok()) {
      return absl::Status(
          checked.code(),
          absl::StrCat(checked.message(),
                       " (over HTTP: the header \"Authorization: Bearer "
                       "<token>\")"));
    }
    client = absl::StrCat("token ", parts_.auth->IdentifyHeader(sent));
  } else {
    // Its connection's client, found as it was accepted: its user on
    // loopback, else its address, as for gRPC's calls; through a trusted
    // proxy, the client its X-Forwarded-For names.
    client = ForwardedClient(exchange->client(),
                             exchange->header("X-Forwarded-For"));
  }
  call->client = client;
  if (call->route != kExecute && call->route != kInfer) {
    return absl::OkStatus();
  }
  if (call->route == kExecute &&
      !absl::StartsWith(exchange->header("Content-Type"), kJson)) {
    return absl::InvalidArgumentError(
        "the body must be a job in JSON, sent with \"Content-Type: "
        "application/json\"");
  }
  if (call->route == kInfer) {
    if (absl::Status typed =
            CheckInferContentType(exchange->header("Content-Type"));
        !typed.ok()) {
      return typed;
    }
  }
  call->info.share = parts_.budget->ShareOf(client);
  call->info.shared_memory = false;
  if (const absl::string_view timeout = exchange->header("grpc-timeout");
      !timeout.empty()) {
    absl::StatusOr<absl::Duration> d = GrpcTimeout(timeout);
    if (!d.ok()) return d.status();
    call->info.deadline = exchange->start() + *d;
  }
  const ServiceLimits& limits = parts_.intake->limits();
  uint64_t most = std::min(limits.max_json_bytes, limits.max_message_bytes);
  if (call->route == kInfer) {
    absl::StatusOr<uint64_t> json = InferJsonBytes(
        exchange->header("Inference-Header-Content-Length"), limits);
    if (!json.ok()) return json.status();
    // Binary tensor data after the JSON: within a message's limit.
    const bool header = *json != 0;
    if (header) most = limits.max_message_bytes;
    call->infer = std::make_unique<RestInferProtocol>(
        parts_.models, call->model, call->version, *json, header);
  }
  call->body.emplace(BodyFormat::kJson, parts_.budget, call->info.share, most);
  uint64_t declared = 0;
  if (absl::SimpleAtoi(exchange->header("Content-Length"), &declared)) {
    return call->body->Expect(declared, body_limit_);
  }
  return absl::OkStatus();
}

void HttpApi::OnHead(const std::shared_ptr<HttpExchange>& exchange) {
  auto call = std::make_shared<Call>();
  exchange->state = call;
  const RouteMatch match = Routes().Find(exchange->method(), exchange->path());
  call->route = match.route != nullptr ? Route(match.route->id) : kOther;
  call->named = match.named;
  call->oip =
      exchange->path() == "/v2" || absl::StartsWith(exchange->path(), "/v2/");
  call->model = std::string(match.param("model"));
  call->version = std::string(match.param("version"));
  if (!exchange->host_allowed()) {
    return Refuse(
        exchange.get(), call.get(),
        absl::PermissionDeniedError(absl::StrFormat(
            "Host %s is not a name of this server, which answers to "
            "localhost, the address a connection reached and %s (a page of "
            "another site whose name points here may not use it)",
            ShortQuote(exchange->header("Host"), 200),
            SettingName(Setting::kHttpAllowedHosts))),
        421);
  }
  if (match.route == nullptr && match.allow.empty()) {
    return Refuse(
        exchange.get(), call.get(),
        absl::NotFoundError(NoSuchPath(exchange->path(), parts_.metrics_url)));
  }
  if (match.route == nullptr) {
    const absl::Status wrong = absl::UnimplementedError(absl::StrFormat(
        "%s is not allowed on %s; use %s", ShortQuote(exchange->method()),
        ShortQuote(exchange->path(), 200), match.allow));
    call->error = std::string(wrong.message());
    HttpResponse refused = Error(wrong);
    refused.status = 405;
    refused.headers.push_back({"Allow", match.allow});
    return exchange->Respond(std::move(refused));
  }
  // The page and the probes need no token (gRPC's health service asks for
  // none), and are answered here, behind no parse.
  switch (call->route) {
    case kPage: {
      HttpResponse page =
          Answer(200, kPlaygroundPage, "text/html; charset=utf-8");
      page.headers.push_back({"Content-Security-Policy", kPageSecurity});
      return exchange->Respond(std::move(page));
    }
    case kHealth: {
      const bool ready = parts_.ready();
      return exchange->Respond(
          Answer(ready ? 200 : 503, ready ? "{\"status\": \"SERVING\"}\n"
                                          : "{\"status\": \"NOT_SERVING\"}\n"));
    }
    case kLive:
      return exchange->Respond(Answer(200, ""));
    case kReady:
      return exchange->Respond(Answer(parts_.ready() ? 200 : 503, ""));
    default:
      break;
  }
  if (absl::Status admitted = Admit(exchange.get(), call.get());
      !admitted.ok()) {
    return Refuse(exchange.get(), call.get(), admitted);
  }
  if (call->route == kCapabilities) {
    exchange->Respond(
        Answer(200, ToJson(parts_.intake->dispatcher()->capabilities())));
  }
  if (call->oip) AnswerMetadata(exchange.get(), call.get());
}

void HttpApi::AnswerMetadata(HttpExchange* exchange, Call* call) const {
  absl::StatusOr<std::string> answer;
  switch (call->route) {
    case kServerMetadata:
      answer = RestServerMetadata(ServerMetadataOf());
      break;
    case kModelMetadata:
    case kModelReady:
      answer = ModelAnswer(*parts_.models, call->model, call->version,
                           call->route == kModelMetadata, parts_.ready());
      break;
    case kNotServed:
      answer = NotServed(exchange->method(), exchange->path());
      break;
    default:
      return;  // a body first (infer, the repository index)
  }
  if (!answer.ok()) {
    // A model not ready is 400, as the protocol's readiness answers it.
    return Refuse(
        exchange, call, answer.status(),
        answer.status().code() == absl::StatusCode::kUnavailable ? 400 : 0);
  }
  exchange->Respond(
      Answer(200, answer->empty() ? "" : *std::move(answer) + "\n"));
}

void HttpApi::OnBody(const std::shared_ptr<HttpExchange>& exchange,
                     absl::string_view piece) {
  auto* call = static_cast<Call*>(exchange->state.get());
  if (call->route == kRepositoryIndex && exchange->status() == 0) {
    // Its body ({"ready": true}) changes nothing while every model is
    // ready: counted and dropped, a small one only.
    call->dropped_bytes += piece.size();
    if (call->dropped_bytes > kMaxIndexBody) {
      Refuse(exchange.get(), call,
             absl::InvalidArgumentError(absl::StrFormat(
                 "a repository index request's body is at most %u bytes",
                 kMaxIndexBody)));
    }
    return;
  }
  if (!call->body.has_value()) return;
  if (absl::Status taken = call->body->Append(piece, body_limit_);
      !taken.ok()) {
    call->body->Discard();
    Refuse(exchange.get(), call, taken);
  }
}

void HttpApi::OnComplete(const std::shared_ptr<HttpExchange>& exchange) {
  auto call = std::static_pointer_cast<Call>(exchange->state);
  if ((call->route == kExecute || call->route == kInfer) &&
      call->body.has_value()) {
    Execute(exchange, call);
  }
  if (call->route == kRepositoryIndex && exchange->status() == 0) {
    exchange->Respond(
        Answer(200, RestRepositoryIndex(parts_.models->Index()) + "\n"));
  }
}

void HttpApi::Execute(const std::shared_ptr<HttpExchange>& exchange,
                      const std::shared_ptr<Call>& call) const {
  // The caller has gone once its connection closes while the job waits.
  call->info.cancelled = [weak = std::weak_ptr<HttpExchange>(exchange)] {
    const std::shared_ptr<HttpExchange> alive = weak.lock();
    return alive == nullptr || alive->gone();
  };
  ExecuteRequest request;
  request.body = &*call->body;
  request.what = "the body";
  request.call = &call->info;
  request.job = &call->job;
  request.result = &call->result;
  request.protocol = call->infer.get();
  request.done = [budget = parts_.budget, exchange, call](
                     absl::StatusOr<JobReply*> reply, MemoryBudget::Hold hold) {
    call->hold = std::move(hold);
    if (!reply.ok()) {
      return Refuse(exchange.get(), call.get(), reply.status());
    }
    const v1::JobResult& result = *(*reply)->Message();
    // The JSON beside the result it is made from.
    absl::StatusOr<MemoryBudget::Hold> room = budget->Reserve(
        result.ByteSizeLong() * kJsonResultFactor, call->info.share);
    if (!room.ok()) return Refuse(exchange.get(), call.get(), room.status());
    call->json_hold = *std::move(room);
    exchange->Respond(call->infer != nullptr ? InferAnswer(*call, result)
                                             : Answer(200, ToJson(result)));
  };
  // A light body is decoded, and a small job run, on this thread; the
  // others are answered from the thread that finishes them.
  parts_.intake->Execute(std::move(request));
}

void HttpApi::OnEnd(const std::shared_ptr<HttpExchange>& exchange) {
  auto* call = static_cast<Call*>(exchange->state.get());
  // Named by its pattern, never by the path a client sent.
  const std::string name =
      call->named != nullptr ? call->named->pattern : "other";
  const int status = exchange->status();
  const std::string code = status != 0 ? absl::StrCat(status) : "none";
  const absl::Duration took = absl::Now() - exchange->start();
  requests_->With({name, code}).Increment();
  seconds_->With({name}).Observe(absl::ToDoubleSeconds(took));
  CallLine line;
  line.ok = status != 0 && status < 400;
  line.server_fault = status >= 500 && status != 503;
  Log& log = Log::Get();
  if (log.Enabled(Log::LevelOf(line))) {
    const std::string peer = PeerOf(exchange->socket());
    line.door = "http";
    line.method = name;
    line.peer = peer;
    // A call refused before its client was asked for (a path that is not
    // a route, a foreign Host) is its connection's: its log lines spend
    // that client's rate, not its address's. Kept here: the line only
    // views it.
    const std::string client =
        !call->client.empty()
            ? call->client
            : ForwardedClient(exchange->client(),
                              exchange->header("X-Forwarded-For"));
    line.client = client;
    line.code = code;
    line.message = status == 0
                       ? absl::string_view("the connection closed first")
                       : absl::string_view(call->error);
    line.took = took;
    line.bytes_in = exchange->bytes_received();
    line.bytes_out = exchange->bytes_sent();
    log.Called(line);
  }
  exchange->state.reset();
}

}  // namespace ptoserve
