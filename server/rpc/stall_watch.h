// Cancels calls whose answer a client does not read. A client that stops
// reading (HTTP/2 flow control closed) keeps its call active, so the idle
// timeout never fires, and the memory its answers hold stays held; this
// watch cancels a call once one of its writes has waited longer than the
// timeout, which frees everything the call holds.
#ifndef PTOSERVE_SERVER_RPC_STALL_WATCH_H_
#define PTOSERVE_SERVER_RPC_STALL_WATCH_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace ptoserve {

class StallWatch {
 public:
  // One call's place in the watch, kept by the call's reactor.
  class Call {
   public:
    Call() = default;
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

    // A write (or a unary call's answer) is waiting from now on; until
    // Written.
    void Writing() {
      since_ns_.store(absl::GetCurrentTimeNanos(), std::memory_order_relaxed);
    }
    void Written() { since_ns_.store(0, std::memory_order_relaxed); }

   private:
    friend class StallWatch;
    grpc::ServerContextBase* context_ = nullptr;
    std::atomic<int64_t> since_ns_{0};
    bool cancelled_ = false;  // guarded by the watch's mutex
    Call* prev_ = nullptr;
    Call* next_ = nullptr;
  };

  // `timeout` zero: never cancels (and starts no thread).
  explicit StallWatch(absl::Duration timeout);
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  // Watches `call` of `context` until Remove, which must come before the
  // context goes (in the reactor's OnDone).
  void Add(Call* call, grpc::ServerContextBase* context)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Remove(Call* call) ABSL_LOCKS_EXCLUDED(mu_);

  absl::Duration timeout() const { return timeout_; }
  // Calls cancelled for a stalled write so far.
  uint64_t cancelled() const {
    return cancelled_.load(std::memory_order_relaxed);
  }

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  const absl::Duration timeout_;
  absl::Mutex mu_;
  Call* calls_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> cancelled_{0};
  std::thread thread_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_STALL_WATCH_H_
