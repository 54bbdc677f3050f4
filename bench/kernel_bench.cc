// kernel_bench: TAND and TXOR on each backend, in bytes/s (bytes read plus
// written), beside memcpy of the same destination size.
//
//   bazel run -c opt //bench:kernel_bench -- --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>

#include "core/engine.h"
#include "core/ops.h"
#include "core/tile_codec.h"

namespace ptoserve {
namespace {

struct Shape {
  const char* name;
  uint32_t rows, cols;
  DType dtype;
};

constexpr Shape kShapes[] = {
    {"16x16_int32", 16, 16, DType::kInt32},
    {"64x64_uint16", 64, 64, DType::kUInt16},
    {"256x256_int32", 256, 256, DType::kInt32},
    {"1024x1024_uint8", 1024, 1024, DType::kUInt8},
    {"4096x4096_int32", 4096, 4096, DType::kInt32},
};

const Engine& BenchEngine() {
  static const Engine* engine = [] {
    EngineOptions options;
    options.limits.max_tile_bytes = size_t{1} << 30;
    return new Engine(options);
  }();
  return *engine;
}

// One instruction on random tiles, run straight on the backend.
void BM_Instruction(benchmark::State& state, Shape shape, Target target,
                    Opcode opcode) {
  const Engine& engine = BenchEngine();
  TileDesc desc;
  desc.dtype = shape.dtype;
  desc.rows = shape.rows;
  desc.cols = shape.cols;
  const size_t bytes = desc.bytes();
  std::string a(bytes, '\0'), b(bytes, '\0');
  std::mt19937 rng(1);
  for (char& c : a) c = static_cast<char>(rng());
  for (char& c : b) c = static_cast<char>(rng());
  JobSpec spec;
  spec.target = target;
  spec.tiles.push_back({"a", desc, Encoding::kData, a, {}, 0});
  spec.tiles.push_back({"b", desc, Encoding::kData, b, {}, 0});
  spec.instructions.push_back({opcode, "d", "a", "b", "t", "", {}, {}});
  auto job = engine.Prepare(spec);
  if (!job.ok()) {
    state.SkipWithError(std::string(job.status().message()).c_str());
    return;
  }
  const Backend& backend = engine.backends().Get(target);
  const BoundInstruction* inst = &(*job)->instruction(0);
  Trace trace;
  Trace* traces[] = {&trace};
  for (auto _ : state) {
    backend.Run(absl::MakeConstSpan(&inst, 1), traces);
    trace.ops.clear();
    trace.notes.clear();
    benchmark::ClobberMemory();
  }
  // TAND/TXOR read two tiles and write one per pass; a2a3 TXOR makes four
  // passes but is credited with the same bytes, so its rate shows the cost.
  state.SetBytesProcessed(int64_t(state.iterations()) * 3 * bytes);
}

void BM_Memcpy(benchmark::State& state, Shape shape) {
  const size_t bytes =
      size_t{shape.rows} * shape.cols * ElementBytes(shape.dtype);
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * 2 * bytes);
}

void RegisterAll() {
  for (const Shape& shape : kShapes) {
    benchmark::RegisterBenchmark(
        (std::string("memcpy/") + shape.name).c_str(),
        [shape](benchmark::State& s) { BM_Memcpy(s, shape); });
    for (Target target : {Target::kHost, Target::kA2A3, Target::kA5}) {
      for (const OpInfo& op : kOps) {
        const Opcode opcode = op.opcode;
        const std::string name = std::string(OpcodeName(opcode)) + "/" +
                                 std::string(TargetName(target)) + "/" +
                                 shape.name;
        benchmark::RegisterBenchmark(
            name.c_str(), [shape, target, opcode](benchmark::State& s) {
              BM_Instruction(s, shape, target, opcode);
            });
      }
    }
  }
}

}  // namespace
}  // namespace ptoserve

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  ptoserve::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
