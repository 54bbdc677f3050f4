// expect: compiles
// The seeds' usage, on every target: the control that shows the compiler
// and include paths work, so the failures below fail for their reason.
#include <pto/pto-inst.hpp>

using namespace pto;

void example() {
  using TileT = Tile<TileType::Vec, int32_t, 16, 16>;
  TileT a, b, out, tmp;
  RecordEvent e = TAND(out, a, b);
  TXOR(out, a, b, tmp, e);
}
