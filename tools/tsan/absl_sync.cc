// Makes Debian's absl::Mutex and absl::CondVar visible to ThreadSanitizer.
//
// Debian builds Abseil and gRPC without ThreadSanitizer. absl::Mutex waits
// on futexes, which ThreadSanitizer does not intercept, so the ordering a
// mutex gives is invisible to it: every hand-off that gRPC makes under one
// of its mutexes (a call's state passed from a poller thread to a callback
// thread, a reactor's OnDone after its last operation) looks like a race in
// the instrumented code on either side.
//
// This file defines the out-of-line absl::Mutex and absl::CondVar entry
// points in the test or server executable itself. The dynamic linker then
// binds every call to them to these definitions, including the calls made
// from inside libgrpc, libgpr and libabsl_synchronization (they go through
// the PLT; `objdump -d libabsl_synchronization.so | grep Mutex4LockEv@plt`).
// Each one calls the library's own function (found with dlsym(RTLD_NEXT))
// and reports the acquire or release of the mutex to ThreadSanitizer, as
// Abseil's own ABSL_TSAN_MUTEX_* annotations would in a ThreadSanitizer
// build of it.
//
// Linked only by the tsan config (tools/tsan:enabled). Reader locks are
// reported like writer locks: that can hide a race between two readers,
// never invent one.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/options.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);

namespace {

#define PTOSERVE_STR2(x) #x
#define PTOSERVE_STR(x) PTOSERVE_STR2(x)

// "_ZN4absl" + the inline namespace (ABSL_OPTION_INLINE_NAMESPACE_NAME,
// "debian3" on Debian 12) + `rest`: the Itanium-ABI name of a member of
// absl::Mutex or absl::CondVar.
std::string AbslSymbol(const char* rest) {
  const std::string ns = PTOSERVE_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  return "_ZN4absl" + std::to_string(ns.size()) + ns + rest;
}

// The library's definition of the symbol `rest`, looked up once.
template <typename Fn>
Fn Real(const char* rest) {
  const std::string name = AbslSymbol(rest);
  void* fn = dlsym(RTLD_NEXT, name.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "tools/tsan/absl_sync.cc: %s not found: %s\n",
                 name.c_str(), dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

}  // namespace

#define PTOSERVE_REAL(type, rest) static const auto real = Real<type>(rest)

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  PTOSERVE_REAL(void (*)(Mutex*), "5Mutex4LockEv");
  real(this);
  __tsan_acquire(this);
}

void Mutex::ReaderLock() {
  PTOSERVE_REAL(void (*)(Mutex*), "5Mutex10ReaderLockEv");
  real(this);
  __tsan_acquire(this);
}

bool Mutex::TryLock() {
  PTOSERVE_REAL(bool (*)(Mutex*), "5Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

bool Mutex::ReaderTryLock() {
  PTOSERVE_REAL(bool (*)(Mutex*), "5Mutex13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

void Mutex::Unlock() {
  PTOSERVE_REAL(void (*)(Mutex*), "5Mutex6UnlockEv");
  __tsan_release(this);
  real(this);
}

void Mutex::ReaderUnlock() {
  PTOSERVE_REAL(void (*)(Mutex*), "5Mutex12ReaderUnlockEv");
  __tsan_release(this);
  real(this);
}

void Mutex::LockWhen(const Condition& cond) {
  PTOSERVE_REAL(void (*)(Mutex*, const Condition&),
                "5Mutex8LockWhenERKNS0_9ConditionE");
  real(this, cond);
  __tsan_acquire(this);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  PTOSERVE_REAL(bool (*)(Mutex*, const Condition&, Duration),
                "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  const bool met = real(this, cond, timeout);
  __tsan_acquire(this);
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  PTOSERVE_REAL(bool (*)(Mutex*, const Condition&, Time),
                "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  const bool met = real(this, cond, deadline);
  __tsan_acquire(this);
  return met;
}

// Await releases the mutex while it waits and holds it again on return.
void Mutex::Await(const Condition& cond) {
  PTOSERVE_REAL(void (*)(Mutex*, const Condition&),
                "5Mutex5AwaitERKNS0_9ConditionE");
  __tsan_release(this);
  real(this, cond);
  __tsan_acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  PTOSERVE_REAL(bool (*)(Mutex*, const Condition&, Duration),
                "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  __tsan_release(this);
  const bool met = real(this, cond, timeout);
  __tsan_acquire(this);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  PTOSERVE_REAL(bool (*)(Mutex*, const Condition&, Time),
                "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  __tsan_release(this);
  const bool met = real(this, cond, deadline);
  __tsan_acquire(this);
  return met;
}

// A condition variable's wait releases `mu` and holds it again on return.
void CondVar::Wait(Mutex* mu) {
  PTOSERVE_REAL(void (*)(CondVar*, Mutex*), "7CondVar4WaitEPNS0_5MutexE");
  __tsan_release(mu);
  real(this, mu);
  __tsan_acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  PTOSERVE_REAL(bool (*)(CondVar*, Mutex*, Duration),
                "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  __tsan_release(mu);
  const bool timed_out = real(this, mu, timeout);
  __tsan_acquire(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  PTOSERVE_REAL(bool (*)(CondVar*, Mutex*, Time),
                "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  __tsan_release(mu);
  const bool timed_out = real(this, mu, deadline);
  __tsan_acquire(mu);
  return timed_out;
}

ABSL_NAMESPACE_END
}  // namespace absl
