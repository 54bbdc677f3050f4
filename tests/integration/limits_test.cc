// Every per-job and scheduling flag, exercised against a real server: each
// limit admits what is at it and refuses what is over it, naming the flag's
// figure; the scheduling flags change what the server does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "tests/integration/server_process.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

// A job of `count` TANDs in a chain over int32 tiles a and b of rows x
// cols (filled with 6 and 3): c0 = a & b, c1 = c0 & b, ...
v1::Job Chain(int count, uint32_t rows = 1, uint32_t cols = 8) {
  v1::Job job;
  for (const char* name : {"a", "b"}) {
    v1::Tile& t = (*job.mutable_tiles())[name];
    t.set_dtype(v1::DTYPE_INT32);
    t.set_rows(rows);
    t.set_cols(cols);
    t.set_fill(name[0] == 'a' ? 6 : 3);
  }
  for (int i = 0; i < count; ++i) {
    v1::Instruction* inst = job.add_instructions();
    inst->set_opcode(v1::OPCODE_TAND);
    inst->set_dst(absl::StrCat("c", i));
    inst->set_src0(i == 0 ? "a" : absl::StrCat("c", i - 1));
    inst->set_src1("b");
  }
  return job;
}

std::unique_ptr<Client> Connect(const ServerProcess& server) {
  return Client::Connect(server.address()).value();
}

TEST(LimitsTest, MaxTileMb) {
  ServerProcess server({"--max_tile_mb=1"});
  auto client = Connect(server);
  EXPECT_TRUE(client->Execute(Chain(1, 512, 512)).ok());  // 1 MiB: at the limit
  absl::StatusOr<v1::JobResult> r = client->Execute(Chain(1, 513, 512));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted)
      << r.status();
  EXPECT_THAT(
      std::string(r.status().message()),
      HasSubstr("tile \"a\": 513x512 int32 is 1050624 bytes, over the limit of "
                "1048576 bytes per tile"));
}

TEST(LimitsTest, MaxTilesPerJob) {
  ServerProcess server({"--max_tiles_per_job=3"});
  auto client = Connect(server);
  EXPECT_TRUE(client->Execute(Chain(1)).ok());                  // a, b and c0
  absl::StatusOr<v1::JobResult> r = client->Execute(Chain(2));  // and c1
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted)
      << r.status();
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("job needs more than 3 tiles"));
  v1::Job declared = Chain(1);
  for (const char* name : {"x", "y"}) {
    (*declared.mutable_tiles())[name] = declared.tiles().at("a");
  }
  r = client->Execute(declared);  // four declared: refused before parsing
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted)
      << r.status();
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("job has more than 3 tiles"));
}

TEST(LimitsTest, MaxInstructionsPerJob) {
  ServerProcess server(
      {"--max_instructions_per_job=2", "--max_tiles_per_job=10"});
  auto client = Connect(server);
  absl::StatusOr<v1::JobResult> ok = client->Execute(Chain(2));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->events_size(), 2);
  absl::StatusOr<v1::JobResult> r = client->Execute(Chain(3));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted)
      << r.status();
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("more than 2 instructions"));
}

TEST(LimitsTest, HostBufferKb) {
  ServerProcess server({"--host_buffer_kb=1"});
  auto client = Connect(server);
  // Three 8x8 int32 tiles of 256 bytes placed in a 1 KiB buffer.
  auto placed = [](uint64_t dst_address) {
    v1::Job job = Chain(1, 8, 8);
    job.set_mode(v1::MODE_MANUAL);
    (*job.mutable_tiles())["a"].set_address(0);
    (*job.mutable_tiles())["b"].set_address(256);
    v1::Tile& c = (*job.mutable_tiles())["c0"];
    c.set_dtype(v1::DTYPE_INT32);
    c.set_rows(8);
    c.set_cols(8);
    c.set_address(dst_address);
    return job;
  };
  EXPECT_TRUE(client->Execute(placed(768)).ok());  // ends at 1024
  absl::StatusOr<v1::JobResult> r = client->Execute(placed(800));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
      << r.status();
  EXPECT_THAT(
      std::string(r.status().message()),
      HasSubstr("does not fit in the host unified buffer of 1024 bytes"));
}

// When a job's last instruction ended, by the server's clock (its event).
int64_t EndNs(const v1::JobResult& r) {
  const auto& end = r.events(r.events_size() - 1).end_time();
  return end.seconds() * 1000000000 + end.nanos();
}

// How many high-priority jobs finished after one low-priority job sent
// into a queue that four streams of high-priority jobs keep full: each is
// a chain of 64 instructions, which one worker runs one at a time, so the
// worker, not the streams, is what they wait for. "After" by the events'
// end times, as the server ran them: results the clients have not read yet
// when the low job's answer comes do not count as later. Aging is the
// scheduler's: a queue delay leaves every job to it (none runs to
// completion on the thread that read it, which the low job could do at a
// moment the queue happened to be empty); a batch of one is full, and goes
// at once.
int HighJobsAfterTheLowOne(int aging_ms) {
  ServerProcess server(
      {"--workers=1", "--max_batch_size=1", "--max_queue_delay_us=1000",
       absl::StrCat("--priority_aging_ms=", aging_ms), "--priority_levels=2"});
  std::atomic<int> high_done{0};
  std::mutex mu;
  std::vector<int64_t> high_ends;  // guarded by mu
  std::vector<std::thread> flood;
  for (int t = 0; t < 4; ++t) {
    flood.emplace_back([&] {
      auto client = Connect(server);
      v1::Job job = Chain(64, 16, 16);
      job.set_priority(1);
      std::vector<v1::Job> jobs(150, job);
      ASSERT_TRUE(client
                      ->ExecuteStream(jobs,
                                      [&](v1::JobResult r) {
                                        EXPECT_EQ(r.status().code(), v1::OK)
                                            << r.status().message();
                                        if (r.events_size() > 0) {
                                          std::lock_guard<std::mutex> lock(mu);
                                          high_ends.push_back(EndNs(r));
                                        }
                                        ++high_done;
                                      })
                      .ok());
    });
  }
  while (high_done.load() < 50) std::this_thread::yield();
  auto client = Connect(server);
  absl::StatusOr<v1::JobResult> low = client->Execute(Chain(1, 16, 16));
  EXPECT_TRUE(low.ok()) << low.status();  // priority 0
  for (auto& t : flood) t.join();
  if (!low.ok() || low->events_size() == 0) return -1;
  const int64_t low_end = EndNs(*low);
  EXPECT_EQ(high_ends.size(), 600u);
  return static_cast<int>(
      std::count_if(high_ends.begin(), high_ends.end(),
                    [&](int64_t e) { return e > low_end; }));
}

TEST(LimitsTest, PriorityAgingLetsLowPriorityThrough) {
  // Aging every millisecond: the low job soon outranks the flood. Aging
  // once an hour: it waits for the flood to end.
  const int aging_fast = HighJobsAfterTheLowOne(1);
  const int aging_never = HighJobsAfterTheLowOne(3600000);
  std::cout << "high-priority jobs finished after the low one: " << aging_fast
            << " (aging 1 ms), " << aging_never << " (aging 1 h)" << std::endl;
  EXPECT_GT(aging_fast, 300);
  EXPECT_LT(aging_never, 50);
}

// One worker runs one batch at a time: the batches of streams' jobs never
// overlap. A queue delay leaves every job to the scheduler (none runs to
// completion on the thread that read it); a batch of one is full, and goes
// at once.
TEST(LimitsTest, OneWorkerRunsOneBatchAtATime) {
  ServerProcess server(
      {"--workers=1", "--max_batch_size=1", "--max_queue_delay_us=1000"});
  std::vector<std::thread> clients;
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> runs;  // start, end (ns)
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&] {
      auto client = Connect(server);
      std::vector<v1::Job> jobs(200, Chain(1, 64, 64));
      ASSERT_TRUE(
          client
              ->ExecuteStream(jobs,
                              [&](v1::JobResult r) {
                                ASSERT_EQ(r.status().code(), v1::OK)
                                    << r.status().message();
                                const auto& e = r.events(0);
                                std::lock_guard<std::mutex> lock(mu);
                                runs.emplace_back(
                                    e.start_time().seconds() * 1000000000 +
                                        e.start_time().nanos(),
                                    e.end_time().seconds() * 1000000000 +
                                        e.end_time().nanos());
                              })
              .ok());
    });
  }
  for (auto& t : clients) t.join();
  ASSERT_EQ(runs.size(), 800u);
  std::sort(runs.begin(), runs.end());
  for (size_t i = 1; i < runs.size(); ++i) {
    ASSERT_GE(runs[i].first, runs[i - 1].second)
        << "batches " << i - 1 << " and " << i;
  }
}

}  // namespace
}  // namespace ptoserve
