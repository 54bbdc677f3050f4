// Facts about the wire schema that its generated code does not state.
#ifndef PTOSERVE_PROTO_WIRE_H_
#define PTOSERVE_PROTO_WIRE_H_

#include <cstddef>

#include "ptoserve/v1/tile.pb.h"

namespace ptoserve {

// Bytes per element of `dtype` in Tile.data; 0 for a value that names no
// element type (unset, unknown).
inline size_t WireElementBytes(int dtype) {
  switch (dtype) {
    case v1::DTYPE_INT8:
    case v1::DTYPE_UINT8:
      return 1;
    case v1::DTYPE_INT16:
    case v1::DTYPE_UINT16:
    case v1::DTYPE_FLOAT16:
    case v1::DTYPE_BFLOAT16:
      return 2;
    case v1::DTYPE_INT32:
    case v1::DTYPE_UINT32:
    case v1::DTYPE_FLOAT32:
      return 4;
    default:
      return 0;
  }
}

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_WIRE_H_
