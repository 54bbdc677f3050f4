// The rules every ptoserve stream follows, whatever its messages are
// (ExecuteStream's jobs, ExecuteBatches' batches of jobs): it reads while
// fewer than its window of jobs are unanswered; it writes answers in the
// order they are ready, one at a time, each holding its jobs' part of the
// memory budget until it is written; and it finishes once the client is
// done sending and every answer is written (OK), or, once the client is
// gone, when nothing is left in flight (CANCELLED). It drives a StreamWire:
// gRPC's reactor in the server (server/rpc/stream_reactor.h), a fake in
// tests.
#ifndef PTOSERVE_SERVER_RPC_STREAM_MACHINE_H_
#define PTOSERVE_SERVER_RPC_STREAM_MACHINE_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"
#include "common/mutex.h"
#include "server/exec/memory_budget.h"

namespace ptoserve {

// What a stream machine drives: one bidirectional stream's reads, writes
// and end.
class StreamWire {
 public:
  virtual ~StreamWire() = default;
  // Reads the next message into `*message`; the machine's ReadDone follows.
  virtual void StartRead(grpc::ByteBuffer* message) = 0;
  // Writes `*message`, which stays put until the machine's WriteDone.
  // `more`: another answer is ready behind it, so the message may wait to
  // go out with that one (in one write to the socket, not one each).
  virtual void StartWrite(const grpc::ByteBuffer* message, bool more) = 0;
  // Ends the stream with `status`: nothing is read or written after it.
  virtual void Finish(const grpc::Status& status) = 0;
};

class StreamMachine {
 public:
  virtual ~StreamMachine() = default;
  StreamMachine(const StreamMachine&) = delete;
  StreamMachine& operator=(const StreamMachine&) = delete;

  // Starts the first read. Call once, before any event.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // The wire's events: a read, or a write, ended (ok: it happened; not ok:
  // the client has gone, or is done sending).
  void ReadDone(bool ok) ABSL_LOCKS_EXCLUDED(mu_);
  void WriteDone(bool ok) ABSL_LOCKS_EXCLUDED(mu_);
  // The stream is over: returns once no thread is inside the machine's
  // lock (the wire's Finish may be called with it held, and the stream's
  // end reported on another thread before that one lets go).
  void Done() ABSL_LOCKS_EXCLUDED(mu_);

 protected:
  // The parts of the memory budget an answer holds until it is written.
  using Holds = absl::InlinedVector<MemoryBudget::Hold, 1>;

  // `wire` must outlive the machine; `window`: the most jobs unanswered
  // before the machine stops reading.
  StreamMachine(StreamWire* wire, uint32_t window);

  // The stream's `number`th message (1, 2, ...) has been read into
  // `*message`, which Take may move from. Take counts its jobs (Expect),
  // and answers them (Push), or sets them going (their answers are pushed
  // later), possibly without the lock (WithoutLock).
  virtual void Take(grpc::ByteBuffer* message, uint64_t number)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // Whether reading must wait for something besides the window.
  virtual bool ReadBlocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return false;
  }
  // An answer was written and what it held given back: there may be room
  // in the memory budget again. Not called once the client has gone.
  virtual void Room() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {}
  // The client has gone: drop whatever waits that Push has not seen, and
  // say how many jobs it counted.
  virtual uint64_t DropWaiting() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return 0;
  }

  // `jobs` more of the stream's jobs are unanswered (they count against
  // the window until their answer is written), or fewer (Forget: jobs
  // counted that will have no answer of their own).
  void Expect(uint64_t jobs) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    unanswered_ += jobs;
  }
  void Forget(uint64_t jobs) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    unanswered_ -= jobs;
  }
  // Queues the answer to `jobs` of the stream's jobs, and what it holds.
  void Push(grpc::ByteBuffer bytes, Holds holds, uint64_t jobs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Work under way outside the lock (a decode, jobs being started): the
  // stream does not finish meanwhile. After EndWork, Resume.
  void BeginWork() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { ++working_; }
  void EndWork() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { --working_; }
  // Reads or finishes if it may now.
  void Resume() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    MaybeRead();
    MaybeFinish();
  }
  // Runs `work` with the lock let go, as work under way, and takes the
  // lock back.
  template <typename Work>
  void WithoutLock(const Work& work)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    ++working_;
    TsanReleasing(&mu_);
    mu_.Unlock();
    work();
    mu_.Lock();
    TsanAcquired(&mu_);
    --working_;
  }

  uint64_t unanswered() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return unanswered_;
  }
  uint64_t working() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return working_;
  }
  bool broken() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return broken_; }

  mutable absl::Mutex mu_;

 private:
  struct Outgoing {
    grpc::ByteBuffer bytes;
    Holds holds;
    uint64_t jobs;          // counted in unanswered_
    bool buffered = false;  // written as one that may wait for the next
  };

  void MaybeWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeRead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  StreamWire* const wire_;
  const uint32_t window_;
  grpc::ByteBuffer request_;                          // the read in progress
  std::deque<Outgoing> outbox_ ABSL_GUARDED_BY(mu_);  // front: writing
  // Written buffered, so possibly still in gRPC's buffer: each keeps its
  // holds and its place in the window until a write that flushes it is
  // done.
  std::deque<Outgoing> unflushed_ ABSL_GUARDED_BY(mu_);
  uint64_t unanswered_ ABSL_GUARDED_BY(mu_) = 0;  // jobs read, not written
  uint64_t working_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t received_ ABSL_GUARDED_BY(mu_) = 0;  // messages read
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;  // the client has gone
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_STREAM_MACHINE_H_
