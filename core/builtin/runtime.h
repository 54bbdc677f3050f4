// What the built-in API (core/include/pto) runs on. Per thread: each
// target's unified buffer, and the count of instructions and tiles. One
// call checks an instruction with the service's own rules
// (core/backends/backend.h, Backend::Check) and runs it with the target's
// steps and kernels (Backend::Run), as the service's engine does; another
// checks a TASSIGN with the service's placement rule (CheckPlacement). So
// a rule changed in core/ changes the service and the API alike, and both
// word a refusal the same way.
//
// Plain C++ in this header: the API's users include it.
#ifndef PTOSERVE_CORE_BUILTIN_RUNTIME_H_
#define PTOSERVE_CORE_BUILTIN_RUNTIME_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/enums.h"
#include "core/opcode.h"

namespace ptoserve {
namespace builtin {

// One tile as the API hands it over.
struct TileRef {
  const char* name = "";
  uint8_t* data = nullptr;  // rows x cols elements, row-major
  DType dtype = DType::kInt32;
  uint32_t rows = 0, cols = 0;
  uint32_t valid_rows = 0, valid_cols = 0;
  // TASSIGNed: `data` is this thread's unified buffer plus `address`.
  bool bound = false;
  // Placed by the API (Place): `data` is the buffer plus `address` too.
  bool placed = false;
  uint64_t address = 0;
  uint64_t handle = 0;  // what holds its bytes (Assign, Place); 0: nothing
};

// The size of `target`'s unified buffer: the service's (for the host, its
// --host_buffer_kb default).
uint64_t UnifiedBufferBytes(Target target);

// This thread's unified buffer for `target`, UnifiedBufferBytes(target)
// bytes, zeroed when first used and by Reset.
uint8_t* UnifiedBuffer(Target target);

// Zeroes this thread's unified buffers, gives back every tile's hold and
// numbers its instructions and tiles from 0 again: a kernel's run starts
// as a job does.
void Reset();

// The number of the next tile made on this thread: its default name is
// "t" and this number.
uint32_t NextTileNumber();

// How many instructions this thread checked since it started or since
// Reset: the number the next one gets.
uint32_t InstructionsRun();

// The tiles in a thread's unified buffer. A bound tile (TASSIGN) holds its
// bytes, and an unbound one placed there holds the bytes the API chose,
// until Release (the tile's destructor) or Reset; each is known by the
// handle Assign or Place gave it, unique on its thread.

// Whether `target`'s unbound tiles live in its unified buffer, as the
// service's auto mode places them there (a2a3, a5); on the host they have
// memory of their own.
bool PlacesUnbound(Target target);

// Binds `tile` at byte `address` of `target`'s unified buffer, setting
// *handle, in place of what tile.handle held: "" if it may be; else the
// service's refusal for the address (e.g. `tile "t1": address 0x10 is not
// 32-byte aligned`), or why its bytes would be those of a tile the API placed
// that is still held.
std::string Assign(Target target, const TileRef& tile, uint64_t address,
                   uint64_t* handle);

// Places unbound `tile` in `target`'s unified buffer as the service's auto
// mode does: at the lowest 32-byte aligned address where it overlaps no
// tile held. Sets *address and *handle and returns ""; or returns the
// service's refusal for a tile that does not fit (`tile "t2" (...) does
// not fit in the a2a3 unified buffer of 196608 bytes before the first
// instruction: ...`), "at instruction N" where the kernel first used it
// as the dst of instruction N, or after instruction N-1 ran.
std::string Place(Target target, const TileRef& tile, bool as_dst,
                  uint64_t* address, uint64_t* handle);

// Gives back what `handle` holds; nothing if it holds nothing (any more).
void Release(uint64_t handle);

// Whether `handle` still holds its bytes (Reset gives every hold back).
bool Holds(uint64_t handle);

// Checks instruction `opcode` against `target`'s rules, numbering it (the
// thread's next number, in *index). Returns "" if it may run; else the
// service's refusal, e.g. `instruction 2 (TXOR on a2a3): tmp "t3" is also
// dst; ...`. `tmp` may be null (TAND); it is checked and used only where
// the target computes through it.
std::string Check(Target target, Opcode opcode, const TileRef& dst,
                  const TileRef& src0, const TileRef& src1, const TileRef* tmp,
                  uint32_t* index);

// Runs instruction number `index`, which Check passed, with the target's
// steps and kernels: dst computed aside where it overlaps a source without
// being the same place, as the engine does. While a recording is on
// (core/builtin/recording.h) it keeps the event the engine would record,
// waiting on the `num_waits` instructions numbered in `waits`.
void Run(Target target, Opcode opcode, const TileRef& dst, const TileRef& src0,
         const TileRef& src1, const TileRef* tmp, uint32_t index,
         const uint32_t* waits = nullptr, size_t num_waits = 0);

}  // namespace builtin
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_BUILTIN_RUNTIME_H_
