// The engine: checks a job against its target's rules, binds it to tiles
// and runs it on the target's backend. No gRPC here; the server translates
// protobuf jobs into JobSpec and JobOutcome back into protobuf.
#ifndef PTOSERVE_CORE_ENGINE_H_
#define PTOSERVE_CORE_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/backends/backend.h"
#include "core/backends/registry.h"
#include "core/job.h"
#include "core/tile.h"
#include "core/tile_codec.h"
#include "core/types.h"
#include "core/unified_buffer.h"

namespace ptoserve {

struct EngineOptions {
  // The target of a job that names none. TargetOf is the one place it is
  // applied: the engine's binder and lowering, and the server's decoding
  // and metrics, all ask it.
  Target default_target = Target::kHost;
  Target TargetOf(std::optional<Target> asked) const {
    return asked.value_or(default_target);
  }
  uint64_t host_buffer_bytes = 1 << 20;  // the host target's unified buffer
  EngineLimits limits;
};

namespace internal {
class JobBinder;
}  // namespace internal

// A job that passed every check, with its tiles allocated and filled.
class PreparedJob {
 public:
  Target target() const { return target_; }
  size_t num_instructions() const { return bound_.size(); }
  // Instructions that must finish before instruction `i` starts: the events
  // it waits on, and every earlier instruction that touches a tile it
  // touches where one of the two writes it. Indices are all < i.
  const std::vector<uint32_t>& predecessors(size_t i) const {
    return predecessors_[i];
  }
  // Instruction `i` bound to its tiles.
  const BoundInstruction& instruction(size_t i) const { return bound_[i]; }
  // Instruction `i`'s event: times, batch and trace once it has run.
  const Event& event(size_t i) const { return events_[i]; }

 private:
  friend class Engine;
  friend class internal::JobBinder;

  struct Slot {
    std::string name;
    std::optional<Tile> tile;  // allocated once the job passed its checks
  };

  // What must happen in the unified buffer around instruction `i`.
  struct BufferWork {
    // Ranges zeroed before it runs: tiles it creates over bytes an
    // earlier tile used.
    std::vector<ByteRange> clear;
    // Its dst overlaps a source without being the same place (same address
    // and row pitch): the dst is computed aside and copied in, so that every
    // source is read before any of it is written, as a vector unit does.
    bool stage_dst = false;
  };

  Target target_ = Target::kHost;
  const Backend* backend_ = nullptr;
  // Held in place for a job of a few tiles and instructions, the common
  // job: each is an allocation less a job.
  absl::InlinedVector<Slot, 4> slots_;  // never resized once bound
  absl::InlinedVector<BoundInstruction, 2> bound_;
  absl::InlinedVector<std::vector<uint32_t>, 2> predecessors_;
  std::vector<Event> events_;
  absl::InlinedVector<size_t, 4> outputs_;  // slot indices
  // Per slot: where its output is written (JobSpec::places), or null.
  absl::InlinedVector<uint8_t*, 4> place_;
  // The unified buffer up to its highest byte in use; the tiles are views
  // into it. Empty for a host job in auto mode, whose tiles are separate.
  std::unique_ptr<uint8_t[]> buffer_;
  std::vector<BufferWork> buffer_work_;  // per instruction; empty if no buffer
};

// One instruction of a prepared job.
struct WorkItem {
  PreparedJob* job;
  uint32_t index;
};

class Engine {
 public:
  explicit Engine(const EngineOptions& options);

  const EngineOptions& options() const { return options_; }
  const BackendRegistry& backends() const { return backends_; }

  // Checks `job` and binds it to freshly allocated tiles. INVALID_ARGUMENT
  // names the instruction, operand and rule (or the tile) that is wrong;
  // RESOURCE_EXHAUSTED names the limit a job exceeds. `admit` (if set) sees
  // the job's cost once every check has passed and before any tile is
  // made; its error is Prepare's.
  absl::StatusOr<std::unique_ptr<PreparedJob>> Prepare(
      const JobSpec& job, const Admission& admit = nullptr) const;

  // Runs `batch`, instructions of one or more jobs, as one backend call.
  // REQUIRES: all share a target; every predecessor of each has run, and
  // none of them has.
  void RunBatch(absl::Span<const WorkItem> batch) const;

  // Moves the output tiles and events out of a fully run job. The outcome
  // owns its tiles (a requested input is copied), so it may outlive the
  // job's inputs, except outputs with an OutputPlace: those are written
  // there (copied out of a unified buffer) and their tiles view it.
  JobOutcome Finish(PreparedJob* job) const;

  // Prepare, run every instruction in order, Finish.
  absl::StatusOr<JobOutcome> Execute(const JobSpec& job) const;

 private:
  EngineOptions options_;
  BackendRegistry backends_;
  mutable std::atomic<uint64_t> next_batch_id_{1};
};

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_ENGINE_H_
