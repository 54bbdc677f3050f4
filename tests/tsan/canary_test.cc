// Checks that the ThreadSanitizer setup of the tsan config (tools/tsan/:
// the Abseil mutex shim and the suppressions) still reports a race in
// ptoserve's own code that gRPC calls: race_canary has one.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ptoserve {
namespace {

TEST(TsanCanaryTest, RaceInAReactorIsReported) {
#if !defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "only meaningful in --config=tsan builds";
#else
  // The options the suite runs with (tools/test.sh: the suppressions), but
  // carrying on after the first report and exiting 66 if there was one.
  const char* inherited = std::getenv("TSAN_OPTIONS");
  const std::string options =
      std::string(inherited ? inherited : "") + ":halt_on_error=0:exitcode=66";
  const std::string command =
      "TSAN_OPTIONS='" + options + "' tests/tsan/race_canary 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    output.append(buffer, n);
  }
  const int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 66) << output;
  EXPECT_NE(output.find("race_canary: stream ended OK"), std::string::npos)
      << output;
  EXPECT_NE(output.find("WARNING: ThreadSanitizer: data race"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("RacyStream::OnReadDone"), std::string::npos) << output;
#endif
}

}  // namespace
}  // namespace ptoserve
