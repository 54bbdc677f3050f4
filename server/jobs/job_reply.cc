#include "server/jobs/job_reply.h"

#include <utility>

#include "common/protobuf_arena.h"

namespace ptoserve {

thread_local bool ScratchArena::block_in_use_ = false;
alignas(std::max_align_t) thread_local char ScratchArena::block_
    [ScratchArena::kBlockBytes];

ScratchArena::ScratchArena() : arena_(std::in_place, Options(&owns_block_)) {}

ScratchArena::~ScratchArena() {
  heap_.reset();
  arena_.reset();  // before the block is another's
  if (owns_block_) block_in_use_ = false;
}

google::protobuf::ArenaOptions ScratchArena::Options(bool* owns_block) {
  google::protobuf::ArenaOptions options;
  *owns_block = !block_in_use_;
  if (*owns_block) {
    block_in_use_ = true;
    options.initial_block = block_;
    options.initial_block_size = kBlockBytes;
  }
  return options;
}

v1::JobResult* ScratchArena::NewResult() {
  return NewMessage<v1::JobResult>(&*arena_, &heap_);
}

JobReply::JobReply(absl::string_view id, JobOutcome outcome,
                   const ResultEncodings& encodings, v1::JobResult* into)
    : id_(id),
      outcome_(std::move(outcome)),
      encodings_(encodings),
      into_(into) {}

void JobReply::Prepare(Form form) {
  switch (form) {
    case Form::kMessage:
      Message();
      break;
    case Form::kBytes:
      Bytes();
      break;
    case Form::kOutcome:
      break;
  }
}

v1::JobResult* JobReply::Message() {
  if (message_ != nullptr) return message_;
  message_ = into_ != nullptr ? into_ : scratch_.emplace().NewResult();
  message_->set_id(id_.data(), id_.size());
  ToJobResult(std::move(outcome_), encodings_, message_);
  return message_;
}

const ResultWriter& JobReply::Bytes() {
  if (!writer_) writer_.emplace(id_, outcome_, encodings_);
  return *writer_;
}

}  // namespace ptoserve
