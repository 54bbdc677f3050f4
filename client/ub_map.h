// Where a job's tiles lived in the target's unified buffer, as text
// (`ptoctl run --ub-map`).
#ifndef PTOSERVE_CLIENT_UB_MAP_H_
#define PTOSERVE_CLIENT_UB_MAP_H_

#include <string>

#include "ptoserve/v1/job.pb.h"

namespace ptoserve {

// The layout of the unified buffer over `result`'s program: under
// "unified buffer:", for each event in order a line naming its instruction
// ("  e0   instruction 0 TAND") and one line per operand of
// EventRecord.operands with its role, tile and byte range
// ("       dst   c  [0x1000, 0x1400)"); then "tiles by address:", a table
// of every tile with an address (Tile.address of the result where set, else
// where its operands lay) and its size in bytes, sorted by address.
//
// When no event carries operands (a host job in auto mode: its tiles are
// ordinary memory) the map is one line that says so.
std::string UnifiedBufferMap(const v1::JobResult& result);

}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_UB_MAP_H_
