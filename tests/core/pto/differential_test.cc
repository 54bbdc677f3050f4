// The same program through the C++ built-in API and through the service's
// engine (core/engine.h, what the server runs a job on) gives byte-identical
// tiles, or the same refusal in the same words: random programs
// (random_programs.h) over the six element types, on the target this
// binary is built for. //tests/integration:kernel_service_test sends the
// same programs to a running server.
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/engine.h"
#include "gtest/gtest.h"
#include "tests/core/pto/random_programs.h"

namespace ptoserve {
namespace {

using namespace random_programs;

constexpr int kPrograms = 300;

template <typename T>
Result RunOnEngine(const Program& p) {
  constexpr int kCols = 64 / sizeof(T);
  const std::vector<std::string> loaded = LoadedBytes<T>(p);
  JobSpec job;
  job.target = ThisTarget();
  job.mode = p.manual ? Mode::kManual : Mode::kAuto;
  for (int t = 0; t < kTiles; ++t) {
    TileInput in;
    in.name = kNames[t];
    in.desc.dtype = pto::detail::DTypeOf<T>();
    in.desc.rows = kRows;
    in.desc.cols = kCols;
    in.desc.valid_rows = p.rows[t];
    in.desc.valid_cols = p.cols[t];
    in.desc.address = p.address[t];
    if (!loaded[t].empty()) {
      in.encoding = Encoding::kData;
      in.data = loaded[t];
    }
    job.tiles.push_back(in);
    job.outputs.push_back(kNames[t]);
  }
  for (const ProgramStep& s : p.steps) {
    Instruction inst;
    inst.opcode = s.opcode;
    inst.dst = kNames[s.dst];
    inst.src0 = kNames[s.src0];
    inst.src1 = kNames[s.src1];
    if (s.opcode == Opcode::kTxor) inst.tmp = kNames[s.tmp];
    job.instructions.push_back(inst);
  }
  EngineOptions options;
  options.default_target = ThisTarget();
  const absl::StatusOr<JobOutcome> outcome = Engine(options).Execute(job);
  Result result;
  if (!outcome.ok()) {
    result.refusal = std::string(outcome.status().message());
    return result;
  }
  for (int t = 0; t < kTiles; ++t) {
    const Tile& tile = outcome->outputs[t].tile;
    result.tiles.emplace_back(reinterpret_cast<const char*>(tile.data()),
                              tile.size_bytes());
    result.address[t] = tile.desc().address;
  }
  return result;
}

template <typename T>
class DifferentialTest : public ::testing::Test {};
using BitwiseTypes =
    ::testing::Types<int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t>;
TYPED_TEST_SUITE(DifferentialTest, BitwiseTypes);

TYPED_TEST(DifferentialTest, ApiAndEngineAgree) {
  using T = TypeParam;
  std::mt19937 rng(20261205 + sizeof(T) * 7 + std::is_signed_v<T>);
  int ran = 0, refused = 0, aliased = 0, placed_alike = 0;
  for (int i = 0; i < kPrograms; ++i) {
    const Program p = Draw<T>(rng);
    const Result api = RunOnApi<T>(p);
    const Result engine = RunOnEngine<T>(p);
    ASSERT_TRUE(SameOutcome(api, engine, p)) << "program " << i;
    if (!api.refusal.empty()) {
      ++refused;
      continue;
    }
    ++ran;
    for (const ProgramStep& s : p.steps) {
      aliased += s.dst == s.src0 || s.dst == s.src1 || s.src0 == s.src1;
    }
    // Where the service's auto mode keeps tiles in the buffer, the API
    // placed them at the same addresses.
    if (PlacedInTheServicesOrder(p) &&
        ptoserve::builtin::PlacesUnbound(ThisTarget())) {
      ++placed_alike;
      for (int t = 0; t < kTiles; ++t) {
        ASSERT_TRUE(engine.address[t].has_value()) << Describe(p);
        ASSERT_EQ(api.address[t], engine.address[t])
            << "tile " << kNames[t] << " of program " << i << ": "
            << Describe(p);
      }
    }
  }
  // Enough of each kind for the comparison to mean something.
  EXPECT_GT(ran, kPrograms / 5);
  EXPECT_GT(refused, kPrograms / 50);
  EXPECT_GT(aliased, kPrograms / 10);
  // On a2a3 few programs qualify (TXOR's tmp); kernel_test places its
  // tiles against the service's there.
  if (ptoserve::builtin::PlacesUnbound(ThisTarget()) &&
      !pto::Rules::kTxorUsesTmp) {
    EXPECT_GT(placed_alike, kPrograms / 50);
  }
  std::cout << pto::Rules::kName << ": " << ran << " programs ran alike, "
            << refused << " refused alike, " << aliased
            << " instructions with aliased operands, " << placed_alike
            << " with every tile placed at the service's address\n";
}

}  // namespace
}  // namespace ptoserve
