// expect: error: TAND: events to wait on must be RecordEvents returned by
// earlier instructions
#include <pto/pto-inst.hpp>

void f() {
  pto::Tile<pto::TileType::Vec, int8_t, 16, 32> a, b, out;
  int not_an_event = 0;
  pto::TAND(out, a, b, not_an_event);
}
