// The small-job path (proto/small_job.h, proto/result_wire.h) against the
// generic one: what it reads is the job the generic path makes of the same
// bytes, what it declines goes the generic way, and through the pipeline a
// job gets the same answer, or the same refusal, whichever path reads it.
#include "proto/small_job.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/integration/random_jobs.h"
#include "tests/server/pipeline.h"
#include "tests/server/small_job_checks.h"

namespace ptoserve {
namespace {

// c = a & b on 2x8 int32 tiles sent as data.
v1::Job Tand() {
  v1::Job job;
  job.set_id("job-1");
  for (const char* name : {"a", "b"}) {
    v1::Tile& tile = (*job.mutable_tiles())[name];
    tile.set_dtype(v1::DTYPE_INT32);
    tile.set_rows(2);
    tile.set_cols(8);
    tile.set_data(std::string(2 * 8 * 4, name[0]));
  }
  v1::Instruction* inst = job.add_instructions();
  inst->set_opcode(v1::OPCODE_TAND);
  inst->set_dst("c");
  inst->set_src0("a");
  inst->set_src1("b");
  return job;
}

// A field this server's schema lacks (number 99, a varint): protobuf
// keeps it and the job means the same; the small path declines it.
std::string WithUnknownField(std::string bytes) {
  return bytes + std::string("\x98\x06\x01", 3);
}

// A map entry or message field appended as raw bytes: field `field` of
// the Job, length-delimited.
std::string Appended(std::string bytes, int field, const std::string& value) {
  bytes.push_back(static_cast<char>(field << 3 | 2));
  bytes.push_back(static_cast<char>(value.size()));
  return bytes + value;
}

const EngineLimits kLimits;

TEST(SmallJobTest, ReadsTheCommonJobAsToJobSpecDoes) {
  const std::string bytes = Tand().SerializeAsString();
  const std::optional<SmallJob> small = ReadSmallJob(bytes, kLimits);
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->header.id, "job-1");
  ASSERT_EQ(small->spec.tiles.size(), 2u);
  EXPECT_EQ(small->spec.tiles[0].name, "a");
  // The tile's bytes are a view into the request's.
  EXPECT_GE(small->spec.tiles[0].data.data(), bytes.data());
  EXPECT_LT(small->spec.tiles[0].data.data(), bytes.data() + bytes.size());
  EXPECT_EQ(SmallJobDiffers(bytes, kLimits), "");
}

TEST(SmallJobTest, RandomValidJobsAllTakeTheSmallPathAndReadTheSame) {
  std::mt19937 rng(53);
  for (int i = 0; i < 500; ++i) {
    const std::string bytes = RandomValidJob(&rng).job.SerializeAsString();
    ASSERT_TRUE(ReadSmallJob(bytes, kLimits).has_value()) << "job " << i;
    ASSERT_EQ(SmallJobDiffers(bytes, kLimits), "") << "job " << i;
  }
}

TEST(SmallJobTest, EdgesItCoversReadAsTheGenericPathReadsThem) {
  std::vector<std::pair<std::string, std::string>> cases;
  v1::Job job = Tand();
  job.set_target(v1::TARGET_A5);
  job.set_mode(v1::MODE_MANUAL);
  job.set_priority(3);
  job.mutable_timeout()->set_seconds(2);
  job.mutable_timeout()->set_nanos(-5);
  job.add_outputs("c");
  job.add_outputs("c");
  v1::Tile& a = (*job.mutable_tiles())["a"];
  a.set_valid_rows(1);
  a.set_valid_cols(3);
  a.set_layout(v1::LAYOUT_COL_MAJOR);
  a.set_location(v1::LOCATION_SCALING);
  a.set_address(0);
  (*job.mutable_tiles())[""].set_dtype(v1::DTYPE_FLOAT16);  // no elements
  v1::Instruction* inst = job.mutable_instructions(0);
  inst->set_tmp("t");
  inst->set_record_event("done");
  inst->add_wait_events("");
  inst->add_wait_events("x");
  cases.push_back({"every covered field", job.SerializeAsString()});
  // The last of a repeated singular field wins, as it does for protobuf.
  cases.push_back({"id twice", Appended(Tand().SerializeAsString(), 1, "b")});
  cases.push_back(
      {"an empty assembly", Appended(Tand().SerializeAsString(), 9, "")});
  for (const auto& [what, bytes] : cases) {
    ASSERT_TRUE(ReadSmallJob(bytes, kLimits).has_value()) << what;
    EXPECT_EQ(SmallJobDiffers(bytes, kLimits), "") << what;
  }
}

TEST(SmallJobTest, DeclinesWhatItDoesNotCover) {
  std::vector<std::pair<std::string, std::string>> cases;
  const auto with = [&](const char* what, auto change) {
    v1::Job job = Tand();
    change(&job);
    cases.push_back({what, job.SerializeAsString()});
  };
  const auto tile = [](v1::Job* job) { return &(*job->mutable_tiles())["a"]; };
  with("values", [&](v1::Job* j) {
    tile(j)->clear_data();
    tile(j)->add_values(1);
  });
  with("fill", [&](v1::Job* j) { tile(j)->set_fill(0); });
  with("shared", [&](v1::Job* j) { tile(j)->mutable_shared(); });
  with("assembly", [&](v1::Job* j) { j->set_assembly("tand c, a, b"); });
  with("output_regions", [&](v1::Job* j) {
    (*j->mutable_output_regions())["c"].set_region("r");
  });
  with("an unset dtype", [&](v1::Job* j) { tile(j)->clear_dtype(); });
  with("an unknown dtype",
       [&](v1::Job* j) { tile(j)->set_dtype(static_cast<v1::DType>(10)); });
  with("an unknown layout",
       [&](v1::Job* j) { tile(j)->set_layout(static_cast<v1::Layout>(2)); });
  with("an unknown location", [&](v1::Job* j) {
    tile(j)->set_location(static_cast<v1::Location>(7));
  });
  with("a negative location", [&](v1::Job* j) {
    tile(j)->set_location(static_cast<v1::Location>(-1));
  });
  with("an unknown target",
       [&](v1::Job* j) { j->set_target(static_cast<v1::Target>(4)); });
  with("an unknown mode",
       [&](v1::Job* j) { j->set_mode(static_cast<v1::Mode>(2)); });
  with("an unset opcode",
       [&](v1::Job* j) { j->mutable_instructions(0)->clear_opcode(); });
  with("an unknown opcode", [&](v1::Job* j) {
    j->mutable_instructions(0)->set_opcode(static_cast<v1::Opcode>(99));
  });
  with("a name not in ASCII",
       [&](v1::Job* j) { j->mutable_instructions(0)->set_dst("c\xc3\xa9"); });
  with("a name over 256 bytes", [&](v1::Job* j) {
    j->mutable_instructions(0)->set_dst(std::string(257, 'c'));
  });
  with("an id not in ASCII", [&](v1::Job* j) { j->set_id("\xff"); });
  with("17 tiles", [&](v1::Job* j) {
    for (int i = 0; i < 15; ++i) {
      (*j->mutable_tiles())[absl::StrCat("t", i)].set_dtype(v1::DTYPE_INT8);
    }
  });
  with("17 instructions", [&](v1::Job* j) {
    for (int i = 0; i < 16; ++i) *j->add_instructions() = j->instructions(0);
  });
  with("more than 64 KiB", [&](v1::Job* j) {
    tile(j)->set_rows(1);
    tile(j)->set_cols(17 << 10);
    tile(j)->set_data(std::string(68 << 10, 'a'));
  });
  with("more waits than the limit", [&](v1::Job* j) {
    for (size_t i = 0; i <= kLimits.max_waits_per_instruction; ++i) {
      j->mutable_instructions(0)->add_wait_events("e");
    }
  });
  const std::string bytes = Tand().SerializeAsString();
  cases.push_back({"a field the schema lacks", WithUnknownField(bytes)});
  cases.push_back({"truncated", bytes.substr(0, bytes.size() - 1)});
  cases.push_back(
      {"a tile named twice", Appended(bytes, 4,
                                      std::string("\x0a\x01"
                                                  "a\x12\x02\x08\x05",
                                                  7))});
  cases.push_back({"the timeout twice",
                   Appended(Appended(bytes, 8, "\x08\x01"), 8, "\x10\x01")});
  for (const auto& [what, bytes] : cases) {
    EXPECT_FALSE(ReadSmallJob(bytes, kLimits).has_value()) << what;
  }
  // Within the server's own limits, when they are lower.
  EngineLimits two_tiles;
  two_tiles.max_tiles_per_job = 1;
  EXPECT_FALSE(ReadSmallJob(bytes, two_tiles).has_value());
}

TEST(SmallJobTest, PaddedTagsAndLengthsReadAsProtobufReadsThem) {
  // The id's tag and length, then the first tile entry's and its name's:
  // at most 5 bytes each protobuf reads, so does the small path.
  const std::string bytes = Tand().SerializeAsString();
  ASSERT_EQ(bytes.substr(0, 2), std::string("\x0a\x05", 2));  // id
  ASSERT_EQ(bytes[7], '\x22');  // a tile entry, after the id's 7 bytes
  for (const size_t at : {0, 1, 7, 8, 9, 10}) {
    for (const int width : {2, 5, 6, 10}) {
      std::string padded = PaddedVarint(bytes, at, width);
      if (at > 8) padded[8] += width - 1;  // its message's length
      v1::Job parsed;
      const bool parses =
          parsed.ParseFromArray(padded.data(), static_cast<int>(padded.size()));
      EXPECT_EQ(parses, width <= 5) << "at " << at << ", " << width;
      EXPECT_EQ(ReadSmallJob(padded, kLimits).has_value(), width <= 5)
          << "at " << at << ", " << width;
      EXPECT_EQ(SmallJobDiffers(padded, kLimits), "")
          << "at " << at << ", " << width;
    }
  }
}

TEST(SmallJobTest, MangledBytesAreDeclinedOrReadAsTheGenericPathReadsThem) {
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) {
    std::string bytes = RandomValidJob(&rng, 2).job.SerializeAsString();
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 4) {
        case 0:
          bytes[at] = static_cast<char>(rng());
          break;
        case 1:
          bytes[at] ^= static_cast<char>(1 << (rng() % 8));
          break;
        case 2:
          bytes.erase(at, 1 + rng() % 4);
          break;
        default:
          bytes.insert(at, 1, static_cast<char>(rng()));
      }
    }
    ASSERT_EQ(SmallJobDiffers(bytes, kLimits), "") << "input " << i;
  }
}

// Through the pipeline, as the gRPC door asks for it (bytes): the same job
// with a field the schema lacks goes the generic way.
class SamePathAnswerTest : public ::testing::Test, protected Pipeline {
 protected:
  SamePathAnswerTest() : Pipeline(ServiceLimits(), 256 << 20) {}

  void Run(Outcome* o, const std::string& bytes) {
    Execute(o, BodyFormat::kProtobuf, bytes, "the request", nullptr,
            JobReply::Form::kBytes);
    RunScheduler();
    ASSERT_TRUE(o->done.WaitForNotificationWithTimeout(absl::Seconds(60)));
  }
};

// The reply with what differs from run to run (when, and in which batch)
// cleared, serialized deterministically.
std::string Timeless(const std::string& reply) {
  v1::JobResult result;
  if (!result.ParseFromString(reply)) return "not a JobResult";
  for (v1::EventRecord& e : *result.mutable_events()) {
    e.clear_enqueue_time();
    e.clear_start_time();
    e.clear_end_time();
    e.clear_queue_time();
    e.clear_execution_time();
    e.clear_batch_id();
    e.clear_batch_size();
  }
  return DeterministicBytes(result);
}

TEST_F(SamePathAnswerTest, EveryJobGetsTheSameAnswerEitherWay) {
  std::mt19937 rng(11);
  for (int i = 0; i < 300; ++i) {
    const bool valid = i % 3 != 0;
    ExpectedJob expected;
    if (valid) {
      expected = RandomValidJob(&rng);
    } else {
      expected.job = RandomInvalidJob(&rng);
    }
    const std::string bytes = expected.job.SerializeAsString();
    if (valid) ASSERT_TRUE(ReadSmallJob(bytes, kLimits).has_value());
    const std::string generic = WithUnknownField(bytes);
    ASSERT_FALSE(ReadSmallJob(generic, kLimits).has_value());
    Outcome small, parsed;
    Run(&small, bytes);
    Run(&parsed, generic);
    ASSERT_EQ(small.status, parsed.status) << "job " << i;
    EXPECT_EQ(small.status.ok(), valid) << "job " << i << ": " << small.status;
    if (!small.status.ok()) continue;
    EXPECT_EQ(Timeless(small.reply_bytes), Timeless(parsed.reply_bytes))
        << "job " << i;
    v1::JobResult result;
    ASSERT_TRUE(result.ParseFromString(small.reply_bytes));
    EXPECT_EQ(CheckResult(expected, result), "") << "job " << i;
  }
}

}  // namespace
}  // namespace ptoserve
