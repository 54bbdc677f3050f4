// A first request through the C++ SDK, from a package of its own:
//   bazel run -c opt //examples/cpp:first_request -- [HOST:PORT]
// TXOR of two 16x16 int16 tiles on a5; prints a row of the result and the
// event's steps.
#include <cstdint>
#include <iostream>
#include <vector>

#include "client/client.h"

int main(int argc, char** argv) {
  auto client =
      ptoserve::Client::Connect(argc > 1 ? argv[1] : "127.0.0.1:50051");
  if (!client.ok()) {
    std::cerr << client.status() << "\n";
    return 1;
  }
  std::vector<int16_t> a(16 * 16, 0x0ff0), b(16 * 16, 0x00ff);
  absl::StatusOr<ptoserve::TileResult<int16_t>> r =
      (*client)->Txor<int16_t>({.src0 = a,
                                .src1 = b,
                                .rows = 16,
                                .cols = 16,
                                .target = ptoserve::v1::TARGET_A5});
  if (!r.ok()) {
    std::cerr << r.status() << "\n";
    return 1;
  }
  std::cout << "dst[0][0..3]:";
  for (int j = 0; j < 4; ++j) std::cout << " 0x" << std::hex << r->elements[j];
  std::cout << std::dec << "\nevents: " << r->events.size() << ", steps:";
  for (const auto& step : r->events[0].trace()) std::cout << " " << step.op();
  std::cout << "\n";
  return 0;
}
