// ExecuteStream: serialized Jobs in, serialized JobResults out, each job
// answered on its own as it finishes (StreamMachine's rules). With a codec
// (ModelStreamInfer), another protocol's requests in and its answers out,
// in the order the requests came. A job whose
// memory the budget cannot hold yet waits, and the stream reads no
// further, until one of the stream's own results is written (or is
// refused if the stream has nothing else in flight).
#ifndef PTOSERVE_SERVER_RPC_JOB_STREAM_H_
#define PTOSERVE_SERVER_RPC_JOB_STREAM_H_

#include <deque>
#include <map>
#include <memory>
#include <string>

#include "server/rpc/stream_jobs.h"
#include "server/rpc/stream_machine.h"

namespace ptoserve {

class JobStream final : public StreamMachine {
 public:
  // `wire` must outlive the stream.
  JobStream(StreamWire* wire, uint32_t window, StreamJobs jobs);

 private:
  // A decoded job not yet admitted.
  struct Incoming;
  struct Waiting {
    // Read in place until answered; null: the message's small job.
    std::shared_ptr<const v1::Job> job;
    uint64_t request_bytes;
    std::shared_ptr<Incoming> message;  // the job's, with its protocol
  };

  void Take(grpc::ByteBuffer* message, uint64_t number) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool ReadBlocked() const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !waiting_.empty();
  }
  void Room() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t DropWaiting() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // A decoded job (null: the message's small job; or why it is not one:
  // answered with `id`, the id read from its bytes) into the stream;
  // `run_here` as JobRequest's: this thread may run it to completion, and
  // push its answer, before Admit returns.
  void Admit(absl::StatusOr<std::shared_ptr<v1::Job>> job,
             uint64_t request_bytes, const std::string& id, bool run_here,
             const std::shared_ptr<Incoming>& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Admits `waiting` (or answers it with its refusal) and returns true; or,
  // while the budget is full and the stream has other jobs in flight (whose
  // results will free some), puts it first among the waiting jobs and
  // returns false. REQUIRES: `waiting` is counted as unanswered, and is
  // neither waiting nor being decoded.
  bool StartJob(Waiting waiting, bool run_here)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Answers `message`'s job with `status`.
  void PushError(const Incoming& message, const std::string& id,
                 const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues `message`'s answer: at once, or, with a codec, once every
  // earlier message's is.
  void Deliver(const Incoming& message, grpc::ByteBuffer bytes, Holds holds)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Job `id`'s reply written as bytes; one too large to send, or that
  // memory does not suffice to write, becomes its job's error.
  grpc::ByteBuffer Encoded(JobReply& reply, const std::string& id) const;
  // The error that takes the place of job `id`'s result.
  grpc::ByteBuffer EncodedError(const std::string& id,
                                const absl::Status& status) const;
  // The codec's answer to `message`: its job's reply, or why there is
  // none.
  grpc::ByteBuffer Encoded(const Incoming& message,
                           const absl::StatusOr<JobReply*>& result) const;

  const StreamJobs jobs_;
  // Decoded jobs the memory budget has no room for yet, in the order they
  // came; no reads meanwhile.
  std::deque<Waiting> waiting_ ABSL_GUARDED_BY(mu_);
  // With a codec: answers that wait for an earlier message's, by message
  // number, and the number whose answer goes next. Bounded by the window.
  std::map<uint64_t, std::pair<grpc::ByteBuffer, Holds>> early_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 1;
  // The client has gone: answers go as they come (none is written).
  bool unordered_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_JOB_STREAM_H_
