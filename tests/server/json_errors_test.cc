// protobuf's JSON parse errors for a job, in its sender's words: each case
// parses a body with protobuf and checks what the sender is told.
#include "proto/json_errors.h"

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <string>

#include "ptoserve/v1/job.pb.h"

namespace ptoserve {
namespace {

// What the sender of `body` is told, parsed as every door parses a job.
std::string Told(const std::string& body) {
  v1::Job job;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      body, &job, JobJsonParseOptions());
  EXPECT_FALSE(parsed.ok()) << body;
  return ReadableJsonError("the body", body, std::string(parsed.message()),
                           *v1::Job::descriptor());
}

TEST(JsonErrorsTest, EnumsInAnyCaseByAnyOfTheirNames) {
  for (const char* body :
       {R"({"target": "TARGET_A2A3", "tiles": {"a": {"dtype": "DTYPE_INT16"}},
            "instructions": [{"opcode": "OPCODE_TXOR"}]})",
        R"({"target": "a2a3", "tiles": {"a": {"dtype": "int16"}},
            "instructions": [{"opcode": "txor"}]})",
        R"({"target": "A2A3", "tiles": {"a": {"dtype": "INT16"}},
            "instructions": [{"opcode": "TXOR"}]})",
        R"({"target": "Target_a2a3", "tiles": {"a": {"dtype": "Int16"}},
            "instructions": [{"opcode": "tXor"}]})"}) {
    v1::Job job;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(
                    body, &job, JobJsonParseOptions())
                    .ok())
        << body;
    EXPECT_EQ(job.target(), v1::TARGET_A2A3) << body;
    EXPECT_EQ(job.tiles().at("a").dtype(), v1::DTYPE_INT16) << body;
    EXPECT_EQ(job.instructions(0).opcode(), v1::OPCODE_TXOR) << body;
  }
}

TEST(JsonErrorsTest, NamesTheTileAndTheFieldAndWhatWouldDo) {
  // An enum's values by their short names, which JSON takes too.
  EXPECT_EQ(Told(R"({"tiles": {"a": {"dtype": "i16"}}})"),
            "tiles[\"a\"].dtype: \"i16\" is not one of int8, uint8, int16, "
            "uint16, int32, uint32, float16, bfloat16, float32");
  // The second tile, by its name, not its place.
  EXPECT_EQ(Told(R"({"tiles": {"x": {"rows": 1}, "b": {"rows": -1}}})"),
            "tiles[\"b\"].rows: -1 is not a whole number from 0 to "
            "4294967295");
  EXPECT_EQ(Told(R"({"tiles": {"a": {"values": [1, "x"]}}})"),
            "tiles[\"a\"].values[1]: \"x\" is not a number");
  EXPECT_EQ(Told(R"({"tiles": {"a": {"shared": {"offset": true}}}})"),
            "tiles[\"a\"].shared.offset: true is not a whole number from 0 "
            "to 18446744073709551615");
  EXPECT_EQ(Told(R"({"instructions": [{}, {"opcode": "TEND"}]})"),
            "instructions[1].opcode: \"TEND\" is not one of tand, txor, tor, "
            "tnot");
  EXPECT_EQ(Told(R"({"target": "a6"})"),
            "target: \"a6\" is not one of host, a2a3, a5");
  // An enum without short names says its own.
  EXPECT_EQ(Told(R"({"mode": "auto"})"),
            "mode: \"auto\" is not one of MODE_MANUAL");
  EXPECT_EQ(Told(R"({"timeout": "2"})"),
            "timeout is not a duration: seconds ending in s, e.g. \"2.5s\"");
  EXPECT_EQ(Told(R"({"instructions": [{"dst": 5}]})"),
            "instructions[0].dst: 5 is not a string, in quotes");
}

TEST(JsonErrorsTest, UnknownFieldsListTheFieldsThereAre) {
  EXPECT_EQ(Told(R"({"tiles": {"a": {"dtyp": 1}}})"),
            "tiles[\"a\"]: a tile has no field \"dtyp\"; its fields are "
            "dtype, rows, cols, validRows, validCols, layout, location, "
            "address, data, values, fill, shared");
  EXPECT_EQ(Told(R"({"tile": {}})"),
            "a job has no field \"tile\"; its fields are id, target, mode, "
            "tiles, instructions, outputs, priority, timeout, assembly, "
            "outputRegions");
}

TEST(JsonErrorsTest, NeverATypeUrlOrACaretLine) {
  for (const std::string& body :
       {std::string(""), std::string("  \n"), std::string("[1, 2]"),
        std::string(R"({"tiles" 1})"), std::string(R"({"tiles": )"),
        std::string(R"({"tiles": {"a": {"fill": 1e400}}})"),
        std::string(R"({"mode": "fast"})")}) {
    const std::string told = Told(body);
    EXPECT_EQ(told.find("type.googleapis.com"), std::string::npos) << told;
    EXPECT_EQ(told.find("TYPE_"), std::string::npos) << told;
    EXPECT_EQ(told.find('^'), std::string::npos) << told;
    EXPECT_EQ(told.find('\n'), std::string::npos) << told;
  }
  EXPECT_EQ(Told(""),
            "the body is empty; a job is {\"tiles\": {...}, "
            "\"instructions\": [...]}");
  EXPECT_EQ(Told("[1, 2]"),
            "the body is not a JSON object; a job is {\"tiles\": {...}, "
            "\"instructions\": [...]}");
  EXPECT_EQ(Told(R"({"tiles" 1})"),
            "the body is not a ptoserve.v1.Job in JSON: Expected : between "
            "key:value pair, near {\"tiles\" 1}");
}

TEST(JsonErrorsTest, KeyAtFindsAMapsEntryInWrittenOrder) {
  const std::string body =
      R"({"id": "x", "outputRegions": {"p": {}}, "tiles": {"a": {"rows": [1, {"b": 2}]}, "z\"q": 1, "c": {}}})";
  EXPECT_EQ(KeyAt(body, "tiles", 0), "a");
  EXPECT_EQ(KeyAt(body, "tiles", 1), "z\"q");
  EXPECT_EQ(KeyAt(body, "tiles", 2), "c");
  EXPECT_EQ(KeyAt(body, "tiles", 3), "");
  EXPECT_EQ(KeyAt(body, "output_regions", 0), "p");
  EXPECT_EQ(KeyAt("{", "tiles", 0), "");
  EXPECT_EQ(KeyAt(R"({"tiles": 1})", "tiles", 0), "");
}

}  // namespace
}  // namespace ptoserve
