// Measure: one point of a run (`concurrency` calls or streams, or `rate`
// requests a second) on --threads generator threads, their tallies merged.
#ifndef PTOSERVE_BENCH_MEASURE_H_
#define PTOSERVE_BENCH_MEASURE_H_

#include <grpcpp/generic/generic_stub.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/driver.h"
#include "bench/settings.h"
#include "bench/workload.h"

namespace ptoserve {
namespace ptobench {

// What one point measured, and how.
struct Point {
  int concurrency = 0;  // as asked; at a rate there is none
  double rate = 0;      // 0: closed loop
  int threads = 0;
  int connections = 0;
  int stream_depth = 0;  // jobs each stream keeps in flight
  bool stream = false;   // stream or batch mode
  int batch = 0;         // jobs per message in batch mode; 0: not batch mode
  bool shm = false;
  Tally tally;  // every thread's, latencies sorted

  // Every error, of whatever kind.
  int64_t errors() const;
  // Whether a result, right or wrong, came in the window.
  bool measured() const { return tally.done > 0 || errors() > 0; }
};

// Measures one point: `concurrency` calls or streams, or `rate` unary
// calls a second, over `stubs` (a channel each), for settings.duration
// after settings.warmup. `authorization`: the metadata's value, or "".
Point Measure(const Settings& settings, Workload& workload,
              std::vector<std::unique_ptr<grpc::GenericStub>>* stubs,
              const std::string& authorization, int concurrency, double rate);

}  // namespace ptobench
}  // namespace ptoserve

#endif  // PTOSERVE_BENCH_MEASURE_H_
