// Settings: what ptobench's flags ask of a run, but for the connection
// (client/options.h): the workload, the mode and the report.
#ifndef PTOSERVE_BENCH_SETTINGS_H_
#define PTOSERVE_BENCH_SETTINGS_H_

#include <string>

#include "absl/time/time.h"

namespace ptoserve {
namespace ptobench {

// Each field holds its flag's value as given (bench/ptobench.cc reads
// them), so that the rest of ptobench reads no flag.
struct Settings {
  std::string mode;  // unary, stream or batch
  // job (ptoserve.v1's Job and JobResult), or flat (bench/flat/flat.proto's
  // FlatJob and FlatResult, for bench/flat_server: unary mode).
  std::string wire;
  int threads = 0;
  int stream_depth = 0;
  int batch = 0;  // jobs per message in batch mode
  absl::Duration duration;
  absl::Duration warmup;
  std::string dtype, shape, opcode, target;
  bool check = false;
  int shm_check_every = 0;
  std::string format;  // text, csv or json
  std::string label;
};

}  // namespace ptobench
}  // namespace ptoserve

#endif  // PTOSERVE_BENCH_SETTINGS_H_
