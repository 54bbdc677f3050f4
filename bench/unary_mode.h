// UnaryMode: one generator thread's Execute calls, in a closed loop (a call
// starts as one finishes) or at a rate whatever the completions (open loop).
#ifndef PTOSERVE_BENCH_UNARY_MODE_H_
#define PTOSERVE_BENCH_UNARY_MODE_H_

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "bench/driver.h"
#include "bench/workload.h"
#include "flat/flat.pb.h"
#include "inference/grpc_service.pb.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {
namespace ptobench {

class UnaryMode : public Mode {
 public:
  explicit UnaryMode(Driver* driver) : driver_(*driver) {}

  // Closed loop: one unary call in flight on each of `channels` (a channel
  // index may repeat) until the end; the call on channels[k] is call
  // indices[k] of the measurement (it sends that unit with --shm).
  void Unary(const std::vector<int>& channels, const std::vector<int>& indices);

  // Open loop: `rate` calls a second, spread over `channels`, each due
  // 1/rate after the one before, from `first` until the end. A second
  // thread starts the calls when they are due (a sleep is precise to
  // microseconds; a completion queue's deadline only to milliseconds) and
  // this one takes their results.
  void UnaryAtRate(const std::vector<int>& channels, double rate,
                   absl::Time first);

  void OnEvent(const Event& event, bool ok) override;
  bool Done() const override;
  bool Paced() const override { return interval_ != absl::ZeroDuration(); }
  void CancelAll() override;

 private:
  enum Kind { kCallDone, kCallRetry };

  struct Call {
    explicit Call(int ch) : channel(ch) {
      done = {kCallDone, this};
      retry = {kCallRetry, this};
    }
    int channel;
    Unit* unit = nullptr;  // what it sends
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>> reader;
    grpc::ByteBuffer response;
    grpc::Status status;
    grpc::Alarm alarm;
    absl::Time sent;  // or, at a rate, when it was due
    absl::Duration backoff;
    bool busy = false;
    Event done, retry;
  };

  // The method --wire calls.
  const char* Method() const;
  void StartCall(Call* call, absl::Time sent);
  void OnCallDone(Call* call);
  // Parses `response` into result_ (if the call succeeded) and returns
  // what is wrong with the result, or "" if nothing is.
  std::string Check(const grpc::Status& status, grpc::ByteBuffer* response,
                    const Unit* unit);

  Driver& driver_;
  const Run& run_ = driver_.run();
  v1::JobResult result_;                        // parse target, reused
  bench::FlatResult flat_result_;               // --wire=flat's
  inference::ModelInferResponse infer_result_;  // --wire=oip's
  std::vector<std::unique_ptr<Call>> calls_;
  std::mutex mu_;  // at a rate: calls_ and free_
  std::vector<Call*> free_;
  std::vector<int> rate_channels_;
  absl::Duration interval_ = absl::ZeroDuration();
  std::atomic<bool> pacing_{false};
  std::atomic<int64_t> in_flight_{0};
  int pending_alarms_ = 0;
};

}  // namespace ptobench
}  // namespace ptoserve

#endif  // PTOSERVE_BENCH_UNARY_MODE_H_
