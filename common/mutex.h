// absl::Mutex locking that ThreadSanitizer can see.
//
// Debian's Abseil is not built with ThreadSanitizer, so the ordering that an
// absl::Mutex provides is invisible to it and every field the mutex guards
// looks racy. In ThreadSanitizer builds these wrappers report each acquire
// and release to it; in every other build they are plain absl calls.
//
// The tsan config also links tools/tsan/absl_sync.cc, which reports the
// locks and unlocks of every absl::Mutex (gRPC's too) from outside; what
// only these wrappers can report is a condition evaluated while another
// thread holds the mutex inside Abseil (TsanCondition below).
#ifndef PTOSERVE_COMMON_MUTEX_H_
#define PTOSERVE_COMMON_MUTEX_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace ptoserve {

// Reports to ThreadSanitizer an acquire of, or a release of, the
// synchronization object at `key` (a mutex, or any address two threads
// agree on); nothing in other builds.
inline void TsanAcquired(const void* key) {
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(const_cast<void*>(key));
#else
  (void)key;
#endif
}

inline void TsanReleasing(const void* key) {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(const_cast<void*>(key));
#else
  (void)key;
#endif
}

// absl::MutexLock, visible to ThreadSanitizer.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(absl::Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu)
      : mu_(mu) {
    mu_->Lock();
    TsanAcquired(mu_);
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() {
    TsanReleasing(mu_);
    mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  absl::Mutex* const mu_;
};

// A condition `fn(arg)` for the Await calls below. absl::Mutex evaluates
// it with the mutex held, on the waiting thread or on whichever thread
// unlocks, so each evaluation reports an acquire and a release of it.
template <typename T>
class TsanCondition {
 public:
  TsanCondition(absl::Mutex* mu, bool (*fn)(T*), T* arg)
      : mu_(mu), fn_(fn), arg_(arg) {}
  absl::Condition condition() { return absl::Condition(&Eval, this); }

 private:
  // Reports the evaluation as a critical section of its own: it may run
  // on the waiter between its releases and re-acquires of the mutex.
  static bool Eval(TsanCondition* c) {
    TsanAcquired(c->mu_);
    const bool met = c->fn_(c->arg_);
    TsanReleasing(c->mu_);
    return met;
  }
  absl::Mutex* const mu_;
  bool (*const fn_)(T*);
  T* const arg_;
};

// mu->Await(Condition(fn, arg)), visible to ThreadSanitizer.
template <typename T>
void Await(absl::Mutex* mu, bool (*fn)(T*), T* arg)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  TsanCondition<T> wrapped(mu, fn, arg);
  const absl::Condition condition = wrapped.condition();  // read by others
  TsanReleasing(mu);
  mu->Await(condition);
  TsanAcquired(mu);
}

// mu->AwaitWithDeadline(Condition(fn, arg), deadline), likewise.
template <typename T>
bool AwaitWithDeadline(absl::Mutex* mu, bool (*fn)(T*), T* arg,
                       absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  TsanCondition<T> wrapped(mu, fn, arg);
  const absl::Condition condition = wrapped.condition();  // read by others
  TsanReleasing(mu);
  const bool met = mu->AwaitWithDeadline(condition, deadline);
  TsanAcquired(mu);
  return met;
}

// mu->AwaitWithTimeout(Condition(fn, arg), timeout), likewise.
template <typename T>
bool AwaitWithTimeout(absl::Mutex* mu, bool (*fn)(T*), T* arg,
                      absl::Duration timeout)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  TsanCondition<T> wrapped(mu, fn, arg);
  const absl::Condition condition = wrapped.condition();  // read by others
  TsanReleasing(mu);
  const bool met = mu->AwaitWithTimeout(condition, timeout);
  TsanAcquired(mu);
  return met;
}

}  // namespace ptoserve

#endif  // PTOSERVE_COMMON_MUTEX_H_
