// proto/words.h: the words every door and client uses for an event record.
// client/python/client_test.py's EventTextTest holds the Python client to
// the same text for the same record.
#include "proto/words.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/job.h"
#include "proto/codec.h"

namespace ptoserve {
namespace {

TEST(WordsTest, AnEventReadsTheSameEverywhere) {
  v1::EventRecord e;
  e.set_id("e0");
  e.set_opcode(v1::OPCODE_TXOR);
  e.set_target(v1::TARGET_A2A3);
  e.set_pipe(v1::PIPE_V);
  e.set_batch_id(7);
  e.set_batch_size(2);
  e.mutable_enqueue_time()->set_nanos(1000);
  e.mutable_start_time()->set_nanos(13474);
  e.mutable_end_time()->set_nanos(13474 + 941);
  e.add_waited_on("e9");
  v1::MicroOp* vor = e.add_trace();
  vor->set_op("vor");
  vor->set_dst("tmp");
  vor->add_srcs("src0");
  vor->add_srcs("src1");
  vor->set_repeats(1);
  vor->set_elements(16);
  v1::MicroOp* vand = e.add_trace();
  vand->set_op("vand");
  vand->set_dst("dst");
  vand->add_srcs("dst");
  vand->add_srcs("tmp");
  vand->set_repeats(2);
  vand->set_elements(1);
  e.add_notes("a note");
  EXPECT_EQ(EventText(e),
            "  e0   instruction 0 TXOR on a2a3, PIPE_V, batch 7 (size 2), "
            "queued 12.474us, ran 941ns, waited on e9\n"
            "       vor   tmp <- src0, src1  (1 repeat, 16 elements)\n"
            "       vand  dst <- dst, tmp  (2 repeats, 1 element)\n"
            "       note: a note\n");
  // Names past their columns' widths, counters at their largest.
  e.set_id("step12");
  e.set_instruction_index(~0u);
  e.set_batch_id(~uint64_t{0});
  e.clear_waited_on();
  e.clear_notes();
  e.mutable_trace()->DeleteSubrange(1, 1);
  vor->set_op("vshift");
  EXPECT_EQ(EventText(e),
            "  step12 instruction 4294967295 TXOR on a2a3, PIPE_V, batch "
            "18446744073709551615 (size 2), queued 12.474us, ran 941ns\n"
            "       vshift tmp <- src0, src1  (1 repeat, 16 elements)\n");
  EXPECT_EQ(DTypeText(v1::DTYPE_INT16), "int16");
  EXPECT_EQ(TargetText(v1::TARGET_A2A3), "a2a3");
  EXPECT_EQ(OpcodeText(v1::OPCODE_TAND), "TAND");
}

// An event's times are written without absl::FormatDuration when they are
// whole nanoseconds under a second: the same text as absl's, at every
// unit's edges and between.
TEST(WordsTest, TimesReadAsAbslWritesThem) {
  std::vector<int64_t> nanos = {0,
                                1,
                                9,
                                10,
                                99,
                                100,
                                999,
                                1000,
                                1001,
                                1010,
                                1100,
                                9999,
                                10000,
                                999999,
                                1000000,
                                1000001,
                                1000010,
                                1100000,
                                1234567,
                                999999999,
                                1000000000,
                                1000000001,
                                3600000000000,
                                -1,
                                -1000,
                                -999999999};
  std::mt19937_64 random(7);
  for (int i = 0; i < 20000; ++i) {
    const int64_t scale[] = {1000, 1000000, 1000000000, 10000000000};
    nanos.push_back(static_cast<int64_t>(random() % scale[i % 4]));
  }
  for (const int64_t ns : nanos) {
    v1::EventRecord e;
    e.mutable_start_time()->set_seconds(ns / 1000000000);
    e.mutable_start_time()->set_nanos(static_cast<int32_t>(ns % 1000000000));
    const std::string text = EventText(e);
    const std::string expected = absl::StrCat(
        ", queued ", absl::FormatDuration(absl::Nanoseconds(ns)), ", ran ");
    EXPECT_NE(text.find(expected), std::string::npos) << ns << ": " << text;
  }
}

// The small inference path writes the engine's events without a record:
// the same text as the record's, for events of every shape.
TEST(WordsTest, AnEngineEventReadsAsItsRecord) {
  std::mt19937_64 random(53);
  const auto pick = [&](uint64_t n) { return random() % n; };
  const char* const names[] = {"", "e", "e12", "step_long_name", "dst", "t"};
  const auto name = [&] { return names[pick(6)]; };
  const absl::Time epoch = absl::FromUnixSeconds(1765000000);
  for (int round = 0; round < 2000; ++round) {
    Event e;
    e.id = name();
    e.index = static_cast<uint32_t>(pick(3) == 0 ? random() : pick(4));
    e.opcode = pick(2) == 0 ? Opcode::kTand : Opcode::kTxor;
    e.target = static_cast<Target>(pick(3));
    for (uint64_t i = pick(4); i > 0; --i) e.waited_on.emplace_back(name());
    e.enqueue_time = epoch + absl::Nanoseconds(pick(1000000000));
    e.start_time = e.enqueue_time + absl::Nanoseconds(pick(3000000000));
    e.end_time =
        e.start_time +
        absl::Nanoseconds(pick(2) ? pick(999) : random() % (uint64_t{1} << 40));
    e.batch_id = pick(2) == 0 ? random() : pick(10);
    e.batch_size = static_cast<uint32_t>(pick(3) == 0 ? random() : pick(3));
    for (uint64_t i = pick(4); i > 0; --i) {
      MicroOp& op = e.trace.ops.emplace_back();
      op.op = name();
      op.dst = name();
      for (uint64_t j = pick(4); j > 0; --j) op.srcs.push_back(name());
      op.repeats = pick(3) == 0 ? 1 : pick(2) == 0 ? random() : pick(300);
      op.elements = pick(3) == 0 ? 1 : pick(2) == 0 ? random() : pick(300);
    }
    for (uint64_t i = pick(3); i > 0; --i) e.trace.notes.emplace_back(name());
    v1::EventRecord record;
    ToEventRecord(e, &record);
    std::string text = "before\n";
    AppendEventText(e, &text);
    ASSERT_EQ(text, "before\n" + EventText(record)) << "round " << round;
  }
}

}  // namespace
}  // namespace ptoserve
