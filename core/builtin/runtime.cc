#include "core/builtin/runtime.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/backends/backend.h"
#include "core/backends/registry.h"
#include "core/builtin/recorded_events.h"
#include "core/ops.h"
#include "core/targets/targets.h"
#include "core/tile.h"
#include "core/unified_buffer.h"

namespace ptoserve {
namespace builtin {

namespace {

// The backends, with the host's unified buffer at the service's default.
const BackendRegistry& Backends() {
  static const BackendRegistry* const registry =
      new BackendRegistry(SpecOf(Target::kHost).buffer_bytes);
  return *registry;
}

// Bytes of a unified buffer a tile holds.
struct Hold {
  uint64_t handle = 0;
  Target target = Target::kHost;
  std::string name;
  TileDesc desc;  // desc.address: where
  bool bound = false;
  // When the kernel first used it: the instruction it was placed for, or
  // -1 before the first; a bound tile counts as held from the start.
  int64_t first = -1;
};

struct ThreadState {
  std::unique_ptr<uint8_t[]> buffers[std::size(kEveryTarget)];
  uint32_t instructions = 0;
  uint32_t tiles = 0;
  std::vector<Hold> holds;
  uint64_t next_handle = 1;
};

// Set once the thread's state is destroyed: a tile destroyed after it (one
// of static storage, at exit) has nothing to give back.
thread_local bool state_gone = false;

ThreadState& State() {
  thread_local struct Owned : ThreadState {
    ~Owned() { state_gone = true; }
  } state;
  return state;
}

TileDesc DescOf(const TileRef& t) {
  TileDesc d;
  d.dtype = t.dtype;
  d.rows = t.rows;
  d.cols = t.cols;
  d.valid_rows = t.valid_rows;
  d.valid_cols = t.valid_cols;
  if (t.bound) d.address = t.address;
  return d;
}

ByteRange MemoryOf(const TileRef& t, const TileDesc& d) {
  const uint64_t begin = reinterpret_cast<uintptr_t>(t.data);
  return {begin, begin + d.bytes()};
}

// What the engine's event of an instruction holds that the runtime knows:
// its steps in `trace`, its times, and where its operands lie when every
// one is in the unified buffer (the recording numbers it, RecordRan).
Event EventOf(Target target, Opcode opcode, const TileRef& dst,
              const TileRef& src0, const TileRef& src1, const TileRef* tmp,
              absl::Time start, absl::Time end, Trace trace) {
  Event event;
  event.opcode = opcode;
  event.target = target;
  event.enqueue_time = event.start_time = start;  // no queue: run at once
  event.end_time = end;
  event.trace = std::move(trace);
  const Backend& backend = Backends().Get(target);
  if (tmp != nullptr && !backend.UsesTmp(opcode)) {
    event.trace.notes.push_back(backend.UnusedTmpNote(opcode, tmp->name));
  }
  std::vector<std::pair<absl::string_view, const TileRef*>> operands = {
      {"dst", &dst}, {"src0", &src0}};
  if (Op(opcode).sources > 1) operands.push_back({"src1", &src1});
  if (tmp != nullptr && backend.UsesTmp(opcode)) {
    operands.push_back({"tmp", tmp});
  }
  for (const auto& [role, t] : operands) {
    if (!t->bound && !t->placed) return event;  // not all in the buffer
  }
  for (const auto& [role, t] : operands) {
    const uint64_t bytes = DescOf(*t).bytes();
    event.operands.push_back({role, t->name, t->address, t->address + bytes});
  }
  return event;
}

}  // namespace

uint64_t UnifiedBufferBytes(Target target) {
  return Backends().Get(target).rules().buffer_bytes;
}

uint8_t* UnifiedBuffer(Target target) {
  std::unique_ptr<uint8_t[]>& buffer =
      State().buffers[static_cast<size_t>(target)];
  if (buffer == nullptr) {
    buffer.reset(new uint8_t[UnifiedBufferBytes(target)]());
  }
  return buffer.get();
}

void Reset() {
  ThreadState& state = State();
  for (Target target : kEveryTarget) {
    std::unique_ptr<uint8_t[]>& buffer =
        state.buffers[static_cast<size_t>(target)];
    if (buffer != nullptr) {
      std::memset(buffer.get(), 0, UnifiedBufferBytes(target));
    }
  }
  state.instructions = 0;
  state.tiles = 0;
  state.holds.clear();
  RecordReset();
}

uint32_t NextTileNumber() { return State().tiles++; }

uint32_t InstructionsRun() { return State().instructions; }

bool PlacesUnbound(Target target) {
  return Backends().Get(target).spec().auto_mode_in_buffer;
}

std::string Assign(Target target, const TileRef& tile, uint64_t address,
                   uint64_t* handle) {
  TileDesc desc = DescOf(tile);
  desc.address = address;
  const absl::Status fits =
      CheckPlacement(tile.name, desc, target, UnifiedBufferBytes(target));
  if (!fits.ok()) return std::string(fits.message());
  ThreadState& state = State();
  const ByteRange range = PlacedRange(desc);
  for (const Hold& h : state.holds) {
    if (h.bound || h.target != target || h.handle == tile.handle) continue;
    const ByteRange held = PlacedRange(h.desc);
    if (!held.Overlaps(range)) continue;
    // The service knows every bound tile before it places any; the API
    // learns of this one after it placed "h" where it now would lie.
    return absl::StrFormat(
        "tile \"%s\": %s at %s overlaps tile \"%s\" at %s, which is not "
        "bound "
        "and was placed there when the kernel first used it; bind tiles "
        "before using an unbound tile, or leave them all unbound",
        tile.name, desc.ToString(), range.ToString(), h.name, held.ToString());
  }
  *handle = state.next_handle++;
  state.holds.push_back(
      {*handle, target, tile.name, desc, /*bound=*/true, /*first=*/-1});
  return "";
}

std::string Place(Target target, const TileRef& tile, bool as_dst,
                  uint64_t* address, uint64_t* handle) {
  ThreadState& state = State();
  // Every tile held, placed where it is, and this one, for the service's
  // placement (PlaceTiles) to put where its auto mode would. Its first use
  // is the next instruction, as a job's tile's is the first instruction
  // that writes it; a tile loaded or read before any instruction ran is
  // one the job would hold from the start.
  const int64_t now = as_dst || state.instructions > 0
                          ? static_cast<int64_t>(state.instructions)
                          : -1;
  std::vector<TileLife> tiles;
  for (const Hold& h : state.holds) {
    if (h.target != target) continue;
    tiles.push_back({h.name, h.desc, h.first, INT64_MAX});
  }
  tiles.push_back({tile.name, DescOf(tile), now, INT64_MAX});  // unbound
  const absl::StatusOr<BufferPlan> plan =
      PlaceTiles(tiles, target, UnifiedBufferBytes(target));
  if (!plan.ok()) return std::string(plan.status().message());
  TileDesc desc = tiles.back().desc;
  desc.address = plan->address.back();
  *address = *desc.address;
  *handle = state.next_handle++;
  state.holds.push_back(
      {*handle, target, tile.name, desc, /*bound=*/false, now});
  return "";
}

void Release(uint64_t handle) {
  if (state_gone) return;
  std::vector<Hold>& holds = State().holds;
  holds.erase(std::remove_if(holds.begin(), holds.end(),
                             [&](const Hold& h) { return h.handle == handle; }),
              holds.end());
}

bool Holds(uint64_t handle) {
  const std::vector<Hold>& holds = State().holds;
  return std::any_of(holds.begin(), holds.end(),
                     [&](const Hold& h) { return h.handle == handle; });
}

std::string Check(Target target, Opcode opcode, const TileRef& dst,
                  const TileRef& src0, const TileRef& src1, const TileRef* tmp,
                  uint32_t* index) {
  const Backend& backend = Backends().Get(target);
  const bool uses_tmp = backend.UsesTmp(opcode) && tmp != nullptr;
  const TileDesc d_dst = DescOf(dst), d_src0 = DescOf(src0),
                 d_src1 = DescOf(src1),
                 d_tmp = uses_tmp ? DescOf(*tmp) : TileDesc();
  InstructionSig sig;
  sig.index = State().instructions++;
  *index = static_cast<uint32_t>(sig.index);
  sig.opcode = opcode;
  // A job binds addresses in manual mode only: a tile TASSIGNed makes the
  // kernel's a manual-mode run.
  sig.mode = dst.bound || src0.bound || src1.bound || (uses_tmp && tmp->bound)
                 ? Mode::kManual
                 : Mode::kAuto;
  sig.dst = {"dst", dst.name, &d_dst};
  sig.src0 = {"src0", src0.name, &d_src0};
  sig.src1 = {"src1", src1.name, &d_src1};
  sig.tmp = {"tmp", tmp != nullptr ? tmp->name : "",
             uses_tmp ? &d_tmp : nullptr};
  const absl::Status checked = backend.Check(sig);
  return checked.ok() ? std::string() : std::string(checked.message());
}

void Run(Target target, Opcode opcode, const TileRef& dst, const TileRef& src0,
         const TileRef& src1, const TileRef* tmp, uint32_t index,
         const uint32_t* waits, size_t num_waits) {
  const Backend& backend = Backends().Get(target);
  const bool uses_tmp = backend.UsesTmp(opcode) && tmp != nullptr;
  const TileDesc d_dst = DescOf(dst), d_src0 = DescOf(src0),
                 d_src1 = DescOf(src1);
  Tile t_dst = Tile::View(d_dst, dst.data);
  const Tile t_src0 = Tile::Borrow(d_src0, src0.data);
  const Tile t_src1 = Tile::Borrow(d_src1, src1.data);
  Tile t_tmp = uses_tmp ? Tile::View(DescOf(*tmp), tmp->data)
                        : Tile::View(d_dst, dst.data);
  BoundInstruction bound;
  bound.index = index;
  bound.opcode = opcode;
  bound.dst = &t_dst;
  bound.src0 = &t_src0;
  bound.src1 = &t_src1;
  bound.tmp = uses_tmp ? &t_tmp : nullptr;
  const ByteRange m_dst = MemoryOf(dst, d_dst);
  const bool staged =
      MustStageDst(m_dst, d_dst.row_bytes(), MemoryOf(src0, d_src0),
                   d_src0.row_bytes()) ||
      MustStageDst(m_dst, d_dst.row_bytes(), MemoryOf(src1, d_src1),
                   d_src1.row_bytes());
  Trace trace;
  const absl::Time start = absl::Now();
  if (staged) {
    backend.RunStaged(bound, &trace);
  } else {
    const BoundInstruction* one[] = {&bound};
    Trace* traces[] = {&trace};
    backend.Run(one, traces);
  }
  if (RecordingOn()) {
    RecordRan(EventOf(target, opcode, dst, src0, src1, tmp, start, absl::Now(),
                      std::move(trace)),
              index, waits, num_waits);
  }
}

}  // namespace builtin
}  // namespace ptoserve
