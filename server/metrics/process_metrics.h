// The standard process metrics of Prometheus's client libraries
// (process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_open_fds, process_max_fds,
// process_start_time_seconds), read from /proc at scrape time.
#ifndef PTOSERVE_SERVER_METRICS_PROCESS_METRICS_H_
#define PTOSERVE_SERVER_METRICS_PROCESS_METRICS_H_

#include <cstdint>
#include <optional>

#include "server/metrics/metrics.h"

namespace ptoserve {

// What /proc says of this process now; a field it cannot read is absent.
struct ProcessStats {
  std::optional<double> cpu_seconds;  // user + system
  std::optional<uint64_t> resident_bytes;
  std::optional<uint64_t> virtual_bytes;
  std::optional<uint64_t> open_fds;
  std::optional<uint64_t> max_fds;           // the soft RLIMIT_NOFILE
  std::optional<double> start_time_seconds;  // since the Unix epoch
};
ProcessStats ReadProcessStats();

// Adds the process metrics to `registry`.
void AddProcessMetrics(MetricsRegistry* registry);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_METRICS_PROCESS_METRICS_H_
