// proto/wire_scan and proto/codec: the wire scan that runs before a request
// is parsed, and the translation of a parsed job into the engine's terms.
#include "proto/codec.h"

#include <gmock/gmock.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/engine.h"
#include "core/ops.h"
#include "proto/wire.h"
#include "proto/wire_scan.h"
#include "tests/core/test_util.h"

namespace ptoserve {
namespace {

using test::Desc;
using test::JobBuilder;
using test::StatusIs;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr auto kExhausted = absl::StatusCode::kResourceExhausted;

absl::Status Scan(const std::string& bytes, const EngineLimits& limits = {}) {
  google::protobuf::io::ArrayInputStream in(bytes.data(),
                                            static_cast<int>(bytes.size()));
  return CheckJobWire(&in, bytes.size(), limits).status();
}

v1::Job SmallJob() {
  v1::Job job;
  job.set_id("j");
  job.set_target(v1::TARGET_A5);
  job.mutable_timeout()->set_seconds(3);
  for (const char* name : {"a", "b"}) {
    v1::Tile& t = (*job.mutable_tiles())[name];
    t.set_dtype(v1::DTYPE_UINT8);
    t.set_rows(1);
    t.set_cols(32);
    t.set_address(64);
  }
  job.mutable_tiles()->at("a").set_fill(3);
  job.mutable_tiles()->at("b").add_values(1);
  v1::Instruction* inst = job.add_instructions();
  inst->set_opcode(v1::OPCODE_TAND);
  inst->set_dst("c");
  inst->set_src0("a");
  inst->set_src1("b");
  inst->set_record_event("done");
  job.add_outputs("c");
  return job;
}

// A protobuf field as bytes: its tag, then `payload` (already encoded).
std::string Field(int number, int wire_type, const std::string& payload) {
  std::string out;
  for (uint32_t v = (number << 3) | wire_type;; v >>= 7) {
    out.push_back(static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
    if (v < 0x80) break;
  }
  return out + payload;
}

absl::StatusOr<BatchShape> ScanBatch(const std::string& bytes, size_t max_jobs,
                                     const EngineLimits& limits = {}) {
  google::protobuf::io::ArrayInputStream in(bytes.data(),
                                            static_cast<int>(bytes.size()));
  return CheckJobBatchWire(&in, bytes.size(), limits, max_jobs);
}

TEST(CheckJobWireTest, EveryFieldOfAValidJobPasses) {
  EXPECT_TRUE(Scan(SmallJob().SerializeAsString()).ok());
  v1::Job text;
  text.set_assembly("%c = tand %a, %b : !pto.tile<...>");
  EXPECT_TRUE(Scan(text.SerializeAsString()).ok());
  EXPECT_TRUE(Scan("").ok());
}

TEST(CheckJobWireTest, CountsAreCheckedBeforeParsing) {
  EngineLimits limits;
  limits.max_tiles_per_job = 1;
  EXPECT_THAT(
      Scan(SmallJob().SerializeAsString(), limits),
      StatusIs(kExhausted, HasSubstr("job has more than 1 tiles, the limit")));
  limits = EngineLimits();
  limits.max_instructions_per_job = 1;
  v1::Job two = SmallJob();
  *two.add_instructions() = two.instructions(0);
  EXPECT_THAT(Scan(two.SerializeAsString(), limits),
              StatusIs(kExhausted, HasSubstr("more than 1 instructions")));
  limits = EngineLimits();
  limits.max_waits_per_instruction = 2;
  v1::Job waits = SmallJob();
  for (int i = 0; i < 3; ++i) {
    waits.mutable_instructions(0)->add_wait_events("e");
  }
  EXPECT_THAT(Scan(waits.SerializeAsString(), limits),
              StatusIs(kExhausted,
                       HasSubstr("instruction 0 waits on more than 2 events")));
  limits = EngineLimits();
  limits.max_tiles_per_job = 2;
  v1::Job outputs = SmallJob();
  for (int i = 0; i < 2; ++i) outputs.add_outputs("c");
  EXPECT_THAT(
      Scan(outputs.SerializeAsString(), limits),
      StatusIs(kExhausted, HasSubstr("outputs lists more than 2 names")));
  limits = EngineLimits();
  limits.max_assembly_bytes = 10;
  v1::Job text;
  text.set_assembly(std::string(11, '#'));
  EXPECT_THAT(
      Scan(text.SerializeAsString(), limits),
      StatusIs(kExhausted,
               HasSubstr("assembly is 11 bytes, over the limit of 10")));
}

TEST(CheckJobWireTest, LongNamesAreRefusedQuotingTheirStart) {
  v1::Job job = SmallJob();
  job.mutable_instructions(0)->set_src1(std::string(257, 'x'));
  EXPECT_THAT(
      Scan(job.SerializeAsString()),
      StatusIs(
          kInvalid,
          HasSubstr("instruction 0: a name \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                    "...\" (257 bytes) is longer than names may be")));
  job = SmallJob();
  (*job.mutable_tiles())[std::string(300, 't')] = v1::Tile();
  EXPECT_THAT(Scan(job.SerializeAsString()),
              StatusIs(kInvalid, HasSubstr("tile name")));
  job = SmallJob();
  job.set_id(std::string(300, 'i'));  // echoed in the result
  EXPECT_THAT(Scan(job.SerializeAsString()),
              StatusIs(kInvalid, HasSubstr("job id \"iiii")));
  job = SmallJob();
  job.add_outputs(std::string(1000, 'o'));
  EXPECT_THAT(Scan(job.SerializeAsString()),
              StatusIs(kInvalid, HasSubstr("outputs entry")));
  job = SmallJob();
  job.mutable_instructions(0)->add_wait_events(
      std::string(256, 'w'));  // at the limit
  EXPECT_TRUE(Scan(job.SerializeAsString()).ok());
}

// Protobuf keeps fields its schema lacks, at 16 bytes or more each for as
// few as two on the wire: a few (a newer client's) pass, many do not, and
// groups (never in ptoserve.v1) not at all.
TEST(CheckJobWireTest, UnknownFieldsAreBounded) {
  const std::string job = SmallJob().SerializeAsString();
  std::string some = job;
  for (int i = 0; i < 16; ++i) some += Field(100 + i, 0, "\x01");
  EXPECT_TRUE(Scan(some).ok());
  EXPECT_THAT(
      Scan(some + Field(200, 0, "\x01")),
      StatusIs(kInvalid,
               HasSubstr("more than 16 fields this server does not know "
                         "(the last: field 200, wire type 0)")));
  // A known field on the wrong wire type is unknown to the parser too.
  std::string wrong = job;
  for (int i = 0; i < 17; ++i) wrong += Field(4, 0, "\x20");
  EXPECT_THAT(Scan(wrong),
              StatusIs(kInvalid, HasSubstr("field 4, wire type 0")));
  EXPECT_THAT(Scan(job + Field(50, 3, "") + Field(50, 4, "")),
              StatusIs(kInvalid, HasSubstr("field 50 is a group")));
  // Inside a tile.
  v1::Tile tile;
  tile.set_rows(1);
  std::string tile_bytes = tile.SerializeAsString();
  for (int i = 0; i < 17; ++i) tile_bytes += Field(30, 0, "\x01");
  const std::string entry =
      Field(1, 2, "\x01z") +
      Field(2, 2,
            std::string(1, static_cast<char>(tile_bytes.size())) + tile_bytes);
  ASSERT_LT(tile_bytes.size(), 128u);
  EXPECT_THAT(Scan(job + Field(4, 2,
                               std::string(1, static_cast<char>(entry.size())) +
                                   entry)),
              StatusIs(kInvalid, HasSubstr("field 30")));
}

// Malformed bytes are refused by the scan, whatever else is wrong with
// them: protobuf would parse (and keep) everything before the malformed
// field first. Every truncation of a valid job but the empty one is
// malformed, and so is a nested length that runs past its parent.
TEST(CheckJobWireTest, MalformedBytesAreRefusedBeforeParsing) {
  const std::string job = SmallJob().SerializeAsString();
  for (size_t cut = 1; cut < job.size(); ++cut) {
    v1::Job parsed;
    if (parsed.ParseFromString(job.substr(0, cut))) continue;  // a boundary
    EXPECT_THAT(
        Scan(job.substr(0, cut)),
        StatusIs(kInvalid,
                 HasSubstr("its protobuf encoding is truncated or corrupt")))
        << cut;
  }
  // A name whose length runs past the end is malformed, not "too long".
  EXPECT_THAT(Scan(Field(6, 2,
                         "\xff\x7f"
                         "abc")),
              StatusIs(kInvalid, HasSubstr("corrupt")));
  // 17 unknown fields, then a truncated one: malformed.
  std::string many;
  for (int i = 0; i < 17; ++i) many += Field(100 + i, 0, "\x01");
  EXPECT_THAT(Scan(many + Field(6, 2,
                                "\x05"
                                "ab")),
              StatusIs(kInvalid, HasSubstr("corrupt")));
  // A tile entry whose Tile runs past the entry.
  const std::string tile = Field(2, 0, "\x01") + Field(20, 0, "\x01");
  const std::string entry = Field(1, 2, "\x01z") + Field(2, 2, "\x40" + tile);
  EXPECT_THAT(
      Scan(
          Field(4, 2, std::string(1, static_cast<char>(entry.size())) + entry) +
          std::string(64, '\x20')),
      StatusIs(kInvalid, HasSubstr("corrupt")));
  // Field number 0, wire types 6 and 7, an end group without its start.
  for (const std::string& bad :
       {std::string("\x02\x00", 2), std::string("\x0e\x00", 2),
        std::string("\x2f"), std::string("\x2c")}) {
    EXPECT_THAT(Scan(job + bad), StatusIs(kInvalid, HasSubstr("corrupt")));
  }
}

// ToJobSpec: each encoding borrowed from the request as it is (data and
// values in place, fill as its number); enums and names carried over; the
// errors name the tile or instruction.
TEST(ToJobSpecTest, CarriesEveryFieldAndEncoding) {
  v1::Job job = SmallJob();
  (*job.mutable_tiles())["d"].set_dtype(v1::DTYPE_INT16);
  (*job.mutable_tiles())["d"].set_rows(2);
  (*job.mutable_tiles())["d"].set_cols(3);
  (*job.mutable_tiles())["d"].set_valid_cols(2);
  (*job.mutable_tiles())["d"].set_data(std::string(12, '\x7f'));
  job.mutable_instructions(0)->add_wait_events("w");
  absl::StatusOr<JobSpec> spec = ToJobSpec(job);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->target, Target::kA5);
  EXPECT_EQ(spec->mode, Mode::kAuto);
  ASSERT_EQ(spec->tiles.size(), 3u);  // sorted by name
  const TileInput& a = spec->tiles[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.encoding, Encoding::kFill);
  EXPECT_EQ(a.fill, 3);
  EXPECT_EQ(a.desc.address, 64u);
  const TileInput& b = spec->tiles[1];
  EXPECT_EQ(b.encoding, Encoding::kValues);
  ASSERT_EQ(b.values.size(), 1u);
  EXPECT_EQ(b.values.data(), job.tiles().at("b").values().data());  // borrowed
  const TileInput& d = spec->tiles[2];
  EXPECT_EQ(d.encoding, Encoding::kData);
  EXPECT_EQ(d.data.data(), job.tiles().at("d").data().data());  // borrowed
  EXPECT_EQ(d.desc.dtype, DType::kInt16);
  EXPECT_EQ(d.desc.valid_cols, 2u);
  ASSERT_EQ(spec->instructions.size(), 1u);
  const Instruction& inst = spec->instructions[0];
  EXPECT_EQ(inst.opcode, Opcode::kTand);
  EXPECT_EQ(inst.dst, "c");
  EXPECT_EQ(inst.record_event, "done");
  EXPECT_EQ(inst.wait_events, std::vector<std::string>{"w"});
  EXPECT_EQ(spec->outputs, std::vector<std::string>{"c"});
}

TEST(ToJobSpecTest, ErrorsNameWhatIsWrong) {
  v1::Job job = SmallJob();
  (*job.mutable_tiles())["a"].add_values(1);  // fill and values
  EXPECT_THAT(
      ToJobSpec(job).status(),
      StatusIs(
          kInvalid,
          HasSubstr("tile \"a\": has more than one of data, values, fill and "
                    "shared")));
  job = SmallJob();
  (*job.mutable_tiles())["a"].set_dtype(static_cast<v1::DType>(42));
  EXPECT_THAT(ToJobSpec(job).status(),
              StatusIs(kInvalid, HasSubstr("tile \"a\": unknown dtype 42")));
  job = SmallJob();
  job.mutable_instructions(0)->set_opcode(v1::OPCODE_UNSPECIFIED);
  EXPECT_THAT(
      ToJobSpec(job).status(),
      StatusIs(kInvalid, HasSubstr("instruction 0: opcode is not set "
                                   "(OPCODE_TAND, OPCODE_TXOR, OPCODE_TOR "
                                   "or OPCODE_TNOT)")));
  job = SmallJob();
  job.mutable_instructions(0)->set_opcode(static_cast<v1::Opcode>(77));
  EXPECT_THAT(
      ToJobSpec(job).status(),
      StatusIs(kInvalid, HasSubstr("instruction 0: unknown opcode 77")));
  job = SmallJob();
  job.set_target(static_cast<v1::Target>(9));
  EXPECT_THAT(ToJobSpec(job).status(),
              StatusIs(kInvalid, HasSubstr("unknown target 9")));
  job = SmallJob();
  job.set_mode(static_cast<v1::Mode>(5));
  EXPECT_THAT(ToJobSpec(job).status(),
              StatusIs(kInvalid, HasSubstr("unknown mode 5")));
}

// Each row of the instruction table names the wire value of its own name,
// and every wire opcode but UNSPECIFIED has a row.
TEST(OpTableTest, WireValuesMatchTheProto) {
  for (const OpInfo& op : kOps) {
    EXPECT_EQ(v1::Opcode_Name(static_cast<v1::Opcode>(op.wire_value)),
              absl::StrCat("OPCODE_", op.name));
    EXPECT_EQ(ToProto(op.opcode), op.wire_value);
  }
  const google::protobuf::EnumDescriptor* wire = v1::Opcode_descriptor();
  for (int i = 0; i < wire->value_count(); ++i) {
    const int number = wire->value(i)->number();
    if (number == v1::OPCODE_UNSPECIFIED) continue;
    ASSERT_NE(FindOpByWireValue(number), nullptr) << wire->value(i)->name();
    // Each opcode by its OPCODE_ name and its mnemonic, in lower and
    // upper case (the aliases JSON takes: "tand", "TAND").
    const OpInfo& op = *FindOpByWireValue(number);
    EXPECT_THAT(
        wire->value(i)->name(),
        ::testing::AnyOf(absl::StrCat("OPCODE_", op.name),
                         std::string(op.mnemonic), std::string(op.name)));
  }
}

// ToJobResult: tiles in the encoding their inputs used (values as numbers,
// the rest as the bytes moved out of the engine's tile), events with every
// field the wire has.
TEST(ToJobResultTest, EncodesTilesAndEvents) {
  Engine engine{EngineOptions{}};
  v1::Job job = SmallJob();
  job.set_target(v1::TARGET_A2A3);
  job.clear_outputs();
  for (const char* name : {"c", "a", "b"}) job.add_outputs(name);
  job.mutable_instructions(0)->set_opcode(v1::OPCODE_TXOR);
  job.mutable_instructions(0)->set_tmp("t");
  absl::StatusOr<JobSpec> spec = ToJobSpec(job);
  ASSERT_TRUE(spec.ok()) << spec.status();
  spec->mode = Mode::kAuto;
  for (TileInput& t : spec->tiles) t.desc.address.reset();
  // b sent as values has one value for 32 elements: give it all of them.
  std::vector<double> values(32);
  for (int i = 0; i < 32; ++i) values[i] = i;
  spec->tiles[1].values = values;
  absl::StatusOr<JobOutcome> outcome = engine.Execute(*spec);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  v1::JobResult result;
  const ResultEncodings encodings(*spec, [&](Opcode opcode) {
    return engine.backends().Get(Target::kA2A3).UsesTmp(opcode);
  });
  ToJobResult(*std::move(outcome), encodings, &result);
  EXPECT_EQ(result.target(), v1::TARGET_A2A3);
  ASSERT_EQ(result.tiles_size(), 3);
  const v1::Tile& c = result.tiles().at("c");  // like src0, a fill: data
  ASSERT_EQ(c.data().size(), 32u);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(static_cast<uint8_t>(c.data()[i]), 3 ^ i) << i;
  }
  const v1::Tile& b = result.tiles().at("b");  // values in, values out
  ASSERT_EQ(b.values_size(), 32);
  EXPECT_EQ(b.values(31), 31);
  EXPECT_TRUE(b.data().empty());
  ASSERT_EQ(result.events_size(), 1);
  const v1::EventRecord& e = result.events(0);
  EXPECT_EQ(e.id(), "done");
  EXPECT_EQ(e.opcode(), v1::OPCODE_TXOR);
  EXPECT_EQ(e.pipe(), v1::PIPE_V);
  EXPECT_EQ(e.batch_size(), 1u);
  ASSERT_EQ(e.trace_size(), 4);
  EXPECT_EQ(e.trace(0).op(), "vor");
  EXPECT_EQ(e.trace(0).dst(), "tmp");
  EXPECT_EQ(e.trace(0).elements(), 32u);
  const int64_t queued =
      e.queue_time().seconds() * 1000000000 + e.queue_time().nanos();
  const int64_t started =
      (e.start_time().seconds() - e.enqueue_time().seconds()) * 1000000000 +
      (e.start_time().nanos() - e.enqueue_time().nanos());
  EXPECT_EQ(queued, started);
}

// How the result of a job travels: the engine runs it, the codec's
// ResultEncodings says how each output goes back.
class EncodingTest : public ::testing::Test {
 protected:
  // 4x8 int32 tile `name` of zeros, sent as `encoding` (kNone: not sent).
  void Add(JobBuilder& job, const char* name, Encoding encoding) {
    const TileDesc desc = Desc(DType::kInt32, 4, 8);
    switch (encoding) {
      case Encoding::kNone:
        job.AddTile(name, desc);
        break;
      case Encoding::kData:
        job.AddData(name, desc, std::string(128, '\0'));
        break;
      case Encoding::kValues:
        job.AddValues(name, desc, std::vector<double>(32));
        break;
      case Encoding::kFill:
        job.AddFill(name, desc, 0);
        break;
    }
  }

  // The encoding of each output of `job`, in order.
  std::vector<Encoding> Encodings(JobBuilder& job) {
    std::vector<Encoding> out;
    absl::StatusOr<JobOutcome> outcome = engine_.Execute(job.spec());
    EXPECT_TRUE(outcome.ok()) << outcome.status();
    if (!outcome.ok()) return out;
    const Backend& backend = engine_.backends().Get(*job.spec().target);
    const ResultEncodings encodings(
        job.spec(), [&](Opcode opcode) { return backend.UsesTmp(opcode); });
    for (const OutputTile& o : outcome->outputs) {
      out.push_back(encodings.AsValues(o.name) ? Encoding::kValues
                                               : Encoding::kData);
    }
    return out;
  }

  Engine engine_{EngineOptions{}};
};

TEST_F(EncodingTest, ServerAllocatedDstInheritsSrc0Encoding) {
  for (Encoding src0 : {Encoding::kData, Encoding::kValues}) {
    for (Encoding src1 : {Encoding::kData, Encoding::kValues}) {
      JobBuilder job(Target::kHost);
      Add(job, "a", src0);
      Add(job, "b", src1);
      job.Tand("d", "a", "b");
      EXPECT_THAT(Encodings(job), ElementsAre(src0));
    }
  }
}

TEST_F(EncodingTest, DeclaredTilesKeepTheirOwnEncoding) {
  JobBuilder job(Target::kHost);
  Add(job, "a", Encoding::kValues);
  Add(job, "b", Encoding::kData);
  Add(job, "d", Encoding::kData);
  job.Tand("d", "a", "b");
  job.spec().outputs = {"d", "a", "b"};
  EXPECT_THAT(Encodings(job),
              ElementsAre(Encoding::kData, Encoding::kValues, Encoding::kData));
}

// A declared dst sent without elements comes back like its src0.
TEST_F(EncodingTest, DeclaredDstWithoutElementsInheritsSrc0Encoding) {
  JobBuilder job(Target::kHost);
  Add(job, "a", Encoding::kValues);
  Add(job, "b", Encoding::kData);
  Add(job, "d", Encoding::kNone);
  job.Tand("d", "a", "b");
  EXPECT_THAT(Encodings(job), ElementsAre(Encoding::kValues));
}

TEST_F(EncodingTest, EncodingFollowsAChain) {
  JobBuilder job(Target::kHost);
  Add(job, "a", Encoding::kValues);
  Add(job, "b", Encoding::kData);
  job.Tand("t", "a", "b");
  job.Txor("u", "t", "b");
  job.Tand("v", "b", "u");
  EXPECT_THAT(Encodings(job), ElementsAre(Encoding::kValues, Encoding::kValues,
                                          Encoding::kData));
}

// A fill travels as one number but comes back as data, its elements all
// written out; a dst computed from a fill source does too.
TEST_F(EncodingTest, FillComesBackAsData) {
  JobBuilder job(Target::kHost);
  job.AddFill("a", Desc(DType::kInt32, 4, 8), -3);
  job.AddValues("b", Desc(DType::kInt32, 4, 8), std::vector<double>(32, 6));
  job.Tand("d", "a", "b");
  job.spec().outputs = {"d", "a", "b"};
  EXPECT_THAT(Encodings(job),
              ElementsAre(Encoding::kData, Encoding::kData, Encoding::kValues));
  absl::StatusOr<JobOutcome> outcome = engine_.Execute(job.spec());
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_THAT(test::ToMatrix<int32_t>(outcome->outputs[0].tile).elements,
              Each(-3 & 6));
  EXPECT_THAT(test::ToMatrix<int32_t>(outcome->outputs[1].tile).elements,
              Each(-3));
}

// A tile that no input fed (sent without elements, never written) comes
// back as data; a server-allocated tmp is encoded like the dst it shadows.
TEST_F(EncodingTest, TilesWithoutInputsComeBackAsData) {
  JobBuilder job(Target::kA2A3);
  Add(job, "a", Encoding::kValues);
  Add(job, "b", Encoding::kValues);
  Add(job, "z", Encoding::kNone);
  job.Txor("d", "a", "b", "t");
  job.spec().outputs = {"d", "t", "z"};
  EXPECT_THAT(Encodings(job), ElementsAre(Encoding::kValues, Encoding::kValues,
                                          Encoding::kData));
}

// ResultBytes: 8 bytes per element for a tile that goes back as values,
// its own bytes otherwise; outputs only.
TEST(ResultBytesTest, CountsEachOutputAsItTravels) {
  JobBuilder job(Target::kHost);
  job.AddValues("a", Desc(DType::kInt16, 4, 8), std::vector<double>(32));
  job.AddData("b", Desc(DType::kInt16, 4, 8), std::string(64, '\0'));
  job.Tand("v", "a", "b");  // like a: values
  job.Tand("d", "b", "a");  // like b: data
  const ResultEncodings encodings(job.spec(), [](Opcode) { return false; });
  JobCost cost;
  cost.outputs = {{"v", 32, 64}, {"d", 32, 64}};
  EXPECT_EQ(ResultBytes(cost, encodings), 32 * 8 + 64u);
  cost.outputs = {{"d", 32, 64}};
  EXPECT_EQ(ResultBytes(cost, encodings), 64u);
}

// proto/wire.h states element sizes for code that has no engine (ptoctl,
// the fuzzers, random jobs); they must agree with the engine's.
TEST(WireTest, ElementSizesAgreeWithTheEngine) {
  for (int d = 0; d <= static_cast<int>(DType::kFloat32); ++d) {
    const DType dtype = static_cast<DType>(d);
    EXPECT_EQ(WireElementBytes(ToProto(dtype)), ElementBytes(dtype))
        << DTypeName(dtype);
  }
  EXPECT_EQ(WireElementBytes(v1::DTYPE_UNSPECIFIED), 0u);
  EXPECT_EQ(WireElementBytes(1000), 0u);
}

// A batch is its jobs, each scanned as a job is; the shape sums them, and
// a problem names the job's place.
TEST(CheckJobBatchWireTest, SumsItsJobsAndNamesTheJobAtFault) {
  v1::JobBatch batch;
  for (int i = 0; i < 3; ++i) *batch.add_jobs() = SmallJob();
  batch.mutable_jobs(1)->set_assembly("%c = tand %a, %b");
  absl::StatusOr<BatchShape> shape = ScanBatch(batch.SerializeAsString(), 3);
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->jobs, 3u);
  EXPECT_EQ(shape->total.tiles, 6u);
  EXPECT_EQ(shape->total.instructions, 3u);
  EXPECT_EQ(shape->total.assembly_bytes, 16u);
  ASSERT_EQ(shape->job_bytes.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(shape->job_bytes[i], batch.jobs(i).ByteSizeLong()) << i;
  }
  EXPECT_THAT(ScanBatch(batch.SerializeAsString(), 2).status(),
              StatusIs(kExhausted,
                       HasSubstr("the batch has more than 2 jobs, the limit")));
  EngineLimits limits;
  limits.max_instructions_per_job = 1;
  *batch.mutable_jobs(2)->add_instructions() = batch.jobs(2).instructions(0);
  EXPECT_THAT(ScanBatch(batch.SerializeAsString(), 3, limits).status(),
              StatusIs(kExhausted,
                       HasSubstr("job 2: job has more than 1 instructions")));
  // Counts start again with each job: two jobs of one instruction each
  // pass a limit of one.
  batch.mutable_jobs(2)->mutable_instructions()->RemoveLast();
  EXPECT_TRUE(ScanBatch(batch.SerializeAsString(), 3, limits).ok());
  // Empty.
  shape = ScanBatch("", 1);
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(shape->jobs, 0u);
}

// A million empty jobs fit in 2 MB; the scan refuses them without keeping
// a place per job past the limit.
TEST(CheckJobBatchWireTest, ManyEmptyJobsAreRefusedCheaply) {
  std::string bytes;
  for (int i = 0; i < 1'000'000; ++i) bytes += Field(1, 2, std::string(1, 0));
  EXPECT_THAT(ScanBatch(bytes, 256).status(),
              StatusIs(kExhausted, HasSubstr("more than 256 jobs")));
}

TEST(CheckJobBatchWireTest, MalformedBatchesAreRefused) {
  v1::JobBatch batch;
  *batch.add_jobs() = SmallJob();
  *batch.add_jobs() = SmallJob();
  const std::string bytes = batch.SerializeAsString();
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    v1::JobBatch parsed;
    if (parsed.ParseFromString(bytes.substr(0, cut))) continue;  // a boundary
    EXPECT_THAT(ScanBatch(bytes.substr(0, cut), 8).status(),
                StatusIs(kInvalid, HasSubstr("is not a ptoserve.v1.JobBatch")))
        << cut;
  }
  // A job's field on the wrong wire type is unknown, and bounded as in a
  // job; a group is refused.
  std::string wrong;
  for (int i = 0; i < 17; ++i) wrong += Field(1, 0, "\x01");
  EXPECT_THAT(ScanBatch(wrong, 64).status(),
              StatusIs(kInvalid, HasSubstr("field 1, wire type 0")));
  EXPECT_THAT(ScanBatch(Field(9, 3, "") + Field(9, 4, ""), 8).status(),
              StatusIs(kInvalid, HasSubstr("field 9 is a group")));
}

// Shared memory on the wire: slices in tiles and output_regions are fields
// the scan knows (their region names bounded like other names, the map's
// entries like outputs), never counted as unknown.
v1::Job SharedJob() {
  v1::Job job = SmallJob();
  job.set_target(v1::TARGET_HOST);
  for (auto& [name, tile] : *job.mutable_tiles()) {
    tile.clear_fill();
    tile.clear_values();
    tile.clear_address();
    v1::RegionSlice* slice = tile.mutable_shared();
    slice->set_region("r");
    slice->set_offset(name == "a" ? 0 : 64);
    slice->set_size(32);
  }
  v1::RegionSlice& out = (*job.mutable_output_regions())["c"];
  out.set_region("r");
  out.set_offset(128);
  out.set_size(32);
  return job;
}

TEST(CheckJobWireTest, SharedSlicesAreKnownFieldsWithBoundedNames) {
  std::string bytes = SharedJob().SerializeAsString();
  for (int i = 0; i < 16; ++i) bytes += Field(100 + i, 0, "\x01");
  EXPECT_TRUE(Scan(bytes).ok());

  v1::Job job = SharedJob();
  job.mutable_tiles()->at("a").mutable_shared()->set_region(
      std::string(300, 'r'));
  EXPECT_THAT(Scan(job.SerializeAsString()),
              StatusIs(kInvalid, HasSubstr("region name \"rrrr")));
  job = SharedJob();
  job.mutable_output_regions()->at("c").set_region(std::string(300, 'r'));
  EXPECT_THAT(Scan(job.SerializeAsString()),
              StatusIs(kInvalid, HasSubstr("region name \"rrrr")));
  job = SharedJob();
  (*job.mutable_output_regions())[std::string(300, 'k')];
  EXPECT_THAT(Scan(job.SerializeAsString()),
              StatusIs(kInvalid, HasSubstr("output_regions key")));
  EngineLimits limits;
  limits.max_tiles_per_job = 3;
  job = SharedJob();
  for (const char* name : {"d", "e", "f"}) {
    (*job.mutable_output_regions())[name];
  }
  EXPECT_THAT(Scan(job.SerializeAsString(), limits),
              StatusIs(kExhausted,
                       HasSubstr("output_regions has more than 3 entries")));
}

// Resolves every slice into one buffer, as if it were the region "r".
class FakeShared final : public SharedSlices {
 public:
  absl::StatusOr<absl::Span<uint8_t>> Resolve(const v1::RegionSlice& slice,
                                              absl::string_view tile,
                                              bool write) override {
    resolved.push_back(absl::StrCat(SharedFieldName(tile, write),
                                    write ? " w " : " r ", tile));
    if (slice.region() != "r") return absl::NotFoundError("no such region");
    return absl::MakeSpan(bytes + slice.offset(), slice.size());
  }
  absl::Status CheckOverlaps() const override {
    ++checked;
    return overlap;
  }
  uint8_t bytes[256] = {};
  std::vector<std::string> resolved;
  mutable int checked = 0;
  absl::Status overlap;
};

TEST(ToJobSpecTest, SharedSlicesBecomeBytesAndPlaces) {
  const v1::Job job = SharedJob();
  EXPECT_THAT(ToJobSpec(job).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("is in shared memory, which this server "
                                 "does not serve")));
  v1::Job placed_only = SmallJob();
  (*placed_only.mutable_output_regions())["c"].set_region("r");
  EXPECT_THAT(ToJobSpec(placed_only).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("output_regions[\"c\"]")));

  FakeShared shared;
  ASSERT_OK_AND_ASSIGN(JobSpec spec, ToJobSpec(job, &shared));
  ASSERT_EQ(spec.tiles.size(), 2u);
  EXPECT_EQ(spec.tiles[0].encoding, Encoding::kData);
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(spec.tiles[0].data.data()),
            shared.bytes);
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(spec.tiles[1].data.data()),
            shared.bytes + 64);
  ASSERT_EQ(spec.places.size(), 1u);
  EXPECT_EQ(spec.places[0].name, "c");
  EXPECT_EQ(spec.places[0].bytes.data(), shared.bytes + 128);
  EXPECT_EQ(spec.places[0].bytes.size(), 32u);
  EXPECT_EQ(shared.checked, 1);
  EXPECT_THAT(shared.resolved, ::testing::UnorderedElementsAre(
                                   "tile \"a\" r a", "tile \"b\" r b",
                                   "output_regions[\"c\"] w c"));

  shared.overlap = absl::InvalidArgumentError("they overlap");
  EXPECT_THAT(ToJobSpec(job, &shared).status(),
              StatusIs(kInvalid, HasSubstr("they overlap")));
  v1::Job short_slice = SharedJob();
  short_slice.mutable_tiles()->at("b").mutable_shared()->set_size(31);
  EXPECT_THAT(ToJobSpec(short_slice, &shared).status(),
              StatusIs(kInvalid, HasSubstr("tile \"b\": its slice is 31 bytes; "
                                           "a 1x32 uint8 tile is 32")));
  v1::Job both = SharedJob();
  both.mutable_tiles()->at("a").set_data(std::string(32, 'x'));
  EXPECT_THAT(ToJobSpec(both, &shared).status(),
              StatusIs(kInvalid, HasSubstr("data, values, fill and shared")));
}

// Jobs of few tiles and of many: each declared tile travels back as it was
// sent, each new dst as its src0.
TEST(ResultEncodingsTest, EachTileAsSentAndEachNewDstAsItsSrc0) {
  for (int tiles : {3, 16, 17, 40}) {
    JobSpec spec;
    for (int t = 0; t < tiles; ++t) {
      TileInput in;
      in.name = absl::StrCat("in", t);
      in.encoding = t % 3 == 0 ? Encoding::kValues : Encoding::kData;
      spec.tiles.push_back(in);
    }
    for (int t = 0; t < tiles; ++t) {
      Instruction inst;
      inst.opcode = Opcode::kTand;
      inst.dst = absl::StrCat("out", t);
      inst.src0 = absl::StrCat("in", t);
      inst.src1 = "in0";
      spec.instructions.push_back(inst);
    }
    const ResultEncodings encodings(spec, [](Opcode) { return false; });
    for (int t = 0; t < tiles; ++t) {
      const bool values = t % 3 == 0;
      EXPECT_EQ(encodings.AsValues(absl::StrCat("in", t)), values)
          << tiles << " tiles, in" << t;
      EXPECT_EQ(encodings.AsValues(absl::StrCat("out", t)), values)
          << tiles << " tiles, out" << t;
    }
    EXPECT_FALSE(encodings.AsValues("nowhere"));
  }
}

TEST(ResultBytesTest, PlacedOutputsTravelAsTheirSliceOnly) {
  const v1::Job job = SharedJob();
  FakeShared shared;
  ASSERT_OK_AND_ASSIGN(JobSpec spec, ToJobSpec(job, &shared));
  ResultEncodings encodings(spec, [](Opcode) { return false; });
  encodings.SetPlaced(job.output_regions());
  JobCost cost;
  cost.outputs = {{"c", 32, 32}, {"a", 32, 32}};
  EXPECT_EQ(ResultBytes(cost, encodings), 32u);

  Engine engine{EngineOptions{}};
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine.Execute(spec));
  v1::JobResult result;
  ToJobResult(std::move(outcome), encodings, &result);
  const v1::Tile& c = result.tiles().at("c");
  EXPECT_TRUE(c.data().empty());
  EXPECT_EQ(c.values_size(), 0);
  EXPECT_EQ(c.shared().ShortDebugString(),
            job.output_regions().at("c").ShortDebugString());
  EXPECT_EQ(c.rows(), 1u);
  EXPECT_EQ(c.cols(), 32u);
  EXPECT_EQ(c.dtype(), v1::DTYPE_UINT8);
}

}  // namespace
}  // namespace ptoserve

namespace ptoserve {
namespace {

// The scan keeps a Job's id, so that a job refused before it is parsed is
// answered with it: the last id on the wire, as the parser takes it.
TEST(CodecTest, TheWireScanKeepsTheJobsId) {
  v1::Job job = SmallJob();
  job.set_id("job-17");
  std::string bytes = job.SerializeAsString();
  google::protobuf::io::ArrayInputStream in(bytes.data(),
                                            static_cast<int>(bytes.size()));
  absl::StatusOr<WireShape> shape =
      CheckJobWire(&in, bytes.size(), EngineLimits{});
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->id, "job-17");
  v1::Job later;
  later.set_id("last");
  bytes += later.SerializeAsString();  // a second id field
  google::protobuf::io::ArrayInputStream again(bytes.data(),
                                               static_cast<int>(bytes.size()));
  shape = CheckJobWire(&again, bytes.size(), EngineLimits{});
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->id, "last");
  v1::Job parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.id(), shape->id);
}

}  // namespace
}  // namespace ptoserve
