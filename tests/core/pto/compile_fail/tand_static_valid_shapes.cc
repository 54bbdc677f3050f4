// expect: error: TAND: the valid shapes of src0 and src1 must equal dst's
#include <pto/pto-inst.hpp>

void f() {
  using Full = pto::Tile<pto::TileType::Vec, int8_t, 16, 32>;
  using Part = pto::Tile<pto::TileType::Vec, int8_t, 16, 32,
                         pto::BLayout::RowMajor, 8, 32>;
  Full a, out;
  Part b;
  pto::TAND(out, a, b);
}
