// How Engine::Prepare turns a JobSpec into a PreparedJob: the checks, the
// tiles bound and placed, the order instructions may run in. Internal.
#ifndef PTOSERVE_CORE_JOB_BINDER_H_
#define PTOSERVE_CORE_JOB_BINDER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/backends/backend.h"
#include "core/backends/registry.h"
#include "core/engine.h"
#include "core/job.h"
#include "core/tile.h"
#include "core/types.h"
#include "core/unified_buffer.h"

namespace ptoserve {
namespace internal {

// A set of a job's slots (indices below a job's slot count), on the stack
// for the few slots most jobs have.
class SlotSet {
 public:
  explicit SlotSet(size_t slots) : in_(slots, false) {}
  bool Insert(size_t s) { return !std::exchange(in_[s], true); }
  void Erase(size_t s) { in_[s] = false; }
  bool Contains(size_t s) const { return in_[s]; }

 private:
  absl::InlinedVector<bool, 16> in_;
};

// A job's tile names and their slots. Most jobs have a few tiles, and
// comparing a name with a few others costs less than hashing it, so the
// first kFew names are kept in a list and the rest in a hash map. The
// names are views: the JobSpec they come from outlives the index.
class SlotIndex {
 public:
  // The slot of `name`, or null.
  const size_t* Find(absl::string_view name) const {
    for (const auto& [n, slot] : few_) {
      if (n == name) return &slot;
    }
    if (many_.empty()) return nullptr;
    auto it = many_.find(name);
    return it == many_.end() ? nullptr : &it->second;
  }
  // `name` must not be in the index yet.
  void Add(absl::string_view name, size_t slot) {
    if (few_.size() < kFew) {
      few_.emplace_back(name, slot);
    } else {
      many_.emplace(name, slot);
    }
  }

 private:
  static constexpr size_t kFew = 8;
  absl::InlinedVector<std::pair<absl::string_view, size_t>, kFew> few_;
  absl::flat_hash_map<absl::string_view, size_t> many_;
};

// Turns a JobSpec into a PreparedJob, one stage at a time; each stage
// returns the first problem it finds. The stage that places tiles in a
// unified buffer is in job_binder_buffer.cc, the others in job_binder.cc.
class JobBinder {
 public:
  JobBinder(const JobSpec& spec, const EngineLimits& limits,
            const BackendRegistry& backends, Target target,
            const Admission& admit);

  // Runs every stage (Engine::Prepare's contract); a binder binds once.
  absl::StatusOr<std::unique_ptr<PreparedJob>> Bind() &&;

 private:
  // The tiles one instruction reads and writes, as slot indices.
  struct Wiring {
    size_t dst, src0, src1;
    std::optional<size_t> tmp;
  };

  template <typename... Args>
  absl::Status InstructionError(size_t index,
                                const absl::FormatSpec<Args...>& format,
                                const Args&... args) const;

  absl::Status CheckCounts() const;

  // Which slots FillTiles will borrow rather than own: declared inputs sent
  // as data that no instruction writes.
  SlotSet Borrowed() const;

  JobCost Cost() const;

  // Adds a slot for tile `name`; its storage comes later, in FillTiles.
  absl::Status AddSlot(absl::string_view name, const TileDesc& desc);

  absl::Status DeclareTiles();

  // Every event the job records, so that waits can tell "later" from
  // "unknown"; left empty when no instruction names its event or waits.
  absl::Status IndexEvents();

  // The slot of operand `name`, allocating a tile shaped like slot `like`
  // when the job has none of that name.
  absl::StatusOr<size_t> SlotOrNew(const std::string& name, size_t like);

  absl::Status BindInstruction(size_t i);
  // Instruction i's waits, each on an event an earlier instruction records,
  // into `event`.
  absl::Status AddWaits(size_t i, Event* event) const;

  // Each output once, in the order first asked for: a result holds tiles
  // by name, so a second copy would only cost memory.
  absl::Status ResolveOutputs();

  // Outputs written to the caller's memory: each names an output of the
  // job, once, and its place holds exactly the tile's bytes.
  absl::Status BindPlaces();

  // Whether the first instruction that touches slot `s` writes every byte
  // of it before anything reads it: it is that instruction's dst, read by
  // none of its sources, with a valid region that is the whole tile.
  bool WrittenWholeFirst(size_t s) const;

  // The reads and writes of instruction `i`, as (slot, writes) pairs:
  // sources first, so that an in-place dst counts as read before written.
  absl::InlinedVector<std::pair<size_t, bool>, 4> Touches(size_t i) const {
    const Wiring& w = wiring_[i];
    absl::InlinedVector<std::pair<size_t, bool>, 4> touches = {
        {w.src0, false}, {w.src1, false}, {w.dst, true}};
    if (w.tmp) touches.push_back({*w.tmp, true});
    return touches;
  }

  // Gives every tile its place in the unified buffer: the client's address,
  // or one PlaceTiles chooses for the span of instructions it is live.
  absl::Status PlaceInBuffer();

  // Two tiles that arrive with elements may not share bytes: which one's
  // elements the buffer would hold is not defined.
  absl::Status CheckLoadsDisjoint(const std::vector<ByteRange>& ranges) const;

  // Explicit waits plus data hazards, so that any execution order that
  // honours them gives the results of program order.
  void DerivePredecessors();

  // `key(slot)`: what `Hazards` tracks a tile by.
  template <typename Hazards, typename Key>
  void Derive(Hazards& hazards, Key key);

  // The unified buffer, zeroed except where inputs' bytes will be copied.
  void MakeBuffer();

  // Everything checks out: make the tiles and bind the instructions to
  // them. An input sent as data that no instruction writes is borrowed, not
  // copied; every other tile owns its bytes.
  absl::Status FillTiles();

  const JobSpec& spec_;
  const EngineLimits& limits_;
  const Admission& admit_;
  const Target target_;
  const Backend& backend_;
  // Whether the job's tiles live in a unified buffer: every manual-mode
  // job, and auto-mode jobs on targets that model one.
  const bool in_buffer_;
  std::unique_ptr<PreparedJob> job_;
  BufferPlan plan_;                // when in_buffer_
  std::vector<ByteRange> ranges_;  // per slot, when in_buffer_
  // Per slot and per instruction; inline for the few most jobs have.
  absl::InlinedVector<TileDesc, 8> descs_;
  absl::InlinedVector<Wiring, 4> wiring_;
  SlotIndex slot_of_;
  absl::flat_hash_map<std::string, size_t> recorder_;  // event -> instruction
};

}  // namespace internal
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_JOB_BINDER_H_
