// Element-wise bitwise kernels over a rectangular region of bytes.
//
// AND, OR, XOR and NOT act on each bit independently, so one byte kernel
// serves every integer element type: a region of R rows of C elements of
// size s is R rows of C*s bytes. Each operand has its own row stride, so
// operands of different physical shapes combine freely; bytes outside the
// region are never touched.
#ifndef PTOSERVE_CORE_KERNELS_H_
#define PTOSERVE_CORE_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace ptoserve {

enum class BitwiseOp : uint8_t { kAnd, kOr, kXor };

// The extent of a region: rows of row_bytes bytes each.
struct Region {
  size_t rows = 0;
  size_t row_bytes = 0;
};

// One operand: the address of the region's first byte and the distance in
// bytes between the starts of consecutive rows.
struct ConstPlane {
  const uint8_t* data = nullptr;
  size_t stride = 0;
};
struct Plane {
  uint8_t* data = nullptr;
  size_t stride = 0;
};

// A set of kernels for one instruction-set level. Operands may be the same
// plane (in-place, src0 == src1) but must not partially overlap.
struct KernelSet {
  const char* name;  // "portable", "avx2", "avx512"
  // dst = a op b over `region`.
  void (*binary)(BitwiseOp op, Region region, ConstPlane a, ConstPlane b,
                 Plane dst);
  // dst = ~src over `region`.
  void (*invert)(Region region, ConstPlane src, Plane dst);
};

// Plain C++ over 64-bit words; runs everywhere.
const KernelSet& PortableKernels();
// AVX2 (256-bit) kernels, or nullptr when this CPU lacks AVX2.
const KernelSet* Avx2Kernels();
// AVX-512 (512-bit) kernels, or nullptr when this CPU lacks AVX-512F.
const KernelSet* Avx512Kernels();
// The fastest set this CPU supports, chosen once at run time.
const KernelSet& BestKernels();

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_KERNELS_H_
