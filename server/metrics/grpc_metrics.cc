#include "server/metrics/grpc_metrics.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message_lite.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "server/log/log.h"

namespace ptoserve {

namespace {

using grpc::experimental::InterceptionHookPoints;

// "unary", "client_stream", "server_stream", "bidi_stream": the grpc_type
// values of Prometheus's gRPC middlewares.
absl::string_view TypeName(bool client_streaming, bool server_streaming) {
  if (client_streaming && server_streaming) return "bidi_stream";
  if (client_streaming) return "client_stream";
  if (server_streaming) return "server_stream";
  return "unary";
}

// Counts one call. gRPC makes one per call and deletes it when the call is
// done.
//
// gRPC creates it, runs its hooks and destroys it one after another, often
// on different threads, handing it over through queues ThreadSanitizer
// cannot see; each step reports that handover to it (common/mutex.h).
class CallCounter final : public grpc::experimental::Interceptor {
 public:
  CallCounter(const GrpcMetrics::Method* method,
              const grpc::ServerContextBase* context)
      : method_(method), count_(method, context) {
    TsanReleasing(this);
  }
  ~CallCounter() override {
    TsanAcquired(this);
    // The call's context may be gone by now.
    count_.SetContext(nullptr);
    count_.Ended();
  }

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    TsanAcquired(this);
    // The read that finds the end of a stream has no message.
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::POST_RECV_MESSAGE)) {
      if (void* message = methods->GetRecvMessage()) {
        count_.Received(ReceivedBytes(message));
      }
    }
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      // Serialized here, once: gRPC sends these bytes.
      const grpc::ByteBuffer* bytes = methods->GetSerializedSendMessage();
      count_.Sent(bytes != nullptr ? bytes->Length() : 0);
    }
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      count_.Answered(status.error_code(), status.error_message());
    }
    TsanReleasing(this);
    methods->Proceed();
  }

 private:
  // The size of a received message as it came: its bytes, or its parsed
  // message's serialized size (protobuf computes it from the fields).
  uint64_t ReceivedBytes(void* message) const {
    switch (method_->requests) {
      case GrpcMetrics::Requests::kBytes:
        return static_cast<grpc::ByteBuffer*>(message)->Length();
      case GrpcMetrics::Requests::kParsed:
        return static_cast<google::protobuf::MessageLite*>(message)
            ->ByteSizeLong();
      case GrpcMetrics::Requests::kUnknown:
        break;
    }
    return 0;
  }

  const GrpcMetrics::Method* const method_;
  CallCount count_;
};

// go-grpc-prometheus's default buckets (Prometheus's DefBuckets), with
// finer ones below 5 ms, where a small call's whole time lies.
const std::vector<double>& HandlingBounds() {
  static const auto* bounds = new std::vector<double>{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
  return *bounds;
}

}  // namespace

void GrpcMetrics::Method::Handled(int code, absl::Duration took) const {
  if (code < 0 || code >= 17) code = grpc::StatusCode::UNKNOWN;
  handled[code]->Increment();
  Histogram* seconds = seconds_[code].load(std::memory_order_acquire);
  if (seconds == nullptr) {
    // The family hands two racing threads the same series.
    seconds = &seconds_family_->With(
        {labels_[0], labels_[1], labels_[2],
         absl::StatusCodeToString(static_cast<absl::StatusCode>(code))});
    seconds_[code].store(seconds, std::memory_order_release);
  }
  seconds->Observe(absl::ToDoubleSeconds(took));
}

GrpcMetrics::GrpcMetrics(MetricsRegistry* registry,
                         const std::vector<std::string>& services,
                         const std::vector<std::string>& byte_methods)
    : started_(registry->AddCounter(
          "grpc_server_started_total", "RPCs started on the server, by method.",
          {"grpc_type", "grpc_service", "grpc_method"})),
      handled_(registry->AddCounter(
          "grpc_server_handled_total",
          "RPCs completed on the server, by method and status code.",
          {"grpc_type", "grpc_service", "grpc_method", "grpc_code"})),
      received_(
          registry->AddCounter("grpc_server_msg_received_total",
                               "Messages received from clients, by method.",
                               {"grpc_type", "grpc_service", "grpc_method"})),
      sent_(registry->AddCounter("grpc_server_msg_sent_total",
                                 "Messages sent to clients, by method.",
                                 {"grpc_type", "grpc_service", "grpc_method"})),
      received_bytes_(registry->AddCounter(
          "grpc_server_msg_received_bytes_total",
          "Bytes of the messages received from clients (serialized, "
          "uncompressed), by method.",
          {"grpc_type", "grpc_service", "grpc_method"})),
      sent_bytes_(registry->AddCounter(
          "grpc_server_msg_sent_bytes_total",
          "Bytes of the messages sent to clients (serialized, "
          "uncompressed), by method.",
          {"grpc_type", "grpc_service", "grpc_method"})),
      seconds_(registry->AddHistogram(
          "grpc_server_handling_seconds",
          "How long RPCs took on the server, from their start to their "
          "status sent, by method and status code.",
          {"grpc_type", "grpc_service", "grpc_method", "grpc_code"},
          HandlingBounds())) {
  const google::protobuf::DescriptorPool* pool =
      google::protobuf::DescriptorPool::generated_pool();
  for (const std::string& name : services) {
    const google::protobuf::ServiceDescriptor* service =
        pool->FindServiceByName(name);
    if (service == nullptr) continue;
    for (int i = 0; i < service->method_count(); ++i) {
      const google::protobuf::MethodDescriptor* m = service->method(i);
      MakeMethod(&methods_[absl::StrCat("/", name, "/", m->name())], name,
                 m->name(),
                 TypeName(m->client_streaming(), m->server_streaming()));
    }
  }
  for (auto& [name, m] : methods_) {
    const absl::string_view service =
        absl::string_view(name).substr(0, name.rfind('/') + 1);
    if (std::find(byte_methods.begin(), byte_methods.end(), name) !=
            byte_methods.end() ||
        std::find(byte_methods.begin(), byte_methods.end(), service) !=
            byte_methods.end()) {
      m.requests = Requests::kBytes;
    }
  }
  MakeMethod(&unknown_, "unknown", "unknown", "unknown");
  unknown_.requests = Requests::kUnknown;
  registry->AddGauge("ptoserve_grpc_active_calls",
                     "gRPC calls open now (started, not yet handled), "
                     "streams included.",
                     {}, [this] { return Open(/*streaming=*/false); });
  registry->AddGauge("ptoserve_grpc_active_streams",
                     "Streaming gRPC calls open now.", {},
                     [this] { return Open(/*streaming=*/true); });
}

void GrpcMetrics::MakeMethod(Method* m, absl::string_view service,
                             absl::string_view method, absl::string_view type) {
  const LabelValues labels = {type, service, method};
  m->started = &started_->With(labels);
  m->received = &received_->With(labels);
  m->sent = &sent_->With(labels);
  m->received_bytes = &received_bytes_->With(labels);
  m->sent_bytes = &sent_bytes_->With(labels);
  m->streaming = type != "unary";
  for (int code = 0; code < 17; ++code) {
    m->handled[code] = &handled_->With(
        {type, service, method,
         absl::StatusCodeToString(static_cast<absl::StatusCode>(code))});
  }
  m->seconds_family_ = seconds_;
  m->labels_ = {std::string(type), std::string(service), std::string(method)};
  m->path = absl::StrCat("/", service, "/", method);
}

double GrpcMetrics::Open(bool streaming) const {
  // Handled first: every call handled by then had started, so the
  // difference is never below the calls open.
  uint64_t handled = 0;
  uint64_t started = 0;
  for (const auto& [name, m] : methods_) {
    if (streaming && !m.streaming) continue;
    for (const Counter* c : m.handled) handled += c->value();
  }
  if (!streaming) {
    for (const Counter* c : unknown_.handled) handled += c->value();
  }
  for (const auto& [name, m] : methods_) {
    if (streaming && !m.streaming) continue;
    started += m.started->value();
  }
  if (!streaming) started += unknown_.started->value();
  return started > handled ? static_cast<double>(started - handled) : 0;
}

grpc::experimental::Interceptor* GrpcMetrics::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  const absl::string_view name(info->method());
  if (by_handler_.contains(name)) return nullptr;
  auto it = methods_.find(name);
  return new CallCounter(it == methods_.end() ? &unknown_ : &it->second,
                         info->server_context());
}

const GrpcMetrics::Method* GrpcMetrics::CountedByHandler(
    absl::string_view method) {
  auto it = methods_.find(method);
  if (it == methods_.end()) return nullptr;
  by_handler_.insert(std::string(method));
  return &it->second;
}

CallCount::CallCount(const GrpcMetrics::Method* method,
                     const grpc::ServerContextBase* context)
    : method_(method), context_(context) {
  if (method_ == nullptr) return;
  start_ = absl::Now();
  method_->started->Increment();
}

void CallCount::Received(uint64_t bytes) {
  if (method_ == nullptr) return;
  method_->received->Increment();
  method_->received_bytes->Increment(bytes);
  bytes_in_.fetch_add(bytes, std::memory_order_relaxed);
}

void CallCount::Sent(uint64_t bytes) {
  if (method_ == nullptr) return;
  method_->sent->Increment();
  method_->sent_bytes->Increment(bytes);
  bytes_out_.fetch_add(bytes, std::memory_order_relaxed);
}

void CallCount::Answered(int code, absl::string_view message) {
  if (method_ == nullptr || answered_) return;
  answered_ = true;
  method_->Handled(code, absl::Now() - start_);
  Logged(code, message);
}

void CallCount::Ended() {
  if (method_ == nullptr || answered_) return;
  answered_ = true;
  method_->Handled(grpc::StatusCode::CANCELLED, absl::Now() - start_);
  Logged(grpc::StatusCode::CANCELLED, "the client went away unanswered");
}

void CallCount::Logged(int code, absl::string_view message) const {
  if (code < 0 || code >= 17) code = grpc::StatusCode::UNKNOWN;
  CallLine line;
  line.ok = code == grpc::StatusCode::OK;
  line.server_fault = code == grpc::StatusCode::INTERNAL ||
                      code == grpc::StatusCode::UNKNOWN ||
                      code == grpc::StatusCode::DATA_LOSS;
  Log& log = Log::Get();
  // Nothing is made for a line that would not be written.
  if (!log.Enabled(Log::LevelOf(line))) return;
  const std::string peer = context_ != nullptr ? context_->peer() : "";
  const std::string code_name =
      absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  line.door = "grpc";
  line.method = method_->path;
  line.peer = peer.empty() ? absl::string_view("an unknown peer")
                           : absl::string_view(peer);
  line.client = client_;
  line.code = code_name;
  line.message = message;
  line.took = absl::Now() - start_;
  line.bytes_in = bytes_in_.load(std::memory_order_relaxed);
  line.bytes_out = bytes_out_.load(std::memory_order_relaxed);
  log.Called(line);
}

}  // namespace ptoserve
