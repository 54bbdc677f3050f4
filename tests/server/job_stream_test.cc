// ExecuteStream's machine with a fake wire, the real dispatcher and a
// scheduler the test runs by hand: jobs answered once each, with their ids,
// errors in place, and jobs over the budget waiting their turn; both with
// small jobs run to completion on the thread that read them (the scheduler
// idle) and with every job left to the scheduler.
#include "server/rpc/job_stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "server/jobs/engine_runner.h"
#include "server/metrics/metrics.h"
#include "server/rpc/grpc_body.h"
#include "tests/server/hold_pool.h"
#include "tests/server/signal.h"

namespace ptoserve {
namespace {

// The machine calls it from the test's thread and, for jobs decoded or
// run elsewhere, from the decoders': its state is under a lock, never held
// while the machine is called.
class FakeWire final : public StreamWire {
 public:
  void StartRead(grpc::ByteBuffer* message) override {
    absl::MutexLock lock(&mu_);
    read_ = message;
  }
  void StartWrite(const grpc::ByteBuffer* message, bool /*more*/) override {
    absl::MutexLock lock(&mu_);
    write_ = message;
  }
  void Finish(const grpc::Status& status) override {
    absl::MutexLock lock(&mu_);
    finished_ = status;
  }

  // Completes the pending read with `message`, or as the end of sending.
  void Send(StreamMachine* machine, std::optional<std::string> message) {
    grpc::ByteBuffer* target;
    {
      absl::MutexLock lock(&mu_);
      target = std::exchange(read_, nullptr);
    }
    ASSERT_NE(target, nullptr);
    if (message.has_value()) {
      grpc::Slice slice(*message);
      *target = grpc::ByteBuffer(&slice, 1);
    }
    machine->ReadDone(message.has_value());
  }
  // Completes the pending write; returns what was written.
  v1::JobResult Receive(StreamMachine* machine) {
    v1::JobResult result;
    std::string bytes;
    {
      absl::MutexLock lock(&mu_);
      EXPECT_NE(write_, nullptr);
      if (write_ == nullptr) return result;
      std::vector<grpc::Slice> slices;
      EXPECT_TRUE(write_->Dump(&slices).ok());
      for (const grpc::Slice& s : slices) {
        bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
      write_ = nullptr;
    }
    EXPECT_TRUE(result.ParseFromString(bytes));
    machine->WriteDone(true);
    return result;
  }

  // For another stream.
  void Reset() {
    absl::MutexLock lock(&mu_);
    read_ = nullptr;
    write_ = nullptr;
    finished_.reset();
  }

  bool reading() const {
    absl::MutexLock lock(&mu_);
    return read_ != nullptr;
  }
  bool writing() const {
    absl::MutexLock lock(&mu_);
    return write_ != nullptr;
  }
  std::optional<grpc::Status> finished() const {
    absl::MutexLock lock(&mu_);
    return finished_;
  }

 private:
  mutable absl::Mutex mu_;
  grpc::ByteBuffer* read_ ABSL_GUARDED_BY(mu_) = nullptr;
  const grpc::ByteBuffer* write_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::optional<grpc::Status> finished_ ABSL_GUARDED_BY(mu_);
};

// Whether a small job may run on the thread that read it.
enum class Path { kRunHere, kScheduled };

// No workers: the test runs the scheduler. kScheduled: jobs wait for
// company (a queue delay), so none runs without the scheduler; a batch of
// one is full, and runs at once.
SchedulerOptions NoWorkers(Path path) {
  SchedulerOptions options;
  options.run_by_owner = true;
  if (path == Path::kScheduled) {
    options.max_queue_delay = absl::Hours(1);
    options.max_batch_size = 1;
  }
  return options;
}

// A 64x64 int32 TAND of fills: its result (dst, 16 KiB) comes back as data.
std::string Tand(const std::string& id, int a, int b) {
  v1::Job job;
  job.set_id(id);
  for (const auto& [name, fill] : {std::pair{"a", a}, {"b", b}}) {
    v1::Tile& t = (*job.mutable_tiles())[name];
    t.set_dtype(v1::DTYPE_INT32);
    t.set_rows(64);
    t.set_cols(64);
    t.set_fill(fill);
  }
  v1::Instruction* inst = job.add_instructions();
  inst->set_opcode(v1::OPCODE_TAND);
  inst->set_dst("c");
  inst->set_src0("a");
  inst->set_src1("b");
  job.add_outputs("c");
  return job.SerializeAsString();
}

// A job too large to parse on the thread that read it (over 1 MiB on the
// wire): a TAND of two 512x512 int32 tiles sent as data, a = i, b = 0xff.
std::string HeavyTand(const std::string& id) {
  v1::Job job;
  job.set_id(id);
  for (const char* name : {"a", "b"}) {
    v1::Tile& t = (*job.mutable_tiles())[name];
    t.set_dtype(v1::DTYPE_INT32);
    t.set_rows(512);
    t.set_cols(512);
    std::string data(512 * 512 * 4, '\0');
    for (int32_t i = 0; i < 512 * 512; ++i) {
      const int32_t v = std::string(name) == "a" ? i : 0xff;
      std::memcpy(&data[i * 4], &v, 4);
    }
    t.set_data(std::move(data));
  }
  v1::Instruction* inst = job.add_instructions();
  inst->set_opcode(v1::OPCODE_TAND);
  inst->set_dst("c");
  inst->set_src0("a");
  inst->set_src1("b");
  job.add_outputs("c");
  return job.SerializeAsString();
}

// A job heavy to parse for its instructions alone (65, over the 64 a
// request parsed where it was read may have), its tiles light: 64x64 int32
// fills, c = a & b each time.
std::string ManyInstructions(const std::string& id) {
  v1::Job job;
  job.ParseFromString(Tand(id, 0x0ff0, 0x3c3c));
  for (int i = 1; i < 65; ++i) *job.add_instructions() = job.instructions(0);
  return job.SerializeAsString();
}

int32_t First(const v1::JobResult& r) {
  const std::string& data = r.tiles().at("c").data();
  return *reinterpret_cast<const int32_t*>(data.data());
}

class JobStreamTest : public ::testing::TestWithParam<Path> {
 protected:
  void Open(uint64_t budget_bytes, uint32_t window, CallInfo call = {},
            const StreamCodec* codec = nullptr) {
    budget_.emplace(budget_bytes);
    ServiceLimits limits;
    limits.max_message_bytes = 64 << 20;
    limits.max_job_bytes = budget_bytes;
    limits.memory_budget_bytes = budget_bytes;
    dispatcher_.emplace(&engine_, &scheduler_, limits, &metrics_, &*budget_);
    intake_.emplace(&*dispatcher_, &metrics_, &*budget_, &decoders_);
    share_ = budget_->ShareOf("the test");
    call.share = share_;
    stream_.emplace(&wire_, window, StreamJobs{&*intake_, call, codec});
    stream_->Start();
  }
  std::shared_ptr<Signal> HoldDecoder() { return HoldPool(&decoders_); }
  // Runs whatever the scheduler holds.
  void Run() {
    while (scheduler_.RunOnce() > 0) {
    }
  }

  const Engine engine_{EngineOptions{}};
  MetricsRegistry registry_;
  ServiceMetrics metrics_{&registry_};
  EngineRunner runner_{&engine_, &metrics_};
  Scheduler scheduler_{NoWorkers(GetParam()), &runner_};
  TaskPool decoders_{1, 16};
  std::optional<MemoryBudget> budget_;
  std::shared_ptr<MemoryBudget::Share> share_;
  std::optional<Dispatcher> dispatcher_;
  std::optional<Intake> intake_;
  FakeWire wire_;
  std::optional<JobStream> stream_;
};

TEST_P(JobStreamTest, EachJobIsAnsweredOnceWithItsIdAndErrorsInPlace) {
  Open(/*budget_bytes=*/256 << 20, /*window=*/16);
  wire_.Send(&*stream_, Tand("one", 0x0ff0, 0x3c3c));
  wire_.Send(&*stream_, "\xff\xff not a job");
  std::string missing = Tand("two", 1, 3);
  wire_.Send(&*stream_, missing);
  wire_.Send(&*stream_, std::nullopt);
  std::vector<v1::JobResult> results;
  const auto receive_all = [&] {
    while (wire_.writing()) results.push_back(wire_.Receive(&*stream_));
  };
  // The broken message is answered at once; so are the jobs that ran on
  // the thread that read them.
  receive_all();
  ASSERT_EQ(results.size(), GetParam() == Path::kRunHere ? 3u : 1u);
  Run();
  receive_all();
  ASSERT_EQ(results.size(), 3u);
  std::map<std::string, int32_t> first;
  int broken = 0;
  for (const v1::JobResult& r : results) {
    if (r.id().empty()) {
      ++broken;
      EXPECT_EQ(r.status().code(), v1::INVALID_ARGUMENT);
      EXPECT_THAT(r.status().message(),
                  ::testing::HasSubstr("stream message 2"));
      continue;
    }
    ASSERT_EQ(r.status().code(), v1::OK) << r.status().message();
    first[r.id()] = First(r);
  }
  EXPECT_EQ(broken, 1);
  EXPECT_THAT(first, ::testing::UnorderedElementsAre(
                         ::testing::Pair("one", 0x0ff0 & 0x3c3c),
                         ::testing::Pair("two", 1 & 3)));
  EXPECT_FALSE(wire_.writing());
  ASSERT_TRUE(wire_.finished().has_value());
  EXPECT_TRUE(wire_.finished()->ok());
  EXPECT_EQ(budget_->held(), 0u);
  stream_->Done();
}

// A budget with room for about two jobs: the third waits (and the stream
// reads no further) until a result is written, then runs; every job is
// answered, in the order they came.
TEST_P(JobStreamTest, JobsOverTheBudgetWaitTheirTurn) {
  Open(/*budget_bytes=*/200 << 10, /*window=*/16);
  int sent = 0;
  bool held_back = false;  // the stream stopped reading with room in its window
  std::vector<std::string> ids;
  for (int step = 0; step < 100 && ids.size() < 5; ++step) {
    if (wire_.reading() && sent < 5) {
      wire_.Send(&*stream_, Tand(std::to_string(sent), sent, 0xff));
      ++sent;
      continue;
    }
    if (wire_.reading() && sent == 5) {
      wire_.Send(&*stream_, std::nullopt);
      ++sent;
    }
    held_back = held_back || (sent < 5 && !wire_.reading());
    Run();
    ASSERT_TRUE(wire_.writing()) << ids.size() << " answered";
    v1::JobResult r = wire_.Receive(&*stream_);
    ASSERT_EQ(r.status().code(), v1::OK) << r.status().message();
    EXPECT_EQ(First(r), std::stoi(r.id()) & 0xff);
    ids.push_back(r.id());
  }
  EXPECT_TRUE(held_back);
  EXPECT_THAT(ids, ::testing::ElementsAre("0", "1", "2", "3", "4"));
  ASSERT_TRUE(wire_.finished().has_value());
  EXPECT_TRUE(wire_.finished()->ok());
  EXPECT_EQ(budget_->held(), 0u);
  stream_->Done();
}

// docs/SECURITY.md's promises for a stream's messages: a large one is
// parsed on the decoders, not on the thread that read it, its bytes held
// against the client's share while it waits; a caller gone, or past its
// deadline, meanwhile has it never run.
// Another protocol's stream (as ModelStreamInfer's): v1 Jobs parsed
// through a JobProtocol that keeps each message's id, answered by the
// codec as JobResults carrying that id and the first element, or the error.
class IdProtocol final : public JobProtocol {
 public:
  absl::StatusOr<WireShape> Scan(const RequestBody&,
                                 const EngineLimits&) const override {
    WireShape shape;
    shape.instructions = 1;
    return shape;
  }
  absl::Status Parse(const RequestBody& body, absl::string_view what,
                     v1::Job* job) const override {
    bool parsed = false;
    (void)body.Read([&](google::protobuf::io::ZeroCopyInputStream* in) {
      parsed = job->ParseFromZeroCopyStream(in);
    });
    if (!parsed) return absl::InvalidArgumentError(absl::StrCat(what, " bad"));
    id_ = job->id();
    return absl::OkStatus();
  }
  mutable std::string id_;
};

class IdCodec final : public StreamCodec {
 public:
  std::unique_ptr<JobProtocol> ForMessage() const override {
    return std::make_unique<IdProtocol>();
  }
  absl::Status Encode(const JobProtocol& message,
                      const absl::StatusOr<JobReply*>& result,
                      uint64_t max_bytes,
                      grpc::ByteBuffer* bytes) const override {
    v1::JobResult answer;
    answer.set_id(static_cast<const IdProtocol&>(message).id_);
    if (result.ok()) {
      *answer.mutable_tiles() = (*result)->Message()->tiles();
    } else {
      answer.mutable_status()->set_code(v1::INVALID_ARGUMENT);
      answer.mutable_status()->set_message(
          std::string(result.status().message()));
    }
    return EncodeReply(answer, max_bytes, bytes);
  }
};

TEST_P(JobStreamTest, WithACodecAnswersGoInTheOrderTheMessagesCame) {
  const IdCodec codec;
  Open(/*budget_bytes=*/256 << 20, /*window=*/16, {}, &codec);
  std::shared_ptr<Signal> release = HoldDecoder();
  // Heavy first (decoded on the held decoder), then light ones that run
  // (or queue) at once, and a broken one: none may overtake the first.
  wire_.Send(&*stream_, HeavyTand("heavy"));
  wire_.Send(&*stream_, Tand("light", 0x0ff0, 0x3c3c));
  wire_.Send(&*stream_, "\xff\xff not a job");
  wire_.Send(&*stream_, Tand("last", 6, 3));
  wire_.Send(&*stream_, std::nullopt);
  Run();
  EXPECT_FALSE(wire_.writing()) << "an answer overtook the first message's";
  release->Notify();
  std::vector<v1::JobResult> results;
  while (results.size() < 4) {
    ASSERT_TRUE(
        WaitUntil([&] { return scheduler_.queued() > 0 || wire_.writing(); }));
    Run();
    if (wire_.writing()) results.push_back(wire_.Receive(&*stream_));
  }
  ASSERT_EQ(results[0].id(), "heavy");
  EXPECT_EQ(First(results[0]), 0);
  ASSERT_EQ(results[1].id(), "light");
  EXPECT_EQ(First(results[1]), 0x0ff0 & 0x3c3c);
  EXPECT_EQ(results[2].status().code(), v1::INVALID_ARGUMENT);
  EXPECT_THAT(results[2].status().message(),
              ::testing::HasSubstr("stream message 3"));
  ASSERT_EQ(results[3].id(), "last");
  EXPECT_EQ(First(results[3]), 6 & 3);
  ASSERT_TRUE(WaitUntil([&] { return wire_.finished().has_value(); }));
  EXPECT_TRUE(wire_.finished()->ok());
  EXPECT_TRUE(WaitUntil([&] { return budget_->held() == 0; }));
  stream_->Done();
}

TEST_P(JobStreamTest, AHeavyMessageIsDecodedOffTheReadingThread) {
  Open(/*budget_bytes=*/256 << 20, /*window=*/16);
  std::shared_ptr<Signal> release = HoldDecoder();
  // Heavy for its bytes (2 MiB, its tiles heavy too), then for its
  // instructions alone (its tiles light: parsed here, it would run here).
  const std::string heavy = HeavyTand("heavy");
  wire_.Send(&*stream_, heavy);
  wire_.Send(&*stream_, ManyInstructions("many"));
  // Read, not parsed: nothing answered, nothing queued, their bytes held
  // against the share, and the stream reads on.
  EXPECT_FALSE(wire_.writing());
  EXPECT_EQ(scheduler_.queued(), 0u);
  EXPECT_GE(budget_->held(), heavy.size());
  EXPECT_GE(share_->held(), heavy.size());
  EXPECT_TRUE(wire_.reading());
  release->Notify();
  // Parsed there and queued for the scheduler, not run where parsed.
  std::map<std::string, v1::JobResult> results;
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(
        WaitUntil([&] { return scheduler_.queued() > 0 || wire_.writing(); }));
    Run();
    ASSERT_TRUE(WaitUntil([&] { return wire_.writing(); }));
    v1::JobResult r = wire_.Receive(&*stream_);
    ASSERT_EQ(r.status().code(), v1::OK) << r.status().message();
    results[r.id()] = std::move(r);
  }
  ASSERT_EQ(results.count("heavy"), 1u);
  ASSERT_EQ(results.count("many"), 1u);
  EXPECT_EQ(First(results["many"]), 0x0ff0 & 0x3c3c);
  const std::string& c = results["heavy"].tiles().at("c").data();
  ASSERT_EQ(c.size(), 512u * 512 * 4);
  for (int32_t i = 0; i < 512 * 512; i += 4099) {
    int32_t v;
    std::memcpy(&v, &c[i * 4], 4);
    ASSERT_EQ(v, i & 0xff) << "element " << i;
  }
  wire_.Send(&*stream_, std::nullopt);
  ASSERT_TRUE(WaitUntil([&] { return wire_.finished().has_value(); }));
  EXPECT_TRUE(wire_.finished()->ok());
  // The decoder lets its hold go once its task has run.
  EXPECT_TRUE(WaitUntil([&] { return budget_->held() == 0; }));
  stream_->Done();
}

TEST_P(JobStreamTest, AMessageWhoseCallerWentOrWhoseDeadlinePassedNeverRuns) {
  for (const bool deadline : {false, true}) {
    SCOPED_TRACE(deadline ? "deadline" : "cancelled");
    std::atomic<bool> gone{false};
    CallInfo call;
    call.cancelled = [&gone] { return gone.load(); };
    // Past while the message waits for the decoder.
    if (deadline) call.deadline = absl::Now() + absl::Milliseconds(50);
    Open(/*budget_bytes=*/256 << 20, /*window=*/16, call);
    std::shared_ptr<Signal> release = HoldDecoder();
    wire_.Send(&*stream_, HeavyTand("late"));
    if (deadline) {
      const absl::Time until = call.deadline;
      ASSERT_TRUE(WaitUntil([&] { return absl::Now() > until; }));
    } else {
      gone = true;
    }
    release->Notify();
    ASSERT_TRUE(WaitUntil([&] { return wire_.writing(); }));
    const v1::JobResult r = wire_.Receive(&*stream_);
    EXPECT_EQ(r.id(), "late");
    EXPECT_EQ(r.status().code(),
              deadline ? v1::DEADLINE_EXCEEDED : v1::CANCELLED);
    EXPECT_THAT(r.status().message(),
                ::testing::HasSubstr("before its request was decoded"));
    EXPECT_EQ(scheduler_.queued(), 0u);
    EXPECT_TRUE(WaitUntil([&] { return budget_->held() == 0; }));
    wire_.Send(&*stream_, std::nullopt);
    ASSERT_TRUE(WaitUntil([&] { return wire_.finished().has_value(); }));
    stream_->Done();
    // Gone in the order they were made, for the next round's Open.
    stream_.reset();
    intake_.reset();
    dispatcher_.reset();
    share_.reset();
    budget_.reset();
    wire_.Reset();
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, JobStreamTest,
                         ::testing::Values(Path::kRunHere, Path::kScheduled),
                         [](const ::testing::TestParamInfo<Path>& info) {
                           return info.param == Path::kRunHere ? "RunHere"
                                                               : "Scheduled";
                         });

}  // namespace
}  // namespace ptoserve
