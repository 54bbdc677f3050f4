// Facts about the wire schema that its generated code does not state.
#ifndef PTOSERVE_PROTO_WIRE_H_
#define PTOSERVE_PROTO_WIRE_H_

#include <cstddef>

#include "core/types.h"
#include "ptoserve/v1/tile.pb.h"

namespace ptoserve {

// Bytes per element of `dtype` in Tile.data; 0 for a value that names no
// element type (unset, unknown).
inline size_t WireElementBytes(int dtype) {
  if (dtype == v1::DTYPE_UNSPECIFIED || !v1::DType_IsValid(dtype)) return 0;
  // The wire lists the engine's element types in the engine's order, from 1.
  return ElementBytes(static_cast<DType>(dtype - 1));
}

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_WIRE_H_
