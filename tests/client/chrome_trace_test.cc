// ChromeTrace on hand-made results: the structure every trace follows
// (trace_checks.h), and the exact times, names and args of a known job.
#include "client/chrome_trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/client/trace_checks.h"

namespace ptoserve {
namespace {

using ::google::protobuf::Struct;
using ::google::protobuf::Value;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// 1000 s and 500 ns after the epoch, plus `nanos`.
google::protobuf::Timestamp At(int64_t nanos) {
  google::protobuf::Timestamp t;
  t.set_seconds(1000 + (500 + nanos) / 1000000000);
  t.set_nanos(static_cast<int32_t>((500 + nanos) % 1000000000));
  return t;
}

google::protobuf::Duration Nanoseconds(int64_t nanos) {
  google::protobuf::Duration d;
  d.set_seconds(nanos / 1000000000);
  d.set_nanos(static_cast<int32_t>(nanos % 1000000000));
  return d;
}

v1::EventRecord* AddEvent(v1::JobResult* result, const std::string& id,
                          v1::Opcode opcode, int64_t enqueue, int64_t start,
                          int64_t end) {
  v1::EventRecord* e = result->add_events();
  e->set_id(id);
  e->set_instruction_index(result->events_size() - 1);
  e->set_opcode(opcode);
  e->set_target(result->target());
  e->set_pipe(v1::PIPE_V);
  *e->mutable_enqueue_time() = At(enqueue);
  *e->mutable_start_time() = At(start);
  *e->mutable_end_time() = At(end);
  *e->mutable_queue_time() = Nanoseconds(start - enqueue);
  *e->mutable_execution_time() = Nanoseconds(end - start);
  return e;
}

void AddStep(v1::EventRecord* e, const std::string& op, const std::string& dst,
             std::vector<std::string> srcs) {
  v1::MicroOp* step = e->add_trace();
  step->set_op(op);
  step->set_dst(dst);
  for (const std::string& s : srcs) step->add_srcs(s);
  step->set_repeats(2);
  step->set_elements(16);
}

void AddOperand(v1::EventRecord* e, const std::string& role,
                const std::string& tile, uint64_t begin, uint64_t end) {
  v1::OperandRange* o = e->add_operands();
  o->set_role(role);
  o->set_tile(tile);
  o->set_begin(begin);
  o->set_end(end);
}

// c = a & b, then d = c ^ a on a2a3 (four steps through tmp t), each tile
// 1 KiB in the buffer.
v1::JobResult TwoInstructionsOnA2A3() {
  v1::JobResult result;
  result.set_id("demo");
  result.set_target(v1::TARGET_A2A3);
  v1::EventRecord* e0 =
      AddEvent(&result, "e0", v1::OPCODE_TAND, 0, 10000, 13000);
  e0->set_batch_id(7);
  e0->set_batch_size(1);
  AddStep(e0, "vand", "dst", {"src0", "src1"});
  AddOperand(e0, "dst", "c", 0x1000, 0x1400);
  AddOperand(e0, "src0", "a", 0x0000, 0x0400);
  AddOperand(e0, "src1", "b", 0x0400, 0x0800);
  // 1001 ns over four steps: 250, 250, 250 and 251.
  v1::EventRecord* e1 =
      AddEvent(&result, "e1", v1::OPCODE_TXOR, 0, 20000, 21001);
  e1->set_batch_id(8);
  e1->set_batch_size(1);
  e1->add_waited_on("e0");
  e1->add_notes("a note");
  AddStep(e1, "vor", "tmp", {"src0", "src1"});
  AddStep(e1, "vand", "dst", {"src0", "src1"});
  AddStep(e1, "vnot", "dst", {"dst"});
  AddStep(e1, "vand", "dst", {"dst", "tmp"});
  AddOperand(e1, "dst", "d", 0x1400, 0x1800);
  AddOperand(e1, "src0", "c", 0x1000, 0x1400);
  AddOperand(e1, "src1", "a", 0x0000, 0x0400);
  AddOperand(e1, "tmp", "t", 0x1800, 0x1c00);
  return result;
}

const Value& Arg(const TraceSlice& slice, const std::string& key) {
  static const Value* const kMissing = new Value();
  auto it = slice.args.fields().find(key);
  return it == slice.args.fields().end() ? *kMissing : it->second;
}

std::vector<std::string> Strings(const Value& list) {
  std::vector<std::string> out;
  for (const Value& v : list.list_value().values()) {
    out.push_back(v.string_value());
  }
  return out;
}

TEST(ChromeTraceTest, TwoInstructionsTimesNamesAndArgs) {
  const std::string json = ChromeTrace(TwoInstructionsOnA2A3());
  ParsedTrace trace = CheckChromeTrace(json);
  EXPECT_EQ(trace.process_name, "job demo (a2a3)");
  // Each wait on a row of its own: both start when the job arrives, and
  // on one row the longer would be drawn as the shorter's parent.
  EXPECT_THAT(
      trace.threads,
      ElementsAre(std::pair<const int, std::string>(1, "PIPE_V"),
                  std::pair<const int, std::string>(2, "queue TAND e0"),
                  std::pair<const int, std::string>(3, "queue TXOR e1")));
  ASSERT_EQ(trace.instructions.size(), 2u);
  ASSERT_EQ(trace.steps.size(), 5u);
  ASSERT_EQ(trace.queued.size(), 2u);

  const TraceSlice& tand = trace.instructions[0];
  EXPECT_EQ(tand.name, "TAND e0");
  EXPECT_EQ(tand.ts, 10000);
  EXPECT_EQ(tand.dur, 3000);
  EXPECT_EQ(Arg(tand, "instruction").number_value(), 0);
  EXPECT_EQ(Arg(tand, "event").string_value(), "e0");
  EXPECT_EQ(Arg(tand, "opcode").string_value(), "TAND");
  EXPECT_EQ(Arg(tand, "pipe").string_value(), "PIPE_V");
  EXPECT_EQ(Arg(tand, "batch_id").number_value(), 7);
  EXPECT_EQ(Arg(tand, "batch_size").number_value(), 1);
  EXPECT_EQ(Arg(tand, "queue_time_us").number_value(), 10);
  EXPECT_EQ(Arg(tand, "execution_time_us").number_value(), 3);
  EXPECT_EQ(Arg(tand, "steps").number_value(), 1);
  const auto& operands = Arg(tand, "operands").list_value().values();
  ASSERT_EQ(operands.size(), 3);
  const Struct& dst = operands[0].struct_value();
  EXPECT_EQ(dst.fields().at("role").string_value(), "dst");
  EXPECT_EQ(dst.fields().at("tile").string_value(), "c");
  EXPECT_EQ(dst.fields().at("begin").string_value(), "0x1000");
  EXPECT_EQ(dst.fields().at("end").string_value(), "0x1400");
  EXPECT_EQ(dst.fields().at("bytes").number_value(), 1024);
  EXPECT_EQ(operands[1].struct_value().fields().at("begin").string_value(),
            "0x0000");

  const TraceSlice& txor = trace.instructions[1];
  EXPECT_EQ(txor.name, "TXOR e1");
  EXPECT_EQ(txor.ts, 20000);
  EXPECT_EQ(txor.dur, 1001);
  EXPECT_THAT(Strings(Arg(txor, "waited_on")), ElementsAre("e0"));
  EXPECT_THAT(Strings(Arg(txor, "notes")), ElementsAre("a note"));
  EXPECT_EQ(Arg(txor, "operands").list_value().values_size(), 4);

  // The steps, each after its instruction: TAND's one, then TXOR's four
  // sharing its 1001 ns.
  EXPECT_EQ(trace.steps[0].name, "vand");
  EXPECT_EQ(trace.steps[0].ts, 10000);
  EXPECT_EQ(trace.steps[0].dur, 3000);
  std::vector<std::string> names;
  std::vector<int64_t> starts, durations;
  for (size_t i = 1; i < trace.steps.size(); ++i) {
    names.push_back(trace.steps[i].name);
    starts.push_back(trace.steps[i].ts);
    durations.push_back(trace.steps[i].dur);
  }
  EXPECT_THAT(names, ElementsAre("vor", "vand", "vnot", "vand"));
  EXPECT_THAT(starts, ElementsAre(20000, 20250, 20500, 20750));
  EXPECT_THAT(durations, ElementsAre(250, 250, 250, 251));
  const TraceSlice& vor = trace.steps[1];
  EXPECT_EQ(Arg(vor, "instruction").number_value(), 1);
  EXPECT_EQ(Arg(vor, "dst").string_value(), "tmp");
  EXPECT_THAT(Strings(Arg(vor, "srcs")), ElementsAre("src0", "src1"));
  EXPECT_EQ(Arg(vor, "repeats").number_value(), 2);
  EXPECT_EQ(Arg(vor, "elements").number_value(), 16);

  // Queue slices from the job's arrival, the longer wait first (it holds
  // the shorter one).
  EXPECT_EQ(trace.queued[0].name, "TXOR e1");
  EXPECT_EQ(trace.queued[0].ts, 0);
  EXPECT_EQ(trace.queued[0].dur, 20000);
  EXPECT_EQ(trace.queued[1].name, "TAND e0");
  EXPECT_EQ(trace.queued[1].dur, 10000);

  // Microseconds with whole nanoseconds, and the time unit.
  EXPECT_THAT(json, HasSubstr("\"ts\": 20.250, \"dur\": 0.250"));
  EXPECT_THAT(json, HasSubstr("\"displayTimeUnit\": \"ns\""));
}

TEST(ChromeTraceTest, OneBatchSharesItsTime) {
  v1::JobResult result;
  result.set_id("batch");
  result.set_target(v1::TARGET_HOST);
  for (const char* id : {"e0", "e1"}) {
    v1::EventRecord* e = AddEvent(&result, id, v1::OPCODE_TAND, 0, 5000, 6000);
    e->set_batch_id(3);
    e->set_batch_size(2);
    AddStep(e, "and", "dst", {"src0", "src1"});
  }
  ParsedTrace trace = CheckChromeTrace(ChromeTrace(result));
  ASSERT_EQ(trace.instructions.size(), 2u);
  EXPECT_EQ(trace.instructions[0].ts, trace.instructions[1].ts);
  EXPECT_EQ(trace.process_name, "job batch (host)");
}

TEST(ChromeTraceTest, OneRowPerPipeInTheEnumsOrder) {
  v1::JobResult result;
  result.set_target(v1::TARGET_HOST);
  AddEvent(&result, "e0", v1::OPCODE_TAND, 100, 200, 300)
      ->set_pipe(static_cast<v1::Pipe>(7));
  AddEvent(&result, "e1", v1::OPCODE_TAND, 50, 400, 500);
  AddEvent(&result, "e2", v1::OPCODE_TNOT, 50, 600, 700)
      ->set_pipe(v1::PIPE_UNSPECIFIED);
  ParsedTrace trace = CheckChromeTrace(ChromeTrace(result));
  EXPECT_EQ(trace.process_name, "job (host)");
  EXPECT_THAT(
      trace.threads,
      ElementsAre(std::pair<const int, std::string>(1, "PIPE_UNSPECIFIED"),
                  std::pair<const int, std::string>(2, "PIPE_V"),
                  std::pair<const int, std::string>(3, "PIPE_7"),
                  std::pair<const int, std::string>(4, "queue TAND e0"),
                  std::pair<const int, std::string>(5, "queue TAND e1"),
                  std::pair<const int, std::string>(6, "queue TNOT e2")));
  // Times count from the earliest enqueue_time (50 ns).
  ASSERT_EQ(trace.instructions.size(), 3u);
  EXPECT_EQ(trace.instructions[0].name, "TAND e0");
  EXPECT_EQ(trace.instructions[0].ts, 150);
  EXPECT_EQ(trace.instructions[0].tid, 3);
  EXPECT_EQ(trace.instructions[2].name, "TNOT e2");
  EXPECT_EQ(trace.instructions[2].tid, 1);
  EXPECT_TRUE(trace.steps.empty());
}

TEST(ChromeTraceTest, WithoutOperandsOrDurationsTheArgsStillHold) {
  v1::JobResult result = TwoInstructionsOnA2A3();
  for (v1::EventRecord& e : *result.mutable_events()) {
    e.clear_operands();
    e.clear_queue_time();
    e.clear_execution_time();
  }
  const std::string json = ChromeTrace(result);
  ParsedTrace trace = CheckChromeTrace(json);
  ASSERT_EQ(trace.instructions.size(), 2u);
  EXPECT_EQ(Arg(trace.instructions[1], "queue_time_us").number_value(), 20);
  EXPECT_EQ(Arg(trace.instructions[1], "execution_time_us").number_value(),
            1.001);
  EXPECT_THAT(json, Not(HasSubstr("operands")));
}

TEST(ChromeTraceTest, StringsAreEscaped) {
  const std::string odd = "a \"quoted\" \\ name\nwith\ttabs\x01 and \xc3\xa9";
  v1::JobResult result = TwoInstructionsOnA2A3();
  result.set_id(odd);
  v1::EventRecord& e = *result.mutable_events(0);
  e.set_id(odd);
  e.add_notes(odd);
  e.mutable_operands(0)->set_tile(odd);
  e.mutable_trace(0)->set_op(odd);
  ParsedTrace trace = CheckChromeTrace(ChromeTrace(result));
  EXPECT_EQ(trace.process_name, "job " + odd + " (a2a3)");
  ASSERT_EQ(trace.instructions.size(), 2u);
  const TraceSlice& tand = trace.instructions[0];
  EXPECT_EQ(tand.name, "TAND " + odd);
  EXPECT_EQ(Arg(tand, "event").string_value(), odd);
  EXPECT_THAT(Strings(Arg(tand, "notes")), ElementsAre(odd));
  EXPECT_EQ(Arg(tand, "operands")
                .list_value()
                .values(0)
                .struct_value()
                .fields()
                .at("tile")
                .string_value(),
            odd);
  ASSERT_FALSE(trace.steps.empty());
  EXPECT_EQ(trace.steps[0].name, odd);
}

TEST(ChromeTraceTest, NoEventsIsAnEmptyJob) {
  v1::JobResult result;
  result.set_id("empty");
  result.set_target(v1::TARGET_A5);
  ParsedTrace trace = CheckChromeTrace(ChromeTrace(result));
  EXPECT_EQ(trace.process_name, "job empty (a5)");
  EXPECT_TRUE(trace.threads.empty());
  EXPECT_TRUE(trace.instructions.empty());
  EXPECT_TRUE(trace.queued.empty());
}

}  // namespace
}  // namespace ptoserve
