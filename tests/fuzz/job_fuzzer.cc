// libFuzzer target: a serialized ptoserve.v1.Job (RunJob in fuzz_targets.h),
// mutated mostly as a Job (job_mutator.h) and sometimes as bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "google/protobuf/stubs/logging.h"
#include "ptoserve/v1/job.pb.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/job_mutator.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  // Mutants are full of invalid UTF-8 in string fields, and protobuf logs
  // an error for each one it parses.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size,
                                          size_t max_size, unsigned int seed) {
  std::mt19937 rng(seed);
  ptoserve::v1::Job job;
  if (rng() % 4 != 0 && job.ParseFromArray(data, static_cast<int>(size))) {
    const int steps = 1 + rng() % 3;
    for (int i = 0; i < steps; ++i) ptoserve::fuzz::MutateJob(&rng, &job);
    std::string bytes;
    if (job.SerializeToString(&bytes) && bytes.size() <= max_size) {
      std::memcpy(data, bytes.data(), bytes.size());
      return bytes.size();
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ptoserve::fuzz::RunOrAbort(&ptoserve::fuzz::RunJob, data, size);
}
