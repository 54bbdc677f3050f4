#include "server/metrics/grpc_metrics.h"

#include <google/protobuf/descriptor.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/mutex.h"

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
// cannot see; each step reports that handover to it (server/mutex.h).
class CallCounter final : public grpc::experimental::Interceptor {
 public:
  explicit CallCounter(const GrpcMetrics::Method* method)
      : method_(method), start_(absl::Now()) {
    method_->started->Increment();
    TsanReleasing(this);
  }
  // A call that ends without sending a status (its client went away) is
  // counted as CANCELLED, handled when it ends.
  ~CallCounter() override {
    TsanAcquired(this);
    if (!handled_) {
      method_->handled[grpc::StatusCode::CANCELLED]->Increment();
      method_->seconds->Observe(absl::ToDoubleSeconds(absl::Now() - start_));
    }
  }

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    TsanAcquired(this);
    // The read that finds the end of a stream has no message.
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() != nullptr) {
      method_->received->Increment();
    }
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      method_->sent->Increment();
    }
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_STATUS)) {
      const int code = methods->GetSendStatus().error_code();
      method_
          ->handled[code >= 0 && code < 17 ? code : grpc::StatusCode::UNKNOWN]
          ->Increment();
      method_->seconds->Observe(absl::ToDoubleSeconds(absl::Now() - start_));
      handled_ = true;
    }
    TsanReleasing(this);
    methods->Proceed();
  }

 private:
  const GrpcMetrics::Method* const method_;
  const absl::Time start_;
  bool handled_ = false;
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

GrpcMetrics::GrpcMetrics(MetricsRegistry* registry,
                         const std::vector<std::string>& services)
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
      seconds_(registry->AddHistogram(
          "grpc_server_handling_seconds",
          "How long RPCs took on the server, from their start to their "
          "status sent, by method.",
          {"grpc_type", "grpc_service", "grpc_method"}, HandlingBounds())) {
  const google::protobuf::DescriptorPool* pool =
      google::protobuf::DescriptorPool::generated_pool();
  for (const std::string& name : services) {
    const google::protobuf::ServiceDescriptor* service =
        pool->FindServiceByName(name);
    if (service == nullptr) continue;
    for (int i = 0; i < service->method_count(); ++i) {
      const google::protobuf::MethodDescriptor* m = service->method(i);
      methods_.emplace(
          absl::StrCat("/", name, "/", m->name()),
          MakeMethod(name, m->name(),
                     TypeName(m->client_streaming(), m->server_streaming())));
    }
  }
  unknown_ = MakeMethod("unknown", "unknown", "unknown");
}

GrpcMetrics::Method GrpcMetrics::MakeMethod(absl::string_view service,
                                            absl::string_view method,
                                            absl::string_view type) {
  Method m;
  m.started = &started_->With({type, service, method});
  m.received = &received_->With({type, service, method});
  m.sent = &sent_->With({type, service, method});
  m.seconds = &seconds_->With({type, service, method});
  for (int code = 0; code < 17; ++code) {
    m.handled[code] = &handled_->With(
        {type, service, method,
         absl::StatusCodeToString(static_cast<absl::StatusCode>(code))});
  }
  return m;
}

grpc::experimental::Interceptor* GrpcMetrics::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  const absl::string_view name(info->method());
  if (by_handler_.contains(name)) return nullptr;
  auto it = methods_.find(name);
  return new CallCounter(it == methods_.end() ? &unknown_ : &it->second);
}

const GrpcMetrics::Method* GrpcMetrics::CountedByHandler(
    absl::string_view method) {
  auto it = methods_.find(method);
  if (it == methods_.end()) return nullptr;
  by_handler_.insert(std::string(method));
  return &it->second;
}

}  // namespace ptoserve
