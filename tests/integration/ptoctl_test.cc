// End to end through the ptoctl binary against a real server.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "ptoserve/v1/job.pb.h"
#include "tests/client/trace_checks.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_files.h"

namespace ptoserve {
namespace {

using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

class PtoctlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess(); }
  static void TearDownTestSuite() { delete server_; }

  static CommandResult Ptoctl(const std::string& args) {
    return RunCommand("client/ptoctl/ptoctl --server=" + server_->address() +
                      " " + args);
  }

  static ServerProcess* server_;
};

ServerProcess* PtoctlTest::server_ = nullptr;

TEST_F(PtoctlTest, TandWithValuesPrintsTheValidRegion) {
  CommandResult r = Ptoctl(
      "tand --dtype=int16 --shape=2x3 --src0=12,10,-1,7,6,5 "
      "--src1=10,12,255,3,3,3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dst: 2x3 int16\n"
                                  "    8   8 255\n"
                                  "    3   2   1\n"));
  EXPECT_THAT(r.output, HasSubstr("e0   instruction 0 TAND on host, PIPE_V"));
}

// TOR and TNOT, beyond the seeds, on the host: listed by capabilities for
// the host alone, run by ptoctl (tnot with --src0 only), refused on a2a3.
TEST_F(PtoctlTest, TorAndTnotOnTheHost) {
  CommandResult r =
      Ptoctl("tor --dtype=int16 --shape=1x3 --src0=12,10,-256 --src1=3,5,255");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dst: 1x3 int16\n  15 15 -1\n"));
  EXPECT_THAT(r.output, HasSubstr("e0   instruction 0 TOR on host, PIPE_V"));
  r = Ptoctl("tnot --dtype=uint8 --shape=1x3 --src0=0,15,255");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dst: 1x3 uint8\n  255 240   0\n"));
  EXPECT_THAT(r.output, HasSubstr("not   dst <- src0"));
  r = Ptoctl("tnot --dtype=uint8 --shape=1x1 --src0=1 --src1=2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output,
              HasSubstr("--src1 is not for tnot, which reads src0 only"));
  r = Ptoctl("tor --dtype=int16 --shape=1x16 --src0=1 --src1=2 --target=a2a3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("a2a3 does not run TOR (host does)"));
  r = Ptoctl("capabilities");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t a2a3 = r.output.find("\na2a3");
  ASSERT_NE(a2a3, std::string::npos) << r.output;
  EXPECT_THAT(
      r.output.substr(0, a2a3),
      HasSubstr(
          "TOR [int8 uint8 int16 uint16 int32 uint32]: dst = or(src0, src1)"));
  EXPECT_THAT(
      r.output.substr(0, a2a3),
      HasSubstr(
          "TNOT [int8 uint8 int16 uint16 int32 uint32]: dst = not(src0)"));
  EXPECT_THAT(r.output.substr(a2a3), Not(HasSubstr("TOR")));
  EXPECT_THAT(r.output.substr(a2a3), Not(HasSubstr("TNOT")));
}

TEST_F(PtoctlTest, TxorWithRawFilesOnA2A3ShowsTheDecomposition) {
  std::string a, b;
  for (int i = 0; i < 64; ++i) {
    a.push_back(static_cast<char>(i));
    b.push_back(static_cast<char>(3 * i));
  }
  const std::string fa = WriteTempFile("a.bin", a),
                    fb = WriteTempFile("b.bin", b);
  CommandResult r =
      Ptoctl("txor --dtype=uint8 --shape=2x32 --valid=2x3 --src0=@" + fa +
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

// --shm sends the same tiles through a shared-memory region ptoctl makes,
// registers and removes: the same dst printed, values, fill and raw files
// alike, on each target, and no region or object left behind.
TEST_F(PtoctlTest, ShmPrintsWhatTheRequestPathPrints) {
  std::string a;
  for (int i = 0; i < 64; ++i) a.push_back(static_cast<char>(7 * i));
  const std::string fa = WriteTempFile("shm-a.bin", a);
  const std::string cases[] = {
      "tand --dtype=int16 --shape=2x3 --src0=12,10,-1,7,6,5 "
      "--src1=10,12,255,3,3,3",
      "txor --dtype=uint8 --shape=2x32 --valid=2x5 --src0=@" + fa +
          " --src1=0x5a --target=a2a3",
      "txor --dtype=int32 --shape=3x8 --valid=3x7 --src0=-7 --src1=0x0f0f "
      "--target=a5",
      "tnot --dtype=uint16 --shape=1x4 --src0=0,1,2,65535",
  };
  for (const std::string& args : cases) {
    CommandResult plain = Ptoctl(args);
    CommandResult shm = Ptoctl(args + " --shm");
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    ASSERT_EQ(shm.exit_code, 0) << shm.output;
    // The dst block, up to the events (whose times differ).
    auto dst = [](const std::string& out) {
      return out.substr(0, out.find("events:"));
    };
    EXPECT_EQ(dst(shm.output), dst(plain.output)) << args;
    EXPECT_THAT(dst(shm.output), HasSubstr("dst: ")) << shm.output;
  }
  // Each run unregistered its region.
  CommandResult left = Ptoctl("regions");
  ASSERT_EQ(left.exit_code, 0) << left.output;
  EXPECT_EQ(left.output, "no regions\n");
  left = Ptoctl("capabilities");
  EXPECT_THAT(left.output,
              HasSubstr("shared memory: on, keys /ptoserve..., at most 64"));
}

// docs/SHARED_MEMORY.md's C++ example, as written.
TEST_F(PtoctlTest, TheSharedMemoryExampleRuns) {
  CommandResult r =
      RunCommand("client/shared_memory_example " + server_->address());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("request under 1 KiB for 768 KiB of tiles, "
                                  "c[4095] = 4080 (4080 expected)"));
  // A bad address is an error message and exit 1, not an abort.
  r = RunCommand("client/shared_memory_example no-port-here");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("no-port-here"));
  r = RunCommand("client/shared_memory_example 127.0.0.1:1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("terminate")));
}

TEST_F(PtoctlTest, JsonOutputParsesBackAsAJobResult) {
  CommandResult r =
      RunCommand("client/ptoctl/ptoctl --server=" + server_->address() +
                 " --json txor --dtype=uint32 --shape=1x2 "
                 "--src0=4294967295,1 --src1=1,1 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  v1::JobResult result;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(r.output, &result).ok())
      << r.output;
  const v1::Tile& dst = result.tiles().at("dst");
  ASSERT_EQ(dst.values_size(), 2);
  EXPECT_EQ(dst.values(0), 4294967294.0);
  EXPECT_EQ(dst.values(1), 0.0);
  // Numbers, not strings, for people reading JSON.
  EXPECT_THAT(r.output, HasSubstr("4294967294"));
  EXPECT_THAT(r.output, Not(HasSubstr("\"4294967294\"")));
}

// `ptoctl regions` lists each region with its user, age and lease; one
// registered to outlive its connection is the operator's to unregister
// when its client is gone: `ptoctl unregister NAME` says what it was; an
// unknown name fails with NOT_FOUND.
TEST_F(PtoctlTest, UnregisterTakesARegionAway) {
  const std::string key = absl::StrCat("/ptoserve-ptoctl-test-", getpid());
  const int fd = shm_open(key.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  close(fd);
  auto client = Client::Connect(server_->address()).value();
  v1::RegisterRequest request;
  request.set_name("left-behind");
  request.set_key(key);
  request.set_offset(4096);
  request.set_size(100);
  request.set_outlive_connection(true);
  ASSERT_TRUE(client->RegisterRegion(request).ok());
  request.set_name("leased");
  request.set_outlive_connection(false);
  ASSERT_TRUE(client->RegisterRegion(request).ok());
  CommandResult listed = Ptoctl("regions");
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_THAT(
      listed.output,
      MatchesRegex(absl::StrCat(
          "leased: ", key,
          " offset 4096, 100 bytes; 0 jobs in flight, 0 in all; user ",
          geteuid(),
          ", registered [0-9hms]+ ago, leased to its connection\n"
          "left-behind: ",
          key, " offset 4096, 100 bytes; 0 jobs in flight, 0 in all; user ",
          geteuid(), ", registered [0-9hms]+ ago, outlives its connection\n")));
  ASSERT_TRUE(client->UnregisterRegion("leased").ok());
  CommandResult r = Ptoctl("unregister left-behind");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, absl::StrCat("unregistered left-behind (", key,
                                   " offset 4096, 100 bytes); 0 jobs still "
                                   "use it\n"));
  EXPECT_EQ(Ptoctl("regions").output, "no regions\n");
  r = Ptoctl("unregister left-behind");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("NOT_FOUND"));
  EXPECT_THAT(r.output, HasSubstr("no region \"left-behind\" is registered"));
  EXPECT_EQ(Ptoctl("unregister").exit_code, 2);
  EXPECT_EQ(Ptoctl("unregister a b").exit_code, 2);
  shm_unlink(key.c_str());
}

TEST_F(PtoctlTest, RunSendsAJsonJobWithWaits) {
  const std::string job = WriteTempFile("job.json", R"({
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
  EXPECT_THAT(r.output,
              HasSubstr("note: tmp \"t\" is accepted and unused on a5"));
}

TEST_F(PtoctlTest, StreamSendsOneJobPerLine) {
  const std::string jobs = WriteTempFile(
      "jobs.jsonl",
      R"({"tiles": {"a": {"dtype": "DTYPE_UINT8", "rows": 1, "cols": 2, "values": [12, 10]}}, )"
      R"("instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a", "src1": "a"}]})"
      "\n"
      "\n"
      R"({"id": "broken", "tiles": {}, "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", )"
      R"("src0": "x", "src1": "x"}]})"
      "\n"
      R"({"tiles": {"a": {"dtype": "DTYPE_UINT8", "rows": 1, "cols": 2, "values": [12, 10]}}, )"
      R"("instructions": [{"opcode": "OPCODE_TXOR", "dst": "c", "src0": "a", "src1": "a"}]})"
      "\n");
  CommandResult r = Ptoctl("stream " + jobs);
  EXPECT_EQ(r.exit_code, 1) << r.output;  // one job failed
  EXPECT_THAT(r.output, HasSubstr("job 1: OK\nc: 1x2 uint8\n  12 10\n"));
  EXPECT_THAT(r.output, HasSubstr("job 4: OK\nc: 1x2 uint8\n  0 0\n"));
  EXPECT_THAT(
      r.output,
      HasSubstr("job broken: INVALID_ARGUMENT: instruction 0 (TAND on host): "
                "src0 \"x\" is not a tile of the job"));
}

TEST_F(PtoctlTest, ServerErrorsExitNonZeroWithCodeAndMessage) {
  CommandResult r =
      Ptoctl("txor --dtype=int8 --shape=1x16 --src0=1 --src1=2 --target=a2a3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(
      r.output,
      HasSubstr("ptoctl: INVALID_ARGUMENT: instruction 0 (TXOR on a2a3): "
                "dst \"dst\" rows are 16 bytes"));
  r = Ptoctl("tand --dtype=float32 --shape=1x1 --src0=1 --src1=1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("dst element type float32 is not supported"));
  r = Ptoctl("tand --dtype=uint8 --shape=1x2 --src0=1,256 --src1=0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(
      r.output,
      HasSubstr("values[1] (element 0,1) = 256 is not an integer in the uint8 "
                "range [0, 255]"));
}

// A mistyped flag, a value its flag cannot take or a mistyped command is a
// usage error (exit 2) that names it, with the nearest name when one is
// near; ptoserve's flags too.
TEST_F(PtoctlTest, MistypedFlagsAndCommandsSuggestTheNearestName) {
  CommandResult r = Ptoctl("tand --dtyp=int16");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output,
              HasSubstr("unknown flag --dtyp; did you mean --dtype?"));
  r = Ptoctl("--timeout=abc health");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--timeout=abc: Illegal value 'abc'"));
  r = Ptoctl("tnad");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("unknown command: tnad; did you mean tand?"));
  r = Ptoctl("helth");
  EXPECT_THAT(r.output, HasSubstr("did you mean health?"));
  r = Ptoctl("--zzzzzz health");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("unknown flag --zzzzzz"));
  EXPECT_THAT(r.output, Not(HasSubstr("did you mean")));
  // Under --json a usage error is JSON on stdout, as a failed call's is,
  // with no gRPC code: ptoctl's own mistakes are not the server's.
  r = RunCommand("client/ptoctl/ptoctl --json tand --dtyp=int16 2>/dev/null");
  EXPECT_EQ(r.exit_code, 2);
  google::protobuf::Struct usage;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(r.output, &usage).ok())
      << r.output;
  EXPECT_EQ(usage.fields().size(), 1u) << r.output;
  EXPECT_EQ(usage.fields().at("error").string_value(),
            "unknown flag --dtyp; did you mean --dtype?");
  r = RunCommand("client/ptoctl/ptoctl --json tnad 2>/dev/null");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output,
              HasSubstr("\"unknown command: tnad; did you mean tand?\""));
  r = RunCommand("server/ptoserve --adress=127.0.0.1:0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output,
              HasSubstr("unknown flag --adress; did you mean --address?"));
  r = RunCommand("server/ptoserve --workers=abc");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--workers=abc: Illegal value"));
}

TEST_F(PtoctlTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Ptoctl("frobnicate").exit_code, 2);
  EXPECT_EQ(
      Ptoctl("tand --dtype=int64 --shape=1x1 --src0=1 --src1=1").exit_code, 2);
  EXPECT_EQ(
      Ptoctl("tand --dtype=int8 --shape=1by1 --src0=1 --src1=1").exit_code, 2);
  CommandResult r = Ptoctl("tand --dtype=int8 --shape=1x2 --src0=1,x --src1=1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--src0: \"x\" is not an integer"));
}

// ptoctl's own mistakes and failures carry no gRPC code; a file's
// mistakes name the file; the server's refusals keep their codes.
TEST_F(PtoctlTest, OwnMistakesAreUsageErrorsAndNameTheirFile) {
  const std::string broken = WriteTempFile("broken.pto", "TAND c, a, b\n");
  for (const std::string& command :
       {"run " + broken + " --tile a=int8:1x2", "fmt " + broken}) {
    CommandResult r = Ptoctl(command);
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_THAT(r.output,
                HasSubstr("ptoctl: " + broken + ":1:1: expected a statement"));
    EXPECT_THAT(r.output, Not(HasSubstr("INVALID_ARGUMENT")));
    EXPECT_THAT(r.output, Not(HasSubstr("--help")));
  }
  // What the program means the server checks; its position names the file.
  const std::string unknown =
      WriteTempFile("unknown.pto", "%c = tand %a, %b : !pto.tile<...>\n");
  CommandResult r = Ptoctl("run " + unknown + " --tile a=int8:1x2:1,2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("ptoctl: INVALID_ARGUMENT: " + unknown +
                                  ":1:15: %b is neither"));
  r = Ptoctl("run " + unknown + " --tile a=int8:1x2 --tile b=i8:1x2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--tile b=i8:1x2: i8 is not an element "
                                  "type (int8, uint8, int16"));
  EXPECT_THAT(r.output, Not(HasSubstr("--dtype")));
  r = Ptoctl("call grpc.health.v1.Health/Watch");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("ptoctl: grpc.health.v1.Health.Watch "
                                  "streams; call takes unary methods"));
  EXPECT_THAT(r.output, Not(HasSubstr("INVALID_ARGUMENT")));
  r = Ptoctl("call ptoserve.v1.TileCompute/Nope");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("has no method Nope (it has Execute"));
  r = Ptoctl("--json run " + TempPath("missing.json") + " 2>/dev/null");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("\"error\": \"cannot read "));
  EXPECT_THAT(r.output, Not(HasSubstr("\"code\"")));
}

// A request over the message limit: the same words as the Python client's
// (client_test), not gRPC's.
TEST_F(PtoctlTest, ARequestOverTheMessageLimitIsSaidAsALimit) {
  const std::string raw = TempPath("64MiB.bin");
  {
    std::ofstream file(raw, std::ios::binary);
    file << std::string(size_t{64} << 20, '\0');
  }
  CommandResult r =
      Ptoctl("tand --dtype=int32 --shape=4096x4096 --src1=1 --src0=@" + raw);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output,
              ContainsRegex("ptoctl: RESOURCE_EXHAUSTED: the request is "
                            "[0-9]+ bytes, more than a message may be "
                            "\\(67108864\\): send tiles this large through "
                            "shared memory, as fill, or in parts"));
  EXPECT_THAT(r.output, Not(HasSubstr("Sent message")));
}

TEST_F(PtoctlTest, HealthAndCapabilities) {
  CommandResult r = Ptoctl("health");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "SERVING\n");
  r = Ptoctl("capabilities");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("ptoserve 0.1.0, default target host"));
  EXPECT_THAT(r.output, HasSubstr("a2a3  Atlas A2/A3"));
  EXPECT_THAT(r.output, HasSubstr("unified buffer 196608 bytes (every job)"));
  EXPECT_THAT(r.output,
              HasSubstr("unified buffer 1048576 bytes (manual mode only)"));
  EXPECT_THAT(
      r.output,
      HasSubstr("TXOR [int8 uint8 int16 uint16 int32 uint32], tmp required"));
}

TEST_F(PtoctlTest, HexValuesInAndHexOutput) {
  // Hex is the element's bits: 0xff00 is int16 -256.
  CommandResult r = Ptoctl(
      "tand --dtype=int16 --shape=1x3 --src0=0xff00,0x00ff,-1 "
      "--src1=0xfff0 --format=hex");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dst: 1x3 int16\n  0xff00 0x00f0 0xfff0\n"));
  r = Ptoctl("tand --dtype=int16 --shape=1x1 --src0=0xff00 --src1=-1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dst: 1x1 int16\n  -256\n"));
  // Wider than the element: a usage error, not a silent truncation.
  r = Ptoctl("tand --dtype=uint8 --shape=1x1 --src0=0x100 --src1=1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(
      r.output,
      HasSubstr("--src0: \"0x100\" is not a hex value of at most 8 bits"));
  EXPECT_EQ(Ptoctl("health --format=octal").exit_code, 2);
}

// One value for a whole tile travels as Tile.fill: two 2048x2048 int32
// tiles in a request to a server whose messages are at most 17 MiB (room
// for the 16 MiB result). Sent as values they would be 8M numbers, 64 MiB.
TEST(PtoctlFillTest, OneValueIsSentAsFillNotPerElement) {
  ServerProcess server({"--max_message_mb=17"});
  const std::string out = std::string(std::getenv("TEST_TMPDIR")) + "/dst.bin";
  CommandResult r =
      RunCommand("client/ptoctl/ptoctl --server=" + server.address() +
                 " tand --shape=2048x2048 --src0=0x0f0f0f0f --src1=0x00ffff00"
                 " --out=" +
                 out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dst: written to " + out));
  std::ifstream file(out, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)),
                    std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), 2048u * 2048u * 4u);
  for (size_t i = 0; i < bytes.size(); i += 4) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + i, 4);
    ASSERT_EQ(v, 0x0f0f0f0fu & 0x00ffff00u) << "element " << i / 4;
  }
  // A shape far over the server's tile limit is the server's refusal, not
  // a client that runs out of memory.
  r = RunCommand("client/ptoctl/ptoctl --server=" + server.address() +
                 " tand --shape=100000x100000 --src0=1 --src1=1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(
      r.output,
      HasSubstr("RESOURCE_EXHAUSTED: tile \"src0\": 100000x100000 int32 is "
                "40000000000 bytes, over the limit"));
}

TEST_F(PtoctlTest, RunReadsStandardInputAndTellsJsonFromAssembly) {
  const std::string json =
      R"({"tiles": {"a": {"dtype": "DTYPE_UINT8", "rows": 1, "cols": 4, "values": [12, 10, 6, 5]}},)"
      R"( "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a", "src1": "a"}]})";
  CommandResult r =
      RunCommand("echo '" + json + "' | client/ptoctl/ptoctl --server=" +
                 server_->address() + " run -");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("c: 1x4 uint8\n  12 10  6  5\n"));
  // No extension and no '{': assembly.
  const std::string program =
      WriteTempFile("program", "%c = txor %a, %b : !pto.tile<...>\n");
  r = Ptoctl("run " + program +
             " --tile a=uint8:1x4:1,2,3,4 --tile b=uint8:1x4:3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("c: 1x4 uint8\n  2 1 0 7\n"));
  r = RunCommand(
      "printf '%%c = tand %%a, %%a : !pto.tile<...>' | client/ptoctl/ptoctl "
      "--server=" +
      server_->address() + " run - --tile a=int8:1x2:-3,5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("c: 1x2 int8\n  -3  5\n"));
}

TEST_F(PtoctlTest, JsonErrorsNameLineAndColumn) {
  const std::string syntax = WriteTempFile(
      "syntax.json", "{\n  \"target\": \"TARGET_A5\",\n  \"tiles\" {}\n}\n");
  CommandResult r = Ptoctl("run " + syntax);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(
      r.output,
      HasSubstr("syntax.json:3:11: the file is not a ptoserve.v1.Job in "
                "JSON: Expected : between key:value pair"));
  const std::string field = WriteTempFile(
      "field.json", "{\n  \"target\": \"TARGET_A5\",\n  \"tilez\": {}\n}\n");
  r = Ptoctl("run " + field);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("field.json:3:3: a job has no field "
                                  "\"tilez\"; its fields are id, target"));
  const std::string value =
      WriteTempFile("value.json", "{\n  \"target\": \"TARGET_A6\"\n}\n");
  r = Ptoctl("run " + value);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output,
              HasSubstr("value.json:2:13: target: \"TARGET_A6\" is not one of "
                        "host, a2a3, a5"));
  // A stream's line numbers are the file's.
  const std::string jobs = WriteTempFile("jobs.jsonl", "{}\n\n{\"id\" 1}\n");
  r = Ptoctl("stream " + jobs);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output,
              HasSubstr("jobs.jsonl:3:7: the file is not a ptoserve.v1.Job in "
                        "JSON: Expected : between key:value pair"));
}

TEST_F(PtoctlTest, TargetFlagAppliesToJobsThatNameNone) {
  const std::string job = WriteTempFile(
      "untargeted.json",
      R"({"tiles": {"a": {"dtype": "DTYPE_UINT8", "rows": 1, "cols": 32, "fill": 6}},)"
      R"( "instructions": [{"opcode": "OPCODE_TXOR", "dst": "c", "src0": "a", "src1": "a", "tmp": "t"}]})");
  CommandResult r = Ptoctl("run " + job + " --target=a2a3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("instruction 0 TXOR on a2a3"));
  EXPECT_THAT(r.output, HasSubstr("vnot  dst <- dst"));
  r = Ptoctl("stream " + job + " --target=a5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"target\":\"TARGET_A5\""));
  const std::string targeted = WriteTempFile(
      "targeted.json",
      R"({"target": "TARGET_HOST", "tiles": {"a": {"dtype": "DTYPE_UINT8", "rows": 1, "cols": 1}},)"
      R"( "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a", "src1": "a"}]})");
  r = Ptoctl("run " + targeted + " --target=a5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output,
              HasSubstr("sets target host, which --target=a5 contradicts"));
}

TEST_F(PtoctlTest, JsonModeStreamsWithDefaultsAndReportsErrorsAsJson) {
  const std::string jobs = WriteTempFile(
      "mixed.jsonl",
      R"({"id": "ok", "tiles": {"a": {"dtype": "DTYPE_INT8", "rows": 1, "cols": 2, "values": [7, -2]}},)"
      R"( "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a", "src1": "a"}]})"
      "\n"
      R"({"id": "bad", "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "x", "src1": "x"}]})"
      "\n");
  CommandResult r =
      RunCommand("client/ptoctl/ptoctl --server=" + server_->address() +
                 " --json stream " + jobs + " 2>/dev/null");
  EXPECT_EQ(r.exit_code, 1) << r.output;  // one job failed
  std::vector<std::string> lines =
      absl::StrSplit(r.output, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << r.output;
  std::map<std::string, v1::JobResult> by_id;
  for (const std::string& line : lines) {
    v1::JobResult result;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &result).ok())
        << line;
    by_id[result.id()] = result;
  }
  EXPECT_EQ(by_id["ok"].status().code(), v1::OK);
  EXPECT_EQ(by_id["bad"].status().code(), v1::INVALID_ARGUMENT);
  // Codes by name, and defaults printed as for unary calls.
  EXPECT_THAT(r.output, HasSubstr("\"code\":\"INVALID_ARGUMENT\""));
  EXPECT_THAT(r.output, HasSubstr("\"validRows\":1"));
  // A failed unary call: the error as JSON on stdout, nothing on stderr.
  r = RunCommand("client/ptoctl/ptoctl --server=" + server_->address() +
                 " --json tand --dtype=int8 --shape=1x2 --src0=1 --src1=300 "
                 "2>&1 >/dev/null");
  EXPECT_EQ(r.output, "");
  r = RunCommand(
      "client/ptoctl/ptoctl --server=" + server_->address() +
      " --json tand --dtype=int8 --shape=1x2 --src0=1 --src1=300 2>/dev/null");
  EXPECT_EQ(r.exit_code, 1);
  v1::JobStatus error;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(r.output, &error).ok())
      << r.output;
  EXPECT_EQ(error.code(), v1::INVALID_ARGUMENT);
  EXPECT_THAT(error.message(),
              HasSubstr("fill = 300 is not an integer in the int8 range"));
}

TEST_F(PtoctlTest, OutWritesEveryResultTileOfARun) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/tiles";
  const std::string job = WriteTempFile(
      "two.json",
      R"({"tiles": {"a": {"dtype": "DTYPE_UINT16", "rows": 1, "cols": 2, "values": [258, 65535]}},)"
      R"( "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a", "src1": "a"},)"
      R"( {"opcode": "OPCODE_TXOR", "dst": "d", "src0": "a", "src1": "a"}]})");
  CommandResult r = Ptoctl("run " + job + " --out=" + dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto read = [&](const std::string& name) {
    std::ifstream file(dir + "/" + name, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(file)),
                       std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(read("c.bin"),
            std::string("\x02\x01\xff\xff", 4));  // little-endian
  EXPECT_EQ(read("d.bin"), std::string(4, '\0'));
}

// Two instructions on the host, the second waiting on the first.
constexpr char kTwoInstructionJob[] =
    R"({"id": "traced", "target": "TARGET_HOST",)"
    R"( "tiles": {"a": {"dtype": "DTYPE_UINT8", "rows": 1, "cols": 4, "values": [12, 10, 6, 5]},)"
    R"( "b": {"dtype": "DTYPE_UINT8", "rows": 1, "cols": 4, "values": [10, 12, 3, 3]}},)"
    R"( "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a", "src1": "b"},)"
    R"( {"opcode": "OPCODE_TXOR", "dst": "d", "src0": "c", "src1": "a", "wait_events": ["e0"]}]})";

// The trace a real job's events make, read back from the file: its
// structure (trace_checks.h), its rows and its slices; the result still
// prints. Addresses are the server's and are not asserted here.
TEST_F(PtoctlTest, TraceWritesTheEventsAsAChromeTrace) {
  const std::string job = WriteTempFile("traced.json", kTwoInstructionJob);
  const std::string trace = TempPath("traced.trace.json");
  CommandResult r = Ptoctl("run " + job + " --trace=" + trace);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // c = a & b; d = c ^ a.
  EXPECT_THAT(r.output, HasSubstr("c: 1x4 uint8\n  8 8 2 1\n"));
  EXPECT_THAT(r.output, HasSubstr("d: 1x4 uint8\n  4 2 4 4\n"));
  EXPECT_THAT(r.output, HasSubstr("e1   instruction 1 TXOR on host, PIPE_V"));
  const std::string json = ReadWholeFile(trace);
  ASSERT_FALSE(json.empty()) << "no " << trace;
#if defined(__SANITIZE_THREAD__)
  // CheckChromeTrace reads a google.protobuf.Struct that Debian's
  // libprotobuf (built without TSan) filled; in TSan builds Map's inline
  // lookup then crashes (SEGV in Map::InnerMap::FindHelper). The file's
  // structure is checked in the plain and ASan runs, and by
  // tests/client:chrome_trace_test; ptoctl itself ran above.
  GTEST_SKIP() << "the trace's structure is checked outside TSan builds";
#endif
  ParsedTrace parsed = CheckChromeTrace(json);
  EXPECT_EQ(parsed.process_name, "job traced (host)");
  std::vector<std::string> rows;
  for (const auto& [tid, name] : parsed.threads) rows.push_back(name);
  EXPECT_THAT(rows, ElementsAre("PIPE_V", "queue TAND e0", "queue TXOR e1"));
  ASSERT_EQ(parsed.instructions.size(), 2u) << json;
  EXPECT_EQ(parsed.instructions[0].name, "TAND e0");
  EXPECT_EQ(parsed.instructions[1].name, "TXOR e1");
  // The wait: TXOR starts after TAND ends.
  EXPECT_GE(parsed.instructions[1].ts,
            parsed.instructions[0].ts + parsed.instructions[0].dur);
  const auto& waited = parsed.instructions[1].args.fields().at("waited_on");
  ASSERT_EQ(waited.list_value().values_size(), 1);
  EXPECT_EQ(waited.list_value().values(0).string_value(), "e0");
  // The host runs each instruction in one step.
  ASSERT_EQ(parsed.steps.size(), 2u);
  EXPECT_EQ(parsed.steps[0].name, "and");
  EXPECT_EQ(parsed.steps[1].name, "xor");
  EXPECT_EQ(parsed.queued.size(), 2u);
}

TEST_F(PtoctlTest, TraceThatCannotBeWrittenFails) {
  const std::string job = WriteTempFile("traced.json", kTwoInstructionJob);
  const std::string trace = TempPath("no/such/dir/trace.json");
  CommandResult r = Ptoctl("run " + job + " --trace=" + trace);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ptoctl: --trace: cannot write " + trace +
                                  ": No such file or directory"));
  EXPECT_THAT(r.output, Not(HasSubstr("INVALID_ARGUMENT")));
  // For run only.
  r = Ptoctl("health --trace=" + TempPath("health.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--trace is for run only"));
  r = Ptoctl("stream " + job + " --trace=" + TempPath("stream.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--trace is for run only"));
  // And a run that can write its trace still succeeds.
  r = Ptoctl("run " + job + " --trace=" + TempPath("written.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// The aliasing example on a5: c bound at a's address, d placed by the
// server after b. The map shows both tiles at 0x0.
TEST_F(PtoctlTest, UbMapShowsAliasedTiles) {
  const std::string job = WriteTempFile("alias.json", R"({
    "target": "TARGET_A5", "mode": "MODE_MANUAL",
    "tiles": {
      "a": {"dtype": "DTYPE_INT32", "rows": 8, "cols": 8, "fill": 5, "address": 0},
      "b": {"dtype": "DTYPE_INT32", "rows": 8, "cols": 8, "fill": 3, "address": 256},
      "c": {"dtype": "DTYPE_INT32", "rows": 8, "cols": 8, "address": 0}},
    "instructions": [
      {"opcode": "OPCODE_TAND", "dst": "c", "src0": "a", "src1": "b"},
      {"opcode": "OPCODE_TXOR", "dst": "d", "src0": "a", "src1": "b"}],
    "outputs": ["d"]})");
  CommandResult r = Ptoctl("run " + job + " --ub-map");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("d: 8x8 int32\n  2 2 2 2 2 2 2 2\n"));
  EXPECT_THAT(r.output, HasSubstr("dst   c  [0x0000, 0x0100)"));
  EXPECT_THAT(r.output, HasSubstr("dst   d  [0x0200, 0x0300)"));
  EXPECT_THAT(r.output, HasSubstr("src0  a  [0x0000, 0x0100)"));
}

// A host job in auto mode has no buffer model: one line after the result.
// (Jobs whose tiles live in the buffer are the unit test's, ub_map_test:
// their addresses are the server's to choose.)
TEST_F(PtoctlTest, UbMapOfAHostJobSaysItHasNoBufferModel) {
  const std::string job = WriteTempFile("mapped.json", kTwoInstructionJob);
  CommandResult r = Ptoctl("run " + job + " --ub-map");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("d: 1x4 uint8\n  4 2 4 4\n"));
  const std::string line =
      "\nunified buffer: no operand ranges in the events (a host job in auto "
      "mode has no on-chip buffer model)\n";
  ASSERT_GE(r.output.size(), line.size());
  EXPECT_EQ(r.output.substr(r.output.size() - line.size()), line) << r.output;
  r = Ptoctl("health --ub-map");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--ub-map is for run only"));
  r = Ptoctl("--json run " + job + " --ub-map");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--ub-map prints text, not JSON"));
}

TEST(PtoctlHelpTest, HelpListsEveryFlagAndExitsZero) {
  CommandResult r = RunCommand("client/ptoctl/ptoctl --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, Not(HasSubstr("ptoctl: ptoctl")));
  for (const char* flag :
       {"--tile=", "--server=", "--token_file=", "--format=", "--out=",
        "--tls_ca=", "--json=", "--target=", "--trace=", "--ub-map"}) {
    EXPECT_THAT(r.output, HasSubstr(flag));
  }
  r = RunCommand("client/ptoctl/ptoctl --version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "ptoctl 0.1.0\n");
  // One command's help: its usage and its flags, not every command's.
  for (const char* command :
       {"client/ptoctl/ptoctl tand --help", "client/ptoctl/ptoctl help txor"}) {
    r = RunCommand(command);
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_THAT(r.output, HasSubstr("--dtype=int32")) << command;
    EXPECT_THAT(r.output, HasSubstr("--src1=")) << command;
    EXPECT_THAT(r.output, Not(HasSubstr("--tile="))) << command;
    EXPECT_THAT(r.output, Not(HasSubstr("--service="))) << command;
    EXPECT_LT(std::count(r.output.begin(), r.output.end(), '\n'), 60);
  }
  r = RunCommand("client/ptoctl/ptoctl help run");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag :
       {"--tile=NAME=DTYPE", "--ub-map", "--trace=", "--target=", "--out="}) {
    EXPECT_THAT(r.output, HasSubstr(flag));
  }
  EXPECT_THAT(r.output, Not(HasSubstr("--dtype=")));
  r = RunCommand("client/ptoctl/ptoctl help call");
  EXPECT_THAT(r.output, HasSubstr("  --d="));
  r = RunCommand("client/ptoctl/ptoctl --help");
  EXPECT_THAT(r.output, HasSubstr("  -H 'NAME: VALUE'\n"));
  r = RunCommand("client/ptoctl/ptoctl help tnad");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("help: no command tnad; the commands are"));
  r = RunCommand("server/ptoserve --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, Not(HasSubstr("No flags matched")));
  // The flags most people set first; the rest by group (docs_test holds
  // the groups to docs/FLAGS.md's sections).
  EXPECT_THAT(r.output, HasSubstr("\nFlags most people set:\n"
                                  "  --address=127.0.0.1:50051\n"));
  EXPECT_LT(r.output.find("--auth_token_file="), r.output.find("Scheduling:"));
  for (const char* flag :
       {"--address=127.0.0.1:50051", "--max_tile_mb=", "--workers=",
        "--auth_token_file=", "--metrics_address="}) {
    EXPECT_THAT(r.output, HasSubstr(flag));
  }
  r = RunCommand("server/ptoserve --version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "ptoserve 0.1.0\n");
}

TEST(PtoctlNoServerTest, UnreachableServerIsUnavailable) {
  // Port 1 on loopback: nothing listens there.
  CommandResult r = RunCommand(
      "client/ptoctl/ptoctl --server=127.0.0.1:1 --timeout=1s health");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(
      r.output,
      HasSubstr("UNAVAILABLE: cannot connect to ptoserve at 127.0.0.1:1"));
  // gRPC's own reason, not a timeout: the wait ends at the refusal.
  EXPECT_THAT(r.output, HasSubstr("Connection refused"));
}

}  // namespace
}  // namespace ptoserve
