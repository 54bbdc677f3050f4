#ifndef PTOSERVE_TESTS_SERVER_SIGNAL_H_
#define PTOSERVE_TESTS_SERVER_SIGNAL_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace ptoserve {

// Set once by a job's done, on whichever thread runs it; waited for by a
// test. Not absl::Notification: once set, its wait returns on an atomic
// flag inside Debian's Abseil, which is not built with ThreadSanitizer,
// without taking its mutex, and ThreadSanitizer (shown Abseil's mutexes
// by tools/tsan/absl_sync.cc, not its atomics) then sees no order between
// done's writes and the test's reads. Every step here takes the mutex.
class Signal {
 public:
  void Notify() {
    absl::MutexLock lock(&mu_);
    set_ = true;
  }
  bool HasBeenNotified() {
    absl::MutexLock lock(&mu_);
    return set_;
  }
  bool WaitForNotificationWithTimeout(absl::Duration timeout) {
    const bool set = mu_.LockWhenWithTimeout(absl::Condition(&set_), timeout);
    mu_.Unlock();
    return set;
  }

 private:
  absl::Mutex mu_;
  bool set_ ABSL_GUARDED_BY(mu_) = false;
};

// Whether `done()` became true within 30 s, polled: for a state that is
// another thread's and has no Signal of its own (a queue's length).
template <typename Predicate>
bool WaitUntil(Predicate done) {
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (!done()) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_SERVER_SIGNAL_H_
