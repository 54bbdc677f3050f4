#include "server/rpc/stream_machine.h"

#include <utility>

namespace ptoserve {

StreamMachine::StreamMachine(StreamWire* wire, uint32_t window)
    : wire_(wire), window_(window) {}

void StreamMachine::Start() {
  MutexLock lock(&mu_);
  reading_ = true;
  wire_->StartRead(&request_);
}

void StreamMachine::ReadDone(bool ok) {
  MutexLock lock(&mu_);
  reading_ = false;
  if (!ok) {
    reads_done_ = true;
    MaybeFinish();
    return;
  }
  // request_ is free for the next read from here on, which another of the
  // stream's events may start while Take works without the lock.
  grpc::ByteBuffer message;
  message.Swap(&request_);
  Take(&message, ++received_);
  Resume();
}

void StreamMachine::WriteDone(bool ok) {
  MutexLock lock(&mu_);
  writing_ = false;
  if (!ok) broken_ = true;  // the client is gone: drop what is left
  if (ok && outbox_.front().buffered) {
    unflushed_.push_back(std::move(outbox_.front()));
  } else {
    // Written, and every buffered answer before it: their parts of the
    // budget go back.
    for (const Outgoing& out : unflushed_) unanswered_ -= out.jobs;
    unflushed_.clear();
    unanswered_ -= outbox_.front().jobs;
  }
  outbox_.pop_front();
  if (!broken_) Room();
  MaybeWrite();
  Resume();
}

void StreamMachine::Done() { MutexLock lock(&mu_); }

void StreamMachine::Push(grpc::ByteBuffer bytes, Holds holds, uint64_t jobs) {
  outbox_.push_back(Outgoing{std::move(bytes), std::move(holds), jobs});
  MaybeWrite();
}

void StreamMachine::MaybeWrite() {
  if (writing_ || finished_) return;
  if (broken_) {
    for (const Outgoing& out : outbox_) unanswered_ -= out.jobs;
    outbox_.clear();
    unanswered_ -= DropWaiting();
    MaybeFinish();
    return;
  }
  if (outbox_.empty()) return;
  writing_ = true;
  // The last answer ready goes out at once, and any before it with it.
  Outgoing& out = outbox_.front();
  out.buffered = outbox_.size() > 1;
  wire_->StartWrite(&out.bytes, out.buffered);
}

void StreamMachine::MaybeRead() {
  if (reading_ || reads_done_ || broken_ || ReadBlocked() ||
      unanswered_ >= window_) {
    return;
  }
  reading_ = true;
  wire_->StartRead(&request_);
}

void StreamMachine::MaybeFinish() {
  if (finished_ || unanswered_ > 0 || writing_ || reading_ || working_ > 0) {
    return;
  }
  if (!reads_done_ && !broken_) return;
  finished_ = true;
  wire_->Finish(broken_ ? grpc::Status(grpc::StatusCode::CANCELLED,
                                       "the client stopped reading results")
                        : grpc::Status::OK);
}

}  // namespace ptoserve
