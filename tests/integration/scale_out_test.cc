// Client-side load balancing over three servers, one of which is killed
// (SIGKILL) halfway through: every job still gets exactly one, correct answer.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "tests/integration/server_process.h"

namespace ptoserve {
namespace {

TEST(ScaleOutTest, KillingOneOfThreeServersLosesNothing) {
  ServerProcess s1, s2, s3;
  const std::string address =
      absl::StrCat(s1.address(), ",", s2.address(), ",", s3.address());
  auto client = Client::Connect(address).value();

  constexpr int kJobs = 20000;
  constexpr int kThreads = 8;
  std::vector<std::atomic<int>> answers(kJobs);
  std::atomic<int> next{0}, done{0}, wrong{0}, failed{0};
  std::atomic<bool> killed{false};
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
        if (++done == kJobs / 2 && !killed.exchange(true)) {
          kill(s2.pid(), SIGKILL);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(killed.load());
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  for (int i = 0; i < kJobs; ++i) ASSERT_EQ(answers[i].load(), 1) << "job " << i;
}

}  // namespace
}  // namespace ptoserve
