// The unified buffer as memory: manual-mode tiles at overlapping addresses
// share bytes; auto mode places tiles, reuses dead tiles' bytes and refuses
// programs whose live tiles cannot fit. Results are checked against a
// byte-array model of the buffer written here, independent of the engine.
#include "core/unified_buffer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_util.h"

namespace ptoserve {
namespace {

using test::Desc;
using test::JobBuilder;
using test::Matrix;
using test::OutputMatrix;
using test::PlacedDesc;
using test::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

// The example a real unified buffer answers with 2: c = a & b written over
// a, then d = a ^ b reads the new a.
TEST(AliasingTest, TileAtTheSameAddressSharesItsBytes) {
  for (Target target : test::kAllTargets) {
    SCOPED_TRACE(TargetName(target));
    const Engine engine{EngineOptions{}};
    JobBuilder job(target, Mode::kManual);
    job.AddData("a", PlacedDesc(DType::kInt32, 16, 16, 0x0),
                Matrix<int32_t>(16, 16, 5).ToData());
    job.AddData("b", PlacedDesc(DType::kInt32, 16, 16, 0x400),
                Matrix<int32_t>(16, 16, 3).ToData());
    job.AddTile("c", PlacedDesc(DType::kInt32, 16, 16, 0x0));  // a's bytes
    job.AddTile("d", PlacedDesc(DType::kInt32, 16, 16, 0x800));
    job.Tand("c", "a", "b");
    job.Txor("d", "a", "b", target == Target::kA2A3 ? "t" : "");
    job.spec().outputs = {"a", "c", "d"};
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<PreparedJob> prepared,
                         engine.Prepare(job.spec()));
    // d reads a, which instruction 0 wrote through c.
    EXPECT_THAT(prepared->predecessors(1), ElementsAre(0));

    ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine.Execute(job.spec()));
    EXPECT_TRUE(test::SameElements(Matrix<int32_t>(16, 16, 1),
                                   OutputMatrix<int32_t>(outcome, "a")));
    EXPECT_TRUE(test::SameElements(Matrix<int32_t>(16, 16, 1),
                                   OutputMatrix<int32_t>(outcome, "c")));
    EXPECT_TRUE(test::SameElements(Matrix<int32_t>(16, 16, 2),
                                   OutputMatrix<int32_t>(outcome, "d")));
    EXPECT_EQ(outcome.outputs[1].tile.desc().address, 0x0u);
    ASSERT_GE(outcome.events[0].operands.size(), 3u);
    const OperandPlacement& dst = outcome.events[0].operands[0];
    EXPECT_EQ(dst.role, "dst");
    EXPECT_EQ(dst.tile, "c");
    EXPECT_EQ(dst.begin, 0x0u);
    EXPECT_EQ(dst.end, 0x400u);
  }
}

TEST(AliasingTest, HostInAutoModeHasNoBuffer) {
  const Engine engine{EngineOptions{}};
  JobBuilder job(Target::kHost);
  job.AddMatrix("a", Matrix<int32_t>(16, 16, 5));
  job.AddMatrix("b", Matrix<int32_t>(16, 16, 3));
  job.Tand("c", "a", "b");
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine.Execute(job.spec()));
  EXPECT_FALSE(outcome.outputs[0].tile.desc().address.has_value());
  EXPECT_TRUE(outcome.events[0].operands.empty());
}

// A byte-array model of the buffer: row-major tiles of `element`-byte
// elements, each instruction reading all its sources over dst's valid
// region before writing it (what a vector unit does). AND and XOR act on
// each byte alone, so the model works byte by byte for every element type.
struct ModelTile {
  uint64_t address;
  uint32_t rows, cols, valid_rows, valid_cols;
  size_t element;

  size_t At(uint32_t r, uint32_t c, size_t byte) const {
    return address + (size_t{r} * cols + c) * element + byte;
  }
  size_t bytes() const { return size_t{rows} * cols * element; }
};

void ModelRun(std::vector<uint8_t>* ub, BitwiseOp op, const ModelTile& dst,
              const ModelTile& a, const ModelTile& b) {
  std::vector<uint8_t> out;
  for (uint32_t r = 0; r < dst.valid_rows; ++r) {
    for (uint32_t c = 0; c < dst.valid_cols; ++c) {
      for (size_t k = 0; k < dst.element; ++k) {
        out.push_back(
            test::ScalarOp(op, (*ub)[a.At(r, c, k)], (*ub)[b.At(r, c, k)]));
      }
    }
  }
  size_t n = 0;
  for (uint32_t r = 0; r < dst.valid_rows; ++r) {
    for (uint32_t c = 0; c < dst.valid_cols; ++c) {
      for (size_t k = 0; k < dst.element; ++k) {
        (*ub)[dst.At(r, c, k)] = out[n++];
      }
    }
  }
}

// Random programs over tiles bound to overlapping addresses (same, shifted
// by a few rows, or by 32 bytes; same or different row pitch), of every
// element type, on every target (TAND only on a2a3, whose TXOR forbids
// overlap), run in a random order that keeps the engine's dependencies:
// every tile's final bytes match the model.
TEST(AliasingTest, RandomOverlappingProgramsMatchTheByteModel) {
  std::mt19937 rng(13);
  const Engine engine{EngineOptions{}};
  constexpr DType kTypes[] = {DType::kInt8,   DType::kUInt8, DType::kInt16,
                              DType::kUInt16, DType::kInt32, DType::kUInt32};
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    const Target target = test::kAllTargets[round % 3];
    const DType dtype = kTypes[rng() % 6];
    const size_t element = ElementBytes(dtype);
    JobBuilder job(target, Mode::kManual);
    std::vector<ModelTile> tiles;
    std::vector<std::string> names;
    std::vector<uint8_t> ub(4096, 0);
    // Two loaded tiles, apart; six more anywhere in the first 2 KiB.
    for (int i = 0; i < 8; ++i) {
      // 32- or 64-byte rows, as a2a3 and a5 need.
      const uint32_t cols =
          static_cast<uint32_t>(32 / element) * (1 + rng() % 2);
      ModelTile t{0,      8, cols, 8, static_cast<uint32_t>(cols - rng() % 3),
                  element};
      t.address = i < 2 ? i * 0x800 : 32 * (rng() % 64);
      const std::string name = absl::StrCat("t", i);
      TileDesc desc = PlacedDesc(dtype, t.rows, t.cols, t.address);
      desc.valid_cols = t.valid_cols;
      if (i < 2) {
        std::string data(t.bytes(), '\0');
        for (char& c : data) c = static_cast<char>(rng());
        std::memcpy(&ub[t.address], data.data(), data.size());
        job.AddData(name, desc, data);
      } else {
        job.AddTile(name, desc);
      }
      tiles.push_back(t);
      names.push_back(name);
    }
    for (int i = 0; i < 12; ++i) {
      // Operands share a valid shape: pick sources with the dst's.
      const size_t d = 2 + rng() % 6;
      std::vector<size_t> like;
      for (size_t s = 0; s < tiles.size(); ++s) {
        if (tiles[s].valid_cols == tiles[d].valid_cols) like.push_back(s);
      }
      const size_t a = like[rng() % like.size()];
      const size_t b = like[rng() % like.size()];
      const BitwiseOp op = target != Target::kA2A3 && rng() % 2
                               ? BitwiseOp::kXor
                               : BitwiseOp::kAnd;
      job.Add(op == BitwiseOp::kAnd ? Opcode::kTand : Opcode::kTxor, names[d],
              names[a], names[b]);
      ModelRun(&ub, op, tiles[d], tiles[a], tiles[b]);
    }
    job.spec().outputs = names;

    ASSERT_OK_AND_ASSIGN(std::unique_ptr<PreparedJob> prepared,
                         engine.Prepare(job.spec()));
    // Run ready instructions in a random order.
    const size_t n = prepared->num_instructions();
    std::vector<bool> ran(n, false);
    for (size_t done = 0; done < n; ++done) {
      std::vector<uint32_t> ready;
      for (uint32_t i = 0; i < n; ++i) {
        if (ran[i]) continue;
        const auto& preds = prepared->predecessors(i);
        if (std::all_of(preds.begin(), preds.end(),
                        [&](uint32_t p) { return ran[p]; })) {
          ready.push_back(i);
        }
      }
      ASSERT_FALSE(ready.empty());
      const uint32_t pick = ready[rng() % ready.size()];
      const WorkItem item{prepared.get(), pick};
      engine.RunBatch(absl::MakeConstSpan(&item, 1));
      ran[pick] = true;
    }
    const JobOutcome outcome = engine.Finish(prepared.get());
    for (size_t s = 0; s < tiles.size(); ++s) {
      SCOPED_TRACE(names[s]);
      const OutputTile* out = test::FindOutput(outcome, names[s]);
      ASSERT_NE(out, nullptr);
      const std::string got(reinterpret_cast<const char*>(out->tile.data()),
                            out->tile.size_bytes());
      const std::string want(
          reinterpret_cast<const char*>(&ub[tiles[s].address]),
          tiles[s].bytes());
      EXPECT_EQ(got, want);
    }
  }
}

// A dst shifted by 32 bytes over its source: every source element is read
// before any is written, so the result is the source's, shifted.
TEST(AliasingTest, ShiftedDstReadsTheWholeSourceFirst) {
  const Engine engine{EngineOptions{}};
  std::mt19937 rng(3);
  const Matrix<int32_t> a = test::RandomMatrix<int32_t>(16, 16, &rng);
  JobBuilder job(Target::kA5, Mode::kManual);
  job.AddData("a", PlacedDesc(DType::kInt32, 16, 16, 0x0), a.ToData());
  job.AddTile("c", PlacedDesc(DType::kInt32, 16, 16, 0x20));
  job.Tand("c", "a", "a");
  job.spec().outputs = {"c"};
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine.Execute(job.spec()));
  EXPECT_TRUE(test::SameElements(a, OutputMatrix<int32_t>(outcome, "c")));
}

// Two tiles that both arrive with elements cannot share bytes.
TEST(AliasingTest, OverlappingLoadedTilesAreRefused) {
  const Engine engine{EngineOptions{}};
  JobBuilder job(Target::kA5, Mode::kManual);
  job.AddData("a", PlacedDesc(DType::kInt32, 16, 16, 0x0),
              Matrix<int32_t>(16, 16, 1).ToData());
  job.AddFill("b", PlacedDesc(DType::kInt32, 16, 16, 0x200), 2);
  job.Tand("a", "a", "b");
  EXPECT_THAT(engine.Prepare(job.spec()).status(),
              StatusIs(kInvalid,
                       "tiles \"a\" [0x0, 0x400) and \"b\" [0x200, 0x600) both "
                       "carry elements and overlap in the unified buffer; "
                       "which would hold the shared bytes is not defined: give "
                       "one of them no data (it then reads the other's "
                       "bytes)"));
}

TEST(AutoPlacementTest, AddressesAreForManualModeOnly) {
  const Engine engine{EngineOptions{}};
  JobBuilder job(Target::kA5);
  job.AddTile("a", PlacedDesc(DType::kInt32, 16, 16, 0x1000));
  job.Tand("a", "a", "a");
  EXPECT_THAT(engine.Prepare(job.spec()).status(),
              StatusIs(kInvalid, HasSubstr("tile \"a\": address 0x1000 is set "
                                           "in auto mode")));
}

// The cases: three 256x512 int16 tiles (768 KiB) on a2a3's 192 KiB,
// four 256x256 int32 tiles on a2a3.
TEST(AutoPlacementTest, ProgramsThatCannotFitAreRefused) {
  const Engine engine{EngineOptions{}};
  JobBuilder tand(Target::kA2A3);
  tand.AddFill("a", Desc(DType::kInt16, 256, 512), 1);
  tand.AddFill("b", Desc(DType::kInt16, 256, 512), 1);
  tand.Tand("c", "a", "b");
  EXPECT_THAT(
      engine.Prepare(tand.spec()).status(),
      StatusIs(
          kInvalid,
          "tile \"a\" (256x512 int16, 262144 bytes) does not fit in the "
          "a2a3 unified buffer of 196608 bytes before the first "
          "instruction: the 2 tiles live then need 524288 bytes (\"a\" 262144 "
          "bytes, \"b\" 262144 bytes)"));

  JobBuilder txor(Target::kA2A3);
  for (const char* name : {"a", "b"}) {
    txor.AddFill(name, Desc(DType::kInt32, 128, 128), 1);  // 64 KiB each
  }
  txor.Txor("c", "a", "b", "t");
  EXPECT_THAT(engine.Prepare(txor.spec()).status(),
              StatusIs(kInvalid,
                       HasSubstr("tile \"t\" (128x128 int32, 65536 bytes) does "
                                 "not fit in the a2a3 unified buffer of 196608 "
                                 "bytes at instruction 0: the 4 tiles live "
                                 "then need 262144 bytes")));
  // The same on a5 (256 KiB), where tmp is unused: three tiles fit.
  JobBuilder a5(Target::kA5);
  for (const char* name : {"a", "b"}) {
    a5.AddFill(name, Desc(DType::kInt32, 128, 128), 1);
  }
  a5.Txor("c", "a", "b", "t");
  EXPECT_TRUE(engine.Prepare(a5.spec()).ok());

  // The host has no buffer to model in auto mode: 4 MiB tiles run.
  JobBuilder host(Target::kHost);
  host.AddFill("a", Desc(DType::kInt32, 1024, 1024), 6);
  host.AddFill("b", Desc(DType::kInt32, 1024, 1024), 3);
  host.Tand("c", "a", "b");
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine.Execute(host.spec()));
  EXPECT_TRUE(test::SameElements(Matrix<int32_t>(1024, 1024, 2),
                                 OutputMatrix<int32_t>(outcome, "c")));
}

// A chain of eight 64 KiB tiles (512 KiB) runs in a5's 256 KiB because
// each intermediate's bytes are reused once it is dead; the padding of a
// tile placed over a dead one reads zero, as a fresh tile's does.
TEST(AutoPlacementTest, DeadTilesBytesAreReused) {
  const Engine engine{EngineOptions{}};
  std::mt19937 rng(5);
  const Matrix<int32_t> a = test::RandomMatrix<int32_t>(128, 128, &rng);
  const Matrix<int32_t> b = test::RandomMatrix<int32_t>(128, 128, &rng);
  auto build = [&](Target target, JobBuilder& job) {
    job.AddMatrix("a", a, 128, 120);
    job.AddMatrix("b", b, 128, 120);
    job.Tand("t1", "a", "b");
    job.Txor("t2", "t1", "b", "");
    job.Tand("t3", "t2", "t1");
    job.Txor("t4", "t3", "t2", "");
    job.Tand("t5", "t4", "t3");
    job.Txor("t6", "t5", "t4", "");
    job.spec().outputs = {"t6"};
  };
  JobBuilder host(Target::kHost);
  build(Target::kHost, host);
  ASSERT_OK_AND_ASSIGN(JobOutcome want, engine.Execute(host.spec()));

  JobBuilder a5(Target::kA5);
  build(Target::kA5, a5);
  ASSERT_OK_AND_ASSIGN(JobOutcome got, engine.Execute(a5.spec()));
  EXPECT_TRUE(test::SameElements(OutputMatrix<int32_t>(want, "t6"),
                                 OutputMatrix<int32_t>(got, "t6")));
  std::vector<uint64_t> addresses;
  for (const Event& e : got.events) addresses.push_back(e.operands[0].begin);
  // a and b at 0x0 and 0x10000; t1 after them. Then each new tile takes
  // the lowest place no live tile holds: t2 a's (a is dead after t1), t3
  // b's, t4 t1's, and so on: three places for eight tiles.
  EXPECT_THAT(addresses,
              ElementsAre(0x20000u, 0x0u, 0x10000u, 0x20000u, 0x0u, 0x10000u));
}

// Reusing a dead tile's bytes orders the new tile's writer after the dead
// tile's readers.
TEST(AutoPlacementTest, ReuseIsAHazard) {
  const Engine engine{EngineOptions{}};
  JobBuilder job(Target::kA2A3);
  for (const char* name : {"a", "b"})
    job.AddTile(name, Desc(DType::kInt32, 16, 16));
  job.Txor("d0", "a", "b", "t");  // 0
  job.Txor("d1", "a", "b", "t");  // 1: b's last reader
  job.Tand("e", "t", "a");        // 2: e takes b's bytes
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PreparedJob> prepared,
                       engine.Prepare(job.spec()));
  EXPECT_THAT(prepared->predecessors(2), ElementsAre(0, 1));
  EXPECT_EQ(prepared->event(2).operands[0].begin,
            prepared->event(0).operands[2].begin);
}

// Tiles with an address keep it; the rest go around them (the seeds call
// binding optional).
TEST(MixedPlacementTest, UnboundTilesArePlacedAroundBoundOnes) {
  const Engine engine{EngineOptions{}};
  JobBuilder job(Target::kA2A3, Mode::kManual);
  job.AddData("a", PlacedDesc(DType::kInt32, 16, 16, 0x0),
              Matrix<int32_t>(16, 16, 6).ToData());
  job.AddData("b", Desc(DType::kInt32, 16, 16),
              Matrix<int32_t>(16, 16, 3).ToData());
  job.Txor("d", "a", "b", "t");
  job.spec().outputs = {"d", "b", "t"};
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine.Execute(job.spec()));
  EXPECT_TRUE(test::SameElements(Matrix<int32_t>(16, 16, 5),
                                 OutputMatrix<int32_t>(outcome, "d")));
  // b after a, d and t after b.
  EXPECT_EQ(outcome.outputs[1].tile.desc().address, 0x400u);
  EXPECT_EQ(outcome.outputs[0].tile.desc().address, 0x800u);
  EXPECT_EQ(outcome.outputs[2].tile.desc().address, 0xC00u);
}

// docs/SEMANTICS.md: a tile without an address "is placed around the bound
// ones". A bound tile b (2x8 int32, valid 1x8, no elements) at 0x0 is first
// written by instruction 1, so the engine placed the unbound input a, dead
// after instruction 0, over b's bytes: b came back with a's elements (7) in the
// row outside its valid region, bytes that neither the client nor any tile
// it bound ever wrote (the same job with b's address changed, or on the
// host in auto mode, returns zeros there). Bound tiles are never cleared
// when reused, unlike placed ones.
TEST(MixedPlacementTest, UnboundInputsDoNotLeakIntoABoundTilesBytes) {
  const Engine engine{EngineOptions{}};
  JobBuilder job(Target::kA5, Mode::kManual);
  job.AddFill("a", Desc(DType::kInt32, 2, 8, 1, 8), 7);
  job.AddFill("c", Desc(DType::kInt32, 2, 8, 1, 8), 1);
  TileDesc b = PlacedDesc(DType::kInt32, 2, 8, 0x0);
  b.valid_rows = 1;
  job.AddTile("b", b);
  job.Tand("x", "a", "a");
  job.Tand("b", "c", "c");
  job.spec().outputs = {"b"};
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine.Execute(job.spec()));
  const OutputTile* out = test::FindOutput(outcome, "b");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(out->tile.size_bytes(), 64u);
  std::vector<int32_t> got(16);
  std::memcpy(got.data(), out->tile.data(), 64);
  // Row 0: c & c = 1; row 1, outside b's valid region: never written.
  EXPECT_THAT(got, ElementsAre(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0));
}

// TAND has no tmp: a job naming one is refused, as the assembler refuses
// `tand` with three inputs.
TEST(TmpTest, TandWithATmpIsRefused) {
  const Engine engine{EngineOptions{}};
  for (Target target : test::kAllTargets) {
    JobBuilder job(target);
    job.AddTile("a", Desc(DType::kInt32, 16, 16));
    job.Add(Opcode::kTand, "d", "a", "a", "t");
    EXPECT_THAT(
        engine.Prepare(job.spec()).status(),
        StatusIs(kInvalid,
                 absl::StrCat("instruction 0 (TAND on ", TargetName(target),
                              "): tmp \"t\" is set; TAND takes no tmp "
                              "(dst, src0, src1 only)")));
  }
}

// A range is printed as [begin, end): where address + size passes 2^64 the
// end printed wrapped around ("[0xffffffffffffffe0, 0x0)",
// "[0xfffffffffffff000, 0x3ff000)"), naming a range that ends before it begins.
// Every range a refusal prints must end after it begins.
TEST(PlacementErrorTest, RangesPastTwoToTheSixtyFourDoNotWrap) {
  struct Case {
    uint32_t rows, cols;
    uint64_t address;
  };
  for (const Case& c :
       {Case{1, 8, 0xffffffffffffffe0}, Case{1024, 1024, 0xfffffffffffff000}}) {
    const TileDesc desc = PlacedDesc(DType::kInt32, c.rows, c.cols, c.address);
    const absl::Status status =
        CheckPlacement("a", desc, Target::kA5, 256 * 1024);
    ASSERT_EQ(status.code(), kInvalid);
    const std::string message(status.message());
    SCOPED_TRACE(message);
    EXPECT_THAT(message, HasSubstr(absl::StrFormat("0x%x", c.address)));
    // Each "[0xB, 0xE)" in the message: E > B.
    size_t at = 0;
    int ranges = 0;
    while ((at = message.find("[0x", at)) != std::string::npos) {
      char* rest = nullptr;
      const uint64_t begin = std::strtoull(&message[at + 1], &rest, 16);
      const size_t comma = message.find(", 0x", at);
      ASSERT_NE(comma, std::string::npos);
      const uint64_t end = std::strtoull(&message[comma + 2], &rest, 16);
      EXPECT_GT(end, begin) << "range at offset " << at << " wraps";
      ++ranges;
      at = comma;
    }
    EXPECT_GT(ranges, 0);
  }
}

}  // namespace
}  // namespace ptoserve
