// Client-side load balancing over three servers, one of which goes away
// halfway through, killed (SIGKILL) or stopped as a rolling restart stops it
// (SIGTERM: lame duck, drain, exit): every job still gets exactly one,
// correct answer, and the SDK's callers never see an error.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <functional>
#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "tests/integration/server_process.h"

namespace ptoserve {
namespace {

// 20,000 TAND jobs from 8 threads through one SDK client over `servers`;
// `fault` runs once, when half of them are answered.
void RunJobs(ServerProcess* servers[3], const std::function<void()>& fault) {
  const std::string address = absl::StrCat(servers[0]->address(), ",",
                                           servers[1]->address(), ",",
                                           servers[2]->address());
  auto client = Client::Connect(address).value();

  constexpr int kJobs = 20000;
  constexpr int kThreads = 32;
  std::vector<std::atomic<int>> answers(kJobs);
  std::atomic<int> next{0}, done{0}, wrong{0}, failed{0};
  std::atomic<bool> faulted{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      std::vector<int32_t> a(8), b(8, 0x0ff0);
      for (int i; (i = next++) < kJobs;) {
        for (int k = 0; k < 8; ++k) a[k] = i * 8 + k;
        absl::StatusOr<TileResult<int32_t>> r = client->Tand<int32_t>({a, b, 1, 8});
        ++answers[i];
        if (!r.ok()) {
          ++failed;
          ADD_FAILURE() << "job " << i << ": " << r.status();
          continue;
        }
        for (int k = 0; k < 8; ++k) {
          if (r->elements[k] != ((i * 8 + k) & 0x0ff0)) ++wrong;
        }
        if (++done == kJobs / 2 && !faulted.exchange(true)) fault();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(faulted.load());
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  for (int i = 0; i < kJobs; ++i) ASSERT_EQ(answers[i].load(), 1) << "job " << i;
}

TEST(ScaleOutTest, KillingOneOfThreeServersLosesNothing) {
  ServerProcess s1, s2, s3;
  ServerProcess* servers[3] = {&s1, &s2, &s3};
  RunJobs(servers, [&] { kill(s2.pid(), SIGKILL); });
}

// What a rolling restart does to one replica. During the lame duck the
// server refuses new calls UNAVAILABLE and answers the ones it has; calls
// that reach it as it closes are cancelled by gRPC itself. The SDK retries
// both on another server (jobs have no side effects), so no caller sees
// either.
TEST(ScaleOutTest, StoppingOneOfThreeServersLosesNothingAndShowsNoError) {
  const std::vector<std::string> flags = {"--lame_duck=300ms", "--shutdown_grace=5s"};
  ServerProcess s1(flags), s2(flags), s3(flags);
  ServerProcess* servers[3] = {&s1, &s2, &s3};
  RunJobs(servers, [&] { kill(s2.pid(), SIGTERM); });
  const int status = s2.Terminate(10);  // reaps it; SIGTERM again is harmless
  ASSERT_NE(status, -1) << "the stopped server did not exit";
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace ptoserve
