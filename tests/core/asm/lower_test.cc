// Lowering programs onto requests and running them: the seeds' programs on
// every target against the scalar reference, spelled-out types against
// bound tiles, new tiles, tmp and scratch tiles, manual mode, and errors
// that point at the line.
#include "core/asm/lower.h"

#include <chrono>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "core/asm/parser.h"
#include "core/asm/printer.h"
#include "core/engine.h"
#include "core/error_site.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/asm/seed_programs.h"
#include "tests/core/test_util.h"

namespace ptoserve {
namespace pasm {
namespace {

using test::Desc;
using test::DTypeOf;
using test::JobBuilder;
using test::kAllTargets;
using test::Matrix;
using test::OpOf;
using test::OutputMatrix;
using test::PlacedDesc;
using test::RandomMatrix;
using test::Reference;
using test::SameElements;
using test::SeedProgram;
using test::StatusIs;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

// The seeds' manual-mode example with its optional bindings switched on and
// pointed at the operands it uses.
std::string BoundManualExample(const char* text) {
  return absl::StrReplaceAll(text,
                             {{"# pto.tassign %arg0, @tile(0x1000)\n",
                               "pto.tassign %src0, @tile(0x1000)\n"},
                              {"# pto.tassign %arg1, @tile(0x2000)\n",
                               "pto.tassign %src1, @tile(0x2000)\npto.tassign "
                               "%dst, @tile(0x3000)\n"}});
}

size_t CountOperations(const Program& program) {
  size_t n = 0;
  for (const Statement& s : program.statements) {
    n += std::holds_alternative<Operation>(s.node);
  }
  return n;
}

class LowerTest : public ::testing::Test {
 protected:
  // Parses `text`, lowers it onto `job`'s tiles and runs it; engine errors
  // come back located.
  absl::StatusOr<JobOutcome> Run(absl::string_view text, JobBuilder& job) {
    PTO_ASSIGN_OR_RETURN(Program program, Parse(text));
    PTO_ASSIGN_OR_RETURN(JobSpec lowered, Lower(program, job.spec(), engine_));
    absl::StatusOr<JobOutcome> outcome = engine_.Execute(lowered);
    if (!outcome.ok()) return Locate(program, outcome.status());
    return outcome;
  }

  absl::Status RunStatus(absl::string_view text, JobBuilder& job) {
    return Run(text, job).status();
  }

  // A job on `target` with 16x16 int16 tiles src0 and src1 (32-byte rows,
  // as a2a3 and a5 need), placed at 0x1000 and 0x2000 in manual mode.
  static void AddSources(JobBuilder& job, const Matrix<int16_t>& a,
                         const Matrix<int16_t>& b) {
    job.AddMatrix("src0", a);
    job.AddMatrix("src1", b);
  }

  std::mt19937 rng_{42};
  Engine engine_{EngineOptions{}};
};

// Each seed program on each target and element type, over a partial valid
// region: dst is the scalar reference inside it and zero outside.
TEST_F(LowerTest, SeedProgramsRunOnEveryTarget) {
  test::ForEachBitwiseType([&](auto t) {
    using T = decltype(t);
    const uint32_t cols = 64 / sizeof(T);  // 64-byte rows
    for (Target target : kAllTargets) {
      for (const SeedProgram& seed : test::kSeedPrograms) {
        SCOPED_TRACE(absl::StrCat(seed.name, " on ", TargetName(target), ", ",
                                  DTypeName(DTypeOf<T>())));
        const Matrix<T> a = RandomMatrix<T>(4, cols, &rng_);
        const Matrix<T> b = RandomMatrix<T>(4, cols, &rng_);
        JobBuilder job(target);
        job.AddMatrix("src0", a, 3, cols - 1);
        job.AddMatrix("src1", b, 3, cols - 1);
        ASSERT_OK_AND_ASSIGN(JobOutcome outcome, Run(seed.text, job));
        EXPECT_TRUE(SameElements(
            Reference(OpOf(seed.opcode), a, b, Matrix<T>(4, cols), 3, cols - 1),
            OutputMatrix<T>(outcome, "dst")));
        ASSERT_OK_AND_ASSIGN(Program program, Parse(seed.text));
        ASSERT_EQ(outcome.events.size(), CountOperations(program));
        for (size_t i = 0; i < outcome.events.size(); ++i) {
          const Event& event = outcome.events[i];
          EXPECT_EQ(event.id, absl::StrCat("e", i));
          EXPECT_EQ(event.opcode, seed.opcode);
          EXPECT_THAT(event.waited_on, IsEmpty());
          const bool scratch =
              seed.opcode == Opcode::kTxor && target == Target::kA2A3;
          EXPECT_EQ(event.trace.ops.size(), scratch ? 4u : 1u);
          const auto scratch_note =
              Contains(HasSubstr("allocated by the server"));
          if (scratch) {
            EXPECT_THAT(event.trace.notes, scratch_note);
          } else {
            EXPECT_THAT(event.trace.notes, Not(scratch_note));
          }
        }
      }
    }
  });
}

TEST_F(LowerTest, A2A3ScratchTmpIsNamedAndNoted) {
  JobBuilder job(Target::kA2A3);
  AddSources(job, RandomMatrix<int16_t>(16, 16, &rng_),
             RandomMatrix<int16_t>(16, 16, &rng_));
  job.AddTile("dst.tmp", Desc(DType::kInt16, 16, 16));  // the name is taken
  ASSERT_OK_AND_ASSIGN(Program program,
                       Parse("%dst = txor %src0, %src1 : !pto.tile<...>\n"
                             "pto.txor ins(%src0, %dst : !pto.tile<...>, "
                             "!pto.tile<...>) outs(%dst : !pto.tile<...>)\n"));
  ASSERT_OK_AND_ASSIGN(JobSpec lowered, Lower(program, job.spec(), engine_));
  ASSERT_EQ(lowered.instructions.size(), 2u);
  EXPECT_EQ(lowered.instructions[0].tmp, "dst.tmp2");
  EXPECT_EQ(lowered.instructions[1].tmp, "dst.tmp3");
  EXPECT_THAT(lowered.instructions[0].notes,
              ElementsAre("tmp \"dst.tmp2\" allocated by the server, shaped "
                          "like dst: the program names no tmp and a2a3 "
                          "computes TXOR through one"));
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine_.Execute(lowered));
  EXPECT_THAT(outcome.events[1].trace.notes,
              Contains(HasSubstr("tmp \"dst.tmp3\" allocated by the server")));
}

// Parsing and lowering take time linear in the program: 100,000 a2a3 TXOR
// lines that each need a scratch tmp for the same dst (naming the n-th
// once rescanned the n-1 before it: 20,000 lines took 15 s). Checked as
// the growth from 10,000 to 100,000 lines, best of three: about 10 when
// linear, 100 when quadratic; and an absolute bound loose enough for
// sanitizer builds.
TEST_F(LowerTest, LongProgramsParseAndLowerInLinearTime) {
  auto seconds = [&](int lines) {
    std::string text;
    for (int i = 0; i < lines; ++i) {
      text +=
          "pto.txor ins(%src0, %src1 : !pto.tile_buf<...>, !pto.tile_buf<...>) "
          "outs(%dst : !pto.tile_buf<...>)\n";
    }
    JobBuilder job(Target::kA2A3);
    job.AddTile("src0", Desc(DType::kInt16, 16, 16));
    job.AddTile("src1", Desc(DType::kInt16, 16, 16));
    job.AddTile("dst", Desc(DType::kInt16, 16, 16));
    double best = 1e9;
    for (int round = 0; round < 3; ++round) {
      const auto start = std::chrono::steady_clock::now();
      absl::StatusOr<Program> program = Parse(text);
      EXPECT_TRUE(program.ok()) << program.status();
      absl::StatusOr<JobSpec> lowered = Lower(*program, job.spec(), engine_);
      EXPECT_TRUE(lowered.ok()) << lowered.status();
      EXPECT_EQ(lowered->instructions.size(), static_cast<size_t>(lines));
      EXPECT_EQ(lowered->instructions.back().tmp,
                absl::StrCat("dst.tmp", lines));
      best = std::min(best, std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - start)
                                .count());
    }
    return best;
  };
  const double small = seconds(10'000), large = seconds(100'000);
  std::cout << "10,000 lines: " << small << " s; 100,000 lines: " << large
            << " s\n";
  EXPECT_LT(large / small, 30) << small << " s, then " << large << " s";
  EXPECT_LT(large, 20.0);
}

// The limits a server parses with: text size, line length and statements,
// each refused with what it is and where; comments left out.
TEST_F(LowerTest, ParseOptionsBoundWhatAProgramMayCost) {
  ParseOptions options;
  options.max_bytes = 100;
  EXPECT_THAT(
      Parse(std::string(101, '#'), options).status(),
      StatusIs(absl::StatusCode::kResourceExhausted,
               HasSubstr("assembly is 101 bytes, over the limit of 100")));
  options = ParseOptions();
  options.max_line_bytes = 40;
  EXPECT_THAT(
      Parse("# fine\n" + std::string(41, ' ') + "\n", options).status(),
      StatusIs(kInvalid,
               HasSubstr("2:1: line is 42 bytes, over the limit of 40")));
  options = ParseOptions();
  options.max_statements = 2;
  options.keep_comments = false;
  const std::string op = "%c = tand %a, %b : !pto.tile<...>  # and\n";
  ASSERT_OK_AND_ASSIGN(Program two, Parse("# a comment\n" + op + op, options));
  ASSERT_EQ(two.statements.size(), 2u);
  EXPECT_EQ(two.statements[0].trailing_comment, "");
  EXPECT_THAT(Parse(op + "# more\n" + op + op, options).status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("4:1: assembly has more than 2 statements")));
}

// The manual-mode example with its bindings on: every target places the
// tiles; a2a3's scratch tmp goes above the highest one.
TEST_F(LowerTest, ManualModeExampleWithBindings) {
  for (Target target : kAllTargets) {
    for (const SeedProgram& seed : test::kSeedPrograms) {
      if (!absl::StrContains(seed.name, "Manual Mode")) continue;
      SCOPED_TRACE(absl::StrCat(seed.name, " on ", TargetName(target)));
      const Matrix<int16_t> a = RandomMatrix<int16_t>(16, 16, &rng_);
      const Matrix<int16_t> b = RandomMatrix<int16_t>(16, 16, &rng_);
      JobBuilder job(target);  // auto mode: the bindings switch to manual
      AddSources(job, a, b);
      const std::string text = BoundManualExample(seed.text);
      ASSERT_OK_AND_ASSIGN(Program program, Parse(text));
      ASSERT_OK_AND_ASSIGN(JobSpec lowered,
                           Lower(program, job.spec(), engine_));
      EXPECT_EQ(lowered.mode, Mode::kManual);
      // The scratch tmp the program does not name is left to the engine.
      for (const TileInput& in : lowered.tiles) {
        EXPECT_EQ(in.desc.address.has_value(), in.name != "dst.tmp") << in.name;
      }
      EXPECT_EQ(lowered.tiles[0].desc.address, 0x1000u);
      EXPECT_EQ(lowered.tiles[1].desc.address, 0x2000u);
      EXPECT_EQ(lowered.tiles[2].desc.address, 0x3000u);

      ASSERT_OK_AND_ASSIGN(JobOutcome outcome, Run(text, job));
      EXPECT_TRUE(SameElements(
          Reference(OpOf(seed.opcode), a, b, Matrix<int16_t>(16, 16), 16, 16),
          OutputMatrix<int16_t>(outcome, "dst")));
      if (seed.opcode == Opcode::kTxor && target == Target::kA2A3) {
        EXPECT_THAT(
            outcome.events[0].trace.notes,
            Contains("tmp \"dst.tmp\" allocated by the server, shaped like "
                     "dst: the program names no tmp and a2a3 computes TXOR "
                     "through one"));
        // Placed at the lowest free address, below the bound tiles.
        ASSERT_EQ(outcome.events[0].operands.size(), 4u);
        EXPECT_EQ(outcome.events[0].operands[3].tile, "dst.tmp");
        EXPECT_EQ(outcome.events[0].operands[3].begin, 0u);
        EXPECT_EQ(outcome.events[0].operands[3].end, 0x200u);
      }
    }
  }
}

// The seeds call binding optional: with only the sources bound (the two
// pto.tassign lines uncommented, as the seed shows them), the server places
// the new dst, and on a2a3 the scratch tmp, around them.
TEST_F(LowerTest, ManualModeExampleWithOnlyTheSourcesBoundRuns) {
  for (Target target : kAllTargets) {
    for (const SeedProgram& seed : test::kSeedPrograms) {
      if (!absl::StrContains(seed.name, "Manual Mode")) continue;
      SCOPED_TRACE(absl::StrCat(seed.name, " on ", TargetName(target)));
      const Matrix<int16_t> a = RandomMatrix<int16_t>(16, 16, &rng_);
      const Matrix<int16_t> b = RandomMatrix<int16_t>(16, 16, &rng_);
      JobBuilder job(target);
      AddSources(job, a, b);
      const std::string text = absl::StrReplaceAll(
          seed.text, {{"# pto.tassign %arg0, @tile(0x1000)\n",
                       "pto.tassign %src0, @tile(0x1000)\n"},
                      {"# pto.tassign %arg1, @tile(0x2000)\n",
                       "pto.tassign %src1, @tile(0x2000)\n"}});
      ASSERT_OK_AND_ASSIGN(JobOutcome outcome, Run(text, job));
      EXPECT_TRUE(SameElements(
          Reference(OpOf(seed.opcode), a, b, Matrix<int16_t>(16, 16), 16, 16),
          OutputMatrix<int16_t>(outcome, "dst")));
      // dst takes the lowest free address: below both sources.
      ASSERT_EQ(outcome.outputs.size(), 1u);
      EXPECT_EQ(outcome.outputs[0].tile.desc().address, 0u);
      const Event& event = outcome.events[0];
      ASSERT_GE(event.operands.size(), 3u);
      EXPECT_EQ(event.operands[1].begin, 0x1000u);
      EXPECT_EQ(event.operands[2].begin, 0x2000u);
    }
  }
}

// A scratch tmp is placed like any unbound tile, and a program whose tiles
// leave it no room is refused at the operation that needs it.
TEST_F(LowerTest, ScratchThatDoesNotFitIsAnError) {
  JobBuilder job(Target::kA2A3);
  // Three 64 KiB tiles fill the 192 KiB buffer.
  AddSources(job, Matrix<int16_t>(128, 256), Matrix<int16_t>(128, 256));
  EXPECT_THAT(
      RunStatus("pto.tassign %src0, @tile(0x20000)\n"
                "pto.tassign %src1, @tile(0)\n"
                "pto.tassign %dst, @tile(0x10000)\n"
                "%dst = txor %src0, %src1 : !pto.tile<...>\n",
                job),
      StatusIs(kInvalid,
               "4:1: tile \"dst.tmp\" (128x256 int16, 65536 bytes) does not "
               "fit in the a2a3 unified buffer of 196608 bytes at instruction "
               "0: the 4 tiles live then need 262144 bytes (\"src0\" 65536 "
               "bytes at [0x20000, 0x30000), \"src1\" 65536 bytes at [0x0, "
               "0x10000), \"dst\" 65536 bytes at [0x10000, 0x20000), "
               "\"dst.tmp\" 65536 bytes)"));
}

TEST_F(LowerTest, SpelledOutTypesThatAgreeRun) {
  const Matrix<uint16_t> a = RandomMatrix<uint16_t>(16, 16, &rng_);
  const Matrix<uint16_t> b = RandomMatrix<uint16_t>(16, 16, &rng_);
  JobBuilder job(Target::kA5);
  job.AddMatrix("a", a, 16, 15);
  job.AddMatrix("b", b, 16, 15);
  ASSERT_OK_AND_ASSIGN(
      JobOutcome outcome,
      Run("%d = pto.txor %a, %b : (!pto.tile_buf<loc=vec, dtype=i16, rows=16, "
          "cols=16, v_row=16, v_col=15, blayout=row_major, slayout=none_box, "
          "fractal=512, pad=0>, !pto.tile<dtype=uint16, v_row=?, v_col=?>) -> "
          "!pto.tile<...>",
          job));
  EXPECT_TRUE(SameElements(
      Reference(BitwiseOp::kXor, a, b, Matrix<uint16_t>(16, 16), 16, 15),
      OutputMatrix<uint16_t>(outcome, "d")));
}

TEST_F(LowerTest, SpelledOutTypeThatDisagreesNamesTheKey) {
  struct Case {
    std::string type;
    std::string message;
  };
  // src0 is 16x16 int32, valid 16x8.
  const std::vector<Case> cases = {
      {"!pto.tile<dtype=i16>",
       "type of %src0 says dtype=i16 but tile \"src0\" is int32"},
      {"!pto.tile<dtype=ui32>",
       "type of %src0 says dtype=ui32 but tile \"src0\" is int32"},
      {"!pto.tile<dtype=f32>",
       "type of %src0 says dtype=f32 but tile \"src0\" is int32"},
      {"!pto.tile<loc=mat>",
       "type of %src0 says loc=mat but tile \"src0\" is in vec"},
      {"!pto.tile<rows=32>",
       "type of %src0 says rows=32 but tile \"src0\" has rows=16"},
      {"!pto.tile<cols=8>",
       "type of %src0 says cols=8 but tile \"src0\" has cols=16"},
      {"!pto.tile<v_row=8>",
       "type of %src0 says v_row=8 but tile \"src0\" has v_row=16"},
      {"!pto.tile<v_row=?, v_col=16>",
       "type of %src0 says v_col=16 but tile \"src0\" has v_col=8"},
      {"!pto.tile<blayout=col_major>",
       "type of %src0 says blayout=col_major but tile \"src0\" is row_major"},
      {"!pto.tile<slayout=row_major>",
       "type of %src0 says slayout=row_major but tile \"src0\" is not boxed "
       "(slayout=none_box)"},
  };
  for (const Case& c : cases) {
    JobBuilder job(Target::kHost);
    job.AddTile("src0", Desc(DType::kInt32, 16, 16, 16, 8));
    job.AddTile("src1", Desc(DType::kInt32, 16, 16, 16, 8));
    EXPECT_THAT(RunStatus("\n%dst = tand %src0, %src1 : " + c.type, job),
                StatusIs(kInvalid, "2:28: " + c.message));
  }
  // Each operand's own type is checked against its own tile.
  JobBuilder job(Target::kHost);
  job.AddTile("src0", Desc(DType::kInt32, 16, 16));
  job.AddTile("src1", Desc(DType::kUInt32, 16, 16));
  job.AddTile("dst", Desc(DType::kInt32, 16, 16));
  EXPECT_THAT(RunStatus("pto.tand ins(%src0, %src1 : !pto.tile<...>, "
                        "!pto.tile<dtype=si32>) outs(%dst : !pto.tile<...>)",
                        job),
              StatusIs(kInvalid,
                       "1:45: type of %src1 says dtype=si32 but tile "
                       "\"src1\" is uint32"));
  EXPECT_THAT(RunStatus("pto.tand ins(%src0, %src0 : !pto.tile<...>, "
                        "!pto.tile<...>) outs(%dst : !pto.tile<rows=8>)",
                        job),
              StatusIs(kInvalid,
                       "1:73: type of %dst says rows=8 but tile "
                       "\"dst\" has rows=16"));
}

// A new tile takes the keys its type gives and the rest from %src0.
TEST_F(LowerTest, NewTileIsShapedByItsType) {
  const Matrix<int16_t> a = RandomMatrix<int16_t>(16, 16, &rng_);
  const Matrix<int16_t> b = RandomMatrix<int16_t>(16, 16, &rng_);
  JobBuilder job(Target::kA2A3);
  AddSources(job, a, b);
  ASSERT_OK_AND_ASSIGN(
      JobOutcome outcome,
      Run("%dst = pto.tand %src0, %src1 : (!pto.tile<...>, !pto.tile<...>) -> "
          "!pto.tile<cols=32, v_col=?, dtype=i16>",
          job));
  const OutputTile* dst = test::FindOutput(outcome, "dst");
  ASSERT_NE(dst, nullptr);
  EXPECT_EQ(dst->tile.desc().ToString(), "16x32 int16 (valid 16x16)");
  EXPECT_TRUE(SameElements(
      Reference(BitwiseOp::kAnd, a, b, Matrix<int16_t>(16, 32), 16, 16),
      OutputMatrix<int16_t>(outcome, "dst")));
}

TEST_F(LowerTest, NewTileTypeErrors) {
  JobBuilder job(Target::kHost);
  AddSources(job, Matrix<int16_t>(16, 16), Matrix<int16_t>(16, 16));
  EXPECT_THAT(RunStatus("%d = tand %src0, %src1 : !pto.tile<rows=8>", job),
              StatusIs(kInvalid,
                       "1:26: type of %src0 says rows=8 but tile "
                       "\"src0\" has rows=16"));
  const std::string ssa =
      "%d = pto.tand %src0, %src1 : (!pto.tile<...>, !pto.tile<...>) -> ";
  EXPECT_THAT(RunStatus(ssa + "!pto.tile<rows=8>", job),
              StatusIs(kInvalid,
                       "1:66: tile \"d\": valid region 16x16 "
                       "exceeds its shape 8x16"));
  EXPECT_THAT(RunStatus(ssa + "!pto.tile<slayout=col_major>", job),
              StatusIs(kInvalid,
                       "1:66: type of %d says slayout=col_major; "
                       "tiles here are never boxed "
                       "(slayout=none_box)"));
  // Agreeing with the type is the lowering's check; the target's rules are
  // the engine's, located at the instruction.
  EXPECT_THAT(RunStatus(ssa + "!pto.tile<dtype=ui16>", job),
              StatusIs(kInvalid,
                       "1:1: instruction 0 (TAND on host): src0 "
                       "element type int16 differs from dst element "
                       "type uint16"));
}

TEST_F(LowerTest, SsaResultMustBeNew) {
  JobBuilder job(Target::kHost);
  AddSources(job, Matrix<int16_t>(16, 16), Matrix<int16_t>(16, 16));
  job.AddTile("dst", Desc(DType::kInt16, 16, 16));
  EXPECT_THAT(RunStatus("%dst = tand %src0, %src1 : !pto.tile<...>", job),
              StatusIs(kInvalid,
                       "1:1: %dst is already defined (by the request); `%dst = "
                       "...` defines a new tile: to write into an existing one "
                       "use `pto.tand ins(...) outs(%dst : ...)`"));
  EXPECT_THAT(
      RunStatus("%x = tand %src0, %src1 : !pto.tile<...>\n"
                "# again\n"
                "%x = pto.txor %x, %src1 : (!pto.tile<...>, "
                "!pto.tile<...>) -> !pto.tile<...>",
                job),
      StatusIs(kInvalid, HasSubstr("3:1: %x is already defined (at 1:1)")));
}

// outs() may name an existing tile: only its valid region is written.
TEST_F(LowerTest, DpsWritesIntoAnExistingTile) {
  const Matrix<int8_t> a = RandomMatrix<int8_t>(2, 32, &rng_);
  const Matrix<int8_t> b = RandomMatrix<int8_t>(2, 32, &rng_);
  const Matrix<int8_t> d(2, 64, test::Sentinel<int8_t>());
  JobBuilder job(Target::kA5);
  job.AddMatrix("a", a, 2, 30);
  job.AddMatrix("b", b, 2, 30);
  job.AddMatrix("d", d, 2, 30);
  ASSERT_OK_AND_ASSIGN(
      JobOutcome outcome,
      Run("pto.tand ins(%a, %b : !pto.tile_buf<...>, !pto.tile_buf<...>) "
          "outs(%d : !pto.tile_buf<dtype=si8, rows=2, cols=64>)",
          job));
  EXPECT_TRUE(SameElements(Reference(BitwiseOp::kAnd, a, b, d, 2, 30),
                           OutputMatrix<int8_t>(outcome, "d")));
}

TEST_F(LowerTest, DpsTmpOnEachTarget) {
  const Matrix<uint32_t> a = RandomMatrix<uint32_t>(8, 8, &rng_);
  const Matrix<uint32_t> b = RandomMatrix<uint32_t>(8, 8, &rng_);
  const std::string text =
      "pto.txor ins(%a, %b, %t : !pto.tile_buf<...>, !pto.tile_buf<...>, "
      "!pto.tile_buf<...>) outs(%d : !pto.tile_buf<...>)";
  for (Target target : kAllTargets) {
    SCOPED_TRACE(TargetName(target));
    JobBuilder job(target);
    job.AddMatrix("a", a);
    job.AddMatrix("b", b);
    if (target == Target::kA2A3) job.spec().outputs = {"d", "t"};
    ASSERT_OK_AND_ASSIGN(JobOutcome outcome, Run(text, job));
    EXPECT_TRUE(SameElements(
        Reference(BitwiseOp::kXor, a, b, Matrix<uint32_t>(8, 8), 8, 8),
        OutputMatrix<uint32_t>(outcome, "d")));
    if (target == Target::kA2A3) {
      // tmp holds OR(a, b), as the service's decomposition leaves it.
      EXPECT_TRUE(SameElements(
          Reference(BitwiseOp::kOr, a, b, Matrix<uint32_t>(8, 8), 8, 8),
          OutputMatrix<uint32_t>(outcome, "t")));
      EXPECT_THAT(outcome.events[0].trace.notes, IsEmpty());
    } else {
      EXPECT_THAT(outcome.events[0].trace.notes,
                  Contains(absl::StrCat("tmp \"t\" is accepted and unused on ",
                                        TargetName(target))));
    }
  }
  // A tmp of the request is checked against its type.
  JobBuilder job(Target::kA2A3);
  job.AddMatrix("a", a);
  job.AddMatrix("b", b);
  job.AddTile("t", Desc(DType::kUInt32, 8, 16));
  EXPECT_THAT(
      RunStatus("pto.txor ins(%a, %b, %t : !pto.tile_buf<...>, "
                "!pto.tile_buf<...>, !pto.tile_buf<cols=8>) outs(%d : "
                "!pto.tile_buf<...>)",
                job),
      StatusIs(kInvalid,
               "1:67: type of %t says cols=8 but tile \"t\" has cols=16"));
}

// Instructions run in program order and each records "e<index>".
TEST_F(LowerTest, ProgramOrderAndEvents) {
  const Matrix<int32_t> a = RandomMatrix<int32_t>(8, 8, &rng_);
  const Matrix<int32_t> b = RandomMatrix<int32_t>(8, 8, &rng_);
  JobBuilder job(Target::kA2A3);
  job.AddMatrix("a", a);
  job.AddMatrix("b", b);
  ASSERT_OK_AND_ASSIGN(
      JobOutcome outcome,
      Run("%x = pto.txor %a, %b : (!pto.tile<...>, !pto.tile<...>) -> "
          "!pto.tile<...>\n"
          "# a comment is no instruction\n"
          "%y = tand %x, %a : !pto.tile<...>\n"
          "pto.txor ins(%y, %b : !pto.tile<...>, !pto.tile<...>) outs(%a : "
          "!pto.tile<...>)\n",
          job));
  const Matrix<int32_t> x =
      Reference(BitwiseOp::kXor, a, b, Matrix<int32_t>(8, 8), 8, 8);
  const Matrix<int32_t> y =
      Reference(BitwiseOp::kAnd, x, a, Matrix<int32_t>(8, 8), 8, 8);
  EXPECT_TRUE(SameElements(x, OutputMatrix<int32_t>(outcome, "x")));
  EXPECT_TRUE(SameElements(y, OutputMatrix<int32_t>(outcome, "y")));
  EXPECT_TRUE(SameElements(
      Reference(BitwiseOp::kXor, y, b, Matrix<int32_t>(8, 8), 8, 8),
      OutputMatrix<int32_t>(outcome, "a")));
  ASSERT_EQ(outcome.events.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(outcome.events[i].id, absl::StrCat("e", i));
    EXPECT_EQ(outcome.events[i].index, i);
  }
}

TEST_F(LowerTest, OperandsMustExist) {
  JobBuilder job(Target::kHost);
  AddSources(job, Matrix<int16_t>(16, 16), Matrix<int16_t>(16, 16));
  EXPECT_THAT(RunStatus("%d = tand %src0, %nope : !pto.tile<...>", job),
              StatusIs(kInvalid,
                       "1:18: %nope is neither a tile of the request "
                       "nor defined by an earlier instruction"));
  EXPECT_THAT(RunStatus("%d = tand %src0, %e : !pto.tile<...>\n"
                        "%e = tand %src0, %src1 : !pto.tile<...>\n",
                        job),
              StatusIs(kInvalid,
                       "1:18: %e is neither a tile of the request "
                       "nor defined by an earlier instruction; the "
                       "program first writes it at 2:1"));
}

TEST_F(LowerTest, BindingErrors) {
  JobBuilder job(Target::kHost);
  AddSources(job, Matrix<int16_t>(16, 16), Matrix<int16_t>(16, 16));
  const std::string op = "%dst = tand %src0, %src1 : !pto.tile<...>\n";
  EXPECT_THAT(RunStatus("pto.tassign %arg0, @tile(0x1000)\n" + op, job),
              StatusIs(kInvalid,
                       "1:13: pto.tassign binds %arg0, which is "
                       "neither a tile of the request nor written "
                       "by the program"));
  EXPECT_THAT(RunStatus("pto.tassign %src0, @tile(0x1000)\n"
                        "pto.tassign %src0, @tile(0x2000)\n" +
                            op,
                        job),
              StatusIs(kInvalid,
                       "2:13: %src0 is already bound to 0x1000 at "
                       "1:13; a tile has one address for the whole "
                       "program"));
  // The engine's placement rules, located at the tile's first mention.
  EXPECT_THAT(RunStatus("pto.tassign %src0, @tile(0x1001)\n"
                        "pto.tassign %src1, @tile(0x2000)\n"
                        "pto.tassign %dst, @tile(0x3000)\n" +
                            op,
                        job),
              StatusIs(kInvalid,
                       "1:13: tile \"src0\": address 0x1001 is not "
                       "32-byte aligned"));
}

TEST_F(LowerTest, EngineErrorsPointAtTheInstruction) {
  JobBuilder job(Target::kA2A3);
  AddSources(job, Matrix<int16_t>(16, 16), Matrix<int16_t>(16, 16));
  job.AddTile("narrow", Desc(DType::kInt16, 16, 8));
  EXPECT_THAT(RunStatus("# first\n"
                        "%d = tand %src0, %src1 : !pto.tile<...>\n"
                        "\n"
                        "  %e = tand %narrow, %narrow : !pto.tile<...>\n",
                        job),
              StatusIs(kInvalid,
                       "4:3: instruction 1 (TAND on a2a3): dst \"e\" rows are "
                       "16 bytes (8 int16 columns); a2a3 needs rows of a "
                       "multiple of 32 bytes"));

  JobBuilder floats(Target::kHost);
  floats.AddTile("a", Desc(DType::kFloat16, 16, 16));
  EXPECT_THAT(RunStatus("%d = tand %a, %a : !pto.tile<dtype=f16>", floats),
              StatusIs(kInvalid, HasSubstr("1:1: instruction 0 (TAND on host): "
                                           "dst element type float16 is not "
                                           "supported")));
}

// TOR and TNOT (host only, beyond the seeds) in each of their forms, printed
// back in the DPS form and run against the scalar reference; a2a3 refuses
// TOR at its line.
TEST_F(LowerTest, TorAndTnotInEveryForm) {
  constexpr char kText[] =
      "%o = tor %src0, %src1 : !pto.tile<...>\n"
      "%n = pto.tnot %src0 : (!pto.tile<...>) -> !pto.tile<...>\n"
      "%m = tnot %o : !pto.tile<...>\n"
      "pto.tnot ins(%m : !pto.tile_buf<...>) outs(%n : !pto.tile_buf<...>)\n";
  ASSERT_OK_AND_ASSIGN(Program program, Parse(kText));
  EXPECT_EQ(
      Print(program),
      "pto.tor ins(%src0, %src1 : !pto.tile<...>, !pto.tile<...>) outs(%o : "
      "!pto.tile<...>)\n"
      "pto.tnot ins(%src0 : !pto.tile<...>) outs(%n : !pto.tile<...>)\n"
      "pto.tnot ins(%o : !pto.tile<...>) outs(%m : !pto.tile<...>)\n"
      "pto.tnot ins(%m : !pto.tile_buf<...>) outs(%n : !pto.tile_buf<...>)\n");
  ASSERT_OK_AND_ASSIGN(Program reparsed, Parse(Print(program)));
  EXPECT_EQ(reparsed, program);

  const auto a = RandomMatrix<int16_t>(16, 16, &rng_);
  const auto b = RandomMatrix<int16_t>(16, 16, &rng_);
  JobBuilder job(Target::kHost);
  AddSources(job, a, b);
  job.spec().outputs = {"o", "m", "n"};
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, Run(kText, job));
  const Matrix<int16_t> o =
      Reference(BitwiseOp::kOr, a, b, Matrix<int16_t>(16, 16), 16, 16);
  Matrix<int16_t> m(16, 16);
  for (size_t k = 0; k < m.elements.size(); ++k) {
    m.elements[k] = static_cast<int16_t>(~o.elements[k]);
  }
  Matrix<int16_t> n(16, 16);
  for (size_t k = 0; k < n.elements.size(); ++k) {
    n.elements[k] = static_cast<int16_t>(~m.elements[k]);
  }
  EXPECT_TRUE(SameElements(o, test::OutputMatrix<int16_t>(outcome, "o")));
  EXPECT_TRUE(SameElements(m, test::OutputMatrix<int16_t>(outcome, "m")));
  EXPECT_TRUE(SameElements(n, test::OutputMatrix<int16_t>(outcome, "n")));

  JobBuilder a2a3(Target::kA2A3);
  AddSources(a2a3, a, b);
  EXPECT_THAT(RunStatus(kText, a2a3),
              StatusIs(kInvalid,
                       "1:1: instruction 0 (TOR on a2a3): a2a3 does not run "
                       "TOR (host does)"));
  EXPECT_THAT(
      Parse("pto.tnot ins(%a, %b : !pto.tile_buf<...>, !pto.tile_buf<...>) "
            "outs(%c : !pto.tile_buf<...>)")
          .status(),
      StatusIs(kInvalid,
               "1:18: 'pto.tnot' takes 1 input (src0); %b is one too many"));
  EXPECT_THAT(
      Parse("%c = tnot %a, %b : !pto.tile<...>").status(),
      StatusIs(kInvalid,
               HasSubstr("expected ':' and the types after operand %a")));
}

TEST_F(LowerTest, LocateLeavesOtherStatusesAlone) {
  ASSERT_OK_AND_ASSIGN(Program program,
                       Parse("%d = tand %a, %b : !pto.tile<...>\n"));
  EXPECT_TRUE(Locate(program, absl::OkStatus()).ok());
  EXPECT_THAT(
      Locate(program, absl::InvalidArgumentError("job has no instructions")),
      StatusIs(kInvalid, "job has no instructions"));
  EXPECT_THAT(
      Locate(program, AtInstruction(absl::InvalidArgumentError(
                                        "instruction 7 (TAND on host): x"),
                                    7)),
      StatusIs(kInvalid, "instruction 7 (TAND on host): x"));
  EXPECT_THAT(
      Locate(program,
             AtTile(absl::ResourceExhaustedError("tile \"b\": big"), "b")),
      StatusIs(absl::StatusCode::kResourceExhausted, "1:15: tile \"b\": big"));
  EXPECT_THAT(
      Locate(program, AtInstruction(absl::InvalidArgumentError("x"), 0)),
      StatusIs(kInvalid, "1:1: x"));
}

// Where an error lies travels with the status, not in its message: a
// message that merely looks like one is not located.
TEST_F(LowerTest, LocateReadsTheSiteNotTheMessage) {
  ASSERT_OK_AND_ASSIGN(Program program,
                       Parse("%d = tand %a, %b : !pto.tile<...>\n"));
  EXPECT_THAT(Locate(program, absl::InvalidArgumentError("tile \"b\": big")),
              StatusIs(kInvalid, "tile \"b\": big"));
  EXPECT_THAT(Locate(program, absl::InvalidArgumentError(
                                  "instruction 0 (TAND on host): x")),
              StatusIs(kInvalid, "instruction 0 (TAND on host): x"));
}

TEST_F(LowerTest, JobWithInstructionsAndAssemblyIsAnError) {
  JobBuilder job(Target::kHost);
  AddSources(job, Matrix<int16_t>(16, 16), Matrix<int16_t>(16, 16));
  job.Tand("x", "src0", "src1");
  EXPECT_THAT(RunStatus("%d = tand %src0, %src1 : !pto.tile<...>", job),
              StatusIs(kInvalid,
                       "a job carries either assembly or "
                       "instructions, not both"));
}

}  // namespace
}  // namespace pasm
}  // namespace ptoserve
