// A kernel's run recorded as a job (core/include/pto/common/recording.hpp
// is the API's face of it): the tiles its instructions use, with the bytes
// TLOAD left in them, its instructions in order, the tiles it stored, and
// the target, written as a ptoserve.v1.Job in proto3 JSON that `ptoctl run`
// sends to the service, on any target.
//
// Plain C++ in this header: the API's users include it.
#ifndef PTOSERVE_CORE_BUILTIN_RECORDING_H_
#define PTOSERVE_CORE_BUILTIN_RECORDING_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/builtin/runtime.h"

namespace ptoserve {
namespace builtin {

// Starts recording this thread's instructions, loads and stores for
// `target`; a recording already on is replaced.
void StartRecording(Target target);
// Stops it, keeping what it recorded for RecordedJob.
void StopRecording();

// Hooks the API calls while a recording is on (each does nothing when
// none is).
void RecordLoad(const TileRef& tile);
void RecordStore(const TileRef& tile);
// `waits`: the numbers of the `num_waits` instructions whose events it
// waits on.
void RecordInstruction(Opcode opcode, const TileRef& dst, const TileRef& src0,
                       const TileRef& src1, const TileRef* tmp,
                       const uint32_t* waits = nullptr, size_t num_waits = 0);

// The last recording of this thread as proto3 JSON; or "" with *error set
// to why the run is not a job (a tile loaded after the first instruction,
// two tiles of one name, a tile whose valid shape changed, nothing run).
// With `name_target` false the job names no target, so that the service's
// default (or `ptoctl run --target`) chooses.
std::string RecordedJob(std::string* error, bool name_target = true);

}  // namespace builtin
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_BUILTIN_RECORDING_H_
