// expect: error: TXOR: the element type must be int8_t, uint8_t, int16_t,
// uint16_t, int32_t or uint32_t
#include <pto/pto-inst.hpp>

void f() {
  pto::Tile<pto::TileType::Vec, double, 16, 16> a, b, out, tmp;
  pto::TXOR(out, a, b, tmp);
}
