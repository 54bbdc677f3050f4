// The standard per-method gRPC server metrics, as Prometheus's gRPC
// middlewares name them (grpc_server_started_total,
// grpc_server_handled_total{grpc_code}, grpc_server_msg_received_total,
// grpc_server_msg_sent_total, and the histogram
// grpc_server_handling_seconds that go-grpc-prometheus's dashboards take
// quantiles of: from a call's start to its status sent, or to its end when
// no status was sent; here by grpc_code too, as gRPC's own
// grpc.server.call.duration is by status), with the messages' bytes
// (grpc_server_msg_received_bytes_total, grpc_server_msg_sent_bytes_total:
// serialized, as they crossed the wire before HTTP/2 framing) and the
// calls and streams open now. Counted by a server interceptor for every
// method of every service: TileCompute, health and reflection alike, except
// the methods whose handlers count their own calls (CountedByHandler): the
// interceptor machinery costs about a tenth of a small unary call.
#ifndef PTOSERVE_SERVER_METRICS_GRPC_METRICS_H_
#define PTOSERVE_SERVER_METRICS_GRPC_METRICS_H_

#include <grpcpp/support/server_interceptor.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/time/time.h"
#include "server/metrics/metrics.h"

namespace ptoserve {

class GrpcMetrics final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // How a method's requests reach the interceptor: parsed into their
  // message type, or as bytes (grpc::ByteBuffer) for handlers that parse
  // them themselves. The interceptor is handed a pointer to either and
  // cannot tell which, so each service says; see the constructor.
  // kUnknown: a method no service has, whose messages are not sized.
  enum class Requests { kParsed, kBytes, kUnknown };

  // The series of one method.
  class Method {
   public:
    Counter* started;
    Counter* received;
    Counter* sent;
    Counter* received_bytes;
    Counter* sent_bytes;
    std::array<Counter*, 17> handled;  // by canonical code
    bool streaming = false;            // either side streams
    Requests requests = Requests::kParsed;
    std::string path;  // "/package.Service/Method", as logs name it

    // Counts a call answered with `code` (out of range: UNKNOWN) after
    // `took`: handled, and its handling time.
    void Handled(int code, absl::Duration took) const;

   private:
    friend class GrpcMetrics;
    // grpc_server_handling_seconds by code, each made at its first call:
    // 17 codes of 18 lines each for every method would be most of a
    // scrape.
    HistogramFamily* seconds_family_ = nullptr;
    std::array<std::string, 3> labels_;  // type, service, method
    mutable std::array<std::atomic<Histogram*>, 17> seconds_{};
  };

  // Adds the metrics to `registry` (which must outlive this) with a series
  // for each method of `services` (full names, e.g. "ptoserve.v1.TileCompute",
  // looked up in the binary's descriptor pool). Calls to any other method
  // count under grpc_service="unknown", grpc_method="unknown", so that a
  // client cannot make the server keep a series per name it invents.
  // Requests are kParsed except for the methods in `byte_methods`
  // ("/package.Service/Method"; a whole service as "/package.Service/").
  // Also adds the gauges of calls and streams open now.
  GrpcMetrics(MetricsRegistry* registry,
              const std::vector<std::string>& services,
              const std::vector<std::string>& byte_methods);

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

  // Leaves the calls of `method` ("/package.Service/Method", one of the
  // services') to its handler, which counts them in the returned series
  // (CallCount below): started when the call arrives, each message
  // received and sent with its bytes, handled when it answers, handled as
  // CANCELLED if it never does. Null for a method the services do not
  // have. Call before the server starts.
  const Method* CountedByHandler(absl::string_view method);

 private:
  void MakeMethod(Method* m, absl::string_view service,
                  absl::string_view method, absl::string_view type);
  // Calls open now: started less handled, over the methods (`streaming`:
  // over the streaming ones only).
  double Open(bool streaming) const;

  CounterFamily* const started_;
  CounterFamily* const handled_;
  CounterFamily* const received_;
  CounterFamily* const sent_;
  CounterFamily* const received_bytes_;
  CounterFamily* const sent_bytes_;
  HistogramFamily* const seconds_;
  // By "/package.Service/Method"; never changed once the server starts.
  absl::node_hash_map<std::string, Method> methods_;
  absl::flat_hash_set<std::string> by_handler_;
  Method unknown_;
};

// One call counted in its method's series, by the interceptor or, for a
// method counted there (CountedByHandler), by its handler, and logged
// (server/log/log.h) when answered. Started when made; Answered once,
// when the status is sent; Ended when gRPC is done with the call, which
// counts a call never answered (its client went away) as CANCELLED. Null
// method: counts nothing. The owner orders Answered before Ended.
class CallCount {
 public:
  // `context` (null: none) names the peer in the log; it must be valid
  // whenever Answered or Ended runs while it is set (SetContext).
  explicit CallCount(const GrpcMetrics::Method* method,
                     const grpc::ServerContextBase* context = nullptr);
  CallCount(const CallCount&) = delete;
  CallCount& operator=(const CallCount&) = delete;

  // A message of `bytes` read from the client, or sent to it.
  void Received(uint64_t bytes);
  void Sent(uint64_t bytes);
  // The status sent: its code and message.
  void Answered(int code, absl::string_view message = {});
  void Ended();
  // The client the call is of (server/transport: a token, a user, an
  // address), for the log; it must outlive the count.
  void SetClient(absl::string_view client) { client_ = client; }
  void SetContext(const grpc::ServerContextBase* context) {
    context_ = context;
  }

 private:
  void Logged(int code, absl::string_view message) const;

  const GrpcMetrics::Method* const method_;
  const grpc::ServerContextBase* context_;
  absl::Time start_;  // when the call arrived, for its handling time
  bool answered_ = false;
  std::atomic<uint64_t> bytes_in_{0}, bytes_out_{0};
  absl::string_view client_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_METRICS_GRPC_METRICS_H_
