#include "server/intake/json_scan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

TEST(ScanJsonTest, CountsObjectsOutsideStrings) {
  const JsonBounds three{3, 8};
  EXPECT_TRUE(ScanJson(R"({"a": {}, "b": [{}]})", three).ok());
  const absl::Status four = ScanJson(R"({"a": {}, "b": [{}, {}]})", three);
  EXPECT_EQ(four.code(), absl::StatusCode::kInvalidArgument);
  // The fourth "{" is at byte 20.
  EXPECT_THAT(four.message(),
              HasSubstr("more than 3 JSON objects (at byte 20)"));
  // Braces in strings, escaped quotes included, are text.
  EXPECT_TRUE(ScanJson(R"({"a": "{{{{\"{{{{", "b\"{": {}})", three).ok());
  EXPECT_TRUE(ScanJson(R"({"a": "\\", "b": {}})", three).ok());
}

TEST(ScanJsonTest, BoundsTheDepthOfObjectsAndArrays) {
  const JsonBounds two_deep{100, 2};
  EXPECT_TRUE(ScanJson(R"({"a": [1, 2], "b": [3]})", two_deep).ok());
  const absl::Status deep = ScanJson(R"({"a": [[1]]})", two_deep);
  EXPECT_THAT(deep.message(), HasSubstr("more than 2 deep (at byte 7)"));
  EXPECT_TRUE(ScanJson(std::string(100000, '[') + std::string(100000, ']'),
                       JsonBounds{0, 100000})
                  .ok());
  EXPECT_FALSE(ScanJson(std::string(100001, '['), JsonBounds{0, 100000}).ok());
  // Closing more than was opened is the parser's to refuse, not a way to
  // earn depth.
  EXPECT_FALSE(ScanJson("]]]][[[", two_deep).ok());
}

TEST(ScanJsonTest, RefusesAStringThatNeverEnds) {
  const absl::Status open = ScanJson(R"({"a": "{{{)", JsonBounds{10, 10});
  EXPECT_THAT(open.message(), HasSubstr("ends inside a string (10 bytes)"));
  EXPECT_FALSE(ScanJson(R"("\")", JsonBounds{10, 10}).ok());
}

}  // namespace
}  // namespace ptoserve
