// expect: error: TXOR: dst, src0 and src1 must be row-major TileType::Vec tiles
#include <pto/pto-inst.hpp>

void f() {
  using Boxed =
      pto::Tile<pto::TileType::Vec, int16_t, 16, 16, pto::BLayout::RowMajor, 16,
                16, pto::SLayout::RowMajor>;
  Boxed a, b, out, tmp;
  pto::TXOR(out, a, b, tmp);
}
