// The load generator, run briefly against a real server: what it prints
// must be usable by scripts and by a person reading an error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "tests/integration/server_process.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

TEST(PtobenchTest, CsvHasAHeaderAndErrorsCarryTheirMessage) {
  ServerProcess server;
  // int16 rows of 8 columns are 16 bytes: a2a3 refuses every job.
  CommandResult r =
      RunCommand("bench/ptobench --server=" + server.address() +
                 " --format=csv --duration=0.3s --warmup=0s --target=a2a3"
                 " --dtype=int16 --shape=16x8 --label=x");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::vector<std::string> lines =
      absl::StrSplit(r.output, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << r.output;
  EXPECT_EQ(
      lines[0],
      "label,mode,concurrency,opcode,shape,dtype,requests_per_s,tiles_per_s,"
      "p50_us,p90_us,p99_us,max_us,errors");
  std::vector<std::string> fields = absl::StrSplit(lines[1], ',');
  ASSERT_EQ(fields.size(), 13u);
  int errors = 0;
  ASSERT_TRUE(absl::SimpleAtoi(fields[12], &errors));
  EXPECT_GT(errors, 0);
  r = RunCommand(
      "bench/ptobench --server=" + server.address() +
      " --duration=0.3s --warmup=0s --target=a2a3 --dtype=int16 --shape=16x8");
  EXPECT_THAT(
      r.output,
      HasSubstr("x INVALID_ARGUMENT: instruction 0 (TAND on a2a3): dst \"dst\" "
                "rows are 16 bytes"));
}

// A server in its lame duck answers UNAVAILABLE at once; ptobench backs
// off rather than spinning (it sent tens of thousands of calls a second).
TEST(PtobenchTest, BacksOffOnUnavailable) {
  ServerProcess server({"--lame_duck=5s"});
  std::thread stop([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(server.pid(), SIGTERM);
  });
  CommandResult r =
      RunCommand("bench/ptobench --server=" + server.address() +
                 " --format=csv --csv_header=false --duration=2.3s --warmup=0s"
                 " --concurrency=2");
  stop.join();
  std::vector<std::string> fields = absl::StrSplit(r.output, ',');
  ASSERT_EQ(fields.size(), 13u) << r.output;
  int errors = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(fields[12]), &errors))
      << r.output;
  // Two workers, 2 s of backoff capped at 100 ms: about 40 calls.
  EXPECT_GT(errors, 0) << r.output;
  EXPECT_LT(errors, 200) << r.output;
}

}  // namespace
}  // namespace ptoserve
