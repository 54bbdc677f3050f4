// docs/SHARED_MEMORY.md's C++ example, built and run by the tests:
//   shared_memory_example [HOST:PORT]
// TAND of two 256x256 int32 tiles in a shared-memory region, the result
// written by the server into the same region.
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>

#include "client/client.h"
#include "client/shared_region.h"

int main(int argc, char** argv) {
  const std::string address = argc > 1 ? argv[1] : "127.0.0.1:50051";
  absl::StatusOr<std::unique_ptr<ptoserve::Client>> client =
      ptoserve::Client::Connect(address);
  if (!client.ok()) {
    std::cerr << client.status() << "\n";
    return 1;
  }
  constexpr uint32_t kRows = 256, kCols = 256, kN = kRows * kCols;
  // One region for both sources and the result (plus alignment slack).
  auto region = ptoserve::SharedRegion::Create(**client, 3 * kN * 4 + 192);
  if (!region.ok()) {
    std::cerr << region.status() << "\n";
    return 1;
  }
  absl::Span<int32_t> a = (*region)->Allocate<int32_t>(kN).value();
  absl::Span<int32_t> b = (*region)->Allocate<int32_t>(kN).value();
  absl::Span<int32_t> c = (*region)->Allocate<int32_t>(kN).value();
  for (uint32_t k = 0; k < kN; ++k) {
    a[k] = static_cast<int32_t>(k);
    b[k] = 0x0ff0;
  }
  absl::StatusOr<ptoserve::v1::Job> job = ptoserve::SharedBinaryJob<int32_t>(
      ptoserve::v1::OPCODE_TAND, **region,
      {.src0 = a, .src1 = b, .rows = kRows, .cols = kCols}, c);
  absl::StatusOr<ptoserve::v1::JobResult> result = (*client)->Execute(*job);
  if (!result.ok()) {
    std::cerr << result.status() << "\n";
    return 1;
  }
  // The request carried three slices (a few bytes each, with the
  // region's name), not 768 KiB of tiles; c now holds a & b.
  std::cout << "request " << (job->ByteSizeLong() < 1024 ? "under" : "over")
            << " 1 KiB for 768 KiB of tiles, c[4095] = " << c[4095] << " ("
            << (4095 & 0x0ff0) << " expected)\n";
  return 0;
}  // ~SharedRegion unregisters the region and removes the object
