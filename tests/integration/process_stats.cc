#include "tests/integration/process_stats.h"

#include <dirent.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace ptoserve {

namespace {

// Entries of `dir` other than "." and ".."; -1 if it cannot be read.
int CountEntries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") ++n;
  }
  closedir(d);
  return n;
}

}  // namespace

ProcessStats ReadProcessStats(pid_t pid) {
  ProcessStats stats;
  const std::string proc = absl::StrFormat("/proc/%d", pid);
  std::ifstream status(proc + "/status");
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view rest = line;
    int64_t* field = nullptr;
    if (absl::ConsumePrefix(&rest, "VmRSS:")) field = &stats.rss_kb;
    if (absl::ConsumePrefix(&rest, "VmHWM:")) field = &stats.hwm_kb;
    if (field == nullptr) continue;
    rest = absl::StripAsciiWhitespace(rest);
    absl::ConsumeSuffix(&rest, "kB");
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), field)) *field = -1;
  }
  stats.threads = CountEntries(proc + "/task");
  // Opening the directory costs the reader a descriptor, not the server.
  stats.fds = CountEntries(proc + "/fd");
  return stats;
}

int64_t VoluntaryWaits(pid_t pid, const std::string& thread_name) {
  const std::string tasks = absl::StrFormat("/proc/%d/task", pid);
  DIR* d = opendir(tasks.c_str());
  if (d == nullptr) return -1;
  int64_t total = 0;
  while (dirent* e = readdir(d)) {
    const std::string task = tasks + "/" + e->d_name;
    std::string comm;
    if (!std::getline(std::ifstream(task + "/comm"), comm) ||
        comm != thread_name) {
      continue;
    }
    std::ifstream status(task + "/status");
    std::string line;
    int64_t waits = 0;
    while (std::getline(status, line)) {
      absl::string_view rest = line;
      if (absl::ConsumePrefix(&rest, "voluntary_ctxt_switches:") &&
          absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &waits)) {
        total += waits;
      }
    }
  }
  closedir(d);
  return total;
}

std::string ToString(const ProcessStats& stats) {
  return absl::StrFormat("rss %s (peak %s), %d threads, %d fds",
                         MiB(stats.rss_kb), MiB(stats.hwm_kb), stats.threads,
                         stats.fds);
}

std::string MiB(int64_t kb) { return absl::StrFormat("%.1f MiB", kb / 1024.0); }

ProcessStats WaitForStats(
    pid_t pid, int timeout_ms,
    const std::function<bool(const ProcessStats&)>& settled) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  ProcessStats stats = ReadProcessStats(pid);
  while (!settled(stats) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stats = ReadProcessStats(pid);
  }
  return stats;
}

}  // namespace ptoserve
