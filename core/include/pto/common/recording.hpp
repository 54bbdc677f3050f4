// A kernel's run as a job for the service: what the service shows for it
// (event records, the Chrome trace, the unified-buffer map) is then one
// `ptoctl run` away, on any target.
//
//   pto::KernelRecording recording;   // records this thread from here
//   AndKernel<int32_t, 16, 64>(out, x, y);
//   std::string error;
//   if (!recording.WriteJob("and.json", &error)) { ... error ... }
//
//   $ ptoctl run and.json --trace=and.trace.json
//
// The job: every tile an instruction names or TSTORE stores (by its name,
// Tile::SetName, default t0, t1, ...), with its address if TASSIGN bound
// it; its elements as TLOAD left them or, for a tile never bound or
// loaded, as they were when an instruction first named it (none if all
// zero); the instructions in order; the stored tiles as its outputs; and
// this build's target. A run that a job cannot say is refused with why: a
// tile loaded after an instruction used it (or, bound, after any
// instruction ran), two tiles of one name, a tile whose valid shape
// changed, no instruction.
#ifndef PTO_COMMON_RECORDING_HPP
#define PTO_COMMON_RECORDING_HPP

#include <cstdio>
#include <string>

#include "core/builtin/recording.h"
#include "pto/common/target.hpp"

namespace pto {
inline namespace PTO_TARGET_NAMESPACE {

class KernelRecording {
 public:
  KernelRecording() {
    ptoserve::builtin::StartRecording(static_cast<ptoserve::Target>(kTarget));
  }
  ~KernelRecording() { ptoserve::builtin::StopRecording(); }
  KernelRecording(const KernelRecording&) = delete;
  KernelRecording& operator=(const KernelRecording&) = delete;

  // The job as proto3 JSON (ptoserve.v1.Job); "" with *error set when the
  // run is not a job. With `name_target` false it names no target, so that
  // `ptoctl run --target=...` (or the server's default) chooses.
  std::string Job(std::string* error, bool name_target = true) const {
    return ptoserve::builtin::RecordedJob(error, name_target);
  }

  // Writes Job() to `path`; false with *error set if it cannot.
  bool WriteJob(const char* path, std::string* error,
                bool name_target = true) const {
    const std::string job = Job(error, name_target);
    if (job.empty()) return false;
    std::FILE* f = std::fopen(path, "w");
    if (f == nullptr) {
      *error = std::string("cannot write ") + path;
      return false;
    }
    const bool written =
        std::fwrite(job.data(), 1, job.size(), f) == job.size();
    if (std::fclose(f) != 0 || !written) {
      *error = std::string("cannot write ") + path;
      return false;
    }
    return true;
  }
};

}  // namespace PTO_TARGET_NAMESPACE
}  // namespace pto

#endif  // PTO_COMMON_RECORDING_HPP
