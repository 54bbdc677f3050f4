// The simplest correct bidirectional stream reactor, for the plain
// servers' streams: reads a message, writes `answer`'s response to it,
// reads the next; one in flight. An answer that is not OK ends the stream
// with its status.
#ifndef PTOSERVE_BENCH_ONE_IN_FLIGHT_STREAM_H_
#define PTOSERVE_BENCH_ONE_IN_FLIGHT_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <utility>

namespace ptoserve {

template <typename Request, typename Response>
class OneInFlightStream final
    : public grpc::ServerBidiReactor<Request, Response> {
 public:
  using Answer = std::function<grpc::Status(const Request&, Response*)>;

  explicit OneInFlightStream(Answer answer) : answer_(std::move(answer)) {
    this->StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      this->Finish(grpc::Status::OK);
      return;
    }
    response_.Clear();
    const grpc::Status status = answer_(request_, &response_);
    if (!status.ok()) {
      this->Finish(status);
      return;
    }
    this->StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      this->Finish(grpc::Status::OK);
      return;
    }
    this->StartRead(&request_);
  }
  void OnDone() override { delete this; }

 private:
  const Answer answer_;
  Request request_;
  Response response_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_BENCH_ONE_IN_FLIGHT_STREAM_H_
