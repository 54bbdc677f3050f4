// expect: error: TAND: dst, src0 and src1 must be row-major TileType::Vec tiles
#include <pto/pto-inst.hpp>

void f() {
  using RowMajor = pto::Tile<pto::TileType::Vec, int32_t, 16, 16>;
  using ColMajor =
      pto::Tile<pto::TileType::Vec, int32_t, 16, 16, pto::BLayout::ColMajor>;
  RowMajor a, out;
  ColMajor b;
  pto::TAND(out, a, b);
}
