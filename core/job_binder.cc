#include "core/job_binder.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <iterator>
#include <utility>

#include "absl/time/time.h"
#include "core/error_site.h"
#include "core/hazards.h"
#include "core/ops.h"
#include "core/status_macros.h"
#include "core/tile_codec.h"

namespace ptoserve {
namespace internal {

namespace {

std::string EventName(const Instruction& inst, size_t index) {
  if (!inst.record_event.empty()) return inst.record_event;
  char name[24] = {'e'};
  return std::string(name, std::to_chars(name + 1, std::end(name), index).ptr);
}

}  // namespace

JobBinder::JobBinder(const JobSpec& spec, const EngineLimits& limits,
                     const BackendRegistry& backends, Target target,
                     const Admission& admit)
    : spec_(spec),
      limits_(limits),
      admit_(admit),
      target_(target),
      backend_(backends.Get(target_)),
      in_buffer_(spec.mode == Mode::kManual ||
                 backend_.spec().auto_mode_in_buffer),
      job_(std::make_unique<PreparedJob>()) {
  job_->target_ = target_;
  job_->backend_ = &backend_;
  // Sized once: declared tiles, and at most a dst and a tmp an instruction.
  const size_t instructions = spec.instructions.size();
  const size_t slots = spec.tiles.size() + 2 * instructions;
  descs_.reserve(slots);
  job_->slots_.reserve(slots);
  wiring_.reserve(instructions);
  job_->events_.reserve(instructions);
  job_->bound_.reserve(instructions);
}

absl::StatusOr<std::unique_ptr<PreparedJob>> JobBinder::Bind() && {
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

template <typename... Args>
absl::Status JobBinder::InstructionError(
    size_t index, const absl::FormatSpec<Args...>& format,
    const Args&... args) const {
  return AtInstruction(
      absl::InvalidArgumentError(
          absl::StrFormat("instruction %u (%s on %s): ", index,
                          OpcodeName(spec_.instructions[index].opcode),
                          TargetName(target_)) +
          absl::StrFormat(format, args...)),
      index);
}

absl::Status JobBinder::CheckCounts() const {
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

SlotSet JobBinder::Borrowed() const {
  SlotSet borrowed(job_->slots_.size());
  for (size_t s = 0; s < spec_.tiles.size(); ++s) {
    if (spec_.tiles[s].encoding == Encoding::kData) borrowed.Insert(s);
  }
  for (const Wiring& w : wiring_) {
    borrowed.Erase(w.dst);
    if (w.tmp) borrowed.Erase(*w.tmp);
  }
  return borrowed;
}

JobCost JobBinder::Cost() const {
  JobCost cost;
  cost.tiles = descs_.size();
  if (in_buffer_) {
    cost.tile_bytes = plan_.high_water;
  } else {
    const SlotSet borrowed = Borrowed();
    for (size_t s = 0; s < descs_.size(); ++s) {
      if (!borrowed.Contains(s) && job_->place_[s] == nullptr) {
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

absl::Status JobBinder::AddSlot(absl::string_view name, const TileDesc& desc) {
  if (desc.address.has_value()) {
    PTO_RETURN_IF_ERROR(
        CheckPlacement(name, desc, target_, backend_.rules().buffer_bytes));
  }
  if (job_->slots_.size() >= limits_.max_tiles_per_job) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "job needs more than %u tiles", limits_.max_tiles_per_job));
  }
  slot_of_.Add(name, job_->slots_.size());
  job_->slots_.push_back({std::string(name), std::nullopt});
  descs_.push_back(desc);
  return absl::OkStatus();
}

absl::Status JobBinder::DeclareTiles() {
  for (const TileInput& in : spec_.tiles) {
    if (in.name.empty()) {
      return absl::InvalidArgumentError("a tile has an empty name");
    }
    if (slot_of_.Find(in.name) != nullptr) {
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

absl::Status JobBinder::IndexEvents() {
  // Without a named event or a wait there is nothing to look up, and the
  // events' names ("e0", "e1", ...) cannot clash: most jobs.
  if (std::all_of(spec_.instructions.begin(), spec_.instructions.end(),
                  [](const Instruction& inst) {
                    return inst.record_event.empty() &&
                           inst.wait_events.empty();
                  })) {
    return absl::OkStatus();
  }
  recorder_.reserve(spec_.instructions.size());
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

absl::StatusOr<size_t> JobBinder::SlotOrNew(const std::string& name,
                                            size_t like) {
  if (const size_t* slot = slot_of_.Find(name)) return *slot;
  PTO_RETURN_IF_ERROR(AddSlot(name, AllocatedLike(descs_[like])));
  return job_->slots_.size() - 1;
}

absl::Status JobBinder::BindInstruction(size_t i) {
  const Instruction& inst = spec_.instructions[i];
  const bool unary = Op(inst.opcode).sources == 1;
  if (unary && !inst.src1.empty()) {
    return InstructionError(i, "src1 \"%s\" is set; %s takes one source (src0)",
                            inst.src1, OpcodeName(inst.opcode));
  }
  // A one-source instruction reads src0 where others read src1 too, so
  // the checks and hazards below treat it as src1 = src0.
  const std::string& src1 = unary ? inst.src0 : inst.src1;
  using Named = std::pair<const char*, const std::string*>;
  for (auto [role, name] : {Named{"dst", &inst.dst}, Named{"src0", &inst.src0},
                            Named{"src1", &src1}}) {
    if (name->empty()) {
      return InstructionError(i, "%s is not set; name a tile", role);
    }
  }
  const std::string* sources[] = {&inst.src0, &src1};
  size_t source_slots[2];
  for (size_t k = 0; k < 2; ++k) {
    const size_t* slot = slot_of_.Find(*sources[k]);
    if (slot == nullptr) {
      return InstructionError(
          i,
          "src%u \"%s\" is not a tile of the job nor the dst of an earlier "
          "instruction",
          k, *sources[k]);
    }
    source_slots[k] = *slot;
  }
  if (!Op(inst.opcode).accepts_tmp && !inst.tmp.empty()) {
    return InstructionError(
        i, "tmp \"%s\" is set; %s takes no tmp (dst, src0%s only)", inst.tmp,
        OpcodeName(inst.opcode), unary ? "" : ", src1");
  }
  Wiring w{0, source_slots[0], source_slots[1], std::nullopt};
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
  if (!inst.tmp.empty() && !uses_tmp) {
    event.trace.notes.push_back(backend_.UnusedTmpNote(inst.opcode, inst.tmp));
  }
  PTO_RETURN_IF_ERROR(AddWaits(i, &event));
  job_->events_.push_back(std::move(event));
  wiring_.push_back(w);
  return absl::OkStatus();
}

absl::Status JobBinder::AddWaits(size_t i, Event* event) const {
  for (const std::string& wait : spec_.instructions[i].wait_events) {
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
    event->waited_on.push_back(wait);
  }
  return absl::OkStatus();
}

absl::Status JobBinder::ResolveOutputs() {
  SlotSet seen(job_->slots_.size());
  if (spec_.outputs.empty()) {
    for (const Wiring& w : wiring_) {
      if (seen.Insert(w.dst)) job_->outputs_.push_back(w.dst);
    }
    return absl::OkStatus();
  }
  for (const std::string& name : spec_.outputs) {
    const size_t* slot = slot_of_.Find(name);
    if (slot == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("outputs: \"%s\" is not a tile of the job", name));
    }
    if (seen.Insert(*slot)) job_->outputs_.push_back(*slot);
  }
  return absl::OkStatus();
}

absl::Status JobBinder::BindPlaces() {
  job_->place_.assign(descs_.size(), nullptr);
  for (const OutputPlace& place : spec_.places) {
    const size_t* slot = slot_of_.Find(place.name);
    if (slot == nullptr ||
        std::find(job_->outputs_.begin(), job_->outputs_.end(), *slot) ==
            job_->outputs_.end()) {
      return AtTile(absl::InvalidArgumentError(absl::StrFormat(
                        "output_regions: \"%s\" is not an output of the "
                        "job (outputs, or an instruction's dst when "
                        "outputs is empty)",
                        place.name)),
                    place.name);
    }
    const size_t s = *slot;
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

bool JobBinder::WrittenWholeFirst(size_t s) const {
  for (const Wiring& w : wiring_) {
    if (w.src0 == s || w.src1 == s || (w.tmp && *w.tmp == s)) return false;
    if (w.dst == s) {
      return descs_[s].valid_rows == descs_[s].rows &&
             descs_[s].valid_cols == descs_[s].cols;
    }
  }
  return false;
}

template <typename Hazards, typename Key>
void JobBinder::Derive(Hazards& hazards, Key key) {
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

void JobBinder::DerivePredecessors() {
  if (in_buffer_) {
    BufferHazards hazards(plan_.high_water);
    Derive(hazards, [&](size_t slot) { return ranges_[slot]; });
  } else {
    HazardTracker hazards(job_->slots_.size());
    Derive(hazards, [](size_t slot) { return slot; });
  }
}

absl::Status JobBinder::FillTiles() {
  SlotSet written(job_->slots_.size());
  for (const Wiring& w : wiring_) {
    written.Insert(w.dst);
    if (w.tmp) written.Insert(*w.tmp);
  }
  auto& slots = job_->slots_;
  if (in_buffer_) MakeBuffer();
  for (size_t s = 0; s < slots.size(); ++s) {
    // Declared tiles occupy the first slots, in spec order.
    const TileInput* in = s < spec_.tiles.size() ? &spec_.tiles[s] : nullptr;
    if (in_buffer_) {
      slots[s].tile.emplace(
          Tile::View(descs_[s], job_->buffer_.get() + *descs_[s].address));
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
               !written.Contains(s)) {
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

}  // namespace internal
}  // namespace ptoserve
