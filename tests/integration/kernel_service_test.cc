// The same program through the C++ built-in API and through a running
// ptoserve (gRPC, the C++ SDK) gives byte-identical tiles, or the same
// refusal in the same words: random programs of TAND and TXOR
// (tests/core/pto/random_programs.h) over the six element types, in manual
// mode with the API's addresses and in auto mode, on the target this binary
// is built for (one binary per target, as a kernel is built). Also a kernel
// recorded by pto::KernelRecording, its job as `ptoctl run` would send it.
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/codec.h"
#include "tests/core/pto/random_programs.h"
#include "tests/integration/shared_server.h"

namespace ptoserve {
namespace {

using namespace random_programs;

// As many per type as differential_test runs on the engine.
constexpr int kPrograms = 300;

template <typename T>
v1::Job JobOf(const Program& p) {
  constexpr int kCols = 64 / sizeof(T);
  const std::vector<std::string> loaded = LoadedBytes<T>(p);
  v1::Job job;
  job.set_target(ToProto(ThisTarget()));
  job.set_mode(p.manual ? v1::MODE_MANUAL : v1::MODE_AUTO);
  for (int t = 0; t < kTiles; ++t) {
    v1::Tile& tile = (*job.mutable_tiles())[kNames[t]];
    tile.set_dtype(ToProto(pto::detail::DTypeOf<T>()));
    tile.set_rows(kRows);
    tile.set_cols(kCols);
    tile.set_valid_rows(p.rows[t]);
    tile.set_valid_cols(p.cols[t]);
    if (p.address[t]) tile.set_address(*p.address[t]);
    if (!loaded[t].empty()) tile.set_data(loaded[t]);
    job.add_outputs(kNames[t]);
  }
  for (const ProgramStep& s : p.steps) {
    v1::Instruction* inst = job.add_instructions();
    inst->set_opcode(s.opcode == Opcode::kTand ? v1::OPCODE_TAND
                                               : v1::OPCODE_TXOR);
    inst->set_dst(kNames[s.dst]);
    inst->set_src0(kNames[s.src0]);
    inst->set_src1(kNames[s.src1]);
    if (s.opcode == Opcode::kTxor) inst->set_tmp(kNames[s.tmp]);
  }
  return job;
}

// What the server did with the program's job: its refusal's message, or
// every tile's bytes.
template <typename T>
random_programs::Result RunOnServer(const Client& client, const Program& p) {
  random_programs::Result result;
  const absl::StatusOr<v1::JobResult> r = client.Execute(JobOf<T>(p));
  if (!r.ok()) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << r.status();
    result.refusal = std::string(r.status().message());
    return result;
  }
  for (int t = 0; t < kTiles; ++t) {
    const auto it = r->tiles().find(kNames[t]);
    EXPECT_NE(it, r->tiles().end()) << kNames[t];
    result.tiles.push_back(it == r->tiles().end() ? "" : it->second.data());
  }
  return result;
}

class KernelServiceTest : public test::SharedServerTest {
 protected:
  template <typename T>
  void ExpectAgreement() {
    std::mt19937 rng(20261206 + sizeof(T) * 7 + std::is_signed_v<T>);
    int ran = 0, refused = 0;
    for (int i = 0; i < kPrograms; ++i) {
      const Program p = Draw<T>(rng);
      const random_programs::Result api = RunOnApi<T>(p);
      const random_programs::Result server = RunOnServer<T>(*client_, p);
      ASSERT_TRUE(SameOutcome(api, server, p)) << "program " << i;
      if (!api.refusal.empty()) {
        ++refused;
        continue;
      }
      ++ran;
    }
    EXPECT_GT(ran, kPrograms / 5);
    EXPECT_GT(refused, kPrograms / 50);
    std::cout << pto::Rules::kName << ", "
              << DTypeName(pto::detail::DTypeOf<T>()) << ": " << ran
              << " ran alike, " << refused << " refused alike\n";
  }
};

TEST_F(KernelServiceTest, RandomProgramsAgreeWithTheServer) {
  ExpectAgreement<int8_t>();
  ExpectAgreement<uint8_t>();
  ExpectAgreement<int16_t>();
  ExpectAgreement<uint16_t>();
  ExpectAgreement<int32_t>();
  ExpectAgreement<uint32_t>();
}

// A kernel in PTO-ISA's style, recorded: the server, sent its job as
// proto3 JSON (what `ptoctl run` reads), returns the stored tile's bytes.
TEST_F(KernelServiceTest, ARecordedKernelsJobGivesTheKernelsResult) {
  using TileT = pto::Tile<TileType::Vec, int32_t, 8, 16>;
  using Global = pto::GlobalTensor<int32_t, pto::Shape<1, 1, 1, 8, 16>,
                                   pto::Stride<1, 1, 1, 16, 1>>;
  std::vector<int32_t> x(TileT::Numel), y(TileT::Numel), out(TileT::Numel);
  for (int i = 0; i < TileT::Numel; ++i) {
    x[i] = i * 2654435761u;
    y[i] = ~i * 40503;
  }
  pto::ResetKernel();
  pto::KernelRecording recording;
  {
    TileT a, b, c, tmp;
    c.SetName("out");
    Global gx(x.data()), gy(y.data()), gout(out.data());
    pto::TLOAD(a, gx);
    pto::TLOAD(b, gy);
    pto::TXOR(c, a, b, tmp);
    pto::TAND(c, c, b);
    pto::TSTORE(gout, c);
  }
  std::string error;
  const std::string json = recording.Job(&error);
  ASSERT_FALSE(json.empty()) << error;
  v1::Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &job).ok());
  const absl::StatusOr<v1::JobResult> r = client_->Execute(job);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string& bytes = r->tiles().at("out").data();
  ASSERT_EQ(bytes.size(), out.size() * sizeof(int32_t));
  EXPECT_EQ(0, std::memcmp(bytes.data(), out.data(), bytes.size()));
  for (int i = 0; i < TileT::Numel; ++i) {
    EXPECT_EQ(out[i], (x[i] ^ y[i]) & y[i]) << i;
  }
}

}  // namespace
}  // namespace ptoserve
