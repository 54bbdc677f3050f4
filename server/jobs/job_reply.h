// A job's answer as its door takes it (JobDone): the JobResult message, or
// its protobuf encoding written straight from what the job made
// (proto/result_wire.h), which a gRPC door sends without the message ever
// being built. The dispatcher makes it once the job has run, in the form
// the job's request asked for; it lives only while the job's done runs.
#ifndef PTOSERVE_SERVER_JOBS_JOB_REPLY_H_
#define PTOSERVE_SERVER_JOBS_JOB_REPLY_H_

#include <google/protobuf/arena.h>

#include <memory>
#include <optional>

#include "absl/strings/string_view.h"
#include "core/job.h"
#include "proto/codec.h"
#include "proto/result_wire.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {

// A protobuf arena for one job's result, whose first block is its thread's
// and serves job after job: a small result is built, serialized and freed
// with no heap allocation. The result dies with the arena; only one arena a
// thread has the block at once (another, nested, starts on the heap).
class ScratchArena {
 public:
  ScratchArena();
  ~ScratchArena();
  ScratchArena(const ScratchArena&) = delete;
  ScratchArena& operator=(const ScratchArena&) = delete;

  v1::JobResult* NewResult();

 private:
  // Big enough for a 64x64 int32 tile and a few dozen events.
  static constexpr size_t kBlockBytes = 32 << 10;

  static google::protobuf::ArenaOptions Options(bool* owns_block);

  static thread_local bool block_in_use_;
  alignas(std::max_align_t) static thread_local char block_[kBlockBytes];

  bool owns_block_ = false;
  std::optional<google::protobuf::Arena> arena_;
  std::unique_ptr<google::protobuf::Message> heap_;  // without arenas
};

class JobReply {
 public:
  // How the door reads it: the message (HTTP's JSON, the inference
  // protocol's answers, a batch's), the bytes (a gRPC Job's answer), or
  // the outcome, which the door writes its own answer from (a small
  // inference request's).
  enum class Form { kMessage, kBytes, kOutcome };

  // The reply to job `id` (a string that outlives the reply) from its
  // outcome, its tiles travelling as `encodings` says (which must outlive
  // it); a message is built into `into`, or, when null, on this thread's
  // scratch arena.
  JobReply(absl::string_view id, JobOutcome outcome,
           const ResultEncodings& encodings, v1::JobResult* into);

  // Does the work of `form` now (the dispatcher times it as the job's
  // output; kOutcome's is the door's); may throw std::bad_alloc.
  void Prepare(Form form);

  // The result as a message, built on first call; building it moves the
  // job's tiles into it, and Bytes may not be asked for after.
  v1::JobResult* Message();
  // The result's encoding, written straight from the outcome: the bytes
  // that Message() serializes to deterministically.
  // REQUIRES: Message() has not been called.
  const ResultWriter& Bytes();
  // What the job made.
  // REQUIRES: Message() has not been called.
  const JobOutcome& outcome() const { return outcome_; }

 private:
  const absl::string_view id_;
  JobOutcome outcome_;
  const ResultEncodings& encodings_;
  v1::JobResult* const into_;
  v1::JobResult* message_ = nullptr;
  std::optional<ScratchArena> scratch_;
  std::optional<ResultWriter> writer_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_JOBS_JOB_REPLY_H_
