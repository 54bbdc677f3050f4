#include "server/rpc/stall_watch.h"

#include <algorithm>

namespace ptoserve {

StallWatch::StallWatch(absl::Duration timeout) : timeout_(timeout) {
  if (timeout_ > absl::ZeroDuration()) thread_ = std::thread([this] { Run(); });
}

StallWatch::~StallWatch() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void StallWatch::Add(Call* call, grpc::ServerContextBase* context) {
  if (timeout_ <= absl::ZeroDuration()) return;
  absl::MutexLock lock(&mu_);
  call->context_ = context;
  call->prev_ = nullptr;
  call->next_ = calls_;
  if (calls_ != nullptr) calls_->prev_ = call;
  calls_ = call;
}

void StallWatch::Remove(Call* call) {
  if (timeout_ <= absl::ZeroDuration()) return;
  absl::MutexLock lock(&mu_);
  if (call->context_ == nullptr) return;  // never added
  if (call->prev_ != nullptr) {
    call->prev_->next_ = call->next_;
  } else {
    calls_ = call->next_;
  }
  if (call->next_ != nullptr) call->next_->prev_ = call->prev_;
  call->context_ = nullptr;
  call->prev_ = call->next_ = nullptr;
}

void StallWatch::Run() {
  // A stalled call is cancelled between timeout and 1.25 x timeout after
  // its write began (checked four times a timeout, at most once a second).
  const absl::Duration period = std::min(timeout_ / 4, absl::Seconds(1));
  absl::MutexLock lock(&mu_);
  while (true) {
    const bool stopping =
        mu_.AwaitWithTimeout(absl::Condition(&stopping_), period);
    if (stopping) return;
    const int64_t cutoff =
        absl::GetCurrentTimeNanos() - absl::ToInt64Nanoseconds(timeout_);
    for (Call* call = calls_; call != nullptr; call = call->next_) {
      const int64_t since = call->since_ns_.load(std::memory_order_relaxed);
      if (since == 0 || since > cutoff || call->cancelled_) continue;
      // Under mu_: Remove, which the reactor's OnDone calls before the
      // context goes, waits for this.
      call->cancelled_ = true;
      cancelled_.fetch_add(1, std::memory_order_relaxed);
      call->context_->TryCancel();
    }
  }
}

}  // namespace ptoserve
