// StreamMode: one generator thread's streams, ExecuteStream with a job a
// message or ExecuteBatches with --batch jobs a message, each kept full.
#ifndef PTOSERVE_BENCH_STREAM_MODE_H_
#define PTOSERVE_BENCH_STREAM_MODE_H_

#include <grpcpp/alarm.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "bench/driver.h"
#include "bench/workload.h"
#include "flat/flat.pb.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {
namespace ptobench {

class StreamMode : public Mode {
 public:
  explicit StreamMode(Driver* driver) : driver_(*driver) {}

  // One stream on each of `channels`, each keeping up to stream_depth jobs
  // in flight; a stream that ends early is started again. The stream on
  // channels[k] is stream indices[k] of the measurement.
  void Streams(const std::vector<int>& channels,
               const std::vector<int>& indices);

  void OnEvent(const Event& event, bool ok) override;
  bool Done() const override;
  void CancelAll() override;

 private:
  enum Kind { kStarted, kWritten, kRead, kFinished, kRetry };

  struct Stream {
    explicit Stream(int ch) : channel(ch) {
      started = {kStarted, this};
      written = {kWritten, this};
      read = {kRead, this};
      finished = {kFinished, this};
      retry = {kRetry, this};
    }
    int channel;
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> rw;
    grpc::ByteBuffer response;
    grpc::Status status;
    grpc::Alarm alarm;
    absl::Duration backoff;
    struct Sent {
      absl::Time at;
      Unit* unit;
    };
    absl::flat_hash_map<uint64_t, Sent> sent_at;  // by job (message) id
    // --shm: the stream's units, and those not in flight.
    std::vector<Unit*> units, free_units;
    uint64_t next_id = 0;
    // --wire=flat: the message whose answer comes next (they carry no id).
    uint64_t next_answered = 0;
    bool writing = false;
    bool writes_done = false;
    bool live = false;  // started, not finished
    Event started, written, read, finished, retry;
  };

  void StartStream(Stream* s);
  // Writes the next job if the window and the stream allow, or half-closes
  // once the time is up.
  void MaybeWrite(Stream* s, absl::Time now);
  // --shm: `unit`'s answer is in; it may go out again.
  void Release(Stream* s, Unit* unit);
  // A JobResult read on `s`: its id names the job, which is checked and
  // counted.
  void OnResult(Stream* s, absl::Time now);
  // --wire=flat's: a FlatResult, the answer to the oldest message sent.
  void OnFlatResult(Stream* s, absl::Time now);
  // A JobResultBatch read on `s`: its first result's id names the message;
  // every result is checked and counted.
  void OnBatchAnswer(Stream* s, absl::Time now);
  // The stream ended: an error counts, and one that ended early is started
  // again after a backoff.
  void OnFinished(Stream* s, absl::Time now);

  Driver& driver_;
  const Run& run_ = driver_.run();
  v1::JobResult result_;             // parse target, reused
  v1::JobResultBatch batch_result_;  // batch mode's parse target
  bench::FlatResult flat_result_;    // --wire=flat's
  std::vector<std::unique_ptr<Stream>> streams_;
  int live_streams_ = 0;
  int pending_alarms_ = 0;
};

}  // namespace ptobench
}  // namespace ptoserve

#endif  // PTOSERVE_BENCH_STREAM_MODE_H_
