// expect: error: TAND: dst, src0 and src1 must be row-major TileType::Vec tiles
#include <pto/pto-inst.hpp>

void f() {
  pto::Tile<pto::TileType::Mat, int16_t, 16, 16> a, b, out;
  pto::TAND(out, a, b);
}
