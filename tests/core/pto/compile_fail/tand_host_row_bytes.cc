// expect: compiles
// The host takes rows of any length.
#include <pto/pto-inst.hpp>

void f() {
  pto::Tile<pto::TileType::Vec, int16_t, 16, 8> a, b, out;
  pto::TAND(out, a, b);
}
