#include "server/rpc/batch_stream.h"

#include <google/protobuf/arena.h>

#include <algorithm>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/protobuf_arena.h"
#include "proto/error_result.h"
#include "server/rpc/grpc_body.h"

namespace ptoserve {

namespace {

// What a message of `shape` counts against the window: its jobs, and at
// least one (its answer), so that empty batches cannot be read without end
// while their answers pile up unwritten.
uint64_t Counted(const BatchShape& shape) {
  return std::max<uint64_t>(1, shape.jobs);
}

}  // namespace

// One batch in flight: its jobs (read in place by the engine), its answer,
// filled a slot per job, and the memory its jobs hold.
// The jobs and the answer live on the batch's arena: a batch of small jobs
// costs a few blocks, not a few allocations per job.
struct BatchStream::Batch {
  Batch(grpc::ByteBuffer* message, uint64_t number)
      : body(message),
        what(absl::StrCat("stream message ", number)),
        arena(ArenaOptions()),
        jobs(NewMessage<v1::JobBatch>(&arena, &heap_jobs)),
        answer(NewMessage<v1::JobResultBatch>(&arena, &heap_answer)) {}

  static google::protobuf::ArenaOptions ArenaOptions() {
    google::protobuf::ArenaOptions options;
    options.start_block_size = 16 << 10;
    options.max_block_size = 256 << 10;
    return options;
  }

  GrpcBody body;  // let go once parsed
  const std::string what;
  BatchShape shape;
  google::protobuf::Arena arena;
  std::unique_ptr<google::protobuf::Message> heap_jobs, heap_answer;
  v1::JobBatch* const jobs;  // a refused job's tile bytes freed at once
  v1::JobResultBatch* const answer;
  Holds holds;           // under the stream's mu_
  size_t remaining = 0;  // jobs without a result yet, under mu_
};

BatchStream::BatchStream(StreamWire* wire, uint32_t window, StreamJobs jobs)
    : StreamMachine(wire, window), jobs_(std::move(jobs)) {}

void BatchStream::Take(grpc::ByteBuffer* message, uint64_t number) {
  auto batch = std::make_shared<Batch>(message, number);
  absl::StatusOr<BatchShape> shape =
      jobs_.intake->ScanBatch(batch->body, batch->what);
  if (!shape.ok()) {
    Refuse(shape.status());
    return;
  }
  batch->shape = *std::move(shape);
  Expect(Counted(batch->shape));
  // Until decoded and its jobs started, the stream does not finish.
  BeginWork();
  const DecodeRequest decode{&batch->body, batch->what, &jobs_.call,
                             batch->jobs, batch->shape.total};
  // Without the lock: when the scheduler is idle a light batch's jobs run
  // on this thread, one after the other (no hand-off), and their results
  // take mu_.
  WithoutLock([&] {
    jobs_.intake->Decode(decode, [this, batch](Decoded decoded) {
      if (decoded.status.ok()) StartJobs(batch, decoded.here);
      MutexLock lock(&mu_);
      if (!decoded.status.ok()) {
        // Its jobs will have no answers of their own.
        Forget(Counted(batch->shape));
        Refuse(decoded.status);
      }
      EndWork();
      if (!decoded.here) Resume();  // else Take's caller does
    });
  });
}

void BatchStream::StartJobs(const std::shared_ptr<Batch>& batch,
                            bool run_here) {
  const int n = batch->jobs->jobs_size();
  for (int i = 0; i < n; ++i) batch->answer->add_results();
  if (n == 0) {
    grpc::ByteBuffer encoded = Encoded(batch->answer);
    MutexLock lock(&mu_);
    Push(std::move(encoded), {}, 1);
    return;
  }
  {
    MutexLock lock(&mu_);
    batch->remaining = n;
  }
  for (int i = 0; i < n; ++i) {
    const v1::Job& job = batch->jobs->jobs(i);
    JobRequest request;
    request.job = &job;
    request.request_bytes = batch->shape.job_bytes[i];
    request.call = &jobs_.call;
    request.run_here = run_here;
    // Built in its slot of the answer, which only this job writes.
    request.result = batch->answer->mutable_results(i);
    request.done = [this, batch, i](absl::StatusOr<JobReply*> r,
                                    MemoryBudget::Hold hold) {
      if (!r.ok()) {
        ToErrorResult(batch->jobs->jobs(i).id(), r.status(),
                      batch->answer->mutable_results(i));
      }
      Answered(batch, std::move(hold));
    };
    const Dispatched dispatched =
        jobs_.intake->dispatcher()->Dispatch(std::move(request));
    if (!dispatched.status.ok()) {
      ToErrorResult(job.id(), dispatched.status,
                    batch->answer->mutable_results(i));
      // Nothing refers to a refused job: its tiles' bytes (which no share
      // of the budget covers) go now, not when its neighbours are done.
      for (auto& [name, tile] :
           *batch->jobs->mutable_jobs(i)->mutable_tiles()) {
        std::string().swap(*tile.mutable_data());
      }
      Answered(batch, MemoryBudget::Hold());
    }
  }
}

void BatchStream::Answered(const std::shared_ptr<Batch>& batch,
                           MemoryBudget::Hold hold) {
  // Each job writes only its own slot; the last one, which mu_ orders after
  // the others, serializes the answer (outside the lock) and queues it.
  {
    MutexLock lock(&mu_);
    batch->holds.push_back(std::move(hold));
    if (--batch->remaining > 0) return;
  }
  // The number of jobs before Encoded, which may replace the results.
  const uint64_t jobs = batch->answer->results_size();
  grpc::ByteBuffer bytes = Encoded(batch->answer);
  MutexLock lock(&mu_);
  Push(std::move(bytes), std::move(batch->holds), jobs);
}

void BatchStream::Refuse(const absl::Status& status) {
  v1::JobResultBatch answer;
  ToErrorResult("", status, answer.add_results());
  Expect(1);
  Push(Encoded(&answer), {}, 1);
}

grpc::ByteBuffer BatchStream::Encoded(v1::JobResultBatch* answer) const {
  grpc::ByteBuffer bytes;
  absl::Status encoded;
  try {
    encoded =
        EncodeReply(*answer, jobs_.intake->limits().max_message_bytes, &bytes);
  } catch (const std::bad_alloc&) {
    encoded = absl::ResourceExhaustedError(
        "the server ran out of memory serializing this batch's answer");
  }
  if (encoded.ok()) return bytes;
  const absl::Status why(encoded.code(),
                         absl::StrCat("the batch's answer could not be sent: ",
                                      encoded.message()));
  for (v1::JobResult& result : *answer->mutable_results()) {
    ToErrorResult(std::string(result.id()), why, &result);
  }
  if (EncodeReply(*answer, jobs_.intake->limits().max_message_bytes, &bytes)
          .ok()) {
    return bytes;
  }
  // Even its errors, with their ids, are too large (many jobs and a small
  // --max_message_mb): the batch is answered as one refused message.
  const int jobs = answer->results_size();
  answer->Clear();
  ToErrorResult(
      "",
      absl::Status(why.code(), absl::StrFormat("%s; %d results, each an "
                                               "error, were too large too",
                                               why.message(), jobs)),
      answer->add_results());
  (void)EncodeReply(*answer, jobs_.intake->limits().max_message_bytes, &bytes);
  return bytes;
}

}  // namespace ptoserve
