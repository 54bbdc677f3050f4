// A job's vocabulary, as the engine and whoever builds jobs for it share
// it: the tiles and instructions that go in (JobSpec), what comes out
// (JobOutcome, one Event per instruction), the limits a job must keep and
// the cost it is admitted at. No behaviour here; core/engine.h runs jobs.
#ifndef PTOSERVE_CORE_JOB_H_
#define PTOSERVE_CORE_JOB_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/opcode.h"
#include "core/tile.h"
#include "core/tile_codec.h"
#include "core/trace.h"
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

// Memory outside the job that an output tile is written to, in place of
// the outcome (a slice of a shared-memory region). It must outlive the
// PreparedJob and hold exactly the tile's bytes, and no tile of the job may
// read bytes it covers except that tile's own input.
struct OutputPlace {
  std::string name;  // an output of the job
  absl::Span<uint8_t> bytes;
};

struct JobSpec {
  std::optional<Target> target;  // unset: EngineOptions::default_target
  Mode mode = Mode::kAuto;
  std::vector<TileInput> tiles;
  std::vector<Instruction> instructions;
  // The tiles to return, each once (a name listed again is ignored);
  // empty: every instruction's dst.
  std::vector<std::string> outputs;
  // Outputs written to the caller's memory rather than carried in the
  // outcome; each names an output at most once.
  std::vector<OutputPlace> places;
};

// Where one operand of an instruction lives in the job's unified buffer.
struct OperandPlacement {
  absl::string_view role;  // "dst", "src0", "src1", "tmp"
  std::string tile;
  uint64_t begin = 0, end = 0;  // [begin, end)
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
  // dst, src0, src1 (unless the instruction has one source) and tmp (where
  // the target uses it), for jobs whose tiles live in a unified buffer;
  // empty otherwise.
  std::vector<OperandPlacement> operands;
};

struct OutputTile {
  std::string name;
  Tile tile;  // desc().address: where it lived, if in a unified buffer
  // Written to its OutputPlace: `tile` views those bytes, which the outcome
  // does not own.
  bool placed = false;
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
  // The bytes the engine allocates for tiles: the unified buffer up to its
  // highest byte in use, for a job whose tiles live in one; else every tile
  // but an input sent as data that no instruction writes, which is read in
  // place, and an output with an OutputPlace, which is written there.
  uint64_t tile_bytes = 0;
  // The job's tiles, declared and made by the engine.
  uint64_t tiles = 0;
  // The output tiles, in the order the job returns them. How many bytes
  // they take in a reply depends on how the reply encodes them, which is
  // the codec's business (ResultBytes in proto/codec.h).
  struct Output {
    std::string name;
    uint64_t elements = 0;
    uint64_t bytes = 0;
  };
  // Inline for the few outputs most jobs have: no allocation.
  absl::InlinedVector<Output, 4> outputs;
};

// Decides whether a job of a given cost may go ahead; an error stops it
// before any tile is made.
using Admission = std::function<absl::Status(const JobCost&)>;

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_JOB_H_
