// What kernels written for PTO-ISA name besides tiles and instructions:
// the kernel qualifiers, which mean nothing on the host, and the 16-bit
// float types a kernel's launcher may name.
//
//   AICORE void runTAnd(__gm__ T __out__* out, __gm__ T __in__* src0, ...);
//
// AICORE, __aicore__, __global__ (a kernel entry), __gm__ (global memory),
// __ubuf__ (the unified buffer), __in__ and __out__ (a parameter's
// direction) expand to nothing. half and aclFloat16 are the compiler's
// _Float16 where it has one, else a 16-bit type of their own; TAND and
// TXOR take neither (their element types are the six integer ones).
#ifndef PTO_COMMON_TYPE_HPP
#define PTO_COMMON_TYPE_HPP

#include <cstdint>

#ifndef AICORE
#define AICORE
#endif
#ifndef __aicore__
#define __aicore__
#endif
#ifndef __global__
#define __global__
#endif
#ifndef __gm__
#define __gm__
#endif
#ifndef __ubuf__
#define __ubuf__
#endif
#ifndef __in__
#define __in__
#endif
#ifndef __out__
#define __out__
#endif

#if defined(__FLT16_MANT_DIG__)
using half = _Float16;
#else
// The bits of an IEEE half; no arithmetic.
struct half {
  uint16_t bits;
};
#endif
using aclFloat16 = half;

namespace pto {

// The dimensions of a GlobalTensor's Shape and Stride, outermost first.
struct GlobalTensorDim {
  static constexpr int DIM_0 = 0;
  static constexpr int DIM_1 = 1;
  static constexpr int DIM_2 = 2;
  static constexpr int DIM_3 = 3;
  static constexpr int DIM_4 = 4;
  static constexpr int TOTAL_DIM = 5;
};

// How a GlobalTensor's elements map onto a tile's rows and columns. ND:
// the last dimension is the columns, the other four together the rows.
enum class Layout { ND, DN, NZ };

}  // namespace pto

#endif  // PTO_COMMON_TYPE_HPP
