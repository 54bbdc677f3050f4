#include "core/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>

namespace ptoserve {

namespace {

// Rows that follow each other without gaps in every operand are one long
// row: fewer loop iterations and full vectors for small tiles.
template <typename... Planes>
Region Flatten(Region region, Planes&... planes) {
  const bool contiguous = ((planes.stride == region.row_bytes) && ...);
  if (contiguous && region.rows > 1) {
    Region flat{1, region.rows * region.row_bytes};
    ((planes.stride = flat.row_bytes), ...);
    return flat;
  }
  return region;
}

template <typename Word>
inline Word Load(const uint8_t* p) {
  Word w;
  std::memcpy(&w, p, sizeof(Word));
  return w;
}

template <typename Word>
inline void Store(uint8_t* p, Word w) {
  std::memcpy(p, &w, sizeof(Word));
}

template <BitwiseOp kOp, typename Word>
inline Word Apply(Word a, Word b) {
  if constexpr (kOp == BitwiseOp::kAnd) return a & b;
  if constexpr (kOp == BitwiseOp::kOr) return a | b;
  return a ^ b;
}

// Finishes a row from byte `x` on, one 8-byte word and then single bytes.
template <BitwiseOp kOp>
inline void BinaryTail(size_t x, size_t n, const uint8_t* a, const uint8_t* b,
                       uint8_t* d) {
  for (; x + 8 <= n; x += 8) {
    Store(d + x, Apply<kOp>(Load<uint64_t>(a + x), Load<uint64_t>(b + x)));
  }
  for (; x < n; ++x) d[x] = Apply<kOp>(a[x], b[x]);
}

inline void InvertTail(size_t x, size_t n, const uint8_t* s, uint8_t* d) {
  for (; x + 8 <= n; x += 8) Store(d + x, ~Load<uint64_t>(s + x));
  for (; x < n; ++x) d[x] = static_cast<uint8_t>(~s[x]);
}

template <BitwiseOp kOp>
void PortableBinaryOp(Region r, ConstPlane a, ConstPlane b, Plane d) {
  r = Flatten(r, a, b, d);
  for (size_t y = 0; y < r.rows; ++y) {
    BinaryTail<kOp>(0, r.row_bytes, a.data + y * a.stride,
                    b.data + y * b.stride, d.data + y * d.stride);
  }
}

void PortableBinary(BitwiseOp op, Region r, ConstPlane a, ConstPlane b,
                    Plane d) {
  switch (op) {
    case BitwiseOp::kAnd:
      return PortableBinaryOp<BitwiseOp::kAnd>(r, a, b, d);
    case BitwiseOp::kOr:
      return PortableBinaryOp<BitwiseOp::kOr>(r, a, b, d);
    case BitwiseOp::kXor:
      return PortableBinaryOp<BitwiseOp::kXor>(r, a, b, d);
  }
}

void PortableInvert(Region r, ConstPlane s, Plane d) {
  r = Flatten(r, s, d);
  for (size_t y = 0; y < r.rows; ++y) {
    InvertTail(0, r.row_bytes, s.data + y * s.stride, d.data + y * d.stride);
  }
}

#if defined(__x86_64__)

template <BitwiseOp kOp>
__attribute__((target("avx2"))) inline __m256i ApplyAvx2(__m256i a, __m256i b) {
  if constexpr (kOp == BitwiseOp::kAnd) return _mm256_and_si256(a, b);
  if constexpr (kOp == BitwiseOp::kOr) return _mm256_or_si256(a, b);
  return _mm256_xor_si256(a, b);
}

template <BitwiseOp kOp>
__attribute__((target("avx2"))) void Avx2BinaryOp(Region r, ConstPlane a,
                                                  ConstPlane b, Plane d) {
  r = Flatten(r, a, b, d);
  const size_t n = r.row_bytes;
  for (size_t y = 0; y < r.rows; ++y) {
    const uint8_t* pa = a.data + y * a.stride;
    const uint8_t* pb = b.data + y * b.stride;
    uint8_t* pd = d.data + y * d.stride;
    size_t x = 0;
    // Four vectors per step keep both load ports and the store port busy.
    for (; x + 128 <= n; x += 128) {
      __m256i v[4];
      for (int k = 0; k < 4; ++k) {
        v[k] = ApplyAvx2<kOp>(
            _mm256_loadu_si256(
                reinterpret_cast<const __m256i*>(pa + x + 32 * k)),
            _mm256_loadu_si256(
                reinterpret_cast<const __m256i*>(pb + x + 32 * k)));
      }
      for (int k = 0; k < 4; ++k) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(pd + x + 32 * k), v[k]);
      }
    }
    for (; x + 32 <= n; x += 32) {
      __m256i v = ApplyAvx2<kOp>(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pa + x)),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + x)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(pd + x), v);
    }
    BinaryTail<kOp>(x, n, pa, pb, pd);
  }
}

void Avx2Binary(BitwiseOp op, Region r, ConstPlane a, ConstPlane b, Plane d) {
  switch (op) {
    case BitwiseOp::kAnd:
      return Avx2BinaryOp<BitwiseOp::kAnd>(r, a, b, d);
    case BitwiseOp::kOr:
      return Avx2BinaryOp<BitwiseOp::kOr>(r, a, b, d);
    case BitwiseOp::kXor:
      return Avx2BinaryOp<BitwiseOp::kXor>(r, a, b, d);
  }
}

__attribute__((target("avx2"))) void Avx2Invert(Region r, ConstPlane s,
                                                Plane d) {
  r = Flatten(r, s, d);
  const size_t n = r.row_bytes;
  const __m256i ones = _mm256_set1_epi8(-1);
  for (size_t y = 0; y < r.rows; ++y) {
    const uint8_t* ps = s.data + y * s.stride;
    uint8_t* pd = d.data + y * d.stride;
    size_t x = 0;
    for (; x + 32 <= n; x += 32) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ps + x));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(pd + x),
                          _mm256_xor_si256(v, ones));
    }
    InvertTail(x, n, ps, pd);
  }
}

template <BitwiseOp kOp>
__attribute__((target("avx512f"))) inline __m512i ApplyAvx512(__m512i a,
                                                              __m512i b) {
  if constexpr (kOp == BitwiseOp::kAnd) return _mm512_and_si512(a, b);
  if constexpr (kOp == BitwiseOp::kOr) return _mm512_or_si512(a, b);
  return _mm512_xor_si512(a, b);
}

// Regions larger than this are written with non-temporal stores: they will
// not fit in the caches anyway, and streaming stores skip reading each
// destination line before overwriting it.
constexpr size_t kStreamingBytes = size_t{8} << 20;

template <BitwiseOp kOp>
__attribute__((target("avx512f"))) void Avx512BinaryOp(Region r, ConstPlane a,
                                                       ConstPlane b, Plane d) {
  r = Flatten(r, a, b, d);
  const size_t n = r.row_bytes;
  const bool streaming = r.rows * n >= kStreamingBytes;
  for (size_t y = 0; y < r.rows; ++y) {
    const uint8_t* pa = a.data + y * a.stride;
    const uint8_t* pb = b.data + y * b.stride;
    uint8_t* pd = d.data + y * d.stride;
    size_t x = 0;
    if (streaming) {
      // Bytes up to the first 64-byte boundary of dst, then whole lines.
      const size_t head =
          std::min(n, (64 - reinterpret_cast<uintptr_t>(pd) % 64) % 64);
      BinaryTail<kOp>(0, head, pa, pb, pd);
      for (x = head; x + 64 <= n; x += 64) {
        _mm512_stream_si512(reinterpret_cast<__m512i*>(pd + x),
                            ApplyAvx512<kOp>(_mm512_loadu_si512(pa + x),
                                             _mm512_loadu_si512(pb + x)));
      }
      BinaryTail<kOp>(x, n, pa, pb, pd);
      continue;
    }
    for (; x + 256 <= n; x += 256) {
      __m512i v[4];
      for (int k = 0; k < 4; ++k) {
        v[k] = ApplyAvx512<kOp>(_mm512_loadu_si512(pa + x + 64 * k),
                                _mm512_loadu_si512(pb + x + 64 * k));
      }
      for (int k = 0; k < 4; ++k) _mm512_storeu_si512(pd + x + 64 * k, v[k]);
    }
    for (; x + 64 <= n; x += 64) {
      _mm512_storeu_si512(pd + x, ApplyAvx512<kOp>(_mm512_loadu_si512(pa + x),
                                                   _mm512_loadu_si512(pb + x)));
    }
    BinaryTail<kOp>(x, n, pa, pb, pd);
  }
  // Streaming stores are weakly ordered: make them visible before returning.
  if (streaming) _mm_sfence();
}

void Avx512Binary(BitwiseOp op, Region r, ConstPlane a, ConstPlane b, Plane d) {
  switch (op) {
    case BitwiseOp::kAnd:
      return Avx512BinaryOp<BitwiseOp::kAnd>(r, a, b, d);
    case BitwiseOp::kOr:
      return Avx512BinaryOp<BitwiseOp::kOr>(r, a, b, d);
    case BitwiseOp::kXor:
      return Avx512BinaryOp<BitwiseOp::kXor>(r, a, b, d);
  }
}

__attribute__((target("avx512f"))) void Avx512Invert(Region r, ConstPlane s,
                                                     Plane d) {
  r = Flatten(r, s, d);
  const size_t n = r.row_bytes;
  const __m512i ones = _mm512_set1_epi32(-1);
  for (size_t y = 0; y < r.rows; ++y) {
    const uint8_t* ps = s.data + y * s.stride;
    uint8_t* pd = d.data + y * d.stride;
    size_t x = 0;
    for (; x + 64 <= n; x += 64) {
      _mm512_storeu_si512(pd + x,
                          _mm512_xor_si512(_mm512_loadu_si512(ps + x), ones));
    }
    InvertTail(x, n, ps, pd);
  }
}

#endif  // __x86_64__

}  // namespace

const KernelSet& PortableKernels() {
  static const KernelSet kSet{"portable", &PortableBinary, &PortableInvert};
  return kSet;
}

const KernelSet* Avx2Kernels() {
#if defined(__x86_64__)
  static const KernelSet kSet{"avx2", &Avx2Binary, &Avx2Invert};
  static const bool kSupported = __builtin_cpu_supports("avx2");
  return kSupported ? &kSet : nullptr;
#else
  return nullptr;
#endif
}

const KernelSet* Avx512Kernels() {
#if defined(__x86_64__)
  static const KernelSet kSet{"avx512", &Avx512Binary, &Avx512Invert};
  static const bool kSupported = __builtin_cpu_supports("avx512f");
  return kSupported ? &kSet : nullptr;
#else
  return nullptr;
#endif
}

const KernelSet& BestKernels() {
  static const KernelSet& kBest = Avx512Kernels() != nullptr ? *Avx512Kernels()
                                  : Avx2Kernels() != nullptr
                                      ? *Avx2Kernels()
                                      : PortableKernels();
  return kBest;
}

}  // namespace ptoserve
