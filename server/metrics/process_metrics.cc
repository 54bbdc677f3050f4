#include "server/metrics/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace ptoserve {

namespace {

std::string ReadAll(const char* path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The boot time, in seconds since the epoch (/proc/stat's btime).
std::optional<uint64_t> BootTime() {
  for (absl::string_view line : absl::StrSplit(ReadAll("/proc/stat"), '\n')) {
    uint64_t btime = 0;
    if (absl::ConsumePrefix(&line, "btime ") &&
        absl::SimpleAtoi(line, &btime)) {
      return btime;
    }
  }
  return std::nullopt;
}

}  // namespace

ProcessStats ReadProcessStats() {
  ProcessStats stats;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  // /proc/self/stat: "pid (comm) state ...", comm may hold spaces; the
  // fields after it are numbered from 3 (state) as in proc(5).
  const std::string stat = ReadAll("/proc/self/stat");
  if (size_t close = stat.rfind(')'); close != std::string::npos) {
    std::vector<absl::string_view> f = absl::StrSplit(
        absl::string_view(stat).substr(close + 2), ' ', absl::SkipEmpty());
    auto field = [&](size_t n, uint64_t* v) {  // n as numbered in proc(5)
      return n >= 3 && n - 3 < f.size() && absl::SimpleAtoi(f[n - 3], v);
    };
    uint64_t utime = 0, stime = 0, start = 0, vsize = 0, rss = 0;
    if (field(14, &utime) && field(15, &stime)) {
      stats.cpu_seconds = (utime + stime) / ticks;
    }
    if (field(23, &vsize)) stats.virtual_bytes = vsize;
    if (field(24, &rss)) stats.resident_bytes = rss * page;
    std::optional<uint64_t> boot = BootTime();
    if (field(22, &start) && boot) {
      stats.start_time_seconds = *boot + start / ticks;
    }
  }
  if (DIR* dir = opendir("/proc/self/fd"); dir != nullptr) {
    uint64_t n = 0;
    while (const dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') ++n;
    }
    closedir(dir);
    stats.open_fds = n - 1;  // not the one reading the directory
  }
  if (rlimit limit; getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    stats.max_fds = limit.rlim_cur;
  }
  return stats;
}

void AddProcessMetrics(MetricsRegistry* registry) {
  auto read = [](auto field) {
    return [field] {
      auto value = ReadProcessStats().*field;
      return value ? static_cast<double>(*value) : 0.0;
    };
  };
  registry->AddCallbackCounter("process_cpu_seconds_total",
                               "User and system CPU time spent, in seconds.",
                               read(&ProcessStats::cpu_seconds));
  registry->AddGauge("process_resident_memory_bytes",
                     "Resident memory size in bytes.", {},
                     read(&ProcessStats::resident_bytes));
  registry->AddGauge("process_virtual_memory_bytes",
                     "Virtual memory size in bytes.", {},
                     read(&ProcessStats::virtual_bytes));
  registry->AddGauge("process_open_fds", "Open file descriptors.", {},
                     read(&ProcessStats::open_fds));
  registry->AddGauge("process_max_fds",
                     "The most file descriptors the process may open.", {},
                     read(&ProcessStats::max_fds));
  registry->AddGauge(
      "process_start_time_seconds",
      "Start time of the process since the Unix epoch, in seconds.", {},
      read(&ProcessStats::start_time_seconds));
}

}  // namespace ptoserve
