#include "tests/client/trace_checks.h"

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace ptoserve {
namespace {

using ::google::protobuf::Struct;
using ::google::protobuf::Value;

const Value* Field(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}

bool IsNumber(const Value* v) {
  return v != nullptr && v->kind_case() == Value::kNumberValue;
}
bool IsString(const Value* v) {
  return v != nullptr && v->kind_case() == Value::kStringValue;
}

// Microseconds as written (three decimals) back to whole nanoseconds.
int64_t Nanos(const Value& v) { return std::llround(v.number_value() * 1000); }

int Instruction(const TraceSlice& slice) {
  const Value* v = Field(slice.args, "instruction");
  return IsNumber(v) ? static_cast<int>(v->number_value()) : -1;
}

}  // namespace

ParsedTrace CheckChromeTrace(const std::string& json) {
  ParsedTrace trace;
  Struct root;
  if (auto parsed = google::protobuf::util::JsonStringToMessage(json, &root);
      !parsed.ok()) {
    ADD_FAILURE() << "not JSON: " << parsed.message() << "\n" << json;
    return trace;
  }
  const Value* unit = Field(root, "displayTimeUnit");
  EXPECT_TRUE(IsString(unit) && unit->string_value() == "ns");
  const Value* list = Field(root, "traceEvents");
  if (list == nullptr || list->kind_case() != Value::kListValue) {
    ADD_FAILURE() << "no traceEvents list";
    return trace;
  }
  std::set<int> pids;
  int process_names = 0;
  for (const Value& event : list->list_value().values()) {
    if (event.kind_case() != Value::kStructValue) {
      ADD_FAILURE() << "an event that is not an object";
      continue;
    }
    const Struct& e = event.struct_value();
    const Value* ph = Field(e, "ph");
    const Value* name = Field(e, "name");
    const Value* ts = Field(e, "ts");
    const Value* pid = Field(e, "pid");
    const Value* tid = Field(e, "tid");
    const Value* args = Field(e, "args");
    if (!IsString(ph) || !IsString(name) || !IsNumber(ts) || !IsNumber(pid) ||
        !IsNumber(tid) || args == nullptr ||
        args->kind_case() != Value::kStructValue) {
      ADD_FAILURE() << "an event without ph, name, ts, pid, tid or args: "
                    << e.DebugString();
      continue;
    }
    pids.insert(static_cast<int>(pid->number_value()));
    if (ph->string_value() == "M") {
      const Value* arg = Field(args->struct_value(), "name");
      if (name->string_value() == "process_name") {
        ++process_names;
        EXPECT_TRUE(IsString(arg));
        if (IsString(arg)) trace.process_name = arg->string_value();
      } else if (name->string_value() == "thread_name") {
        EXPECT_TRUE(IsString(arg));
        const int row = static_cast<int>(tid->number_value());
        EXPECT_EQ(trace.threads.count(row), 0u) << "two names for row " << row;
        if (IsString(arg)) trace.threads[row] = arg->string_value();
      } else {
        EXPECT_EQ(name->string_value(), "thread_sort_index");
      }
      continue;
    }
    EXPECT_EQ(ph->string_value(), "X") << e.DebugString();
    const Value* cat = Field(e, "cat");
    const Value* dur = Field(e, "dur");
    if (!IsString(cat) || !IsNumber(dur)) {
      ADD_FAILURE() << "a slice without cat or dur: " << e.DebugString();
      continue;
    }
    TraceSlice slice{name->string_value(),
                     cat->string_value(),
                     Nanos(*ts),
                     Nanos(*dur),
                     static_cast<int>(tid->number_value()),
                     args->struct_value()};
    EXPECT_GE(slice.ts, 0) << e.DebugString();
    EXPECT_GE(slice.dur, 0) << e.DebugString();
    EXPECT_GE(Instruction(slice), 0) << e.DebugString();
    if (slice.category == "instruction") {
      trace.instructions.push_back(std::move(slice));
    } else if (slice.category == "step") {
      trace.steps.push_back(std::move(slice));
    } else if (slice.category == "queue") {
      trace.queued.push_back(std::move(slice));
    } else {
      ADD_FAILURE() << "a slice of category " << slice.category;
    }
  }
  EXPECT_EQ(pids.size(), 1u) << "one process, the job";
  EXPECT_EQ(process_names, 1);

  // The rows: the pipes the instructions ran on, and a queue row for each
  // instruction's wait ("queue TAND e0").
  std::map<int, std::string> queue_rows;
  for (const auto& [row, name] : trace.threads) {
    if (name.rfind("queue ", 0) == 0) queue_rows.emplace(row, name);
  }
  std::set<std::string> pipes;
  std::map<int, const TraceSlice*> by_instruction;
  for (const TraceSlice& s : trace.instructions) {
    EXPECT_TRUE(by_instruction.emplace(Instruction(s), &s).second)
        << "two slices for instruction " << Instruction(s);
    for (const char* key :
         {"event", "opcode", "pipe", "batch_id", "batch_size", "waited_on",
          "notes", "queue_time_us", "execution_time_us", "steps"}) {
      EXPECT_NE(Field(s.args, key), nullptr) << s.name << " has no " << key;
    }
    const Value* pipe = Field(s.args, "pipe");
    if (!IsString(pipe)) continue;
    pipes.insert(pipe->string_value());
    auto row = trace.threads.find(s.tid);
    EXPECT_TRUE(row != trace.threads.end() &&
                row->second == pipe->string_value())
        << s.name << " is not on its pipe's row";
  }
  EXPECT_EQ(trace.threads.size(), pipes.size() + queue_rows.size())
      << "rows other than the queues and the pipes";

  // Steps: inside their instruction, in order, end to end.
  std::map<int, std::vector<const TraceSlice*>> steps;
  for (const TraceSlice& s : trace.steps) {
    steps[Instruction(s)].push_back(&s);
  }
  for (const auto& [index, children] : steps) {
    auto parent = by_instruction.find(index);
    if (parent == by_instruction.end()) {
      ADD_FAILURE() << "steps of instruction " << index << ", which has none";
      continue;
    }
    const TraceSlice& p = *parent->second;
    const Value* count = Field(p.args, "steps");
    EXPECT_TRUE(IsNumber(count) &&
                count->number_value() == static_cast<double>(children.size()))
        << p.name;
    int64_t at = p.ts;
    for (size_t k = 0; k < children.size(); ++k) {
      const TraceSlice& c = *children[k];
      const Value* step = Field(c.args, "step");
      EXPECT_TRUE(IsNumber(step) &&
                  step->number_value() == static_cast<double>(k))
          << c.name << " of " << p.name << " out of order";
      EXPECT_EQ(c.tid, p.tid) << c.name << " of " << p.name;
      EXPECT_EQ(c.ts, at) << c.name << " of " << p.name;
      EXPECT_GE(c.ts, p.ts) << c.name << " of " << p.name;
      EXPECT_LE(c.ts + c.dur, p.ts + p.dur) << c.name << " of " << p.name;
      at = c.ts + c.dur;
    }
    EXPECT_EQ(at, p.ts + p.dur) << "the steps of " << p.name << " fill it";
  }
  for (const auto& [index, slice] : by_instruction) {
    const Value* count = Field(slice->args, "steps");
    if (IsNumber(count) && count->number_value() > 0) {
      EXPECT_EQ(steps.count(index), 1u) << slice->name << " lost its steps";
    }
  }

  // Queue slices: one per instruction, ending where it starts.
  std::set<int> queued;
  std::set<int> rows_used;
  for (const TraceSlice& q : trace.queued) {
    auto row = queue_rows.find(q.tid);
    EXPECT_TRUE(row != queue_rows.end() && row->second == "queue " + q.name)
        << q.name << " is not on its own queue row";
    EXPECT_TRUE(rows_used.insert(q.tid).second)
        << q.name << " shares its queue row";
    EXPECT_TRUE(queued.insert(Instruction(q)).second)
        << "two queue slices for " << q.name;
    auto parent = by_instruction.find(Instruction(q));
    if (parent == by_instruction.end()) {
      ADD_FAILURE() << "a queue slice for no instruction: " << q.name;
      continue;
    }
    EXPECT_EQ(q.name, parent->second->name);
    EXPECT_EQ(q.ts + q.dur, parent->second->ts)
        << q.name << ": the queue ends where execution starts";
  }
  EXPECT_EQ(queued.size(), by_instruction.size());
  return trace;
}

}  // namespace ptoserve
