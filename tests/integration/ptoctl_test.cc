// End to end through the ptoctl binary against a real server.
#include <google/protobuf/util/json_util.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "ptoserve/v1/job.pb.h"
#include "tests/integration/server_process.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class PtoctlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess(); }
  static void TearDownTestSuite() { delete server_; }

  static CommandResult Ptoctl(const std::string& args) {
    return RunCommand("client/ptoctl --server=" + server_->address() + " " + args);
  }

  // Writes `bytes` to a file in the test's scratch directory.
  static std::string WriteFile(const std::string& name, const std::string& bytes) {
    const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  static ServerProcess* server_;
};

ServerProcess* PtoctlTest::server_ = nullptr;

TEST_F(PtoctlTest, TandWithValuesPrintsTheValidRegion) {
  CommandResult r = Ptoctl(
      "tand --dtype=int16 --shape=2x3 --src0=12,10,-1,7,6,5 --src1=10,12,255,3,3,3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dst: 2x3 int16\n"
                                  "    8   8 255\n"
                                  "    3   2   1\n"));
  EXPECT_THAT(r.output, HasSubstr("e0   instruction 0 TAND on host, PIPE_V"));
}

TEST_F(PtoctlTest, TxorWithRawFilesOnA2A3ShowsTheDecomposition) {
  std::string a, b;
  for (int i = 0; i < 64; ++i) {
    a.push_back(static_cast<char>(i));
    b.push_back(static_cast<char>(3 * i));
  }
  const std::string fa = WriteFile("a.bin", a), fb = WriteFile("b.bin", b);
  CommandResult r = Ptoctl("txor --dtype=uint8 --shape=2x32 --valid=2x3 --src0=@" + fa +
                           " --src1=@" + fb + " --target=a2a3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Row 0: i ^ 3i for i = 0..2; row 1: i = 32..34.
  EXPECT_THAT(r.output, HasSubstr("dst: 2x32 uint8, valid 2x3\n"
                                  "   0  2  4\n"
                                  "  64 66 68\n"));
  EXPECT_THAT(r.output, HasSubstr("vor   tmp <- src0, src1"));
  EXPECT_THAT(r.output, HasSubstr("vnot  dst <- dst"));
  EXPECT_THAT(r.output, HasSubstr("vand  dst <- dst, tmp"));
}

TEST_F(PtoctlTest, JsonOutputParsesBackAsAJobResult) {
  CommandResult r = RunCommand("client/ptoctl --server=" + server_->address() +
                               " --json txor --dtype=uint32 --shape=1x2 "
                               "--src0=4294967295,1 --src1=1,1 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  v1::JobResult result;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.output, &result).ok()) << r.output;
  const v1::Tile& dst = result.tiles().at("dst");
  ASSERT_EQ(dst.values_size(), 2);
  EXPECT_EQ(dst.values(0), 4294967294.0);
  EXPECT_EQ(dst.values(1), 0.0);
  // Numbers, not strings, for people reading JSON.
  EXPECT_THAT(r.output, HasSubstr("4294967294"));
  EXPECT_THAT(r.output, Not(HasSubstr("\"4294967294\"")));
}

TEST_F(PtoctlTest, RunSendsAJsonJobWithWaits) {
  const std::string job = WriteFile("job.json", R"({
    "target": "TARGET_A5",
    "tiles": {
      "a": {"dtype": "DTYPE_INT32", "rows": 1, "cols": 8, "values": [1, 2, 3, 4, 5, 6, 7, 8]},
      "b": {"dtype": "DTYPE_INT32", "rows": 1, "cols": 8, "values": [3, 3, 3, 3, 3, 3, 3, 3]}
    },
    "instructions": [
      {"opcode": "OPCODE_TAND", "dst": "c", "src0": "a", "src1": "b", "record_event": "and_done"},
      {"opcode": "OPCODE_TXOR", "dst": "d", "src0": "c", "src1": "a", "tmp": "t",
       "wait_events": ["and_done"]}
    ]
  })");
  CommandResult r = Ptoctl("run " + job);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // c = a & 3; d = c ^ a.
  EXPECT_THAT(r.output, HasSubstr("c: 1x8 int32\n  1 2 3 0 1 2 3 0\n"));
  EXPECT_THAT(r.output, HasSubstr("d: 1x8 int32\n  0 0 0 4 4 4 4 8\n"));
  EXPECT_THAT(r.output, HasSubstr("waited on and_done"));
  EXPECT_THAT(r.output, HasSubstr("note: tmp \"t\" is accepted and unused on a5"));
}

TEST_F(PtoctlTest, StreamSendsOneJobPerLine) {
  const std::string jobs = WriteFile("jobs.jsonl",
      R"({"tiles": {"a": {"dtype": "DTYPE_UINT8", "rows": 1, "cols": 2, "values": [12, 10]}}, )"
      R"("instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a", "src1": "a"}]})" "\n"
      "\n"
      R"({"id": "broken", "tiles": {}, "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", )"
      R"("src0": "x", "src1": "x"}]})" "\n"
      R"({"tiles": {"a": {"dtype": "DTYPE_UINT8", "rows": 1, "cols": 2, "values": [12, 10]}}, )"
      R"("instructions": [{"opcode": "OPCODE_TXOR", "dst": "c", "src0": "a", "src1": "a"}]})" "\n");
  CommandResult r = Ptoctl("stream " + jobs);
  EXPECT_EQ(r.exit_code, 1) << r.output;  // one job failed
  EXPECT_THAT(r.output, HasSubstr("job 1: OK\nc: 1x2 uint8\n  12 10\n"));
  EXPECT_THAT(r.output, HasSubstr("job 4: OK\nc: 1x2 uint8\n  0 0\n"));
  EXPECT_THAT(r.output, HasSubstr("job broken: INVALID_ARGUMENT: instruction 0 (TAND on host): "
                                  "src0 \"x\" is not a tile of the job"));
}

TEST_F(PtoctlTest, ServerErrorsExitNonZeroWithCodeAndMessage) {
  CommandResult r = Ptoctl("txor --dtype=int8 --shape=1x16 --src0=1 --src1=2 --target=a2a3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("ptoctl: INVALID_ARGUMENT: instruction 0 (TXOR on a2a3): "
                                  "dst \"dst\" rows are 16 bytes"));
  r = Ptoctl("tand --dtype=float32 --shape=1x1 --src0=1 --src1=1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("dst element type float32 is not supported"));
  r = Ptoctl("tand --dtype=uint8 --shape=1x2 --src0=1,256 --src1=0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("values[1] (element 0,1) = 256 is not an integer in the uint8 "
                                  "range [0, 255]"));
}

TEST_F(PtoctlTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Ptoctl("frobnicate").exit_code, 2);
  EXPECT_EQ(Ptoctl("tand --dtype=int64 --shape=1x1 --src0=1 --src1=1").exit_code, 2);
  EXPECT_EQ(Ptoctl("tand --dtype=int8 --shape=1by1 --src0=1 --src1=1").exit_code, 2);
  CommandResult r = Ptoctl("tand --dtype=int8 --shape=1x2 --src0=1,x --src1=1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--src0: \"x\" is not an integer"));
}

TEST_F(PtoctlTest, HealthAndCapabilities) {
  CommandResult r = Ptoctl("health");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "SERVING\n");
  r = Ptoctl("capabilities");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("ptoserve 0.1.0, default target host"));
  EXPECT_THAT(r.output, HasSubstr("a2a3  Atlas A2/A3"));
  EXPECT_THAT(r.output, HasSubstr("TXOR [int8 uint8 int16 uint16 int32 uint32], tmp required"));
}

TEST(PtoctlNoServerTest, UnreachableServerIsUnavailable) {
  // Port 1 on loopback: nothing listens there.
  CommandResult r = RunCommand("client/ptoctl --server=127.0.0.1:1 --timeout=1s health");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("UNAVAILABLE: cannot connect to ptoserve at 127.0.0.1:1"));
}

}  // namespace
}  // namespace ptoserve
