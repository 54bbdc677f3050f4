// libFuzzer's entry for infer_fuzzer (tests/fuzz/infer_target.cc).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ptoserve::fuzz::RunOrAbort(&ptoserve::fuzz::RunInfer, data, size);
}
