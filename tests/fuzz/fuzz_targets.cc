#include "tests/fuzz/fuzz_targets.h"

#include <cstdio>
#include <cstdlib>

namespace ptoserve {
namespace fuzz {

absl::Span<const FuzzTarget> Targets() {
  static constexpr FuzzTarget kTargets[] = {
      {"job_fuzzer", &RunJob},
      {"asm_fuzzer", &RunAssembly},
      {"diff_fuzzer", &RunDifferential},
      {"infer_fuzzer", &RunInfer},
  };
  return kTargets;
}

int RunOrAbort(absl::Status (*run)(absl::string_view input),
               const uint8_t* data, size_t size) {
  const absl::Status finding =
      run(absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!finding.ok()) {
    std::fprintf(stderr, "finding: %s\n", finding.ToString().c_str());
    std::abort();
  }
  return 0;
}

}  // namespace fuzz
}  // namespace ptoserve
