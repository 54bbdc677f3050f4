// Global memory as kernels see it: a GlobalTensor is a pointer with a 5-D
// shape and stride, in elements, outermost dimension first. Each extent is
// fixed in the type or, where it is DYNAMIC, given at run time:
//
//   using S = Shape<1, 1, 1, 16, DYNAMIC>;   // one dynamic extent
//   using D = Stride<1, 1, 1, DYNAMIC, 1>;
//   GlobalTensor<int32_t, S, D> g(ptr, S(cols), D(row_stride));
//
// A Shape's or Stride's run-time constructor takes its DYNAMIC extents in
// order (one to four of them), or all five (the fixed ones then ignored);
// without arguments a DYNAMIC extent is 1. With Layout::ND (the only one
// TLOAD and TSTORE take here) dimension 4 is a tile's columns and
// dimensions 0-3 together its rows.
#ifndef PTO_COMMON_GLOBAL_TENSOR_HPP
#define PTO_COMMON_GLOBAL_TENSOR_HPP

#include <cstdint>

#include "pto/common/pto_tile.hpp"
#include "pto/common/type.hpp"

namespace pto {

namespace detail {

// Extents fixed at compile time, with DYNAMIC ones filled in at run time.
template <int64_t N0, int64_t N1, int64_t N2, int64_t N3, int64_t N4>
class Extents {
 public:
  static constexpr int64_t kStatic[GlobalTensorDim::TOTAL_DIM] = {N0, N1, N2,
                                                                  N3, N4};
  static constexpr int kDynamic = (N0 == DYNAMIC) + (N1 == DYNAMIC) +
                                  (N2 == DYNAMIC) + (N3 == DYNAMIC) +
                                  (N4 == DYNAMIC);

  // Every DYNAMIC extent 1.
  Extents() {
    for (int d = 0; d < GlobalTensorDim::TOTAL_DIM; ++d) {
      value_[d] = kStatic[d] == DYNAMIC ? 1 : kStatic[d];
    }
  }
  // The DYNAMIC extents, outermost first.
  template <
      typename... Ns,
      std::enable_if_t<(sizeof...(Ns) >= 1 && sizeof...(Ns) <= 4), int> = 0>
  explicit Extents(Ns... dynamic) : Extents() {
    static_assert(sizeof...(Ns) == kDynamic,
                  "pto: give a Shape or Stride one value per DYNAMIC extent "
                  "(or all five)");
    const int64_t given[] = {static_cast<int64_t>(dynamic)...};
    int next = 0;
    for (int d = 0; d < GlobalTensorDim::TOTAL_DIM; ++d) {
      if (kStatic[d] == DYNAMIC) value_[d] = given[next++];
    }
  }
  // All five; the fixed ones keep their values.
  Extents(int64_t n0, int64_t n1, int64_t n2, int64_t n3, int64_t n4)
      : Extents() {
    const int64_t given[] = {n0, n1, n2, n3, n4};
    for (int d = 0; d < GlobalTensorDim::TOTAL_DIM; ++d) {
      if (kStatic[d] == DYNAMIC) value_[d] = given[d];
    }
  }

  int64_t operator[](int dim) const { return value_[dim]; }

 private:
  int64_t value_[GlobalTensorDim::TOTAL_DIM];
};

}  // namespace detail

template <int64_t N0 = DYNAMIC, int64_t N1 = DYNAMIC, int64_t N2 = DYNAMIC,
          int64_t N3 = DYNAMIC, int64_t N4 = DYNAMIC>
struct Shape : detail::Extents<N0, N1, N2, N3, N4> {
  using detail::Extents<N0, N1, N2, N3, N4>::Extents;
  static constexpr const int64_t (&staticShape)[GlobalTensorDim::TOTAL_DIM] =
      detail::Extents<N0, N1, N2, N3, N4>::kStatic;
};

template <int64_t S0 = DYNAMIC, int64_t S1 = DYNAMIC, int64_t S2 = DYNAMIC,
          int64_t S3 = DYNAMIC, int64_t S4 = DYNAMIC>
struct Stride : detail::Extents<S0, S1, S2, S3, S4> {
  using detail::Extents<S0, S1, S2, S3, S4>::Extents;
  static constexpr const int64_t (&staticStride)[GlobalTensorDim::TOTAL_DIM] =
      detail::Extents<S0, S1, S2, S3, S4>::kStatic;
};

template <typename Element_, typename Shape_, typename Stride_,
          Layout Layout_ = Layout::ND>
class GlobalTensor {
 public:
  using DType = Element_;
  using Shape = Shape_;
  using Stride = Stride_;
  static constexpr Layout layout = Layout_;

  GlobalTensor() = default;
  explicit GlobalTensor(DType* data, const Shape& shape = Shape(),
                        const Stride& stride = Stride())
      : data_(data), shape_(shape), stride_(stride) {}

  DType* data() const { return data_; }
  // What TASSIGN does to a GlobalTensor: points it elsewhere.
  void SetAddr(DType* data) { data_ = data; }

  int64_t GetShape(int dim) const { return shape_[dim]; }
  int64_t GetStride(int dim) const { return stride_[dim]; }

  // The rows and columns a tile loaded from it (ND) has.
  int64_t Rows() const { return shape_[0] * shape_[1] * shape_[2] * shape_[3]; }
  int64_t Cols() const { return shape_[4]; }

  // The element at (row, col) of that tile, ND: col is index 4 and row
  // spreads over indices 0-3, the last fastest.
  DType& At(int64_t row, int64_t col) const {
    int64_t offset = col * stride_[4];
    for (int d = 3; d >= 0; --d) {
      offset += (row % shape_[d]) * stride_[d];
      row /= shape_[d];
    }
    return data_[offset];
  }

 private:
  DType* data_ = nullptr;
  Shape shape_;
  Stride stride_;
};

// Whether T is a pto::GlobalTensor.
template <typename T>
struct IsGlobalTensor : std::false_type {};
template <typename E, typename S, typename D, Layout L>
struct IsGlobalTensor<GlobalTensor<E, S, D, L>> : std::true_type {};

}  // namespace pto

#endif  // PTO_COMMON_GLOBAL_TENSOR_HPP
