#include "server/shm/sigbus_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/synchronization/mutex.h"
#include "common/mutex.h"

namespace ptoserve {

namespace {

struct Guarded {
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<uint64_t> faults{0};
};
// The handler changes them: without a lock, or it could deadlock.
static_assert(std::atomic<uintptr_t>::is_always_lock_free &&
              std::atomic<uint64_t>::is_always_lock_free);

Guarded g_guarded[kGuardSlots];
absl::Mutex g_guard_mu;  // assigns slots; the handler never takes it
struct sigaction g_previous;

void OnSigbus(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;  // the interrupted code's, kept for it
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Guarded& g : g_guarded) {
    const uintptr_t begin = g.begin.load(std::memory_order_acquire);
    const uintptr_t end = g.end.load(std::memory_order_acquire);
    if (begin == 0 || addr < begin || addr >= end) continue;
    const uintptr_t page = addr & ~(PageBytes() - 1);
    // The raw system call: no sanitizer's interceptor runs in the handler.
    const long mapped =
        syscall(SYS_mmap, page, end - page, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (mapped == static_cast<long>(page)) {
      g.faults.fetch_add(1, std::memory_order_release);
      errno = saved_errno;
      return;
    }
    break;
  }
  // Not a region's fault: what would have happened without this handler.
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 &&
      g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  // The faulting access runs again and the default action ends the process.
  signal(SIGBUS, SIG_DFL);
}

void InstallSigbusHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_sigaction = OnSigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &g_previous);
  });
}

}  // namespace

uintptr_t PageBytes() {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return page;
}

int GuardMapping(uintptr_t begin, uintptr_t end) {
  InstallSigbusHandler();
  MutexLock lock(&g_guard_mu);
  for (int i = 0; i < kGuardSlots; ++i) {
    Guarded& g = g_guarded[i];
    if (g.begin.load(std::memory_order_relaxed) != 0) continue;
    g.faults.store(0, std::memory_order_relaxed);
    g.end.store(end, std::memory_order_release);
    g.begin.store(begin, std::memory_order_release);
    return i;
  }
  return -1;
}

void UnguardMapping(int slot) {
  MutexLock lock(&g_guard_mu);
  g_guarded[slot].begin.store(0, std::memory_order_release);
  g_guarded[slot].end.store(0, std::memory_order_release);
}

uint64_t MappingFaults(int slot) {
  return g_guarded[slot].faults.load(std::memory_order_acquire);
}

}  // namespace ptoserve
