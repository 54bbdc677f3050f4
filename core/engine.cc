#include "core/engine.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "core/unified_buffer.h"

namespace ptoserve {

namespace {

// Errors about an instruction's wiring (names, events) before the target's
// rules apply; same prefix as the rule errors.
template <typename... Args>
absl::Status InstructionError(size_t index, Opcode opcode, Target target,
                              const absl::FormatSpec<Args...>& format,
                              const Args&... args) {
  return absl::InvalidArgumentError(
      absl::StrFormat("instruction %u (%s on %s): ", index, OpcodeName(opcode),
                      TargetName(target)) +
      absl::StrFormat(format, args...));
}

std::string EventName(const Instruction& inst, size_t index) {
  return inst.record_event.empty() ? absl::StrCat("e", index)
                                   : inst.record_event;
}

// A tile the server allocates for an operand the job did not declare: the
// element type, shape and valid region of `like`, row-major, in vec. Taking
// the physical shape keeps a target's row alignment.
TileDesc AllocatedLike(const TileDesc& like) {
  TileDesc d;
  d.dtype = like.dtype;
  d.rows = like.rows;
  d.cols = like.cols;
  d.valid_rows = like.valid_rows;
  d.valid_cols = like.valid_cols;
  return d;
}

// Tracks, per tile, which earlier instructions a new one must follow.
class HazardTracker {
 public:
  explicit HazardTracker(size_t num_tiles)
      : last_writer_(num_tiles, -1), readers_(num_tiles) {}

  void Add(size_t slot, bool writes, std::vector<uint32_t>* deps) {
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

}  // namespace

Engine::Engine(const EngineOptions& options)
    : options_(options), backends_(options.host_buffer_bytes) {}

absl::StatusOr<std::unique_ptr<PreparedJob>> Engine::Prepare(
    const JobSpec& spec) const {
  const EngineLimits& limits = options_.limits;
  auto job = std::make_unique<PreparedJob>();
  const Target target = spec.target.value_or(options_.default_target);
  const Backend& backend = backends_.Get(target);
  job->target_ = target;
  job->backend_ = &backend;

  if (spec.instructions.empty()) {
    return absl::InvalidArgumentError("job has no instructions");
  }
  if (spec.instructions.size() > limits.max_instructions_per_job) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "job has %u instructions, over the limit of %u",
        spec.instructions.size(), limits.max_instructions_per_job));
  }
  if (spec.tiles.size() > limits.max_tiles_per_job) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("job has %u tiles, over the limit of %u",
                        spec.tiles.size(), limits.max_tiles_per_job));
  }

  // Declared tiles.
  std::vector<TileDesc> descs;
  absl::flat_hash_map<absl::string_view, size_t> slot_of;
  auto& slots = job->slots_;
  for (const TileInput& in : spec.tiles) {
    if (in.name.empty()) {
      return absl::InvalidArgumentError("a tile has an empty name");
    }
    if (slot_of.contains(in.name)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("tile \"%s\" is declared twice", in.name));
    }
    PTO_ASSIGN_OR_RETURN(TileDesc desc,
                         ResolveTileDesc(in.desc, in.name, limits.max_tile_bytes));
    if (in.encoding == Encoding::kData) {
      PTO_RETURN_IF_ERROR(CheckDataSize(desc, in.name, in.data.size()));
    } else if (in.encoding == Encoding::kValues) {
      PTO_RETURN_IF_ERROR(CheckValueCount(desc, in.name, in.values.size()));
    }
    if (spec.mode == Mode::kManual) {
      PTO_RETURN_IF_ERROR(CheckPlacement(in.name, desc, target,
                                         backend.rules().buffer_bytes));
    }
    slot_of[in.name] = slots.size();
    slots.push_back({in.name, std::nullopt, in.encoding});
    descs.push_back(desc);
  }

  // Every event a job records, so that waits can tell "later" from "unknown".
  absl::flat_hash_map<std::string, size_t> recorder;
  for (size_t i = 0; i < spec.instructions.size(); ++i) {
    const Instruction& inst = spec.instructions[i];
    std::string name = EventName(inst, i);
    auto [it, inserted] = recorder.emplace(name, i);
    if (!inserted) {
      return InstructionError(i, inst.opcode, target,
                              "event \"%s\" is already recorded by "
                              "instruction %u; event names must be unique",
                              name, it->second);
    }
  }

  // Instructions: resolve operands (allocating new dst/tmp tiles), check the
  // target's rules, resolve waits.
  struct Wiring {
    size_t dst, src0, src1;
    std::optional<size_t> tmp;
  };
  std::vector<Wiring> wiring;
  absl::flat_hash_set<size_t> written;
  for (size_t i = 0; i < spec.instructions.size(); ++i) {
    const Instruction& inst = spec.instructions[i];
    const auto fail = [&](auto&&... args) {
      return InstructionError(i, inst.opcode, target, args...);
    };
    for (auto [role, name] : {std::pair<const char*, const std::string*>{"dst", &inst.dst},
                              {"src0", &inst.src0},
                              {"src1", &inst.src1}}) {
      if (name->empty()) return fail("%s is not set; name a tile", role);
    }
    for (auto [role, name] : {std::pair<const char*, const std::string*>{"src0", &inst.src0},
                              {"src1", &inst.src1}}) {
      if (!slot_of.contains(*name)) {
        return fail(
            "%s \"%s\" is not a tile of the job nor the dst of an earlier "
            "instruction",
            role, *name);
      }
    }
    Wiring w{0, slot_of[inst.src0], slot_of[inst.src1], std::nullopt};
    // A new tile comes from the server, shaped like `like`; its output
    // encoding follows the tile it was derived from.
    const auto allocate = [&](const std::string& name, const TileDesc& like,
                              Encoding encoding) -> absl::StatusOr<size_t> {
      TileDesc desc = AllocatedLike(like);
      if (spec.mode == Mode::kManual) {
        PTO_RETURN_IF_ERROR(CheckPlacement(name, desc, target,
                                           backend.rules().buffer_bytes));
      }
      if (slots.size() >= limits.max_tiles_per_job) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "job needs more than %u tiles", limits.max_tiles_per_job));
      }
      slot_of[name] = slots.size();
      slots.push_back({name, std::nullopt, encoding});
      descs.push_back(desc);
      return slots.size() - 1;
    };
    if (auto it = slot_of.find(inst.dst); it != slot_of.end()) {
      w.dst = it->second;
    } else {
      PTO_ASSIGN_OR_RETURN(w.dst,
                           allocate(inst.dst, descs[w.src0], slots[w.src0].encoding));
    }
    if (slots[w.dst].encoding == Encoding::kNone) {
      slots[w.dst].encoding = slots[w.src0].encoding;
    }
    const bool uses_tmp = backend.UsesTmp(inst.opcode);
    if (uses_tmp && !inst.tmp.empty()) {
      if (auto it = slot_of.find(inst.tmp); it != slot_of.end()) {
        w.tmp = it->second;
      } else {
        PTO_ASSIGN_OR_RETURN(w.tmp, allocate(inst.tmp, descs[w.dst], Encoding::kNone));
      }
    }

    InstructionSig sig;
    sig.index = i;
    sig.opcode = inst.opcode;
    sig.mode = spec.mode;
    sig.dst = {"dst", inst.dst, &descs[w.dst]};
    sig.src0 = {"src0", inst.src0, &descs[w.src0]};
    sig.src1 = {"src1", inst.src1, &descs[w.src1]};
    sig.tmp = {"tmp", inst.tmp, w.tmp ? &descs[*w.tmp] : nullptr};
    PTO_RETURN_IF_ERROR(backend.Check(sig));

    Event event;
    event.id = EventName(inst, i);
    event.index = static_cast<uint32_t>(i);
    event.opcode = inst.opcode;
    event.target = target;
    if (!uses_tmp && !inst.tmp.empty()) {
      event.trace.notes.push_back(absl::StrFormat(
          "tmp \"%s\" is accepted and unused on %s", inst.tmp,
          TargetName(target)));
    }
    for (const std::string& wait : inst.wait_events) {
      auto it = recorder.find(wait);
      if (it == recorder.end()) {
        return fail("waits on event \"%s\", which no instruction records",
                    wait);
      }
      if (it->second == i) {
        return fail("waits on its own event \"%s\" (a cycle)", wait);
      }
      if (it->second > i) {
        return fail(
            "waits on event \"%s\", recorded by instruction %u which comes "
            "later; an instruction can only wait on earlier ones",
            wait, it->second);
      }
      event.waited_on.push_back(wait);
    }
    job->events_.push_back(std::move(event));
    wiring.push_back(w);
  }

  // Outputs.
  if (spec.outputs.empty()) {
    absl::flat_hash_set<size_t> seen;
    for (const Wiring& w : wiring) {
      if (seen.insert(w.dst).second) job->outputs_.push_back(w.dst);
    }
  } else {
    for (const std::string& name : spec.outputs) {
      auto it = slot_of.find(name);
      if (it == slot_of.end()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "outputs: \"%s\" is not a tile of the job", name));
      }
      job->outputs_.push_back(it->second);
    }
  }

  // Dependencies: explicit waits plus data hazards, so that any execution
  // order that honours them gives the results of program order.
  HazardTracker hazards(slots.size());
  job->predecessors_.resize(wiring.size());
  for (size_t i = 0; i < wiring.size(); ++i) {
    const Wiring& w = wiring[i];
    auto& deps = job->predecessors_[i];
    for (const std::string& wait : spec.instructions[i].wait_events) {
      deps.push_back(static_cast<uint32_t>(recorder[wait]));
    }
    std::vector<std::pair<size_t, bool>> touches = {
        {w.src0, false}, {w.src1, false}, {w.dst, true}};
    if (w.tmp) touches.push_back({*w.tmp, true});
    for (auto [slot, writes] : touches) hazards.Add(slot, writes, &deps);
    for (auto [slot, writes] : touches) {
      hazards.Commit(slot, writes, static_cast<uint32_t>(i));
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  }

  // Everything checks out: allocate and fill the tiles.
  for (size_t s = 0; s < slots.size(); ++s) slots[s].tile.emplace(descs[s]);
  for (size_t s = 0; s < spec.tiles.size(); ++s) {
    const TileInput& in = spec.tiles[s];
    if (in.encoding == Encoding::kData) {
      FillFromData(in.data, &*slots[s].tile);
    } else if (in.encoding == Encoding::kValues) {
      PTO_RETURN_IF_ERROR(FillFromValues(in.values, in.name, &*slots[s].tile));
    }
  }
  const absl::Time now = absl::Now();
  for (size_t i = 0; i < wiring.size(); ++i) {
    const Wiring& w = wiring[i];
    BoundInstruction b;
    b.index = i;
    b.opcode = spec.instructions[i].opcode;
    b.dst = &*slots[w.dst].tile;
    b.src0 = &*slots[w.src0].tile;
    b.src1 = &*slots[w.src1].tile;
    b.tmp = w.tmp ? &*slots[*w.tmp].tile : nullptr;
    job->bound_.push_back(b);
    job->events_[i].enqueue_time = now;
  }
  return job;
}

void Engine::RunBatch(absl::Span<const WorkItem> batch) const {
  const uint64_t batch_id = next_batch_id_.fetch_add(1);
  for (const WorkItem& item : batch) {
    PreparedJob& job = *item.job;
    Event& event = job.events_[item.index];
    event.batch_id = batch_id;
    event.batch_size = static_cast<uint32_t>(batch.size());
    event.start_time = absl::Now();
    job.backend_->Run(job.bound_[item.index], &event.trace);
    event.end_time = absl::Now();
  }
}

JobOutcome Engine::Finish(PreparedJob* job) const {
  JobOutcome out;
  out.target = job->target_;
  out.events = std::move(job->events_);
  for (size_t slot : job->outputs_) {
    PreparedJob::Slot& s = job->slots_[slot];
    const Encoding encoding =
        s.encoding == Encoding::kNone ? Encoding::kData : s.encoding;
    if (s.tile.has_value()) {
      out.outputs.push_back({s.name, std::move(*s.tile), encoding});
      s.tile.reset();
    } else {
      // The same tile asked for twice: the second is a copy.
      const OutputTile& first = *std::find_if(
          out.outputs.begin(), out.outputs.end(),
          [&](const OutputTile& o) { return o.name == s.name; });
      Tile copy(first.tile.desc());
      std::memcpy(copy.data(), first.tile.data(), copy.size_bytes());
      out.outputs.push_back({s.name, std::move(copy), encoding});
    }
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
