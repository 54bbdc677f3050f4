// expect: error: TAND: on a2a3 and a5 each operand's rows (Cols *
// sizeof(element)) must be a multiple of 32 bytes
#define PTO_TARGET_A5
#include <pto/pto-inst.hpp>

void f() {
  pto::Tile<pto::TileType::Vec, int16_t, 16, 8> a, b, out;  // 16-byte rows
  pto::TAND(out, a, b);
}
