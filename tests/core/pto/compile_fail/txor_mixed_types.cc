// expect: error: TXOR: dst, src0 and src1 must have the same element type
#include <pto/pto-inst.hpp>

void f() {
  pto::Tile<pto::TileType::Vec, int16_t, 16, 16> a, b, tmp;
  pto::Tile<pto::TileType::Vec, uint16_t, 16, 16> out;
  pto::TXOR(out, a, b, tmp);
}
