// What Engine::Prepare rejects, with which code and message, and the valid
// cases next to each rule that it must accept.
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/engine.h"
#include "core/tile_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_util.h"

namespace ptoserve {
namespace {

using test::Desc;
using test::JobBuilder;
using test::kAllTargets;
using test::OutputMatrix;
using test::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr auto kExhausted = absl::StatusCode::kResourceExhausted;

class ValidationTest : public ::testing::Test {
 protected:
  absl::Status Prepare(JobBuilder& job) {
    return engine_.Prepare(job.spec()).status();
  }

  // Declares a, b, d and a tmp t as 16x32 tiles of `dtype` (rows of 32,
  // 64 or 128 bytes: aligned for every target), without elements.
  static void AddOperands(JobBuilder& job, DType dtype) {
    for (const char* name : {"a", "b", "d", "t"}) {
      job.AddTile(name, Desc(dtype, 16, 32));
    }
  }

  Engine engine_{EngineOptions{}};
};

// A target by its name in any case ("A2A3", as ptoctl and the Python
// client take it, so --default_target does too); nothing else.
TEST(TargetNamesTest, AnyCaseNamesTheTarget) {
  EXPECT_EQ(TargetFromName("a2a3"), Target::kA2A3);
  EXPECT_EQ(TargetFromName("A2A3"), Target::kA2A3);
  EXPECT_EQ(TargetFromName("Host"), Target::kHost);
  EXPECT_EQ(TargetFromName("a6"), std::nullopt);
  EXPECT_EQ(TargetFromName(""), std::nullopt);
}

TEST_F(ValidationTest, FloatElementTypesAreRejectedWithTheSupportedList) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (Target target : kAllTargets) {
      for (Opcode opcode : {Opcode::kTand, Opcode::kTxor}) {
        SCOPED_TRACE(DTypeName(dtype));
        JobBuilder job(target);
        AddOperands(job, dtype);
        job.Add(opcode, "d", "a", "b", opcode == Opcode::kTxor ? "t" : "");
        EXPECT_THAT(
            Prepare(job),
            StatusIs(
                kInvalid,
                absl::StrFormat(
                    "instruction 0 (%s on %s): dst element type %s is "
                    "not supported (supported: int8, uint8, int16, "
                    "uint16, int32, uint32)",
                    OpcodeName(opcode), TargetName(target), DTypeName(dtype))));
      }
    }
  }
}

TEST_F(ValidationTest, EveryIntegerTypeIsAccepted) {
  for (DType dtype : {DType::kInt8, DType::kUInt8, DType::kInt16,
                      DType::kUInt16, DType::kInt32, DType::kUInt32}) {
    for (Target target : kAllTargets) {
      SCOPED_TRACE(DTypeName(dtype));
      JobBuilder job(target);
      AddOperands(job, dtype);
      job.Tand("d", "a", "b");
      job.Txor("d", "a", "b", "t");
      EXPECT_TRUE(Prepare(job).ok()) << Prepare(job);
    }
  }
}

TEST_F(ValidationTest, SourceElementTypeMustMatchDst) {
  JobBuilder job(Target::kHost);
  job.AddTile("a", Desc(DType::kInt16, 16, 16));
  job.AddTile("b", Desc(DType::kInt32, 16, 16));
  job.AddTile("d", Desc(DType::kInt32, 16, 16));
  job.Tand("d", "a", "b");
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid,
                       "instruction 0 (TAND on host): src0 element "
                       "type int16 differs from dst element type "
                       "int32"));

  JobBuilder job1(Target::kA5);
  job1.AddTile("a", Desc(DType::kUInt8, 16, 32));
  job1.AddTile("b", Desc(DType::kInt8, 16, 32));
  job1.Txor("d", "a", "b");
  EXPECT_THAT(Prepare(job1),
              StatusIs(kInvalid, HasSubstr("src1 element type int8 differs "
                                           "from dst element type uint8")));
}

// The example message of backend.h's Backend::Check, at instruction 2.
TEST_F(ValidationTest, A2A3TmpElementTypeMustMatchDst) {
  JobBuilder job(Target::kA2A3);
  AddOperands(job, DType::kInt16);
  job.AddTile("t32", Desc(DType::kInt32, 16, 32));
  job.Tand("d", "a", "b");
  job.Txor("d", "a", "b", "t");
  job.Txor("d", "a", "b", "t32");
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid,
                       "instruction 2 (TXOR on a2a3): tmp element "
                       "type int32 differs from dst element type "
                       "int16"));
}

TEST_F(ValidationTest, TmpElementTypeIsIgnoredWhereTmpIsUnused) {
  for (Target target : {Target::kHost, Target::kA5}) {
    JobBuilder job(target);
    AddOperands(job, DType::kInt16);
    job.AddTile("t32", Desc(DType::kInt32, 16, 32));
    job.Txor("d", "a", "b", "t32");
    EXPECT_TRUE(Prepare(job).ok()) << Prepare(job);
  }
}

TEST_F(ValidationTest, ColMajorIsRejected) {
  for (const char* operand : {"a", "b", "d"}) {
    JobBuilder job(Target::kHost);
    AddOperands(job, DType::kInt32);
    for (TileInput& tile : job.spec().tiles) {
      if (tile.name == operand) tile.desc.layout = Layout::kColMajor;
    }
    job.Tand("d", "a", "b");
    EXPECT_THAT(Prepare(job),
                StatusIs(kInvalid, AllOf(HasSubstr(absl::StrFormat(
                                             "\"%s\" is col_major", operand)),
                                         HasSubstr("row_major"))));
  }
  JobBuilder job(Target::kA2A3);
  AddOperands(job, DType::kInt32);
  job.spec().tiles[3].desc.layout = Layout::kColMajor;  // t
  job.Txor("d", "a", "b", "t");
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid,
                       "instruction 0 (TXOR on a2a3): tmp \"t\" is "
                       "col_major; TXOR needs row_major operands"));
}

TEST_F(ValidationTest, NonVecLocationIsRejected) {
  JobBuilder job(Target::kA5);
  AddOperands(job, DType::kInt32);
  job.spec().tiles[1].desc.location = Location::kMat;  // b
  job.Tand("d", "a", "b");
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid,
                       "instruction 0 (TAND on a5): src1 \"b\" is "
                       "in mat; TAND operates on vec tiles"));

  JobBuilder job1(Target::kA2A3);
  AddOperands(job1, DType::kInt32);
  job1.spec().tiles[3].desc.location = Location::kAcc;  // t
  job1.Txor("d", "a", "b", "t");
  EXPECT_THAT(Prepare(job1),
              StatusIs(kInvalid, HasSubstr("tmp \"t\" is in acc")));
}

TEST_F(ValidationTest, ValidShapeMustMatchDst) {
  struct Case {
    const char* tile;
    const char* message;
  };
  for (const Case& c :
       {Case{"a", "src0 valid shape 16x31 differs from dst valid shape 16x32"},
        Case{"b", "src1 valid shape 16x31 differs from dst valid shape 16x32"},
        Case{"t",
             "tmp valid shape 16x31 differs from dst valid shape 16x32"}}) {
    JobBuilder job(Target::kA2A3);
    AddOperands(job, DType::kInt32);
    for (TileInput& tile : job.spec().tiles) {
      if (tile.name == c.tile) tile.desc.valid_cols = 31;
    }
    job.Txor("d", "a", "b", "t");
    EXPECT_THAT(Prepare(job),
                StatusIs(kInvalid, absl::StrCat("instruction 0 (TXOR on "
                                                "a2a3): ",
                                                c.message)));
  }
  JobBuilder job(Target::kHost);
  AddOperands(job, DType::kInt32);
  job.spec().tiles[0].desc.valid_rows = 3;  // a
  job.Tand("d", "a", "b");
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid, HasSubstr("src0 valid shape 3x32 differs")));
}

// Different physical shapes, equal valid shapes: dst 32x128, src1 32x256,
// valid 32x127 (the example of DESIGN.md).
TEST_F(ValidationTest, DifferentPhysicalShapesWithEqualValidShapesAreAccepted) {
  std::mt19937 rng(3);
  const auto a = test::RandomMatrix<uint8_t>(32, 128, &rng);
  const auto b = test::RandomMatrix<uint8_t>(32, 256, &rng);
  const auto d = test::RandomMatrix<uint8_t>(32, 128, &rng);
  for (Target target : kAllTargets) {
    SCOPED_TRACE(TargetName(target));
    JobBuilder job(target);
    job.AddMatrix("a", a, 32, 127);
    job.AddMatrix("b", b, 32, 127);
    job.AddMatrix("d", d, 32, 127);
    job.Tand("d", "a", "b");
    ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine_.Execute(job.spec()));
    EXPECT_TRUE(
        test::SameElements(test::Reference(BitwiseOp::kAnd, a, b, d, 32, 127),
                           OutputMatrix<uint8_t>(outcome, "d")));
  }
}

TEST_F(ValidationTest, RowsMustBeAMultipleOf32BytesOnA2A3AndA5) {
  for (Target target : {Target::kA2A3, Target::kA5}) {
    // 15 int32 columns: 60-byte rows.
    JobBuilder job(target);
    job.AddTile("a", Desc(DType::kInt32, 16, 15));
    job.AddTile("b", Desc(DType::kInt32, 16, 16, 16, 15));
    job.AddTile("d", Desc(DType::kInt32, 16, 16, 16, 15));
    job.Tand("d", "a", "b");
    EXPECT_THAT(
        Prepare(job),
        StatusIs(kInvalid,
                 absl::StrFormat("instruction 0 (TAND on %s): src0 "
                                 "\"a\" rows are 60 bytes (15 int32 "
                                 "columns); %s needs rows of a "
                                 "multiple of 32 bytes",
                                 TargetName(target), TargetName(target))));
  }
  // The host has no alignment rule.
  JobBuilder job(Target::kHost);
  for (const char* name : {"a", "b", "d"}) {
    job.AddTile(name, Desc(DType::kInt32, 16, 15));
  }
  job.Tand("d", "a", "b");
  EXPECT_TRUE(Prepare(job).ok()) << Prepare(job);
}

TEST_F(ValidationTest, OddValidWidthInAlignedRowsIsAcceptedEverywhere) {
  for (Target target : kAllTargets) {
    JobBuilder job(target);
    for (const char* name : {"a", "b", "d", "t"}) {
      job.AddTile(name, Desc(DType::kUInt8, 4, 32, 3, 7));
    }
    job.Txor("d", "a", "b", "t");
    EXPECT_TRUE(Prepare(job).ok()) << Prepare(job);
  }
}

TEST_F(ValidationTest, TxorNeedsTmpOnA2A3Only) {
  JobBuilder job(Target::kA2A3);
  AddOperands(job, DType::kInt32);
  job.Txor("d", "a", "b");
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid,
                       "instruction 0 (TXOR on a2a3): tmp is required on "
                       "a2a3: it holds OR(src0, src1) in XOR = "
                       "AND(NOT(AND(src0, src1)), OR(src0, src1))"));
  for (Target target : {Target::kHost, Target::kA5}) {
    JobBuilder ok(target);
    AddOperands(ok, DType::kInt32);
    ok.Txor("d", "a", "b");
    EXPECT_TRUE(Prepare(ok).ok()) << Prepare(ok);
  }
  // TAND never needs one.
  JobBuilder tand(Target::kA2A3);
  AddOperands(tand, DType::kInt32);
  tand.Tand("d", "a", "b");
  EXPECT_TRUE(Prepare(tand).ok()) << Prepare(tand);
}

TEST_F(ValidationTest, A2A3TmpMustNotAliasAnotherOperand) {
  struct Case {
    const char* tmp;
    const char* role;
  };
  for (const Case& c :
       {Case{"d", "dst"}, Case{"a", "src0"}, Case{"b", "src1"}}) {
    JobBuilder job(Target::kA2A3);
    AddOperands(job, DType::kInt32);
    job.Txor("d", "a", "b", c.tmp);
    EXPECT_THAT(Prepare(job),
                StatusIs(kInvalid, absl::StrFormat(
                                       "instruction 0 (TXOR on a2a3): tmp "
                                       "\"%s\" is also %s; tmp must be a tile "
                                       "of its own because it is written "
                                       "before the sources are read again",
                                       c.tmp, c.role)));
  }
}

TEST_F(ValidationTest, UnknownSourceTileIsRejected) {
  JobBuilder job(Target::kHost);
  AddOperands(job, DType::kInt32);
  job.Tand("d", "a", "nope");
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid,
                       "instruction 0 (TAND on host): src1 \"nope\" "
                       "is not a tile of the job nor the dst of an "
                       "earlier instruction"));
  // ... including the dst of a later instruction.
  JobBuilder later(Target::kHost);
  AddOperands(later, DType::kInt32);
  later.Tand("d", "x", "b");
  later.Tand("x", "a", "b");
  EXPECT_THAT(Prepare(later),
              StatusIs(kInvalid, HasSubstr("src0 \"x\" is not a tile")));
}

TEST_F(ValidationTest, EmptyOperandNameIsRejected) {
  JobBuilder job(Target::kHost);
  AddOperands(job, DType::kInt32);
  job.Tand("", "a", "b");
  EXPECT_THAT(Prepare(job), StatusIs(kInvalid,
                                     "instruction 0 (TAND on host): dst is not "
                                     "set; name a tile"));
  JobBuilder src(Target::kHost);
  AddOperands(src, DType::kInt32);
  src.Tand("d", "", "b");
  EXPECT_THAT(Prepare(src), StatusIs(kInvalid, HasSubstr("src0 is not set")));
}

TEST_F(ValidationTest, DuplicateEventNamesAreRejected) {
  JobBuilder job(Target::kHost);
  AddOperands(job, DType::kInt32);
  job.Tand("d", "a", "b").record_event = "x";
  job.Tand("d", "a", "b").record_event = "x";
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid,
                       "instruction 1 (TAND on host): event \"x\" "
                       "is already recorded by instruction 0; "
                       "event names must be unique"));
  // A chosen name may collide with a default one.
  JobBuilder clash(Target::kHost);
  AddOperands(clash, DType::kInt32);
  clash.Tand("d", "a", "b").record_event = "e1";
  clash.Tand("d", "a", "b");
  EXPECT_THAT(Prepare(clash),
              StatusIs(kInvalid, HasSubstr("event \"e1\" is already recorded "
                                           "by instruction 0")));
}

TEST_F(ValidationTest, WaitsMustNameAnEarlierEvent) {
  JobBuilder unknown(Target::kHost);
  AddOperands(unknown, DType::kInt32);
  unknown.Tand("d", "a", "b").wait_events = {"zz"};
  EXPECT_THAT(Prepare(unknown),
              StatusIs(kInvalid,
                       "instruction 0 (TAND on host): waits on "
                       "event \"zz\", which no instruction "
                       "records"));

  JobBuilder own(Target::kHost);
  AddOperands(own, DType::kInt32);
  own.Tand("d", "a", "b");
  own.Tand("d", "a", "b").wait_events = {"e1"};
  EXPECT_THAT(Prepare(own),
              StatusIs(kInvalid,
                       "instruction 1 (TAND on host): waits on its "
                       "own event \"e1\" (a cycle)"));

  JobBuilder forward(Target::kHost);
  AddOperands(forward, DType::kInt32);
  forward.Tand("d", "a", "b").wait_events = {"done"};
  forward.Tand("d", "a", "b").record_event = "done";
  EXPECT_THAT(Prepare(forward),
              StatusIs(kInvalid,
                       "instruction 0 (TAND on host): waits on "
                       "event \"done\", recorded by instruction 1 "
                       "which comes later; an instruction can only "
                       "wait on earlier ones"));
}

TEST_F(ValidationTest, UnknownOutputIsRejected) {
  JobBuilder job(Target::kHost);
  AddOperands(job, DType::kInt32);
  job.Tand("d", "a", "b");
  job.spec().outputs = {"d", "zz"};
  EXPECT_THAT(Prepare(job), StatusIs(kInvalid,
                                     "outputs: \"zz\" is not a "
                                     "tile of the job"));
}

TEST_F(ValidationTest, ImpossibleShapesAreRejected) {
  JobBuilder too_big(Target::kHost);
  too_big.AddTile("a", Desc(DType::kInt32, 16, 16, 17, 16));
  too_big.Tand("d", "a", "a");
  EXPECT_THAT(Prepare(too_big),
              StatusIs(kInvalid,
                       "tile \"a\": valid region 17x16 exceeds its "
                       "shape 16x16"));

  JobBuilder too_wide(Target::kHost);
  too_wide.AddTile("a", Desc(DType::kInt32, 16, 16, 0, 17));
  too_wide.Tand("d", "a", "a");
  EXPECT_THAT(Prepare(too_wide),
              StatusIs(kInvalid, HasSubstr("valid region 16x17 exceeds")));

  JobBuilder no_rows(Target::kHost);
  no_rows.AddTile("a", Desc(DType::kInt32, 0, 16));
  no_rows.Tand("d", "a", "a");
  EXPECT_THAT(Prepare(no_rows),
              StatusIs(kInvalid,
                       "tile \"a\": shape 0x16 is empty; rows and "
                       "cols must be > 0"));

  JobBuilder no_cols(Target::kHost);
  no_cols.AddTile("a", Desc(DType::kInt32, 16, 0));
  no_cols.Tand("d", "a", "a");
  EXPECT_THAT(Prepare(no_cols),
              StatusIs(kInvalid, HasSubstr("shape 16x0 is empty")));
}

TEST_F(ValidationTest, TileNamesMustBeUniqueAndNonEmpty) {
  JobBuilder twice(Target::kHost);
  AddOperands(twice, DType::kInt32);
  twice.AddTile("a", Desc(DType::kInt32, 16, 32));
  twice.Tand("d", "a", "b");
  EXPECT_THAT(Prepare(twice),
              StatusIs(kInvalid, "tile \"a\" is declared twice"));

  JobBuilder unnamed(Target::kHost);
  unnamed.AddTile("", Desc(DType::kInt32, 16, 16));
  unnamed.Tand("d", "a", "b");
  EXPECT_THAT(Prepare(unnamed), StatusIs(kInvalid, "a tile has an empty name"));
}

TEST_F(ValidationTest, DataSizeMustMatchThePhysicalTile) {
  JobBuilder job(Target::kHost);
  job.AddData("a", Desc(DType::kInt32, 16, 16, 8, 8), std::string(10, '\0'));
  job.Tand("d", "a", "a");
  EXPECT_THAT(Prepare(job), StatusIs(kInvalid,
                                     "tile \"a\": data has 10 bytes, expected "
                                     "1024 (16x16 elements of int32, 4 bytes "
                                     "each)"));
  // The valid region does not count: the whole physical tile travels.
  JobBuilder valid_only(Target::kHost);
  valid_only.AddData("a", Desc(DType::kInt32, 16, 16, 8, 8),
                     std::string(256, '\0'));
  valid_only.Tand("d", "a", "a");
  EXPECT_THAT(Prepare(valid_only),
              StatusIs(kInvalid, HasSubstr("data has 256 bytes, expected "
                                           "1024")));
}

TEST_F(ValidationTest, ValueCountMustMatchThePhysicalTile) {
  JobBuilder job(Target::kHost);
  job.AddValues("a", Desc(DType::kInt32, 16, 16), {1, 2, 3});
  job.Tand("d", "a", "a");
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid,
                       "tile \"a\": values has 3 entries, expected "
                       "256 (one per element of the 16x16 tile)"));

  JobBuilder half(Target::kHost);
  half.AddValues("a", Desc(DType::kFloat16, 1, 2), {1, 2});
  half.Tand("d", "a", "a");
  EXPECT_THAT(Prepare(half),
              StatusIs(kInvalid, HasSubstr("float16 elements cannot be sent "
                                           "as values; send data")));
}

// A 1x8 tile whose element `index` is `value`, the others 0.
std::vector<double> ValuesWith(size_t index, double value) {
  std::vector<double> values(8, 0);
  values[index] = value;
  return values;
}

TEST_F(ValidationTest, ValuesOutOfRangeAreRejectedWithTheirIndex) {
  struct Case {
    DType dtype;
    double value;
    const char* message;
  };
  const Case cases[] = {
      {DType::kUInt8, 300,
       "tile \"a\": values[5] (element 0,5) = 300 is not an integer in the "
       "uint8 range [0, 255]"},
      {DType::kUInt8, -1, "= -1 is not an integer in the uint8 range"},
      {DType::kInt8, 128,
       "= 128 is not an integer in the int8 range "
       "[-128, 127]"},
      {DType::kInt8, -129, "= -129 is not an integer in the int8 range"},
      {DType::kInt16, 1.5,
       "values[5] (element 0,5) = 1.5 is not an integer "
       "in the int16 range [-32768, 32767]"},
      {DType::kUInt16, 65536, "= 65536 is not an integer in the uint16 range"},
      {DType::kUInt32, -1,
       "tile \"a\": values[5] (element 0,5) = -1 is not "
       "an integer in the uint32 range [0, 4294967295]"},
      {DType::kInt32, 0.25,
       "= 0.25 is not an integer in the int32 range "
       "[-2147483648, 2147483647]"},
      {DType::kInt32, std::nan(""), "values[5]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrFormat("%s %g", DTypeName(c.dtype), c.value));
    JobBuilder job(Target::kHost);
    job.AddValues("a", Desc(c.dtype, 1, 8), ValuesWith(5, c.value));
    job.Tand("d", "a", "a");
    EXPECT_THAT(Prepare(job), StatusIs(kInvalid, HasSubstr(c.message)));
  }
}

// The offending value is printed in full (not "4.29497e+09"), so the sender
// can see which number was wrong.
TEST_F(ValidationTest, OutOfRangeValueIsPrintedInFull) {
  JobBuilder job(Target::kHost);
  job.AddValues("a", Desc(DType::kUInt32, 1, 8), ValuesWith(5, 4294967296.0));
  job.Tand("d", "a", "a");
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid, HasSubstr("values[5] (element 0,5) = "
                                           "4294967296 is not an integer")));
}

// A float32 tile no instruction uses may still travel as values (and come
// back as an output); a finite value beyond float's range is refused rather
// than turned into an infinity. Found by //tests/fuzz:job_fuzzer.
TEST_F(ValidationTest, Float32ValuesOutsideItsRangeAreRejected) {
  for (double value : {1e39, -8.0682872448708424e+168}) {
    SCOPED_TRACE(value);
    JobBuilder job(Target::kHost);
    job.AddValues("f", Desc(DType::kFloat32, 1, 8), ValuesWith(5, value));
    job.AddTile("a", Desc(DType::kInt32, 1, 8));
    job.Tand("d", "a", "a");
    EXPECT_THAT(Prepare(job),
                StatusIs(kInvalid, HasSubstr("tile \"f\": values[5] (element "
                                             "0,5) = ")));
    EXPECT_THAT(Prepare(job), StatusIs(kInvalid, HasSubstr("is outside the "
                                                           "float32 range")));
  }
  for (double value : {3.4028234663852886e38, -1.5, 1e-50,
                       std::numeric_limits<double>::infinity()}) {
    SCOPED_TRACE(value);
    JobBuilder job(Target::kHost);
    job.AddValues("f", Desc(DType::kFloat32, 1, 8), ValuesWith(5, value));
    job.AddTile("a", Desc(DType::kInt32, 1, 8));
    job.Tand("d", "a", "a");
    EXPECT_TRUE(Prepare(job).ok()) << Prepare(job);
  }
}

// The extremes of each type are accepted and arrive unchanged: x & x = x.
TEST_F(ValidationTest, ValuesAtTheEdgesOfTheRangeAreAccepted) {
  struct Case {
    DType dtype;
    double value;
  };
  const Case cases[] = {
      {DType::kUInt8, 255},           {DType::kUInt8, 0},
      {DType::kInt8, -128},           {DType::kInt8, 127},
      {DType::kUInt16, 65535},        {DType::kInt16, -32768},
      {DType::kInt16, 32767},         {DType::kUInt32, 4294967295.0},
      {DType::kInt32, -2147483648.0}, {DType::kInt32, 2147483647},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrFormat("%s %.0f", DTypeName(c.dtype), c.value));
    JobBuilder job(Target::kHost);
    job.AddValues("a", Desc(c.dtype, 1, 8), ValuesWith(5, c.value));
    job.Tand("d", "a", "a");
    ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine_.Execute(job.spec()));
    const OutputTile* d = test::FindOutput(outcome, "d");
    ASSERT_NE(d, nullptr);
    std::vector<double> values(8);
    ToValues(d->tile, absl::MakeSpan(values));
    EXPECT_EQ(values, ValuesWith(5, c.value));
  }
}

class LimitsTest : public ::testing::Test {
 protected:
  static EngineOptions SmallLimits() {
    EngineOptions options;
    options.limits.max_tile_bytes = 1024;
    options.limits.max_tiles_per_job = 3;
    options.limits.max_instructions_per_job = 4;
    return options;
  }
  absl::Status Prepare(JobBuilder& job) {
    return engine_.Prepare(job.spec()).status();
  }

  Engine engine_{SmallLimits()};
};

TEST_F(LimitsTest, TileOverMaxBytesIsResourceExhausted) {
  JobBuilder ok(Target::kHost);
  ok.AddTile("a", Desc(DType::kInt32, 16, 16));  // exactly 1024 bytes
  ok.Tand("d", "a", "a");
  EXPECT_TRUE(Prepare(ok).ok()) << Prepare(ok);

  JobBuilder job(Target::kHost);
  job.AddTile("a", Desc(DType::kInt32, 16, 17));
  job.Tand("d", "a", "a");
  EXPECT_THAT(Prepare(job), StatusIs(kExhausted,
                                     "tile \"a\": 16x17 int32 is 1088 bytes, "
                                     "over the limit of 1024 bytes per tile"));
}

TEST_F(LimitsTest, TooManyInstructionsIsResourceExhausted) {
  JobBuilder ok(Target::kHost);
  ok.AddTile("a", Desc(DType::kInt32, 4, 4));
  for (int i = 0; i < 4; ++i) ok.Tand("a", "a", "a");
  EXPECT_TRUE(Prepare(ok).ok()) << Prepare(ok);

  ok.Tand("a", "a", "a");
  EXPECT_THAT(Prepare(ok), StatusIs(kExhausted,
                                    "job has 5 instructions, over the limit "
                                    "of 4"));
}

TEST_F(LimitsTest, TooManyTilesIsResourceExhausted) {
  JobBuilder declared(Target::kHost);
  for (const char* name : {"a", "b", "c", "d"}) {
    declared.AddTile(name, Desc(DType::kInt32, 4, 4));
  }
  declared.Tand("d", "a", "b");
  EXPECT_THAT(Prepare(declared),
              StatusIs(kExhausted, "job has 4 tiles, over the limit of 3"));

  // Tiles the server allocates count too: a, b, x fit; y does not.
  JobBuilder allocated(Target::kHost);
  allocated.AddTile("a", Desc(DType::kInt32, 4, 4));
  allocated.AddTile("b", Desc(DType::kInt32, 4, 4));
  allocated.Tand("x", "a", "b");
  EXPECT_TRUE(Prepare(allocated).ok()) << Prepare(allocated);
  allocated.Tand("y", "a", "b");
  EXPECT_THAT(Prepare(allocated),
              StatusIs(kExhausted, "job needs more than 3 tiles"));
}

TEST_F(ValidationTest, EmptyJobIsRejected) {
  JobBuilder job(Target::kHost);
  AddOperands(job, DType::kInt32);
  EXPECT_THAT(Prepare(job), StatusIs(kInvalid, "job has no instructions"));
}

// The first rule broken is reported, with the instruction's index.
TEST_F(ValidationTest, ErrorsNameTheInstructionIndex) {
  JobBuilder job(Target::kA5);
  AddOperands(job, DType::kInt32);
  job.Tand("d", "a", "b");
  job.Txor("d", "a", "b");
  job.Tand("d", "a", "missing");
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid, StartsWith("instruction 2 (TAND on a5): ")));
}

}  // namespace
}  // namespace ptoserve
