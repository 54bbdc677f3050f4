// The stream machine without gRPC: a fake wire in place of the reactor, and
// a machine whose messages are a count of jobs, answered when the test
// says.
#include "server/rpc/stream_machine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"

namespace ptoserve {
namespace {

// Records what the machine asks of the stream.
class FakeWire final : public StreamWire {
 public:
  void StartRead(grpc::ByteBuffer* message) override {
    EXPECT_EQ(read_, nullptr) << "a second read while one is pending";
    read_ = message;
  }
  void StartWrite(const grpc::ByteBuffer* message, bool more) override {
    EXPECT_EQ(write_, nullptr) << "a second write while one is pending";
    write_ = message;
    more_.push_back(more);
    std::vector<grpc::Slice> slices;
    EXPECT_TRUE(message->Dump(&slices).ok());
    std::string bytes;
    for (const grpc::Slice& s : slices) {
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    written_.push_back(bytes);
  }
  void Finish(const grpc::Status& status) override {
    EXPECT_FALSE(finished_.has_value()) << "finished twice";
    finished_ = status;
  }

  // Completes the pending read with `bytes`, or as the client being done
  // sending (nullopt).
  void Deliver(StreamMachine* machine, std::optional<std::string> bytes) {
    ASSERT_NE(read_, nullptr) << "no read pending";
    grpc::ByteBuffer* target = read_;
    read_ = nullptr;
    if (bytes.has_value()) {
      grpc::Slice slice(*bytes);
      *target = grpc::ByteBuffer(&slice, 1);
    }
    machine->ReadDone(bytes.has_value());
  }
  // Completes the pending write (ok: the client took it).
  void Written(StreamMachine* machine, bool ok = true) {
    ASSERT_NE(write_, nullptr) << "no write pending";
    write_ = nullptr;
    machine->WriteDone(ok);
  }

  bool reading() const { return read_ != nullptr; }
  bool writing() const { return write_ != nullptr; }
  const std::vector<std::string>& written() const { return written_; }
  // Each write's `more`: whether it may wait to go out with the next.
  const std::vector<bool>& more() const { return more_; }
  const std::optional<grpc::Status>& finished() const { return finished_; }

 private:
  grpc::ByteBuffer* read_ = nullptr;
  const grpc::ByteBuffer* write_ = nullptr;
  std::vector<std::string> written_;
  std::vector<bool> more_;
  std::optional<grpc::Status> finished_;
};

// Each message is "<jobs> <name>"; its jobs are answered together, when the
// test calls Answer, by "<name>", holding `bytes` of the budget per job.
class CountingMachine final : public StreamMachine {
 public:
  CountingMachine(StreamWire* wire, uint32_t window, MemoryBudget* budget)
      : StreamMachine(wire, window), budget_(budget) {}

  // Answers the oldest message not yet answered.
  void Answer(uint64_t bytes_per_job = 100) {
    MutexLock lock(&mu_);
    ASSERT_FALSE(open_.empty());
    const auto [jobs, name] = open_.front();
    open_.erase(open_.begin());
    Holds holds;
    for (uint64_t i = 0; i < jobs; ++i) {
      holds.push_back(budget_->Reserve(bytes_per_job).value());
    }
    grpc::Slice slice(name);
    Push(grpc::ByteBuffer(&slice, 1), std::move(holds), jobs);
  }
  // Work under way outside the lock, ended by Finished.
  void Working() {
    MutexLock lock(&mu_);
    BeginWork();
  }
  void Finished() {
    MutexLock lock(&mu_);
    EndWork();
    Resume();
  }

 private:
  void Take(grpc::ByteBuffer* message, uint64_t number) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(message->Dump(&slices).ok());
    const std::string text(reinterpret_cast<const char*>(slices[0].begin()),
                           slices[0].size());
    const uint64_t jobs = std::stoull(text.substr(0, text.find(' ')));
    Expect(jobs);
    open_.push_back({jobs, text.substr(text.find(' ') + 1)});
    EXPECT_EQ(number, ++taken_);
  }

  MemoryBudget* const budget_;
  std::vector<std::pair<uint64_t, std::string>> open_;
  uint64_t taken_ = 0;
};

class StreamMachineTest : public ::testing::Test {
 protected:
  void Open(uint32_t window) {
    machine_.emplace(&wire_, window, &budget_);
    machine_->Start();
  }

  FakeWire wire_;
  MemoryBudget budget_{1 << 20};
  std::optional<CountingMachine> machine_;
};

TEST_F(StreamMachineTest, ReadsWhileTheWindowHasRoom) {
  Open(/*window=*/4);
  wire_.Deliver(&*machine_, "1 a");
  wire_.Deliver(&*machine_, "2 b");
  ASSERT_TRUE(wire_.reading());  // 3 of 4 unanswered
  wire_.Deliver(&*machine_, "1 c");
  EXPECT_FALSE(wire_.reading());  // 4 of 4: no further read
  machine_->Answer();             // a: its job written frees a place
  EXPECT_FALSE(wire_.reading());  // not until it is written
  wire_.Written(&*machine_);
  EXPECT_TRUE(wire_.reading());
}

TEST_F(StreamMachineTest, AMessageOfManyJobsFillsTheWindowAtOnce) {
  Open(/*window=*/4);
  wire_.Deliver(&*machine_, "9 big");
  EXPECT_FALSE(wire_.reading());
  machine_->Answer();
  wire_.Written(&*machine_);
  EXPECT_TRUE(wire_.reading());
}

TEST_F(StreamMachineTest, AnswersAreWrittenOneAtATimeInOrderThenFinishOk) {
  Open(/*window=*/8);
  for (const char* m : {"1 a", "1 b", "1 c"}) wire_.Deliver(&*machine_, m);
  wire_.Deliver(&*machine_, std::nullopt);  // the client is done sending
  EXPECT_FALSE(wire_.reading());
  for (int i = 0; i < 3; ++i) machine_->Answer();
  EXPECT_TRUE(wire_.writing());
  EXPECT_THAT(wire_.written(), ::testing::ElementsAre("a"));
  wire_.Written(&*machine_);
  wire_.Written(&*machine_);
  EXPECT_FALSE(wire_.finished().has_value());  // c is still being written
  wire_.Written(&*machine_);
  EXPECT_THAT(wire_.written(), ::testing::ElementsAre("a", "b", "c"));
  // a went alone; b had c ready behind it, so it may wait for c, the last
  // ready, which goes out at once.
  EXPECT_THAT(wire_.more(), ::testing::ElementsAre(false, true, false));
  ASSERT_TRUE(wire_.finished().has_value());
  EXPECT_TRUE(wire_.finished()->ok());
  machine_->Done();
}

TEST_F(StreamMachineTest, AnAnswerHoldsItsBudgetUntilWritten) {
  Open(/*window=*/8);
  wire_.Deliver(&*machine_, "3 a");
  machine_->Answer(/*bytes_per_job=*/1000);
  EXPECT_EQ(budget_.held(), 3000u);
  wire_.Written(&*machine_);
  EXPECT_EQ(budget_.held(), 0u);
}

// An answer written buffered may still be in gRPC's buffer when its write
// is done: it keeps its part of the budget, and of the window, until the
// write that flushes it is done.
TEST_F(StreamMachineTest, ABufferedAnswerHoldsItsBudgetUntilFlushed) {
  Open(/*window=*/3);
  for (const char* m : {"1 a", "1 b", "1 c"}) wire_.Deliver(&*machine_, m);
  EXPECT_FALSE(wire_.reading());  // 3 of 3 unanswered
  for (int i = 0; i < 3; ++i) machine_->Answer(/*bytes_per_job=*/1000);
  wire_.Written(&*machine_);  // a, alone: flushed
  EXPECT_EQ(budget_.held(), 2000u);
  EXPECT_TRUE(wire_.reading());  // a's place in the window is free
  wire_.Written(&*machine_);     // b, buffered behind c
  EXPECT_EQ(budget_.held(), 2000u);
  wire_.Written(&*machine_);  // c flushes b with it
  EXPECT_EQ(budget_.held(), 0u);
  EXPECT_THAT(wire_.more(), ::testing::ElementsAre(false, true, false));
}

// A client that goes away mid-stream: what waits to be written is dropped
// with its holds, nothing more is read, and the stream ends CANCELLED once
// nothing is in flight.
TEST_F(StreamMachineTest, AClientThatGoesAwayMidStreamIsCancelled) {
  Open(/*window=*/8);
  wire_.Deliver(&*machine_, "1 a");
  wire_.Deliver(&*machine_, "1 b");
  wire_.Deliver(&*machine_, "1 c");
  machine_->Answer();
  machine_->Answer();
  EXPECT_EQ(budget_.held(), 200u);
  wire_.Written(&*machine_, /*ok=*/false);  // a failed: the client is gone
  EXPECT_EQ(budget_.held(), 0u);            // b dropped too
  EXPECT_FALSE(wire_.writing());
  EXPECT_FALSE(wire_.finished().has_value());  // c is still in flight
  machine_->Answer();                          // c: dropped as it comes
  EXPECT_FALSE(wire_.writing());
  EXPECT_EQ(budget_.held(), 0u);
  EXPECT_FALSE(wire_.finished().has_value());  // the read is pending
  wire_.Deliver(&*machine_, std::nullopt);
  ASSERT_TRUE(wire_.finished().has_value());
  EXPECT_EQ(wire_.finished()->error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_THAT(wire_.written(), ::testing::ElementsAre("a"));
  machine_->Done();
}

TEST_F(StreamMachineTest, WorkUnderWayKeepsTheStreamOpen) {
  Open(/*window=*/8);
  machine_->Working();
  wire_.Deliver(&*machine_, std::nullopt);
  EXPECT_FALSE(wire_.finished().has_value());
  machine_->Finished();
  ASSERT_TRUE(wire_.finished().has_value());
  EXPECT_TRUE(wire_.finished()->ok());
}

TEST_F(StreamMachineTest, AnEmptyStreamFinishesOkAtOnce) {
  Open(/*window=*/8);
  wire_.Deliver(&*machine_, std::nullopt);
  ASSERT_TRUE(wire_.finished().has_value());
  EXPECT_TRUE(wire_.finished()->ok());
  EXPECT_TRUE(wire_.written().empty());
}

}  // namespace
}  // namespace ptoserve
