// expect: error: TAND: dst, src0 and src1 must have the same element type
#include <pto/pto-inst.hpp>

void f() {
  pto::Tile<pto::TileType::Vec, int32_t, 16, 16> a, out;
  pto::Tile<pto::TileType::Vec, uint32_t, 16, 16> b;
  pto::TAND(out, a, b);
}
