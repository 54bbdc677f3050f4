// The seeds' C++ built-in API for TAND and TXOR, computing on the host with
// ptoserve's kernels (the same code the service runs), under the rules and
// algorithm of the target chosen at compile time (pto/common/target.hpp:
// -DPTO_TARGET_A2A3, -DPTO_TARGET_A5, or the host by default).
//
//   #include <pto/pto-inst.hpp>
//   using namespace pto;
//   using TileT = Tile<TileType::Vec, int32_t, 16, 16>;
//   TileT a, b, out;
//   RecordEvent e = TAND(out, a, b);
//   TileT x, tmp;
//   TXOR(x, out, b, tmp, e);  // waits on e
//
// A kernel written for PTO-ISA compiles as it is: global memory through
// GlobalTensor, tiles bound with TASSIGN, TLOAD and TSTORE, the kernel
// qualifiers (AICORE, __gm__, ...) and, from <pto/common/constants.hpp>,
// the NUM_* shape constants. docs/KERNELS.md is the guide.
//
// pto/common/pto_tile.hpp       Tile, TileType, BLayout, SLayout, DYNAMIC,
//                               SetFailureHandler
// pto/common/global_tensor.hpp  GlobalTensor, Shape, Stride
// pto/common/memory.hpp         TASSIGN, TLOAD, TSTORE, ResetKernel
// pto/common/pto_instr.hpp      TAND, TXOR and their checks
// pto/common/event.hpp          RecordEvent
// pto/common/observer.hpp       watching instructions run (tracing, tests)
// pto/common/recording.hpp      a kernel's run as a job for `ptoctl run`
// pto/common/type.hpp           the kernel qualifiers, half, aclFloat16
#ifndef PTO_PTO_INST_HPP
#define PTO_PTO_INST_HPP

#include "pto/common/event.hpp"
#include "pto/common/global_tensor.hpp"
#include "pto/common/memory.hpp"
#include "pto/common/observer.hpp"
#include "pto/common/pto_instr.hpp"
#include "pto/common/pto_tile.hpp"
#include "pto/common/recording.hpp"
#include "pto/common/target.hpp"
#include "pto/common/type.hpp"

#endif  // PTO_PTO_INST_HPP
