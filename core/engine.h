// The engine: checks a job against its target's rules, binds it to tiles
// and runs it on the target's backend. No gRPC here; the server translates
// protobuf jobs into JobSpec and JobOutcome back into protobuf.
#ifndef PTOSERVE_CORE_ENGINE_H_
#define PTOSERVE_CORE_ENGINE_H_

#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/backends/backend.h"
#include "core/tile.h"
#include "core/tile_codec.h"
#include "core/types.h"

namespace ptoserve {

// A tile as a job supplies it. The elements are borrowed: they must outlive
// the PreparedJob, which reads inputs sent as data in place unless an
// instruction writes them.
struct TileInput {
  std::string name;
  TileDesc desc;  // a zero valid extent means the full extent
  Encoding encoding = Encoding::kNone;
  absl::string_view data;           // when encoding == kData
  absl::Span<const double> values;  // when encoding == kValues
  double fill = 0;                  // when encoding == kFill
};

// One instruction; operands are tile names.
struct Instruction {
  Opcode opcode = Opcode::kTand;
  std::string dst, src0, src1;
  std::string tmp;           // TXOR scratch; may be empty
  std::string record_event;  // empty: "e<index>"
  std::vector<std::string> wait_events;
  // Notes for this instruction's event from whoever built the job (e.g. the
  // assembler saying it added a scratch tile).
  std::vector<std::string> notes;
};

struct JobSpec {
  std::optional<Target> target;  // unset: EngineOptions::default_target
  Mode mode = Mode::kAuto;
  std::vector<TileInput> tiles;
  std::vector<Instruction> instructions;
  // The tiles to return, each once (a name listed again is ignored);
  // empty: every instruction's dst.
  std::vector<std::string> outputs;
};

// What running one instruction did (the seeds' RecordEvent).
struct Event {
  std::string id;
  uint32_t index = 0;
  Opcode opcode = Opcode::kTand;
  Target target = Target::kHost;
  std::vector<std::string> waited_on;
  absl::Time enqueue_time, start_time, end_time;
  uint64_t batch_id = 0;
  uint32_t batch_size = 0;
  Trace trace;
};

struct OutputTile {
  std::string name;
  Tile tile;
  Encoding encoding;  // how the tile's inputs travelled; kData if none did
};

struct JobOutcome {
  Target target = Target::kHost;
  std::vector<OutputTile> outputs;  // in the order the job asked for them
  std::vector<Event> events;        // one per instruction, in order
};

struct EngineLimits {
  size_t max_tile_bytes = size_t{16} << 20;
  size_t max_tiles_per_job = 1024;
  size_t max_instructions_per_job = 4096;
  // The most events one instruction may wait on. A program needs few: an
  // instruction already follows every earlier one that touches its tiles.
  size_t max_waits_per_instruction = 64;
  // The most bytes of PTO assembly one job may carry.
  size_t max_assembly_bytes = size_t{1} << 20;
};

// What a job will cost in memory, known once it has passed its checks and
// before any of its tiles exist (Engine::Prepare's admission).
struct JobCost {
  // The tiles the engine makes: every tile but an input sent as data that
  // no instruction writes, which is read in place.
  uint64_t tile_bytes = 0;
  // The output tiles' elements as they will travel back: their bytes, or
  // 8 bytes per element for tiles returned as values. A lower bound on the
  // serialized result.
  uint64_t result_bytes = 0;
  // The job's tiles, declared and made by the engine.
  uint64_t tiles = 0;
};

// Decides whether a job of a given cost may go ahead; an error stops it
// before any tile is made.
using Admission = std::function<absl::Status(const JobCost&)>;

struct EngineOptions {
  Target default_target = Target::kHost;
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
    Encoding encoding = Encoding::kNone;
  };

  Target target_ = Target::kHost;
  const Backend* backend_ = nullptr;
  std::vector<Slot> slots_;  // never resized once instructions are bound
  std::vector<BoundInstruction> bound_;
  std::vector<std::vector<uint32_t>> predecessors_;
  std::vector<Event> events_;
  std::vector<size_t> outputs_;  // slot indices
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
  // job's inputs.
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
