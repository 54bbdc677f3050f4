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

// One instruction on random tiles, run straight on the backend: the
// kernels alone, on tiles in ordinary memory whatever the target's buffer
// (a 4096x4096 tile is far larger than a2a3's 192 KiB; the engine would
// refuse the job).
void BM_Instruction(benchmark::State& state, Shape shape, Target target,
                    Opcode opcode) {
  const Engine& engine = BenchEngine();
  const Backend& backend = engine.backends().Get(target);
  TileDesc shaped;
  shaped.dtype = shape.dtype;
  shaped.rows = shape.rows;
  shaped.cols = shape.cols;
  const TileDesc desc = ResolveTileDesc(shaped, "a", size_t{1} << 30).value();
  const bool unary = Op(opcode).sources == 1;
  const bool uses_tmp = backend.UsesTmp(opcode);
  InstructionSig sig;
  sig.opcode = opcode;
  sig.dst = {"dst", "d", &desc};
  sig.src0 = {"src0", "a", &desc};
  sig.src1 = {"src1", unary ? "a" : "b", &desc};
  sig.tmp = {"tmp", uses_tmp ? "t" : "", uses_tmp ? &desc : nullptr};
  if (absl::Status s = backend.Check(sig); !s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  Tile a(desc), b(desc), d(desc), t(desc);
  std::mt19937 rng(1);
  for (Tile* tile : {&a, &b}) {
    for (size_t k = 0; k < tile->size_bytes(); ++k) {
      tile->data()[k] = static_cast<uint8_t>(rng());
    }
  }
  BoundInstruction bound;
  bound.opcode = opcode;
  bound.dst = &d;
  bound.src0 = &a;
  bound.src1 = unary ? &a : &b;
  bound.tmp = uses_tmp ? &t : nullptr;
  const BoundInstruction* inst = &bound;
  Trace trace;
  Trace* traces[] = {&trace};
  for (auto _ : state) {
    backend.Run(absl::MakeConstSpan(&inst, 1), traces);
    trace.ops.clear();
    trace.notes.clear();
    benchmark::ClobberMemory();
  }
  // Each pass reads the sources and writes dst; a2a3 TXOR makes four
  // passes but is credited with the same bytes, so its rate shows the cost.
  state.SetBytesProcessed(int64_t(state.iterations()) * (unary ? 2 : 3) *
                          int64_t(desc.bytes()));
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
        // Only what the target runs (TOR and TNOT are the host's).
        if (BenchEngine()
                .backends()
                .Get(target)
                .spec()
                .rule(opcode)
                .step_count == 0) {
          continue;
        }
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
