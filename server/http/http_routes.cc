// HttpApi's callbacks and routes: a request's head checked, its body taken
// within its limit, and each route's answer.
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/quote.h"
#include "google/protobuf/util/json_util.h"
#include "server/http/http_api.h"
#include "server/http/http_callbacks.h"
#include "server/http/playground_page.h"

namespace ptoserve {

namespace {

constexpr char kJson[] = "application/json";

// A result in JSON: base64 (4/3 of the bytes), or about 20 text bytes per
// 8-byte value.
constexpr uint64_t kJsonResultFactor = 3;
// Bytes of a body past its limit read (and dropped) to answer it; more and
// the connection is closed.
constexpr uint64_t kMaxDropped = 1 << 20;

struct RouteInfo {
  HttpRoute route;
  const char* path;
  const char* method;
};
constexpr RouteInfo kRoutes[] = {
    {HttpRoute::kPage, "/", "GET"},
    {HttpRoute::kExecute, "/v1/jobs:execute", "POST"},
    {HttpRoute::kCapabilities, "/v1/capabilities", "GET"},
    {HttpRoute::kHealth, "/v1/health", "GET"},
    {HttpRoute::kLive, "/v2/health/live", "GET"},
    {HttpRoute::kReady, "/v2/health/ready", "GET"},
};

const RouteInfo* RouteOf(absl::string_view path) {
  for (const RouteInfo& r : kRoutes) {
    if (path == r.path) return &r;
  }
  return nullptr;
}

const RouteInfo* InfoOf(HttpRoute route) {
  for (const RouteInfo& r : kRoutes) {
    if (r.route == route) return &r;
  }
  return nullptr;
}

absl::string_view Header(MHD_Connection* c, const char* name) {
  const char* value = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
  return value == nullptr ? absl::string_view() : absl::string_view(value);
}

// The page's own rules: its script and style are inline, and it may talk
// to this server only; no other site may frame it.
constexpr char kPageSecurity[] =
    "default-src 'none'; script-src 'unsafe-inline'; style-src "
    "'unsafe-inline'; connect-src 'self' blob:; img-src 'self' data: blob:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

// Queues `body` with `status` (and a header `extra` = `value`).
MHD_Result Respond(MHD_Connection* c, HttpApi::Request* r, int status,
                   std::string body, const char* extra = nullptr,
                   const char* value = nullptr,
                   const char* content_type = kJson) {
  auto* text = new std::string(std::move(body));
  MHD_Response* response =
      MHD_create_response_from_buffer_with_free_callback_cls(
          text->size(), text->data(),
          [](void* owned) { delete static_cast<std::string*>(owned); }, text);
  MHD_add_response_header(response, "Content-Type", content_type);
  MHD_add_response_header(response, "Cache-Control", "no-store");
  MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
  if (extra != nullptr) MHD_add_response_header(response, extra, value);
  const MHD_Result queued = MHD_queue_response(c, status, response);
  MHD_destroy_response(response);
  r->status = status;
  return queued;
}

MHD_Result RespondError(MHD_Connection* c, HttpApi::Request* r,
                        const absl::Status& status) {
  return Respond(c, r, HttpStatusOf(status.code()), ErrorJson(status) + "\n");
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;  // compact
  // Cannot fail for the server's own messages.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

// "ipv4:127.0.0.1:40112", as gRPC names a peer.
std::string PeerOf(MHD_Connection* c) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) return "unknown";
  char host[NI_MAXHOST] = "";
  char port[NI_MAXSERV] = "";
  const sockaddr* addr = info->client_addr;
  const socklen_t length =
      addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  getnameinfo(addr, length, host, sizeof host, port, sizeof port,
              NI_NUMERICHOST | NI_NUMERICSERV);
  return absl::StrCat(addr->sa_family == AF_INET6 ? "ipv6:[" : "ipv4:", host,
                      addr->sa_family == AF_INET6 ? "]:" : ":", port);
}

}  // namespace

MHD_Result HttpApi::Callbacks::OnRequest(void* cls, MHD_Connection* c,
                                         const char* url, const char* method,
                                         const char* /*version*/,
                                         const char* upload,
                                         size_t* upload_size, void** state) {
  const auto* api = static_cast<const HttpApi*>(cls);
  auto* r = static_cast<Request*>(*state);
  if (r == nullptr) {
    r = new Request;
    *state = r;
    r->start = absl::Now();
    r->path = url;
    const RouteInfo* route = RouteOf(url);
    r->route = route != nullptr ? route->route : HttpRoute::kOther;
    if (route != nullptr && std::strcmp(method, route->method) != 0 &&
        !(std::strcmp(route->method, "GET") == 0 &&
          std::strcmp(method, "HEAD") == 0)) {
      return Respond(c, r, 405,
                     ErrorJson(absl::UnimplementedError(absl::StrFormat(
                         "%s is not allowed on %s; use %s", ShortQuote(method),
                         route->path, route->method))) +
                         "\n",
                     "Allow", route->method);
    }
    // Refused on its head: the body is never read.
    if (absl::Status head = api->Head(c, r); !head.ok()) {
      return RespondError(c, r, head);
    }
    return MHD_YES;
  }
  if (r->status != 0) {  // answered early: the rest of the body is dropped
    *upload_size = 0;
    return MHD_YES;
  }
  if (*upload_size > 0) {
    // libmicrohttpd answers only once the body is in: past the limit, or
    // the client's share, the rest is read and dropped, up to kMaxDropped,
    // then the connection is closed unanswered (a body declared too large
    // is refused on its head).
    if (r->refused.ok()) {
      r->refused = r->job->body.Append(absl::string_view(upload, *upload_size),
                                       "--max_message_mb");
      if (!r->refused.ok()) r->job->body.Discard();
    }
    if (!r->refused.ok()) {
      r->dropped += *upload_size;
      *upload_size = 0;
      return r->dropped <= kMaxDropped ? MHD_YES : MHD_NO;
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (!r->refused.ok()) return RespondError(c, r, r->refused);
  return static_cast<MHD_Result>(api->Serve(c, r));
}

void HttpApi::Callbacks::OnCompleted(void* cls, MHD_Connection* /*c*/,
                                     void** state,
                                     MHD_RequestTerminationCode /*how*/) {
  const auto* api = static_cast<const HttpApi*>(cls);
  auto* r = static_cast<Request*>(*state);
  if (r == nullptr) return;
  const RouteInfo* route = InfoOf(r->route);
  const std::string name = route != nullptr ? route->path : "other";
  api->requests_
      ->With({name, r->status != 0 ? absl::StrCat(r->status) : "none"})
      .Increment();
  api->seconds_->With({name}).Observe(
      absl::ToDoubleSeconds(absl::Now() - r->start));
  delete r;
  *state = nullptr;
}

void HttpApi::Callbacks::OnConnection(void* cls, MHD_Connection* /*c*/,
                                      void** /*socket_state*/,
                                      MHD_ConnectionNotificationCode what) {
  const auto* api = static_cast<const HttpApi*>(cls);
  api->connections_->fetch_add(what == MHD_CONNECTION_NOTIFY_STARTED ? 1 : -1);
}

absl::Status HttpApi::Head(MHD_Connection* c, Request* r) const {
  if (r->route == HttpRoute::kOther) {
    return absl::NotFoundError(absl::StrFormat(
        "no such path: %s (GET / for the playground, POST /v1/jobs:execute, "
        "GET /v1/capabilities, GET /v1/health)",
        ShortQuote(r->path, 200)));
  }
  // The page and the probes need no token (gRPC's health service asks for
  // none); what the page runs does.
  if (r->route != HttpRoute::kExecute && r->route != HttpRoute::kCapabilities) {
    return absl::OkStatus();
  }
  // A page of another site may send a request here (a browser sends the
  // Origin of the page with it): only this server's own pages may.
  if (const absl::string_view origin = Header(c, "Origin"); !origin.empty()) {
    const absl::string_view host = Header(c, "Host");
    if (origin != absl::StrCat("http://", host) &&
        origin != absl::StrCat("https://", host)) {
      return absl::PermissionDeniedError(absl::StrFormat(
          "a page of %s may not call this API (only pages this server "
          "serves may)",
          ShortQuote(origin, 200)));
    }
  }
  std::string client = absl::StrCat("http ", PeerOf(c));
  if (parts_.auth != nullptr) {
    const char* header =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const absl::string_view value = header == nullptr ? "" : header;
    const absl::string_view* sent = header == nullptr ? nullptr : &value;
    if (absl::Status checked = parts_.auth->CheckHeader(sent); !checked.ok()) {
      return absl::Status(
          checked.code(),
          absl::StrCat(checked.message(),
                       " (over HTTP: the header \"Authorization: Bearer "
                       "<token>\")"));
    }
    client = absl::StrCat("token ", parts_.auth->IdentifyHeader(sent));
  }
  if (r->route != HttpRoute::kExecute) return absl::OkStatus();
  if (!absl::StartsWith(Header(c, "Content-Type"), kJson)) {
    return absl::InvalidArgumentError(
        "the body must be a job in JSON, sent with \"Content-Type: "
        "application/json\"");
  }
  r->share = parts_.budget->ShareOf(client);
  r->job = std::make_shared<HttpJob>(parts_.budget, r->share,
                                     options_.max_body_bytes);
  uint64_t declared = 0;
  if (const absl::string_view length = Header(c, "Content-Length");
      !length.empty() && absl::SimpleAtoi(length, &declared)) {
    return r->job->body.Expect(declared, "--max_message_mb");
  }
  return absl::OkStatus();
}

int HttpApi::Serve(MHD_Connection* c, Request* r) const {
  switch (r->route) {
    case HttpRoute::kExecute:
      return ServeExecute(c, r);
    case HttpRoute::kPage:
      return Respond(c, r, 200, kPlaygroundPage, "Content-Security-Policy",
                     kPageSecurity, "text/html; charset=utf-8");
    case HttpRoute::kCapabilities:
      return Respond(c, r, 200,
                     ToJson(parts_.intake->dispatcher()->capabilities()));
    case HttpRoute::kHealth: {
      const bool ready = parts_.ready();
      return Respond(c, r, ready ? 200 : 503,
                     ready ? "{\"status\": \"SERVING\"}\n"
                           : "{\"status\": \"NOT_SERVING\"}\n");
    }
    case HttpRoute::kLive:
      return Respond(c, r, 200, "");
    case HttpRoute::kReady:
      return Respond(c, r, parts_.ready() ? 200 : 503, "");
    case HttpRoute::kOther:
      break;
  }
  return MHD_NO;  // Head refused it
}

int HttpApi::ServeExecute(MHD_Connection* c, Request* r) const {
  const std::shared_ptr<HttpJob>& job = r->job;
  if (job->started) {  // resumed: its job was answered
    absl::MutexLock lock(&job->mu);
    if (!job->status.ok()) return RespondError(c, r, job->status);
    return Respond(c, r, 200, std::move(job->json));
  }
  job->started = true;
  job->call.share = r->share;
  job->call.shared_memory = false;
  ExecuteRequest request;
  request.body = &job->body;
  request.what = "the body";
  request.call = &job->call;
  request.job = &job->job;
  request.result = &job->result;
  request.done = [budget = parts_.budget, job, c](
                     absl::StatusOr<v1::JobResult*> result,
                     MemoryBudget::Hold hold) {
    absl::Status status = result.status();
    std::string json;
    MemoryBudget::Hold json_hold;
    if (result.ok()) {
      // The JSON beside the result it is made from.
      absl::StatusOr<MemoryBudget::Hold> room = budget->Reserve(
          (*result)->ByteSizeLong() * kJsonResultFactor, job->call.share);
      if (room.ok()) {
        json_hold = *std::move(room);
        json = ToJson(**result);
      } else {
        status = room.status();
      }
    }
    absl::MutexLock lock(&job->mu);
    job->hold = std::move(hold);
    job->json_hold = std::move(json_hold);
    job->status = std::move(status);
    job->json = std::move(json);
    job->done = true;
    if (job->suspended) MHD_resume_connection(c);
  };
  // A light body is decoded, and a small job run, on this thread; the
  // others wait with their connection suspended.
  parts_.intake->Execute(std::move(request));
  absl::MutexLock lock(&job->mu);
  if (!job->done) {
    job->suspended = true;
    MHD_suspend_connection(c);
    return MHD_YES;
  }
  if (!job->status.ok()) return RespondError(c, r, job->status);
  return Respond(c, r, 200, std::move(job->json));
}

}  // namespace ptoserve
