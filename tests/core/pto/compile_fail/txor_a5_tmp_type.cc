// expect: compiles
// a5 accepts tmp and never uses it, so it does not check its type.
#define PTO_TARGET_A5
#include <pto/pto-inst.hpp>

void f() {
  pto::Tile<pto::TileType::Vec, int32_t, 16, 16> a, b, out;
  pto::Tile<pto::TileType::Vec, int16_t, 16, 16> tmp;
  pto::TXOR(out, a, b, tmp);
}
