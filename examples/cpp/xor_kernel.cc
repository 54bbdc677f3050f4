// A kernel written as PTO-ISA's own tests write one, built for a2a3
// (BUILD.bazel: -DPTO_TARGET_A2A3) and run in-process with ptoserve's
// built-in API; its run is recorded as a job for the service and, if asked,
// written as the service's Chrome trace of it (docs/KERNELS.md, "See what
// the service shows").
//
//   bazel run -c opt //examples/cpp:xor_kernel -- xor_kernel.json [TRACE]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <pto/common/constants.hpp>
#include <pto/pto-inst.hpp>
#include <string>

#include "client/kernel_trace.h"

using namespace pto;

template <typename T, int kRows, int kCols>
AICORE void XorKernel(__gm__ T __out__* out, __gm__ T __in__* x,
                      __gm__ T __in__* y) {
  using Matrix =
      GlobalTensor<T, Shape<1, 1, 1, kRows, kCols>, Stride<1, 1, 1, kCols, 1>>;
  using TileT = Tile<TileType::Vec, T, kRows, kCols>;
  TileT x_tile, y_tile, out_tile, scratch;
  x_tile.SetName("x");
  y_tile.SetName("y");
  out_tile.SetName("out");
  scratch.SetName("scratch");
  Matrix x_matrix(x), y_matrix(y), out_matrix(out);
  constexpr int kBytes = kRows * kCols * sizeof(T);
  TASSIGN(x_tile, 0);
  TASSIGN(y_tile, kBytes);
  TASSIGN(out_tile, 2 * kBytes);
  TASSIGN(scratch, 3 * kBytes);
  TLOAD(x_tile, x_matrix);
  TLOAD(y_tile, y_matrix);
  TXOR(out_tile, x_tile, y_tile, scratch);
  TSTORE(out_matrix, out_tile);
}

// `path` as the user meant it: under `bazel run` (which runs the program
// from its runfiles) a relative path is the directory the command was
// typed in, which Bazel names in BUILD_WORKING_DIRECTORY.
std::string UserPath(const char* path) {
  const char* typed_in = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path[0] == '/' || typed_in == nullptr || typed_in[0] == '\0') {
    return path;
  }
  return std::string(typed_in) + "/" + path;
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: xor_kernel JOB.json [TRACE.json]\n");
    return 2;
  }
  constexpr int kRows = NUM_2, kCols = NUM_8;
  int32_t x[kRows * kCols], y[kRows * kCols], out[kRows * kCols] = {};
  for (int i = 0; i < kRows * kCols; ++i) {
    x[i] = i;
    y[i] = 6;
  }
  KernelRecording recording;
  XorKernel<int32_t, kRows, kCols>(out, x, y);
  int wrong = 0;
  for (int i = 0; i < kRows * kCols; ++i) wrong += out[i] != (x[i] ^ y[i]);
  std::printf("xor_kernel on %s: out = x ^ y, %d of %d elements wrong\n",
              Rules::kName, wrong, kRows * kCols);
  std::string error;
  if (!recording.WriteJob(UserPath(argv[1]).c_str(), &error)) {
    std::fprintf(stderr, "xor_kernel: %s\n", error.c_str());
    return 1;
  }
  std::printf("xor_kernel: wrote %s\n", argv[1]);
  if (argc == 3) {
    if (!WriteKernelTrace(UserPath(argv[2]).c_str(), &error)) {
      std::fprintf(stderr, "xor_kernel: %s\n", error.c_str());
      return 1;
    }
    std::printf("xor_kernel: wrote %s\n", argv[2]);
  }
  return wrong == 0 ? 0 : 1;
}
