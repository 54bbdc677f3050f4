// HttpApi's routes: what each path does with its request.
#include <civetweb.h>

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "core/quote.h"
#include "google/protobuf/util/json_util.h"
#include "server/http/http_api.h"
#include "server/http/json_scan.h"

namespace ptoserve {

using http_internal::Send;
using http_internal::SendError;

namespace {

constexpr char kJson[] = "application/json";

// Parsing JSON into a Job holds the body, protobuf's binary form of it and
// the message: a number of two text bytes ("1,") becomes an 8-byte double
// twice over, and the parser's buffers grow by doubling. A 16 MiB body of
// such numbers peaked at 18.4 bytes per body byte; 20 are reserved from the
// caller's share while it parses (ScanJson bounds the objects, whose
// messages would cost more).
constexpr uint64_t kJsonParseFactor = 20;
// A job's JSON nests 4 deep (job, tiles, a tile, its values).
constexpr size_t kMaxJsonDepth = 8;
// A result in JSON: base64 (4/3 of the bytes), or about 20 text bytes per
// 8-byte value.
constexpr uint64_t kJsonResultFactor = 3;

absl::string_view Header(mg_connection* c, const char* name) {
  const char* value = mg_get_header(c, name);
  return value == nullptr ? absl::string_view() : absl::string_view(value);
}

bool MethodIs(mg_connection* c, const char* method) {
  return std::strcmp(mg_get_request_info(c)->request_method, method) == 0;
}

// 405 unless the request's method is `method` (or HEAD for GET).
bool MethodAllowed(mg_connection* c, const char* method, int* status) {
  if (MethodIs(c, method) ||
      (std::strcmp(method, "GET") == 0 && MethodIs(c, "HEAD"))) {
    return true;
  }
  *status = Send(c, 405, kJson,
                 ErrorJson(absl::UnimplementedError(absl::StrFormat(
                     "%s is not allowed on %s; use %s",
                     mg_get_request_info(c)->request_method,
                     mg_get_request_info(c)->local_uri, method))) +
                     "\n",
                 absl::StrCat("Allow: ", method, "\r\n"));
  return false;
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;  // compact
  // Cannot fail for the server's own messages.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

// Shared memory names objects on the server's machine, for callers on it
// that have gRPC: the API carries every tile in its body.
absl::Status RefuseSharedMemory(const v1::Job& job) {
  for (const auto& [name, tile] : job.tiles()) {
    if (tile.has_shared()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "tiles[%s].shared: shared memory is served over gRPC only; send "
          "the tile's data, values or fill",
          ShortQuote(name)));
    }
  }
  if (!job.output_regions().empty()) {
    return absl::FailedPreconditionError(
        "output_regions: shared memory is served over gRPC only; results "
        "come back in the response");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status HttpApi::Admit(mg_connection* c, std::string* client) const {
  // A page of another site may send a simple request here (a browser
  // sends the Origin of the page with it): only this server's own page
  // may.
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
  const mg_request_info* info = mg_get_request_info(c);
  *client = absl::StrCat("http ", info->remote_addr, ":", info->remote_port);
  if (parts_.auth == nullptr) return absl::OkStatus();
  const char* header = mg_get_header(c, "Authorization");
  absl::string_view value = header == nullptr ? "" : header;
  absl::Status checked = parts_.auth->CheckHeader(header ? &value : nullptr);
  if (!checked.ok()) {
    return absl::Status(
        checked.code(),
        absl::StrCat(checked.message(),
                     " (over HTTP: the header \"Authorization: Bearer "
                     "<token>\")"));
  }
  *client = absl::StrCat("token ", parts_.auth->IdentifyHeader(&value));
  return absl::OkStatus();
}

absl::StatusOr<std::string> HttpApi::ReadBody(mg_connection* c) const {
  const int64_t declared = mg_get_request_info(c)->content_length;
  const uint64_t limit = options_.max_body_bytes;
  if (declared > 0 && static_cast<uint64_t>(declared) > limit) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the body is %d bytes, over the limit of %u (--max_message_mb)",
        declared, limit));
  }
  const absl::Time deadline = absl::Now() + options_.request_timeout;
  std::string body;
  if (declared > 0) body.reserve(declared);
  char chunk[16384];
  while (true) {
    const int n = mg_read(c, chunk, sizeof chunk);
    if (n == 0) break;
    if (n < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the body ended after %u bytes, before its end", body.size()));
    }
    if (body.size() + n > limit) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the body is over the limit of %u bytes (--max_message_mb)", limit));
    }
    body.append(chunk, n);
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "the body took longer than %s to arrive (--http_request_timeout)",
          absl::FormatDuration(options_.request_timeout)));
    }
  }
  if (declared >= 0 && body.size() != static_cast<uint64_t>(declared)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the body has %u of the %d bytes its Content-Length "
                        "declares",
                        body.size(), declared));
  }
  return body;
}

int HttpApi::ServeExecute(mg_connection* c) const {
  int status = 0;
  if (!MethodAllowed(c, "POST", &status)) return status;
  std::string client;
  if (absl::Status admitted = Admit(c, &client); !admitted.ok()) {
    return SendError(c, admitted);
  }
  if (!absl::StartsWith(Header(c, "Content-Type"), kJson)) {
    return SendError(c, absl::InvalidArgumentError(
                            "the body must be a job in JSON, sent with "
                            "\"Content-Type: application/json\""));
  }
  std::shared_ptr<MemoryBudget::Share> share = parts_.budget->ShareOf(client);
  absl::StatusOr<std::string> body = ReadBody(c);
  if (!body.ok()) return SendError(c, body.status());
  const EngineLimits& limits = parts_.dispatcher->job_limits();
  // The job, its two maps, and per tile its own object and a slice's.
  const JsonBounds bounds{
      8 + 4 * limits.max_tiles_per_job + limits.max_instructions_per_job,
      kMaxJsonDepth};
  if (absl::Status scanned = ScanJson(*body, bounds); !scanned.ok()) {
    return SendError(c, scanned);
  }
  v1::Job job;
  {
    absl::StatusOr<MemoryBudget::Hold> parsing =
        parts_.budget->Reserve(body->size() * kJsonParseFactor, share);
    if (!parsing.ok()) return SendError(c, parsing.status());
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    const auto parsed =
        google::protobuf::util::JsonStringToMessage(*body, &job, options);
    if (!parsed.ok()) {
      return SendError(c, absl::InvalidArgumentError(absl::StrCat(
                              "the body is not a ptoserve.v1.Job in JSON: ",
                              std::string(parsed.message()))));
    }
  }
  body->clear();
  body->shrink_to_fit();
  if (absl::Status local = RefuseSharedMemory(job); !local.ok()) {
    return SendError(c, local);
  }
  CallInfo call;
  call.share = share;
  call.caller_uid = []() -> absl::StatusOr<uid_t> {
    return absl::FailedPreconditionError(
        "shared memory is served over gRPC only");
  };
  // Shared with `done`, which may still be returning on another thread
  // when this one has its answer.
  struct Outcome {
    absl::Notification done;
    absl::Status status;
    std::string json;
    MemoryBudget::Hold hold;
  };
  auto outcome = std::make_shared<Outcome>();
  v1::JobResult result;
  JobRequest request;
  request.job = &job;
  request.request_bytes = job.ByteSizeLong();
  request.call = &call;
  request.run_here = true;
  request.result = &result;
  request.done = [budget = parts_.budget, outcome, share](
                     absl::StatusOr<v1::JobResult*> r,
                     MemoryBudget::Hold hold) {
    outcome->hold = std::move(hold);
    if (r.ok()) {
      // The JSON beside the result it is made from.
      absl::StatusOr<MemoryBudget::Hold> json =
          budget->Reserve((*r)->ByteSizeLong() * kJsonResultFactor, share);
      if (json.ok()) {
        outcome->json = ToJson(**r);
      } else {
        outcome->status = json.status();
      }
    } else {
      outcome->status = r.status();
    }
    outcome->done.Notify();
  };
  const Dispatched dispatched = parts_.dispatcher->Dispatch(std::move(request));
  if (!dispatched.status.ok()) return SendError(c, dispatched.status);
  outcome->done.WaitForNotification();
  if (!outcome->status.ok()) return SendError(c, outcome->status);
  return Send(c, 200, kJson, outcome->json);
}

int HttpApi::ServeCapabilities(mg_connection* c) const {
  int status = 0;
  if (!MethodAllowed(c, "GET", &status)) return status;
  std::string client;
  if (absl::Status admitted = Admit(c, &client); !admitted.ok()) {
    return SendError(c, admitted);
  }
  return Send(c, 200, kJson, ToJson(parts_.dispatcher->capabilities()));
}

// Health needs no token, as gRPC's health service does not: probes and
// load balancers carry none.
int HttpApi::ServeHealth(mg_connection* c) const {
  int status = 0;
  if (!MethodAllowed(c, "GET", &status)) return status;
  const bool ready = parts_.ready();
  return Send(c, ready ? 200 : 503, kJson,
              ready ? "{\"status\": \"SERVING\"}\n"
                    : "{\"status\": \"NOT_SERVING\"}\n");
}

int HttpApi::ServeLive(mg_connection* c) const {
  int status = 0;
  if (!MethodAllowed(c, "GET", &status)) return status;
  return Send(c, 200, kJson, "");
}

int HttpApi::ServeReady(mg_connection* c) const {
  int status = 0;
  if (!MethodAllowed(c, "GET", &status)) return status;
  return Send(c, parts_.ready() ? 200 : 503, kJson, "");
}

int HttpApi::ServeOther(mg_connection* c) const {
  return SendError(
      c, absl::NotFoundError(absl::StrFormat(
             "no such path: %s (POST /v1/jobs:execute, GET /v1/capabilities, "
             "GET /v1/health)",
             ShortQuote(mg_get_request_info(c)->local_uri, 200))));
}

}  // namespace ptoserve
