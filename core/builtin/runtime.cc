#include "core/builtin/runtime.h"

#include <cstring>
#include <memory>

#include "core/backends/backend.h"
#include "core/backends/registry.h"
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

struct ThreadState {
  std::unique_ptr<uint8_t[]> buffers[std::size(kEveryTarget)];
  uint32_t instructions = 0;
  uint32_t tiles = 0;
};

ThreadState& State() {
  thread_local ThreadState state;
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
}

uint32_t NextTileNumber() { return State().tiles++; }

std::string CheckAssign(Target target, const TileRef& tile, uint64_t address) {
  TileDesc desc = DescOf(tile);
  desc.address = address;
  const absl::Status placed =
      CheckPlacement(tile.name, desc, target, UnifiedBufferBytes(target));
  return placed.ok() ? std::string() : std::string(placed.message());
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
         const TileRef& src1, const TileRef* tmp, uint32_t index) {
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
  if (staged) {
    backend.RunStaged(bound, &trace);
  } else {
    const BoundInstruction* one[] = {&bound};
    Trace* traces[] = {&trace};
    backend.Run(one, traces);
  }
}

}  // namespace builtin
}  // namespace ptoserve
