// What /proc says about a process: memory, threads and open files. The
// fault and load tests watch the server with it.
#ifndef PTOSERVE_TESTS_INTEGRATION_PROCESS_STATS_H_
#define PTOSERVE_TESTS_INTEGRATION_PROCESS_STATS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

namespace ptoserve {

// Sanitizer builds keep freed memory in quarantine (ASan: up to 256 MiB) and
// shadow all of it, so a server's RSS there is not its own use: the tests
// report it, but check memory bounds only in plain builds. (The server is
// built with the same configuration as the test.)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif
#else
inline constexpr bool kSanitizerBuild = false;
#endif
inline constexpr bool kMemoryBoundsApply = !kSanitizerBuild;
// Likewise time: a sanitizer makes every call 5 to 15 times slower, and
// ThreadSanitizer's runtime serializes the server's threads on its own
// locks, so a latency bound there measures the sanitizer. Latencies are
// reported in every build and bounded in plain ones.
inline constexpr bool kLatencyBoundsApply = !kSanitizerBuild;

struct ProcessStats {
  int64_t rss_kb = -1;  // VmRSS: resident now
  int64_t hwm_kb = -1;  // VmHWM: the most ever resident
  int threads = -1;     // entries of /proc/PID/task
  int fds = -1;         // entries of /proc/PID/fd
};

// Reads /proc/`pid`; fields it cannot read stay -1.
ProcessStats ReadProcessStats(pid_t pid);

// How many times the threads of `pid` named `thread_name` (their comm) have
// given up the CPU to wait (voluntary context switches, summed): how often
// they woke up and went back to sleep. -1 if /proc/`pid` cannot be read.
int64_t VoluntaryWaits(pid_t pid, const std::string& thread_name);

// "rss 12.3 MiB (peak 15.0 MiB), 9 threads, 14 fds".
std::string ToString(const ProcessStats& stats);

// "12.3 MiB".
std::string MiB(int64_t kb);

// Polls `pid` every 50 ms for at most `timeout_ms` until `settled` holds for
// its stats, and returns the last stats read (settled or not).
ProcessStats WaitForStats(
    pid_t pid, int timeout_ms,
    const std::function<bool(const ProcessStats&)>& settled);

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_INTEGRATION_PROCESS_STATS_H_
