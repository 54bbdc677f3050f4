// The standard per-method gRPC server metrics, as Prometheus's gRPC
// middlewares name them (grpc_server_started_total,
// grpc_server_handled_total{grpc_code}, grpc_server_msg_received_total,
// grpc_server_msg_sent_total, and the histogram
// grpc_server_handling_seconds that go-grpc-prometheus's dashboards take
// quantiles of: from a call's start to its status sent, or to its end when
// no status was sent), counted by a server interceptor for every
// method of every service: TileCompute, health and reflection alike, except
// the methods whose handlers count their own calls (CountedByHandler): the
// interceptor machinery costs about a tenth of a small unary call.
#ifndef PTOSERVE_SERVER_METRICS_GRPC_METRICS_H_
#define PTOSERVE_SERVER_METRICS_GRPC_METRICS_H_

#include <grpcpp/support/server_interceptor.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "server/metrics/metrics.h"

namespace ptoserve {

class GrpcMetrics final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // The series of one method.
  struct Method {
    Counter* started;
    Counter* received;
    Counter* sent;
    std::array<Counter*, 17> handled;  // by canonical code
    Histogram* seconds;                // handling time
  };

  // Adds the metrics to `registry` (which must outlive this) with a series
  // for each method of `services` (full names, e.g. "ptoserve.v1.TileCompute",
  // looked up in the binary's descriptor pool). Calls to any other method
  // count under grpc_service="unknown", grpc_method="unknown", so that a
  // client cannot make the server keep a series per name it invents.
  GrpcMetrics(MetricsRegistry* registry,
              const std::vector<std::string>& services);

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

  // Leaves the calls of `method` ("/package.Service/Method", one of the
  // services') to its handler, which counts them in the returned series:
  // started and received when the call arrives, handled (and sent, when
  // OK) when it answers, handled as CANCELLED if it never does. Null for a
  // method the services do not have. Call before the server starts.
  const Method* CountedByHandler(absl::string_view method);

 private:
  Method MakeMethod(absl::string_view service, absl::string_view method,
                    absl::string_view type);

  CounterFamily* const started_;
  CounterFamily* const handled_;
  CounterFamily* const received_;
  CounterFamily* const sent_;
  HistogramFamily* const seconds_;
  // By "/package.Service/Method"; never changed once the server starts.
  absl::flat_hash_map<std::string, Method> methods_;
  absl::flat_hash_set<std::string> by_handler_;
  Method unknown_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_METRICS_GRPC_METRICS_H_
