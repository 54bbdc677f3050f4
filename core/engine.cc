#include "core/engine.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/error_site.h"
#include "core/ops.h"
#include "core/status_macros.h"
#include "core/unified_buffer.h"

namespace ptoserve {

namespace {

std::string EventName(const Instruction& inst, size_t index) {
  return inst.record_event.empty() ? absl::StrCat("e", index)
                                   : inst.record_event;
}

// Tracks, per tile, which earlier instructions a new one must follow.
class HazardTracker {
 public:
  explicit HazardTracker(size_t num_tiles)
      : last_writer_(num_tiles, -1), readers_(num_tiles) {}

  void Add(size_t slot, bool writes, std::vector<uint32_t>* deps) const {
    if (last_writer_[slot] >= 0) deps->push_back(last_writer_[slot]);
    if (writes) {
      for (uint32_t r : readers_[slot]) deps->push_back(r);
    }
  }
  void Commit(size_t slot, bool writes, uint32_t index) {
    if (writes) {
      last_writer_[slot] = index;
      readers_[slot].clear();
    } else {
      readers_[slot].push_back(index);
    }
  }

 private:
  std::vector<int64_t> last_writer_;
  std::vector<std::vector<uint32_t>> readers_;
};

// The same for a unified buffer, by bytes rather than tiles: tiles that
// share bytes (aliases, or a dead tile's bytes reused) are hazards for each
// other. The buffer is a set of segments, each with the instruction that
// last wrote it and those that read it since; a write makes its range one
// segment again.
//
// Two rules keep the edges linear in the program's size. A reader joining
// a full reader list follows the readers in it, so that it alone stands for
// them. A read spanning many segments follows every access to them, as a
// write would, and then stands for them as one segment's last "writer":
// later accesses follow it alone, and through it everything before (it
// writes nothing, so this only orders; it never changes a result).
class BufferHazards {
 public:
  explicit BufferHazards(uint64_t bytes) { segments_[0].end = bytes; }

  void Add(const ByteRange& range, bool writes,
           std::vector<uint32_t>* deps) const {
    const bool whole = writes || Spans(range) > kMaxSegmentsRead;
    auto it = std::prev(segments_.upper_bound(range.begin));
    for (; it != segments_.end() && it->first < range.end; ++it) {
      const Segment& seg = it->second;
      if (seg.writer >= 0) deps->push_back(static_cast<uint32_t>(seg.writer));
      if (whole || seg.readers.size() >= kMaxReaders) {
        deps->insert(deps->end(), seg.readers.begin(), seg.readers.end());
      }
    }
  }
  // REQUIRES: Add for every access of instruction `index` came first, and
  // Commit for its reads before its writes.
  void Commit(const ByteRange& range, bool writes, uint32_t index) {
    if (writes || Spans(range) > kMaxSegmentsRead) {
      Split(range.begin);
      Split(range.end);
      segments_.erase(segments_.find(range.begin),
                      segments_.lower_bound(range.end));
      Segment& seg = segments_[range.begin];
      seg.end = range.end;
      seg.writer = index;
      return;
    }
    Split(range.begin);
    Split(range.end);
    auto last = segments_.lower_bound(range.end);
    for (auto it = segments_.find(range.begin); it != last; ++it) {
      auto& readers = it->second.readers;
      if (!readers.empty() && readers.back() == index) continue;
      if (readers.size() >= kMaxReaders) readers.clear();
      readers.push_back(index);
    }
  }

 private:
  static constexpr size_t kMaxReaders = 16;
  static constexpr size_t kMaxSegmentsRead = 8;

  struct Segment {
    uint64_t end = 0;
    int64_t writer = -1;
    absl::InlinedVector<uint32_t, 4> readers;
  };

  // How many segments `range` meets, counted up to kMaxSegmentsRead + 1.
  size_t Spans(const ByteRange& range) const {
    size_t n = 0;
    auto it = std::prev(segments_.upper_bound(range.begin));
    for (; it != segments_.end() && it->first < range.end &&
           n <= kMaxSegmentsRead;
         ++it) {
      ++n;
    }
    return n;
  }

  // Makes `at` the start of a segment (unless it is the end of the buffer).
  void Split(uint64_t at) {
    auto it = std::prev(segments_.upper_bound(at));
    if (it->first == at || it->second.end <= at) return;
    Segment tail = it->second;
    it->second.end = at;
    segments_.emplace(at, std::move(tail));
  }

  std::map<uint64_t, Segment> segments_;  // by first byte
};

}  // namespace

namespace internal {

// Turns a JobSpec into a PreparedJob, one stage at a time; each stage
// returns the first problem it finds.
class JobBinder {
 public:
  JobBinder(const JobSpec& spec, const EngineLimits& limits,
            const BackendRegistry& backends, Target default_target,
            const Admission& admit)
      : spec_(spec),
        limits_(limits),
        admit_(admit),
        target_(spec.target.value_or(default_target)),
        backend_(backends.Get(target_)),
        in_buffer_(spec.mode == Mode::kManual ||
                   backend_.spec().auto_mode_in_buffer),
        job_(std::make_unique<PreparedJob>()) {
    job_->target_ = target_;
    job_->backend_ = &backend_;
  }

  absl::StatusOr<std::unique_ptr<PreparedJob>> Bind() && {
    PTO_RETURN_IF_ERROR(CheckCounts());
    PTO_RETURN_IF_ERROR(DeclareTiles());
    PTO_RETURN_IF_ERROR(IndexEvents());
    for (size_t i = 0; i < spec_.instructions.size(); ++i) {
      PTO_RETURN_IF_ERROR(BindInstruction(i));
    }
    PTO_RETURN_IF_ERROR(ResolveOutputs());
    PTO_RETURN_IF_ERROR(BindPlaces());
    if (in_buffer_) PTO_RETURN_IF_ERROR(PlaceInBuffer());
    if (admit_) PTO_RETURN_IF_ERROR(admit_(Cost()));
    DerivePredecessors();
    PTO_RETURN_IF_ERROR(FillTiles());
    return std::move(job_);
  }

 private:
  // The tiles one instruction reads and writes, as slot indices.
  struct Wiring {
    size_t dst, src0, src1;
    std::optional<size_t> tmp;
  };

  template <typename... Args>
  absl::Status InstructionError(size_t index,
                                const absl::FormatSpec<Args...>& format,
                                const Args&... args) const {
    return AtInstruction(
        absl::InvalidArgumentError(
            absl::StrFormat("instruction %u (%s on %s): ", index,
                            OpcodeName(spec_.instructions[index].opcode),
                            TargetName(target_)) +
            absl::StrFormat(format, args...)),
        index);
  }

  absl::Status CheckCounts() const {
    if (spec_.instructions.empty()) {
      return absl::InvalidArgumentError("job has no instructions");
    }
    if (spec_.instructions.size() > limits_.max_instructions_per_job) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "job has %u instructions, over the limit of %u",
          spec_.instructions.size(), limits_.max_instructions_per_job));
    }
    if (spec_.tiles.size() > limits_.max_tiles_per_job) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("job has %u tiles, over the limit of %u",
                          spec_.tiles.size(), limits_.max_tiles_per_job));
    }
    for (size_t i = 0; i < spec_.instructions.size(); ++i) {
      const size_t waits = spec_.instructions[i].wait_events.size();
      if (waits > limits_.max_waits_per_instruction) {
        return AtInstruction(
            absl::ResourceExhaustedError(absl::StrFormat(
                "instruction %u waits on %u events, over the limit of %u", i,
                waits, limits_.max_waits_per_instruction)),
            i);
      }
    }
    return absl::OkStatus();
  }

  // Which slots FillTiles will borrow rather than own: declared inputs sent
  // as data that no instruction writes.
  std::vector<bool> Borrowed() const {
    std::vector<bool> borrowed(job_->slots_.size(), false);
    for (size_t s = 0; s < spec_.tiles.size(); ++s) {
      borrowed[s] = spec_.tiles[s].encoding == Encoding::kData;
    }
    for (const Wiring& w : wiring_) {
      borrowed[w.dst] = false;
      if (w.tmp) borrowed[*w.tmp] = false;
    }
    return borrowed;
  }

  JobCost Cost() const {
    JobCost cost;
    cost.tiles = descs_.size();
    if (in_buffer_) {
      cost.tile_bytes = plan_.high_water;
    } else {
      const std::vector<bool> borrowed = Borrowed();
      for (size_t s = 0; s < descs_.size(); ++s) {
        if (!borrowed[s] && job_->place_[s] == nullptr) {
          cost.tile_bytes += descs_[s].bytes();
        }
      }
    }
    for (size_t s : job_->outputs_) {
      cost.outputs.push_back(
          {job_->slots_[s].name, descs_[s].elements(), descs_[s].bytes()});
    }
    return cost;
  }

  // Adds a slot for tile `name`; its storage comes later, in FillTiles.
  absl::Status AddSlot(absl::string_view name, const TileDesc& desc) {
    if (desc.address.has_value()) {
      PTO_RETURN_IF_ERROR(
          CheckPlacement(name, desc, target_, backend_.rules().buffer_bytes));
    }
    if (job_->slots_.size() >= limits_.max_tiles_per_job) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "job needs more than %u tiles", limits_.max_tiles_per_job));
    }
    slot_of_[name] = job_->slots_.size();
    job_->slots_.push_back({std::string(name), std::nullopt});
    descs_.push_back(desc);
    return absl::OkStatus();
  }

  absl::Status DeclareTiles() {
    for (const TileInput& in : spec_.tiles) {
      if (in.name.empty()) {
        return absl::InvalidArgumentError("a tile has an empty name");
      }
      if (slot_of_.contains(in.name)) {
        return AtTile(absl::InvalidArgumentError(absl::StrFormat(
                          "tile \"%s\" is declared twice", in.name)),
                      in.name);
      }
      PTO_ASSIGN_OR_RETURN(
          TileDesc desc,
          ResolveTileDesc(in.desc, in.name, limits_.max_tile_bytes));
      if (desc.address.has_value() && spec_.mode != Mode::kManual) {
        return AtTile(
            absl::InvalidArgumentError(absl::StrFormat(
                "tile \"%s\": address 0x%x is set in auto mode; addresses "
                "bind tiles in manual mode only (in auto mode the server "
                "places every tile)",
                in.name, *desc.address)),
            in.name);
      }
      if (in.encoding == Encoding::kData) {
        PTO_RETURN_IF_ERROR(CheckDataSize(desc, in.name, in.data.size()));
      } else if (in.encoding == Encoding::kValues) {
        PTO_RETURN_IF_ERROR(CheckValueCount(desc, in.name, in.values.size()));
      } else if (in.encoding == Encoding::kFill) {
        PTO_RETURN_IF_ERROR(CheckFill(desc, in.name, in.fill));
      }
      PTO_RETURN_IF_ERROR(AddSlot(in.name, desc));
    }
    return absl::OkStatus();
  }

  // Every event the job records, so that waits can tell "later" from
  // "unknown".
  absl::Status IndexEvents() {
    for (size_t i = 0; i < spec_.instructions.size(); ++i) {
      auto [it, inserted] =
          recorder_.emplace(EventName(spec_.instructions[i], i), i);
      if (!inserted) {
        return InstructionError(i,
                                "event \"%s\" is already recorded by "
                                "instruction %u; event names must be unique",
                                it->first, it->second);
      }
    }
    return absl::OkStatus();
  }

  // The slot of operand `name`, allocating a tile shaped like slot `like`
  // when the job has none of that name.
  absl::StatusOr<size_t> SlotOrNew(const std::string& name, size_t like) {
    if (auto it = slot_of_.find(name); it != slot_of_.end()) return it->second;
    PTO_RETURN_IF_ERROR(AddSlot(name, AllocatedLike(descs_[like])));
    return job_->slots_.size() - 1;
  }

  absl::Status BindInstruction(size_t i) {
    const Instruction& inst = spec_.instructions[i];
    const bool unary = Op(inst.opcode).sources == 1;
    if (unary && !inst.src1.empty()) {
      return InstructionError(i,
                              "src1 \"%s\" is set; %s takes one source (src0)",
                              inst.src1, OpcodeName(inst.opcode));
    }
    // A one-source instruction reads src0 where others read src1 too, so
    // the checks and hazards below treat it as src1 = src0.
    const std::string& src1 = unary ? inst.src0 : inst.src1;
    using Named = std::pair<const char*, const std::string*>;
    for (auto [role, name] :
         {Named{"dst", &inst.dst}, Named{"src0", &inst.src0},
          Named{"src1", &src1}}) {
      if (name->empty()) {
        return InstructionError(i, "%s is not set; name a tile", role);
      }
    }
    for (auto [role, name] :
         {Named{"src0", &inst.src0}, Named{"src1", &src1}}) {
      if (!slot_of_.contains(*name)) {
        return InstructionError(
            i,
            "%s \"%s\" is not a tile of the job nor the dst of an earlier "
            "instruction",
            role, *name);
      }
    }
    if (!Op(inst.opcode).accepts_tmp && !inst.tmp.empty()) {
      return InstructionError(
          i, "tmp \"%s\" is set; %s takes no tmp (dst, src0%s only)", inst.tmp,
          OpcodeName(inst.opcode), unary ? "" : ", src1");
    }
    Wiring w{0, slot_of_[inst.src0], slot_of_[src1], std::nullopt};
    PTO_ASSIGN_OR_RETURN(w.dst, SlotOrNew(inst.dst, w.src0));
    const bool uses_tmp = backend_.UsesTmp(inst.opcode);
    if (uses_tmp && !inst.tmp.empty()) {
      PTO_ASSIGN_OR_RETURN(w.tmp, SlotOrNew(inst.tmp, w.dst));
    }

    InstructionSig sig;
    sig.index = i;
    sig.opcode = inst.opcode;
    sig.mode = spec_.mode;
    sig.dst = {"dst", inst.dst, &descs_[w.dst]};
    sig.src0 = {"src0", inst.src0, &descs_[w.src0]};
    sig.src1 = {"src1", src1, &descs_[w.src1]};
    sig.tmp = {"tmp", inst.tmp, w.tmp ? &descs_[*w.tmp] : nullptr};
    PTO_RETURN_IF_ERROR(backend_.Check(sig));

    Event event;
    event.id = EventName(inst, i);
    event.index = static_cast<uint32_t>(i);
    event.opcode = inst.opcode;
    event.target = target_;
    event.trace.notes = inst.notes;
    if (!uses_tmp && !inst.tmp.empty()) {
      event.trace.notes.push_back(
          absl::StrFormat("tmp \"%s\" is accepted and unused on %s", inst.tmp,
                          TargetName(target_)));
    }
    for (const std::string& wait : inst.wait_events) {
      auto it = recorder_.find(wait);
      if (it == recorder_.end()) {
        return InstructionError(
            i, "waits on event \"%s\", which no instruction records", wait);
      }
      if (it->second == i) {
        return InstructionError(i, "waits on its own event \"%s\" (a cycle)",
                                wait);
      }
      if (it->second > i) {
        return InstructionError(
            i,
            "waits on event \"%s\", recorded by instruction %u which comes "
            "later; an instruction can only wait on earlier ones",
            wait, it->second);
      }
      event.waited_on.push_back(wait);
    }
    job_->events_.push_back(std::move(event));
    wiring_.push_back(w);
    return absl::OkStatus();
  }

  // Each output once, in the order first asked for: a result holds tiles
  // by name, so a second copy would only cost memory.
  absl::Status ResolveOutputs() {
    absl::flat_hash_set<size_t> seen;
    if (spec_.outputs.empty()) {
      for (const Wiring& w : wiring_) {
        if (seen.insert(w.dst).second) job_->outputs_.push_back(w.dst);
      }
      return absl::OkStatus();
    }
    for (const std::string& name : spec_.outputs) {
      auto it = slot_of_.find(name);
      if (it == slot_of_.end()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("outputs: \"%s\" is not a tile of the job", name));
      }
      if (seen.insert(it->second).second) job_->outputs_.push_back(it->second);
    }
    return absl::OkStatus();
  }

  // Outputs written to the caller's memory: each names an output of the
  // job, once, and its place holds exactly the tile's bytes.
  absl::Status BindPlaces() {
    job_->place_.assign(descs_.size(), nullptr);
    for (const OutputPlace& place : spec_.places) {
      auto it = slot_of_.find(place.name);
      if (it == slot_of_.end() ||
          std::find(job_->outputs_.begin(), job_->outputs_.end(), it->second) ==
              job_->outputs_.end()) {
        return AtTile(absl::InvalidArgumentError(absl::StrFormat(
                          "output_regions: \"%s\" is not an output of the "
                          "job (outputs, or an instruction's dst when "
                          "outputs is empty)",
                          place.name)),
                      place.name);
      }
      const size_t s = it->second;
      if (job_->place_[s] != nullptr) {
        return AtTile(absl::InvalidArgumentError(absl::StrFormat(
                          "output_regions: \"%s\" is given twice", place.name)),
                      place.name);
      }
      if (place.bytes.size() != descs_[s].bytes()) {
        return AtTile(
            absl::InvalidArgumentError(absl::StrFormat(
                "output_regions: tile \"%s\" is %s, %u bytes, and its slice "
                "is %u bytes; they must be the same",
                place.name, descs_[s].ToString(), descs_[s].bytes(),
                place.bytes.size())),
            place.name);
      }
      job_->place_[s] = place.bytes.data();
    }
    return absl::OkStatus();
  }

  // Whether the first instruction that touches slot `s` writes every byte
  // of it before anything reads it: it is that instruction's dst, read by
  // none of its sources, with a valid region that is the whole tile.
  bool WrittenWholeFirst(size_t s) const {
    for (const Wiring& w : wiring_) {
      if (w.src0 == s || w.src1 == s || (w.tmp && *w.tmp == s)) return false;
      if (w.dst == s) {
        return descs_[s].valid_rows == descs_[s].rows &&
               descs_[s].valid_cols == descs_[s].cols;
      }
    }
    return false;
  }

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
  absl::Status PlaceInBuffer() {
    const size_t n = descs_.size();
    constexpr int64_t kUntouched = std::numeric_limits<int64_t>::min();
    std::vector<TileLife> lives(n);
    for (size_t s = 0; s < n; ++s) {
      lives[s].name = job_->slots_[s].name;
      lives[s].desc = descs_[s];
      // A tile that arrives with elements holds them from the start.
      const bool loaded =
          s < spec_.tiles.size() && spec_.tiles[s].encoding != Encoding::kNone;
      lives[s].first = loaded ? -1 : kUntouched;
    }
    for (size_t i = 0; i < wiring_.size(); ++i) {
      for (auto [slot, writes] : Touches(i)) {
        TileLife& life = lives[slot];
        // Read before any write: its zeros are read, so it is live from
        // the start.
        if (life.first == kUntouched) {
          life.first = writes ? static_cast<int64_t>(i) : -1;
        }
        life.last = static_cast<int64_t>(i);
      }
    }
    for (TileLife& life : lives) {
      if (life.first == kUntouched) life.first = -1;
    }
    for (size_t s : job_->outputs_) {
      lives[s].last = static_cast<int64_t>(wiring_.size());
    }
    PTO_ASSIGN_OR_RETURN(
        plan_, PlaceTiles(lives, target_, backend_.rules().buffer_bytes));
    std::vector<ByteRange>& ranges = ranges_;
    ranges.resize(n);
    for (size_t s = 0; s < n; ++s) {
      descs_[s].address = plan_.address[s];
      ranges[s] = PlacedRange(descs_[s]);
    }
    PTO_RETURN_IF_ERROR(CheckLoadsDisjoint(ranges));
    auto& work = job_->buffer_work_;
    work.resize(wiring_.size());
    for (size_t s = 0; s < n; ++s) {
      if (plan_.reused[s] && lives[s].first >= 0) {
        work[lives[s].first].clear.push_back(ranges[s]);
      }
    }
    for (size_t i = 0; i < wiring_.size(); ++i) {
      const Wiring& w = wiring_[i];
      for (size_t src : {w.src0, w.src1}) {
        const bool same_place =
            ranges[src].begin == ranges[w.dst].begin &&
            descs_[src].row_bytes() == descs_[w.dst].row_bytes();
        if (ranges[src].Overlaps(ranges[w.dst]) && !same_place) {
          work[i].stage_dst = true;
        }
      }
      std::vector<OperandPlacement>& operands = job_->events_[i].operands;
      auto add = [&](absl::string_view role, size_t slot) {
        operands.push_back({role, job_->slots_[slot].name, ranges[slot].begin,
                            ranges[slot].end});
      };
      add("dst", w.dst);
      add("src0", w.src0);
      if (Op(spec_.instructions[i].opcode).sources > 1) add("src1", w.src1);
      if (w.tmp) add("tmp", *w.tmp);
    }
    return absl::OkStatus();
  }

  // Two tiles that arrive with elements may not share bytes: which one's
  // elements the buffer would hold is not defined.
  absl::Status CheckLoadsDisjoint(const std::vector<ByteRange>& ranges) const {
    std::vector<size_t> loaded;
    for (size_t s = 0; s < spec_.tiles.size(); ++s) {
      if (spec_.tiles[s].encoding != Encoding::kNone) loaded.push_back(s);
    }
    std::sort(loaded.begin(), loaded.end(), [&](size_t a, size_t b) {
      return ranges[a].begin < ranges[b].begin;
    });
    // In order of address, each loaded tile against the one reaching
    // furthest before it.
    std::optional<size_t> reach;
    for (size_t t : loaded) {
      if (reach && ranges[*reach].Overlaps(ranges[t])) {
        const size_t s = std::min(*reach, t), u = std::max(*reach, t);
        const std::string& name = spec_.tiles[u].name;
        return AtTile(
            absl::InvalidArgumentError(absl::StrFormat(
                "tiles \"%s\" %s and \"%s\" %s both carry elements and "
                "overlap in the unified buffer; which would hold the shared "
                "bytes is not defined: give one of them no data (it then "
                "reads the other's bytes)",
                spec_.tiles[s].name, ranges[s].ToString(), name,
                ranges[u].ToString())),
            name);
      }
      if (!reach || ranges[t].end > ranges[*reach].end) reach = t;
    }
    return absl::OkStatus();
  }

  // Explicit waits plus data hazards, so that any execution order that
  // honours them gives the results of program order.
  void DerivePredecessors() {
    if (in_buffer_) {
      BufferHazards hazards(plan_.high_water);
      Derive(hazards, [&](size_t slot) { return ranges_[slot]; });
    } else {
      HazardTracker hazards(job_->slots_.size());
      Derive(hazards, [](size_t slot) { return slot; });
    }
  }

  // `key(slot)`: what `Hazards` tracks a tile by.
  template <typename Hazards, typename Key>
  void Derive(Hazards& hazards, Key key) {
    job_->predecessors_.resize(wiring_.size());
    for (size_t i = 0; i < wiring_.size(); ++i) {
      std::vector<uint32_t>& deps = job_->predecessors_[i];
      for (const std::string& wait : spec_.instructions[i].wait_events) {
        deps.push_back(static_cast<uint32_t>(recorder_[wait]));
      }
      const auto touches = Touches(i);
      for (auto [slot, writes] : touches) hazards.Add(key(slot), writes, &deps);
      for (auto [slot, writes] : touches) {
        hazards.Commit(key(slot), writes, static_cast<uint32_t>(i));
      }
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    }
  }

  // Everything checks out: make the tiles and bind the instructions to
  // them. An input sent as data that no instruction writes is borrowed, not
  // copied; every other tile owns its bytes.
  absl::Status FillTiles() {
    absl::flat_hash_set<size_t> written;
    for (const Wiring& w : wiring_) {
      written.insert(w.dst);
      if (w.tmp) written.insert(*w.tmp);
    }
    auto& slots = job_->slots_;
    if (in_buffer_) job_->buffer_.assign(plan_.high_water, '\0');
    for (size_t s = 0; s < slots.size(); ++s) {
      // Declared tiles occupy the first slots, in spec order.
      const TileInput* in = s < spec_.tiles.size() ? &spec_.tiles[s] : nullptr;
      if (in_buffer_) {
        slots[s].tile.emplace(Tile::View(
            descs_[s],
            reinterpret_cast<uint8_t*>(&job_->buffer_[*descs_[s].address])));
      } else if (uint8_t* place = job_->place_[s]; place != nullptr) {
        // An output written where the caller asked: the tile is its place.
        slots[s].tile.emplace(Tile::View(descs_[s], place));
        const bool loaded = in != nullptr && in->encoding != Encoding::kNone;
        if (loaded && in->encoding == Encoding::kData &&
            reinterpret_cast<const uint8_t*>(in->data.data()) == place) {
          continue;  // its own input, updated in place
        }
        if (!loaded) {
          if (!WrittenWholeFirst(s)) std::memset(place, 0, descs_[s].bytes());
          continue;
        }
      } else if (in != nullptr && in->encoding == Encoding::kData &&
                 !written.contains(s)) {
        slots[s].tile.emplace(Tile::Borrow(
            descs_[s], reinterpret_cast<const uint8_t*>(in->data.data())));
        continue;
      } else {
        slots[s].tile.emplace(descs_[s]);
      }
      if (in == nullptr) continue;
      if (in->encoding == Encoding::kData) {
        FillFromData(in->data, &*slots[s].tile);
      } else if (in->encoding == Encoding::kValues) {
        PTO_RETURN_IF_ERROR(
            FillFromValues(in->values, in->name, &*slots[s].tile));
      } else if (in->encoding == Encoding::kFill) {
        FillWithValue(in->fill, &*slots[s].tile);
      }
    }
    const absl::Time now = absl::Now();
    for (size_t i = 0; i < wiring_.size(); ++i) {
      const Wiring& w = wiring_[i];
      BoundInstruction b;
      b.index = i;
      b.opcode = spec_.instructions[i].opcode;
      b.dst = &*slots[w.dst].tile;
      b.src0 = &*slots[w.src0].tile;
      b.src1 = &*slots[w.src1].tile;
      b.tmp = w.tmp ? &*slots[*w.tmp].tile : nullptr;
      job_->bound_.push_back(b);
      job_->events_[i].enqueue_time = now;
    }
    return absl::OkStatus();
  }

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
  std::vector<TileDesc> descs_;    // per slot
  absl::flat_hash_map<std::string, size_t> slot_of_;
  absl::flat_hash_map<std::string, size_t> recorder_;  // event -> instruction
  std::vector<Wiring> wiring_;                         // per instruction
};

}  // namespace internal

namespace {

Tile OwnedCopy(const Tile& tile) {
  Tile copy(tile.desc());
  std::memcpy(copy.data(), tile.data(), copy.size_bytes());
  return copy;
}

}  // namespace

Engine::Engine(const EngineOptions& options)
    : options_(options), backends_(options.host_buffer_bytes) {}

absl::StatusOr<std::unique_ptr<PreparedJob>> Engine::Prepare(
    const JobSpec& spec, const Admission& admit) const {
  return internal::JobBinder(spec, options_.limits, backends_,
                             options_.default_target, admit)
      .Bind();
}

void Engine::RunBatch(absl::Span<const WorkItem> batch) const {
  const uint64_t batch_id = next_batch_id_.fetch_add(1);
  const uint32_t size = static_cast<uint32_t>(batch.size());
  absl::InlinedVector<const BoundInstruction*, 16> instructions;
  absl::InlinedVector<Trace*, 16> traces;
  for (const WorkItem& item : batch) {
    instructions.push_back(&item.job->bound_[item.index]);
    traces.push_back(&item.job->events_[item.index].trace);
  }
  const absl::Time start = absl::Now();
  const Backend& backend = *batch[0].job->backend_;
  size_t direct = 0;  // instructions that run as one batch
  for (size_t k = 0; k < batch.size(); ++k) {
    PreparedJob& job = *batch[k].job;
    if (job.buffer_work_.empty()) {
      instructions[direct] = instructions[k];
      traces[direct++] = traces[k];
      continue;
    }
    const PreparedJob::BufferWork& work = job.buffer_work_[batch[k].index];
    for (const ByteRange& r : work.clear) {
      std::memset(&job.buffer_[r.begin], 0, r.end - r.begin);
    }
    if (!work.stage_dst) {
      instructions[direct] = instructions[k];
      traces[direct++] = traces[k];
      continue;
    }
    // Compute into a copy of dst (its bytes outside the valid region
    // kept), then copy it into place.
    BoundInstruction aside = *instructions[k];
    Tile staged = OwnedCopy(*aside.dst);
    aside.dst = &staged;
    const BoundInstruction* one[] = {&aside};
    backend.Run(one, absl::MakeConstSpan(&traces[k], 1));
    std::memcpy(instructions[k]->dst->data(), staged.data(),
                staged.size_bytes());
  }
  if (direct > 0) {
    backend.Run(absl::MakeConstSpan(instructions.data(), direct),
                absl::MakeConstSpan(traces.data(), direct));
  }
  const absl::Time end = absl::Now();
  for (const WorkItem& item : batch) {
    Event& event = item.job->events_[item.index];
    event.batch_id = batch_id;
    event.batch_size = size;
    event.start_time = start;
    event.end_time = end;
  }
}

JobOutcome Engine::Finish(PreparedJob* job) const {
  JobOutcome out;
  out.target = job->target_;
  out.events = std::move(job->events_);
  for (size_t slot : job->outputs_) {
    PreparedJob::Slot& s = job->slots_[slot];
    if (uint8_t* place = job->place_[slot]; place != nullptr) {
      // A tile in a unified buffer goes to its place now; a host tile is
      // there already.
      const Tile& tile = *s.tile;
      if (tile.data() != place) {
        std::memcpy(place, tile.data(), tile.size_bytes());
      }
      out.outputs.push_back(
          {s.name, Tile::Borrow(s.tile->desc(), place), /*placed=*/true});
      s.tile.reset();
      continue;
    }
    // An outcome owns all its tiles except placed ones: it may outlive the
    // job's inputs.
    Tile tile = s.tile->owned() ? std::move(*s.tile) : OwnedCopy(*s.tile);
    s.tile.reset();
    out.outputs.push_back({s.name, std::move(tile)});
  }
  return out;
}

absl::StatusOr<JobOutcome> Engine::Execute(const JobSpec& spec) const {
  PTO_ASSIGN_OR_RETURN(std::unique_ptr<PreparedJob> job, Prepare(spec));
  for (uint32_t i = 0; i < job->num_instructions(); ++i) {
    const WorkItem item{job.get(), i};
    RunBatch(absl::MakeConstSpan(&item, 1));
  }
  return Finish(job.get());
}

}  // namespace ptoserve
