// Client-side load balancing over three servers, one of which goes away
// halfway through, killed (SIGKILL) or stopped as a rolling restart stops it
// (SIGTERM: lame duck, drain, exit): every call still gets its correct
// answer, the SDK's callers never see an error, and the servers' own
// counters show the load spread over all three and then taken over by the
// two that stay.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <functional>
#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "tests/integration/metrics_scrape.h"
#include "tests/integration/process_stats.h"
#include "tests/integration/server_process.h"

namespace ptoserve {
namespace {

// Jobs the server at `metrics_url` has answered OK.
double AnsweredOk(const std::string& metrics_url) {
  return Value(Scrape(metrics_url),
               R"(ptoserve_jobs_total{target="host",code="OK"})");
}

// 20,000 TAND jobs (6,000 under a sanitizer, which makes each several times
// dearer) from 32 threads through one SDK client over `servers`; `fault`
// runs once, when half of them are answered; servers[1] is the one it takes
// away. It may answer, after the fault, the calls it had then (one per
// thread, twice over: when the count was read and when the fault came),
// and, a fraction `late` of the rest, those it takes while the fault
// reaches it (none for SIGKILL).
void RunJobs(ServerProcess* servers[3], const std::function<void()>& fault,
             double late = 0) {
  const std::string address =
      absl::StrCat(servers[0]->address(), ",", servers[1]->address(), ",",
                   servers[2]->address());
  auto client = Client::Connect(address).value();

  constexpr int kJobs = kSanitizerBuild ? 6000 : 20000;
  constexpr int kThreads = 32;
  std::atomic<int> next{0}, done{0}, wrong{0}, failed{0};
  std::atomic<bool> faulted{false};
  double before[3] = {0, 0, 0};  // each server's OK jobs when the fault came
  int answered_at_fault = 0;     // jobs the client had its answer to then
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      std::vector<int32_t> a(8), b(8, 0x0ff0);
      for (int i; (i = next++) < kJobs;) {
        for (int k = 0; k < 8; ++k) a[k] = i * 8 + k;
        absl::StatusOr<TileResult<int32_t>> r =
            client->Tand<int32_t>({a, b, 1, 8});
        if (!r.ok()) {
          ++failed;
          ADD_FAILURE() << "job " << i << ": " << r.status();
          continue;
        }
        for (int k = 0; k < 8; ++k) {
          if (r->elements[k] != ((i * 8 + k) & 0x0ff0)) ++wrong;
        }
        if (++done == kJobs / 2 && !faulted.exchange(true)) {
          for (int s = 0; s < 3; ++s) {
            before[s] = AnsweredOk(servers[s]->metrics_url());
          }
          answered_at_fault = done.load();
          fault();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(faulted.load());
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(done.load(), kJobs);
  // Round robin spread the first half over all three, and the two that
  // stayed ran every job answered after the fault but for the calls in
  // flight around it, which the third may have finished: at most one per
  // thread when the count was read, and one per thread when the fault came;
  // and the `late` ones. (The scrapes take a while, a sanitizer's most;
  // jobs the two answered meanwhile only add to what they count.)
  for (int s = 0; s < 3; ++s) {
    EXPECT_GT(before[s], kJobs / 10) << "server " << s;
  }
  const double taken_over =
      (AnsweredOk(servers[0]->metrics_url()) - before[0]) +
      (AnsweredOk(servers[2]->metrics_url()) - before[2]);
  std::cout << "after the fault: " << kJobs - answered_at_fault
            << " jobs answered, " << taken_over
            << " of them (and of the scrapes' time) by the two servers left"
            << std::endl;
  const int after = kJobs - answered_at_fault;
  EXPECT_GE(taken_over, after - 2 * kThreads - late * after);
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
  const std::vector<std::string> flags = {"--lame_duck=300ms",
                                          "--shutdown_grace=5s"};
  ServerProcess s1(flags), s2(flags), s3(flags);
  ServerProcess* servers[3] = {&s1, &s2, &s3};
  // SIGTERM is a signal's thread waking and the server changing state: the
  // stopped one goes on answering new calls until then (72 jobs, of 9,784,
  // when the machine was busy with a build); a tenth of the rest bounds
  // it, where a server that went on serving through its lame duck would
  // answer a third.
  RunJobs(
      servers, [&] { kill(s2.pid(), SIGTERM); }, /*late=*/0.1);
  const int status = s2.Terminate(10);  // reaps it; SIGTERM again is harmless
  ASSERT_NE(status, -1) << "the stopped server did not exit";
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace ptoserve
