// An endpoint's route table: exact paths and patterns with parameters,
// the method that tells 404 from 405, the name a request goes by in
// metrics, and the listing a 404 gives.
#include "server/httpd/route_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ptoserve {
namespace {

enum { kPage, kExecute, kModel, kModelReady, kInfer, kVersionInfer };

RouteTable Table() {
  return RouteTable({
      {kPage, "GET", "/"},
      {kExecute, "POST", "/v1/jobs:execute"},
      {kModel, "GET", "/v2/models/{model}"},
      {kModelReady, "GET", "/v2/models/{model}/ready"},
      {kInfer, "POST", "/v2/models/{model}/infer"},
      {kVersionInfer, "POST", "/v2/models/{model}/versions/{version}/infer"},
  });
}

TEST(RouteTableTest, ExactPathsAndPatternsFindTheirRouteAndParameters) {
  const RouteTable table = Table();
  RouteMatch m = table.Find("GET", "/");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->id, kPage);
  m = table.Find("POST", "/v1/jobs:execute");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->id, kExecute);
  EXPECT_TRUE(m.params.empty());
  m = table.Find("POST", "/v2/models/tand_a5/infer");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->id, kInfer);
  EXPECT_EQ(m.param("model"), "tand_a5");
  EXPECT_EQ(m.param("version"), "");
  m = table.Find("POST", "/v2/models/job/versions/1/infer");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->id, kVersionInfer);
  EXPECT_EQ(m.param("model"), "job");
  EXPECT_EQ(m.param("version"), "1");
  // HEAD is GET's.
  m = table.Find("HEAD", "/v2/models/txor/ready");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->id, kModelReady);
  EXPECT_EQ(m.param("model"), "txor");
}

TEST(RouteTableTest, ANearMissIsNoRoute) {
  const RouteTable table = Table();
  for (const char* path :
       {"", "//", "/v1", "/v1/jobs:execute/", "/v1/jobs:executex", "/v2/models",
        "/v2/models/", "/v2/models//infer", "/v2/models/a/b",
        "/v2/models/a/infer/x", "/v2/models/a/versions//infer",
        "v1/jobs:execute"}) {
    const RouteMatch m = table.Find("POST", path);
    EXPECT_EQ(m.route, nullptr) << path;
    EXPECT_EQ(m.allow, "") << path;
    EXPECT_EQ(m.named, nullptr) << path;
    EXPECT_EQ(table.Named(path), nullptr) << path;
  }
}

TEST(RouteTableTest, AKnownPathWithAnotherMethodSaysWhichItTakes) {
  const RouteTable table = Table();
  RouteMatch m = table.Find("GET", "/v1/jobs:execute");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_EQ(m.allow, "POST");
  m = table.Find("DELETE", "/v2/models/x");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_EQ(m.allow, "GET");
  // Named by its pattern whatever the method or the parameter's value, and
  // Find says so in the same pass: a route matched, or a 405's.
  const HttpRoute* named = table.Named("/v2/models/anything-at-all/infer");
  ASSERT_NE(named, nullptr);
  EXPECT_STREQ(named->pattern, "/v2/models/{model}/infer");
  EXPECT_EQ(table.Find("GET", "/v2/models/anything-at-all/infer").named, named);
  EXPECT_EQ(table.Find("POST", "/v2/models/anything-at-all/infer").named,
            named);
  EXPECT_EQ(m.named, table.Named("/v2/models/x"));
  ASSERT_NE(m.named, nullptr);
  EXPECT_STREQ(m.named->pattern, "/v2/models/{model}");
  EXPECT_STREQ(named->pattern, "/v2/models/{model}/infer");
}

TEST(RouteTableTest, TheListingNamesEveryRouteInOrder) {
  EXPECT_EQ(Table().Listing(),
            "GET /, POST /v1/jobs:execute, GET /v2/models/{model}, GET "
            "/v2/models/{model}/ready, POST /v2/models/{model}/infer, POST "
            "/v2/models/{model}/versions/{version}/infer");
}

}  // namespace
}  // namespace ptoserve
