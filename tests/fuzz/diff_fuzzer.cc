// libFuzzer target: bytes choosing a valid job, run on every target
// (RunDifferential in fuzz_targets.h).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ptoserve::fuzz::RunOrAbort(&ptoserve::fuzz::RunDifferential, data,
                                    size);
}
