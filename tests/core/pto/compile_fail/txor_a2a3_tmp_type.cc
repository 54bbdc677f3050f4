// expect: error: TXOR: on a2a3 tmp must have the element type of dst, src0 and
// src1
#define PTO_TARGET_A2A3
#include <pto/pto-inst.hpp>

void f() {
  pto::Tile<pto::TileType::Vec, int32_t, 16, 16> a, b, out;
  pto::Tile<pto::TileType::Vec, int16_t, 16, 16> tmp;
  pto::TXOR(out, a, b, tmp);
}
