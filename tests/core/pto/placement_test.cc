// Where the built-in API keeps a tile left unbound: on a2a3 and a5, in the
// target's unified buffer, placed at its first use where the service's auto
// mode places it (the addresses of the service's run of the recorded job),
// its bytes given back by its destructor and by ResetKernel; a TASSIGN onto
// a placed tile's bytes refused; and a tile that does not fit refused in the
// service's words. On the host it keeps memory of its own, as the service's
// auto mode keeps host tiles.
#include <cstdint>
#include <optional>
#include <pto/common/constants.hpp>
#include <pto/pto-inst.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/engine.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/codec.h"
#include "ptoserve/v1/job.pb.h"
#include "tests/core/pto/refusals.h"

using namespace pto;

namespace {

using ::testing::HasSubstr;

ptoserve::Target ThisTarget() { return static_cast<ptoserve::Target>(kTarget); }
const bool kPlaces = ptoserve::builtin::PlacesUnbound(ThisTarget());

using ptoserve::refusals::RefusalOf;

using TileT = Tile<TileType::Vec, int16_t, NUM_8, NUM_16>;  // 256 bytes
using Global = GlobalTensor<int16_t, Shape<1, 1, 1, NUM_8, NUM_16>,
                            Stride<1, 1, 1, NUM_16, 1>>;

std::vector<int16_t> Values(int16_t first) {
  std::vector<int16_t> v(TileT::Numel);
  for (int16_t& x : v) x = first++;
  return v;
}

// The job `json` on the service's engine: each output's address, in the
// order the job lists them.
std::vector<std::optional<uint64_t>> ServiceAddresses(const std::string& json) {
  ptoserve::v1::Job job;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &job).ok());
  const absl::StatusOr<ptoserve::JobSpec> spec = ptoserve::ToJobSpec(job);
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return {};
  const absl::StatusOr<ptoserve::JobOutcome> outcome =
      ptoserve::Engine(ptoserve::EngineOptions{}).Execute(*spec);
  EXPECT_TRUE(outcome.ok()) << outcome.status() << "\n" << json;
  std::vector<std::optional<uint64_t>> addresses;
  if (!outcome.ok()) return addresses;
  for (const ptoserve::OutputTile& t : outcome->outputs) {
    addresses.push_back(t.tile.desc().address);
  }
  return addresses;
}

TEST(PlacementTest, UnboundTilesAreWhereTheServicesAutoModePutsThem) {
  ResetKernel();
  std::vector<int16_t> x = Values(1), y = Values(300), out(TileT::Numel);
  Global gx(x.data()), gy(y.data()), gout(out.data());
  KernelRecording recording;
  std::string refusal = RefusalOf([&] {
    TileT a, b, c, tmp, d;
    TLOAD(a, gx);
    TLOAD(b, gy);
    TXOR(c, a, b, tmp);  // on a2a3, through tmp, placed after c
    TAND(d, c, a);
    TSTORE(gout, a);
    TSTORE(gout, b);
    TSTORE(gout, c);
    if constexpr (Rules::kTxorUsesTmp) TSTORE(gout, tmp);
    TSTORE(gout, d);
    std::vector<std::optional<uint64_t>> api;
    for (const TileT* t : {&a, &b, &c, &tmp, &d}) {
      if (t == &tmp && !Rules::kTxorUsesTmp) continue;
      EXPECT_EQ(t->IsPlaced(), kPlaces) << t->GetName();
      if (!t->IsPlaced()) {
        api.push_back(std::nullopt);
        continue;
      }
      api.push_back(t->GetAddress());
      // Its elements are the buffer's bytes there.
      EXPECT_EQ(
          reinterpret_cast<const uint8_t*>(t->data()),
          ptoserve::builtin::UnifiedBuffer(ThisTarget()) + t->GetAddress());
    }
    if (kPlaces) {
      // 256-byte tiles, none dead before the end: one after another.
      const std::vector<std::optional<uint64_t>> expected =
          Rules::kTxorUsesTmp
              ? std::vector<std::optional<uint64_t>>{0, 256, 512, 768, 1024}
              : std::vector<std::optional<uint64_t>>{0, 256, 512, 768};
      EXPECT_EQ(api, expected);
    }
    std::string error;
    const std::string job = recording.Job(&error);
    ASSERT_FALSE(job.empty()) << error;
    EXPECT_EQ(api, ServiceAddresses(job)) << job;
  });
  EXPECT_EQ(refusal, "");
  // The stored result: (x ^ y) & x.
  for (int i = 0; i < TileT::Numel; ++i) {
    EXPECT_EQ(out[i], static_cast<int16_t>((x[i] ^ y[i]) & x[i])) << i;
  }
}

TEST(PlacementTest, ATilesBytesAreGivenBackWhenItGoes) {
  ResetKernel();
  std::vector<int16_t> x = Values(7);
  Global gx(x.data());
  TileT kept;
  TLOAD(kept, gx);
  uint64_t gone_at = 0;
  {
    TileT gone;
    TLOAD(gone, gx);
    gone_at = gone.GetAddress();
  }
  TileT next;
  TLOAD(next, gx);
  if (!kPlaces) {
    EXPECT_FALSE(next.IsPlaced());
    return;
  }
  EXPECT_EQ(kept.GetAddress(), 0u);
  EXPECT_EQ(gone_at, 256u);
  EXPECT_EQ(next.GetAddress(), gone_at);  // the bytes `gone` gave back
  EXPECT_EQ(next(7, 15), x.back());
}

TEST(PlacementTest, ATileCarriesWhatItHeldToItsPlace) {
  ResetKernel();
  TileT a, b, c;
  a(0, 0) = 6;
  b(0, 0) = 3;
  TAND(c, a, b);
  EXPECT_EQ(c(0, 0), 2);
  EXPECT_EQ(a(0, 0), 6);
  EXPECT_EQ(a.IsPlaced(), kPlaces);
}

TEST(PlacementTest, BindingOntoAPlacedTilesBytesIsRefused) {
  ResetKernel();
  std::vector<int16_t> x = Values(1);
  Global gx(x.data());
  TileT placed;
  placed.SetName("placed");
  TLOAD(placed, gx);
  TileT bound;
  bound.SetName("bound");
  const std::string refusal = RefusalOf([&] { TASSIGN(bound, 0x40); });
  if (!kPlaces) {
    EXPECT_EQ(refusal, "");
    return;
  }
  EXPECT_EQ(refusal,
            "tile \"bound\": 8x16 int16 at [0x40, 0x140) overlaps tile "
            "\"placed\" at [0x0, 0x100), which is not bound and was placed "
            "there when the kernel first used it; bind tiles before using an "
            "unbound tile, or leave them all unbound");
  // Clear of it, or once it has gone, the address is the tile's.
  EXPECT_EQ(RefusalOf([&] { TASSIGN(bound, 0x100); }), "");
  // A placed tile bound later gives its place back.
  EXPECT_EQ(RefusalOf([&] { TASSIGN(placed, 0x400); }), "");
  EXPECT_EQ(RefusalOf([&] { TASSIGN(bound, 0x0); }), "");
}

TEST(PlacementTest, ResetKernelGivesEveryPlaceBack) {
  ResetKernel();
  std::vector<int16_t> x = Values(1);
  Global gx(x.data());
  TileT a, b;
  TLOAD(a, gx);
  ResetKernel();
  TLOAD(b, gx);
  if (!kPlaces) return;
  EXPECT_EQ(b.GetAddress(), 0u);
  // `a` is placed again at its next use, clear of `b`, after the dst.
  TileT c;
  TAND(c, a, b);
  EXPECT_EQ(c.GetAddress(), 256u);
  EXPECT_EQ(a.GetAddress(), 512u);
}

TEST(PlacementTest, ATileMayOutliveItsThreadsBuffer) {
  // A thread's tile made before the thread first used the API is
  // destroyed after the thread's buffers and holds (thread_locals go in
  // the reverse order they were made), so its destructor has nothing left
  // to give back; ASan sees a use after free if it tries.
  bool placed = false;
  std::thread([&placed] {
    thread_local std::optional<TileT> kept;
    kept.emplace();  // the thread's first use of the API
    std::vector<int16_t> x = Values(1);
    Global gx(x.data());
    TLOAD(*kept, gx);
    placed = kept->IsPlaced();
  }).join();
  EXPECT_EQ(placed, kPlaces);
}

// 64 KiB tiles: the target's buffer holds three (a2a3) or four (a5).
using BigTile = Tile<TileType::Vec, int32_t, NUM_128, NUM_128>;

TEST(PlacementTest, ATileThatDoesNotFitIsRefusedAsTheServiceRefusesIt) {
  ResetKernel();
  const uint64_t buffer = ptoserve::builtin::UnifiedBufferBytes(ThisTarget());
  const int fit = static_cast<int>(buffer / (sizeof(int32_t) * BigTile::Numel));
  std::vector<int32_t> values(BigTile::Numel, 5);
  GlobalTensor<int32_t, Shape<1, 1, 1, NUM_128, NUM_128>,
               Stride<1, 1, 1, NUM_128, 1>>
      g(values.data());
  std::vector<BigTile> tiles(fit + 1);
  const std::string refusal = RefusalOf([&] {
    for (BigTile& t : tiles) TLOAD(t, g);
    TAND(tiles[0], tiles[1], tiles[2]);
  });
  if (!kPlaces) {
    EXPECT_EQ(refusal, "");
    return;
  }
  // The same tiles, loaded, in a job: the service's refusal.
  const std::string bytes(reinterpret_cast<const char*>(values.data()),
                          values.size() * sizeof(int32_t));
  ptoserve::JobSpec job;
  job.target = ThisTarget();
  for (const BigTile& t : tiles) {
    ptoserve::TileInput in;
    in.name = t.GetName();
    in.desc.dtype = ptoserve::DType::kInt32;
    in.desc.rows = in.desc.cols = in.desc.valid_rows = in.desc.valid_cols = 128;
    in.encoding = ptoserve::Encoding::kData;
    in.data = bytes;
    job.tiles.push_back(in);
  }
  ptoserve::Instruction tand;
  tand.opcode = ptoserve::Opcode::kTand;
  tand.dst = tiles[0].GetName();
  tand.src0 = tiles[1].GetName();
  tand.src1 = tiles[2].GetName();
  job.instructions.push_back(tand);
  const absl::StatusOr<ptoserve::JobOutcome> service =
      ptoserve::Engine(ptoserve::EngineOptions{}).Execute(job);
  ASSERT_FALSE(service.ok());
  EXPECT_EQ(refusal, service.status().message());
  EXPECT_THAT(refusal,
              HasSubstr("does not fit in the " + std::string(Rules::kName) +
                        " unified buffer of " + std::to_string(buffer) +
                        " bytes before the first instruction"));
}

}  // namespace
