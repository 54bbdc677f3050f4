#include "server/jobs/admission.h"

#include <string>

namespace ptoserve {

namespace {

// Measured by the job fuzzer's heap check (docs/FUZZING.md) and rounded up:
// per instruction, its event record as the engine keeps it and the result
// holds it, built and serialized, with its micro-operations (the names of
// the events it waits on are counted apart, four copies each: the job, the
// event, the result and its bytes); per tile, its entry in the request, the
// job and the result; per statement of assembly, its syntax tree while the
// program is lowered.
constexpr uint64_t kEventBytes = 2560;
constexpr uint64_t kTileBytes = 1024;
constexpr uint64_t kStatementBytes = 2048;

}  // namespace

Footprint JobFootprint(uint64_t request_bytes, const DecodedJob& decoded,
                       const JobCost& cost) {
  Footprint f;
  f.request = request_bytes;
  f.tiles = cost.tile_bytes;
  f.result = ResultBytes(cost, decoded.encodings);
  f.bookkeeping = cost.tiles * kTileBytes;
  if (decoded.program) {
    f.bookkeeping += decoded.program->statements.size() * kStatementBytes;
  }
  for (const Instruction& inst : decoded.spec.instructions) {
    f.bookkeeping += kEventBytes;
    for (const std::string& wait : inst.wait_events) {
      f.bookkeeping += 4 * (sizeof(std::string) + wait.size());
    }
  }
  return f;
}

}  // namespace ptoserve
