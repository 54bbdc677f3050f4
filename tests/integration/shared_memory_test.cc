// The shared-memory data path end to end: a real server, regions made by
// the C++ SDK (client/shared_region.h), jobs that reference them through
// Execute, ExecuteStream and ExecuteBatches, compared with the bytes path
// and a scalar loop; every refusal over the wire; objects cut short; jobs
// in flight when their region is unregistered; authentication; the path
// turned off.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "client/shared_region.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_files.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

ClientOptions Quick() {
  ClientOptions o;
  o.call_timeout = absl::Seconds(60);
  return o;
}

// The scalar loop: each element of the valid region is a op b, every other
// element zero (dst is new).
template <typename T>
std::vector<T> Expected(bool is_xor, const std::vector<T>& a,
                        const std::vector<T>& b, uint32_t cols,
                        uint32_t valid_rows, uint32_t valid_cols) {
  std::vector<T> out(a.size(), T{0});
  for (uint32_t i = 0; i < valid_rows; ++i) {
    for (uint32_t j = 0; j < valid_cols; ++j) {
      const size_t k = size_t{i} * cols + j;
      out[k] = static_cast<T>(is_xor ? a[k] ^ b[k] : a[k] & b[k]);
    }
  }
  return out;
}

template <typename T>
void SharedMatchesBytes(const Client& client, SharedRegion* region,
                        std::mt19937* rng, v1::Target target, bool is_xor) {
  std::uniform_int_distribution<uint32_t> dim(1, 20), blocks(1, 3);
  const uint32_t rows = dim(*rng);
  const uint32_t cols =
      target == v1::TARGET_HOST ? dim(*rng) : blocks(*rng) * (32 / sizeof(T));
  const uint32_t valid_rows =
      std::uniform_int_distribution<uint32_t>(1, rows)(*rng);
  const uint32_t valid_cols =
      std::uniform_int_distribution<uint32_t>(1, cols)(*rng);
  const size_t n = size_t{rows} * cols;
  absl::Span<T> a = region->Allocate<T>(n).value();
  absl::Span<T> b = region->Allocate<T>(n).value();
  absl::Span<T> c = region->Allocate<T>(n).value();
  for (T& v : a) v = static_cast<T>((*rng)());
  for (T& v : b) v = static_cast<T>((*rng)());
  for (T& v : c) v = static_cast<T>(0x5a5a5a5a);  // must all be written
  const BinaryArgs<T> args{a, b, rows, cols, valid_rows, valid_cols, target};
  const v1::Opcode opcode = is_xor ? v1::OPCODE_TXOR : v1::OPCODE_TAND;

  absl::StatusOr<v1::JobResult> bytes =
      client.Execute(BinaryJob<T>(opcode, args));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<v1::Job> job = SharedBinaryJob<T>(opcode, *region, args, c);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_FALSE(job->tiles().at("src0").has_shared() &&
               !job->tiles().at("src0").data().empty());
  absl::StatusOr<v1::JobResult> shared = client.Execute(*job);
  ASSERT_TRUE(shared.ok()) << shared.status();

  const v1::Tile& dst = shared->tiles().at("dst");
  EXPECT_TRUE(dst.data().empty());
  EXPECT_EQ(dst.shared().ShortDebugString(),
            job->output_regions().at("dst").ShortDebugString());
  EXPECT_EQ(shared->events_size(), bytes->events_size());
  const std::vector<T> want = Expected(
      is_xor, std::vector<T>(a.begin(), a.end()),
      std::vector<T>(b.begin(), b.end()), cols, valid_rows, valid_cols);
  EXPECT_EQ(std::vector<T>(c.begin(), c.end()), want);
  EXPECT_EQ(TileElements<T>(bytes->tiles().at("dst")).value(), want);
}

TEST(SharedMemoryTest, EveryTypeTargetAndOpcodeMatchesTheBytesPath) {
  ServerProcess server;
  auto client = Client::Connect(server.address(), Quick()).value();
  absl::StatusOr<v1::Capabilities> caps = client->GetCapabilities();
  ASSERT_TRUE(caps.ok());
  EXPECT_TRUE(caps->shared_memory().enabled());
  EXPECT_EQ(caps->shared_memory().key_prefix(), "/ptoserve");
  EXPECT_EQ(caps->shared_memory().max_regions(), 64u);
  auto region = SharedRegion::Create(*client, 4 << 20);
  ASSERT_TRUE(region.ok()) << region.status();
  std::mt19937 rng(11);
  for (v1::Target target : {v1::TARGET_HOST, v1::TARGET_A2A3, v1::TARGET_A5}) {
    for (bool is_xor : {false, true}) {
      for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE(absl::StrCat(v1::Target_Name(target), is_xor, round));
        SharedMatchesBytes<int8_t>(*client, region->get(), &rng, target,
                                   is_xor);
        SharedMatchesBytes<uint8_t>(*client, region->get(), &rng, target,
                                    is_xor);
        SharedMatchesBytes<int16_t>(*client, region->get(), &rng, target,
                                    is_xor);
        SharedMatchesBytes<uint16_t>(*client, region->get(), &rng, target,
                                     is_xor);
        SharedMatchesBytes<int32_t>(*client, region->get(), &rng, target,
                                    is_xor);
        SharedMatchesBytes<uint32_t>(*client, region->get(), &rng, target,
                                     is_xor);
      }
    }
  }
  absl::StatusOr<v1::ListResponse> list = client->ListRegions();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->regions_size(), 1);
  EXPECT_EQ(list->regions(0).name(), (*region)->name());
  EXPECT_EQ(list->regions(0).jobs_in_flight(), 0u);
  EXPECT_EQ(list->regions(0).jobs_total(), 3u * 2 * 3 * 6);
  region->reset();  // unregisters and removes the object
  EXPECT_EQ(client->ListRegions()->regions_size(), 0);
}

// A job over tiles a and b in region `name` at offsets 0 and 256, 8x8
// int32, dst to `out_offset`.
v1::Job SliceJob(const std::string& name, uint64_t out_offset,
                 uint64_t size = 256) {
  v1::Job job;
  for (auto [tile, offset] : {std::pair{"a", 0}, std::pair{"b", 256}}) {
    v1::Tile& t = (*job.mutable_tiles())[tile];
    t.set_dtype(v1::DTYPE_INT32);
    t.set_rows(8);
    t.set_cols(8);
    v1::RegionSlice* s = t.mutable_shared();
    s->set_region(name);
    s->set_offset(offset);
    s->set_size(256);
  }
  v1::Instruction* inst = job.add_instructions();
  inst->set_opcode(v1::OPCODE_TAND);
  inst->set_dst("c");
  inst->set_src0("a");
  inst->set_src1("b");
  v1::RegionSlice& out = (*job.mutable_output_regions())["c"];
  out.set_region(name);
  out.set_offset(out_offset);
  out.set_size(size);
  return job;
}

TEST(SharedMemoryTest, BadSlicesAndRegistrationsAreRefusedByName) {
  // The server-wide bound (one user may have all of it here;
  // region_slots_test covers the per-user one).
  ServerProcess server(
      {"--max_shared_regions=2", "--max_shared_regions_per_user=2"});
  auto client = Client::Connect(server.address(), Quick()).value();
  auto region = SharedRegion::Create(*client, 4096).value();
  const std::string r = region->name();
  struct Case {
    v1::Job job;
    absl::StatusCode code;
    std::string says;
  };
  const Case cases[] = {
      {SliceJob(r, 512), absl::StatusCode::kOk, ""},
      {SliceJob("nope", 512), absl::StatusCode::kNotFound,
       "no region \"nope\" is registered"},
      {SliceJob(r, 3841), absl::StatusCode::kOutOfRange,
       "output_regions[\"c\"]: the slice at offset 3841 of 256 bytes reaches "
       "past the end"},
      {SliceJob(r, std::numeric_limits<uint64_t>::max() - 100),
       absl::StatusCode::kOutOfRange, "reaches past the end"},
      {SliceJob(r, 512, 255), absl::StatusCode::kInvalidArgument,
       "tile \"c\" is 8x8 int32, 256 bytes, and its slice is 255 bytes"},
      {SliceJob(r, 100), absl::StatusCode::kInvalidArgument,
       "share bytes of one shared-memory object"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<v1::JobResult> got = client->Execute(c.job);
    EXPECT_EQ(got.status().code(), c.code) << c.job.ShortDebugString();
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.says));
  }
  v1::RegisterRequest again;
  again.set_name(r);
  again.set_key(region->key());
  again.set_size(10);
  EXPECT_EQ(client->RegisterRegion(again).status().code(),
            absl::StatusCode::kAlreadyExists);
  again.set_name("second");
  ASSERT_TRUE(client->RegisterRegion(again).ok());
  again.set_name("third");
  absl::StatusOr<v1::Region> third = client->RegisterRegion(again);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(third.status().message()),
              HasSubstr("2 regions are registered, the most this server "
                        "keeps (--max_shared_regions)"));
  EXPECT_TRUE(client->UnregisterRegion("second").ok());
  EXPECT_EQ(client->UnregisterRegion("second").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(*client->Health(), "SERVING");
}

TEST(SharedMemoryTest, AnObjectCutShortIsAnErrorAndTheServerCarriesOn) {
  ServerProcess server;
  auto client = Client::Connect(server.address(), Quick()).value();
  auto cut = SharedRegion::Create(*client, 3 * 4096).value();
  auto kept = SharedRegion::Create(*client, 4096).value();
  const std::string path = absl::StrCat("/dev/shm", cut->key());
  ASSERT_EQ(truncate(path.c_str(), 100), 0);
  // The output's page is past the object's end now: the job that writes
  // it faults, and is answered an error naming the object's size.
  absl::StatusOr<v1::JobResult> faulted =
      client->Execute(SliceJob(cut->name(), 8192));
  EXPECT_EQ(faulted.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(faulted.status().message()),
              HasSubstr("is now 100 bytes, too short for the region (offset "
                        "0, 12288 bytes), and an access to it faulted"));
  // The next job is refused before it runs, while the object stays short.
  absl::StatusOr<v1::JobResult> refused =
      client->Execute(SliceJob(cut->name(), 512));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("is now 100 bytes, too short"));
  EXPECT_TRUE(client->Execute(SliceJob(kept->name(), 512)).ok());
  EXPECT_EQ(*client->Health(), "SERVING");
  // Whole again: the region serves again, reading and writing the
  // object's own bytes (a & b, element by element).
  ASSERT_EQ(truncate(path.c_str(), 3 * 4096), 0);
  auto* words = reinterpret_cast<int32_t*>(cut->data());
  for (int i = 0; i < 64; ++i) {
    words[i] = 0x0f0f0f0f + i;   // a, bytes [0, 256)
    words[64 + i] = 0x00ff00ff;  // b, bytes [256, 512)
    words[2048 + i] = -1;        // c, bytes [8192, 8448), overwritten
  }
  absl::StatusOr<v1::JobResult> again =
      client->Execute(SliceJob(cut->name(), 8192));
  ASSERT_TRUE(again.ok()) << again.status();
  for (int i = 0; i < 64; ++i) {
    ASSERT_EQ(words[2048 + i], (0x0f0f0f0f + i) & 0x00ff00ff) << i;
  }
}

TEST(SharedMemoryTest, ConcurrentJobsWriteDisjointOutputsOfOneRegion) {
  ServerProcess server;
  auto client = Client::Connect(server.address(), Quick()).value();
  constexpr int kThreads = 6, kJobs = 30, kN = 32 * 32;
  auto region =
      SharedRegion::Create(*client, (kThreads * 3 + 2) * kN * 4).value();
  std::vector<absl::Span<uint32_t>> a, b, c;
  for (int t = 0; t < kThreads; ++t) {
    a.push_back(region->Allocate<uint32_t>(kN).value());
    b.push_back(region->Allocate<uint32_t>(kN).value());
    c.push_back(region->Allocate<uint32_t>(kN).value());
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int j = 0; j < kJobs; ++j) {
        for (int k = 0; k < kN; ++k) {
          a[t][k] = static_cast<uint32_t>(t * 1000003 + j * 7919 + k);
          b[t][k] = 0xf0f0f0f0u >> (j % 8);
        }
        const BinaryArgs<uint32_t> args{a[t], b[t], 32, 32};
        auto job =
            SharedBinaryJob<uint32_t>(v1::OPCODE_TXOR, *region, args, c[t]);
        if (!job.ok() || !client->Execute(*job).ok()) {
          ++wrong;
          continue;
        }
        for (int k = 0; k < kN; ++k) {
          if (c[t][k] != (a[t][k] ^ b[t][k])) {
            ++wrong;
            break;
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(SharedMemoryTest, StreamsAndBatchesReferenceRegionsToo) {
  ServerProcess server;
  auto client = Client::Connect(server.address(), Quick()).value();
  auto region = SharedRegion::Create(*client, 64 * 1024).value();
  absl::Span<int16_t> a = region->Allocate<int16_t>(256).value();
  absl::Span<int16_t> b = region->Allocate<int16_t>(256).value();
  std::vector<absl::Span<int16_t>> outs;
  for (int i = 0; i < 8; ++i)
    outs.push_back(region->Allocate<int16_t>(256).value());
  for (int k = 0; k < 256; ++k) {
    a[k] = static_cast<int16_t>(k * 131);
    b[k] = static_cast<int16_t>(~k);
  }
  std::vector<v1::Job> jobs;
  v1::JobBatch batch;
  for (int i = 0; i < 8; ++i) {
    auto job = SharedBinaryJob<int16_t>(
        i % 2 ? v1::OPCODE_TXOR : v1::OPCODE_TAND, *region,
        BinaryArgs<int16_t>{a, b, 16, 16}, outs[i]);
    ASSERT_TRUE(job.ok());
    job->set_id(absl::StrCat(i));
    (i < 4 ? jobs.emplace_back(*job) : *batch.add_jobs()) = *job;
  }
  int answered = 0;
  ASSERT_TRUE(client
                  ->ExecuteStream(jobs,
                                  [&](v1::JobResult r) {
                                    EXPECT_EQ(r.status().code(), v1::OK)
                                        << r.status().message();
                                    ++answered;
                                  })
                  .ok());
  ASSERT_TRUE(client
                  ->ExecuteBatches({batch},
                                   [&](v1::JobResultBatch r) {
                                     for (const auto& one : r.results()) {
                                       EXPECT_EQ(one.status().code(), v1::OK)
                                           << one.status().message();
                                       ++answered;
                                     }
                                   })
                  .ok());
  EXPECT_EQ(answered, 8);
  for (int i = 0; i < 8; ++i) {
    for (int k = 0; k < 256; ++k) {
      ASSERT_EQ(outs[i][k], i % 2 ? a[k] ^ b[k] : a[k] & b[k]) << i << " " << k;
    }
  }
}

TEST(SharedMemoryTest, UnregisteringWhileJobsRunLetsThemFinish) {
  ServerProcess server({"--workers=1"});
  auto client = Client::Connect(server.address(), Quick()).value();
  constexpr int kJobs = 24, kN = 256 * 256;
  auto region =
      SharedRegion::Create(*client, (2 + kJobs) * kN * 4 + 4096).value();
  absl::Span<int32_t> a = region->Allocate<int32_t>(kN).value();
  absl::Span<int32_t> b = region->Allocate<int32_t>(kN).value();
  for (int k = 0; k < kN; ++k) {
    a[k] = k * 2654435761u;
    b[k] = 0x0ff00ff0;
  }
  std::vector<absl::Span<int32_t>> outs;
  std::vector<v1::Job> jobs;
  for (int i = 0; i < kJobs; ++i) {
    outs.push_back(region->Allocate<int32_t>(kN).value());
    auto job = SharedBinaryJob<int32_t>(v1::OPCODE_TAND, *region,
                                        BinaryArgs<int32_t>{a, b, 256, 256},
                                        outs.back());
    job->set_id(absl::StrCat(i));
    jobs.push_back(*job);
  }
  std::atomic<int> first{0};
  int ok = 0, not_found = 0, other = 0;
  std::vector<int> done_ok;
  std::thread stream([&] {
    EXPECT_TRUE(client
                    ->ExecuteStream(jobs,
                                    [&](v1::JobResult r) {
                                      ++first;
                                      if (r.status().code() == v1::OK) {
                                        ++ok;
                                        done_ok.push_back(std::stoi(r.id()));
                                      } else if (r.status().code() ==
                                                 v1::NOT_FOUND) {
                                        ++not_found;
                                      } else {
                                        ++other;
                                      }
                                    })
                    .ok());
  });
  while (first.load() == 0) absl::SleepFor(absl::Microseconds(200));
  absl::StatusOr<v1::Region> gone = client->UnregisterRegion(region->name());
  ASSERT_TRUE(gone.ok()) << gone.status();
  stream.join();
  EXPECT_EQ(ok + not_found, kJobs);
  EXPECT_EQ(other, 0);
  EXPECT_GE(ok, 1);
  for (int i : done_ok) {
    for (int k = 0; k < kN; k += 97) {
      ASSERT_EQ(outs[i][k], a[k] & b[k]) << i;
    }
  }
  EXPECT_EQ(client->ListRegions()->regions_size(), 0);
  // The name is free again, and the mapping's bytes back in the budget.
  v1::RegisterRequest again;
  again.set_name(region->name());
  again.set_key(region->key());
  again.set_size(4096);
  EXPECT_TRUE(client->RegisterRegion(again).ok());
}

// Once a job is answered it holds its region no longer: Unregister right
// after the answer finds no job in flight and gives the budget back, so a
// region of the same size registers at once.
TEST(SharedMemoryTest, AnAnsweredJobHoldsItsRegionNoLonger) {
  ServerProcess server({"--memory_budget_mb=64", "--max_job_mb=16"});
  auto client = Client::Connect(server.address(), Quick()).value();
  // Over 1 MiB of output: run by a scheduler worker, not the call's thread.
  constexpr int kN = 1024 * 1024;
  for (int round = 0; round < 30; ++round) {
    auto region = SharedRegion::Create(*client, 40 << 20).value();
    absl::Span<int32_t> a = region->Allocate<int32_t>(kN).value();
    absl::Span<int32_t> c = region->Allocate<int32_t>(kN).value();
    auto job = SharedBinaryJob<int32_t>(
        v1::OPCODE_TXOR, *region, BinaryArgs<int32_t>{a, a, 1024, 1024}, c);
    ASSERT_TRUE(client->Execute(*job).ok());
    absl::StatusOr<v1::Region> gone = client->UnregisterRegion(region->name());
    ASSERT_TRUE(gone.ok()) << gone.status();
    EXPECT_EQ(gone->jobs_in_flight(), 0u) << round;
    // 40 of 64 MiB: only if the last region's bytes are back.
    v1::RegisterRequest again;
    again.set_name(region->name());
    again.set_key(region->key());
    again.set_size(40 << 20);
    absl::StatusOr<v1::Region> next = client->RegisterRegion(again);
    EXPECT_TRUE(next.ok()) << round << ": " << next.status();
  }
}

// A stream's job refused before it is parsed (its request's bytes do not
// fit beside a region holding most of the budget) is answered with its id,
// read from its bytes, so that the client can tell which job it was.
TEST(SharedMemoryTest, AStreamJobRefusedForTheBudgetKeepsItsId) {
  ServerProcess server({"--memory_budget_mb=64", "--max_job_mb=16"});
  auto client = Client::Connect(server.address(), Quick()).value();
  auto region = SharedRegion::Create(*client, 60 << 20);
  ASSERT_TRUE(region.ok()) << region.status();
  std::vector<int32_t> small(16, 7), big(1 << 20, 7);  // 4 MiB: decoded aside
  std::vector<v1::Job> jobs = {
      BinaryJob<int32_t>(v1::OPCODE_TAND, {small, small, 4, 4}),
      BinaryJob<int32_t>(v1::OPCODE_TAND, {big, big, 1024, 1024}),
      BinaryJob<int32_t>(v1::OPCODE_TAND, {small, small, 4, 4})};
  jobs[0].set_id("small-1");
  jobs[1].set_id("big");
  jobs[2].set_id("small-2");
  std::map<std::string, v1::JobResult> results;
  ASSERT_TRUE(client
                  ->ExecuteStream(jobs,
                                  [&](v1::JobResult r) {
                                    results.emplace(r.id(), std::move(r));
                                  })
                  .ok());
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results.at("small-1").status().code(), v1::OK);
  EXPECT_EQ(results.at("small-2").status().code(), v1::OK);
  EXPECT_EQ(results.at("big").status().code(), v1::RESOURCE_EXHAUSTED);
  EXPECT_THAT(results.at("big").status().message(),
              HasSubstr("registered shared-memory regions"));
}

TEST(SharedMemoryTest, TheSameAuthenticationAsJobs) {
  const std::string tokens = WriteTempFile("shm-tokens", "secret-shm\n");
  ServerProcess server({"--auth_token_file=" + tokens});
  auto anonymous = Client::Connect(server.address(), Quick()).value();
  v1::RegisterRequest request;
  request.set_name("r");
  request.set_key("/ptoserve-none");
  request.set_size(1);
  EXPECT_EQ(anonymous->RegisterRegion(request).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(anonymous->UnregisterRegion("r").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(anonymous->ListRegions().status().code(),
            absl::StatusCode::kUnauthenticated);
  ClientOptions with = Quick();
  with.token = "secret-shm";
  auto client = Client::Connect(server.address(), with).value();
  auto region = SharedRegion::Create(*client, 4096);
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_EQ(
      anonymous->Execute(SliceJob((*region)->name(), 512)).status().code(),
      absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(client->Execute(SliceJob((*region)->name(), 512)).ok());
}

TEST(SharedMemoryTest, OffMeansOffForRegistrationsAndJobs) {
  ServerProcess server({"--shared_memory=false"});
  auto client = Client::Connect(server.address(), Quick()).value();
  EXPECT_FALSE(client->GetCapabilities()->shared_memory().enabled());
  absl::StatusOr<std::unique_ptr<SharedRegion>> region =
      SharedRegion::Create(*client, 4096);
  EXPECT_EQ(region.status().code(), absl::StatusCode::kFailedPrecondition);
  v1::RegisterRequest request;
  request.set_name("r");
  request.set_key("/ptoserve-none");
  request.set_size(1);
  absl::StatusOr<v1::Region> refused = client->RegisterRegion(request);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("--shared_memory"));
  EXPECT_EQ(client->ListRegions().status().code(),
            absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<v1::JobResult> job = client->Execute(SliceJob("r", 512));
  EXPECT_EQ(job.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(job.status().message()),
              HasSubstr("is in shared memory, which this server does not "
                        "serve"));
}

}  // namespace
}  // namespace ptoserve
