// ExecuteBatches: serialized JobBatches in, serialized JobResultBatches
// out, StreamMachine's rules a batch at a time. Every job of a batch is
// dispatched on its own (a job that is refused, the memory budget's
// refusal included, gets its error in its result at once rather than
// waiting); once every job of a batch has its result, the batch's answer is
// serialized and queued. A message that is not a valid JobBatch is answered
// with one result carrying the error. While the scheduler is idle, a light
// message's jobs run on the thread that read it, one after another: no
// hand-off.
#ifndef PTOSERVE_SERVER_RPC_BATCH_STREAM_H_
#define PTOSERVE_SERVER_RPC_BATCH_STREAM_H_

#include <memory>
#include <string>

#include "server/rpc/stream_jobs.h"
#include "server/rpc/stream_machine.h"

namespace ptoserve {

class BatchStream final : public StreamMachine {
 public:
  // `wire` must outlive the stream.
  BatchStream(StreamWire* wire, uint32_t window, StreamJobs jobs);

 private:
  struct Batch;

  void Take(grpc::ByteBuffer* message, uint64_t number) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Dispatches every job of `batch` (`batch->shape.jobs` of them, already
  // counted as unanswered), with JobRequest's `run_here`.
  void StartJobs(const std::shared_ptr<Batch>& batch, bool run_here)
      ABSL_LOCKS_EXCLUDED(mu_);
  // One of `batch`'s jobs has its result in its slot; the last one queues
  // the batch's answer.
  void Answered(const std::shared_ptr<Batch>& batch, MemoryBudget::Hold hold)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Answers a message that is not a batch this server takes: one result,
  // no id, the error.
  void Refuse(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `answer` serialized. One larger than a message may be becomes, job by
  // job, RESOURCE_EXHAUSTED (each result keeping its id) saying so.
  grpc::ByteBuffer Encoded(v1::JobResultBatch* answer) const;

  const StreamJobs jobs_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_BATCH_STREAM_H_
