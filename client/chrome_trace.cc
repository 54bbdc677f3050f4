#include "client/chrome_trace.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/json_quote.h"

namespace ptoserve {
namespace {

// Nanoseconds as microseconds with three decimals: 12345 is "12.345".
std::string Micros(int64_t nanos) {
  const uint64_t magnitude =
      nanos < 0 ? uint64_t{0} - static_cast<uint64_t>(nanos) : nanos;
  return absl::StrFormat("%s%d.%03d", nanos < 0 ? "-" : "", magnitude / 1000,
                         magnitude % 1000);
}

std::string Hex(uint64_t value) { return absl::StrFormat("0x%04x", value); }

// One JSON object, its members in the order they are added.
class Object {
 public:
  // `json`: a JSON value's text, added as it is.
  Object& Raw(absl::string_view key, absl::string_view json) {
    absl::StrAppend(&text_, text_.empty() ? "{" : ", ", JsonQuote(key), ": ",
                    json);
    return *this;
  }
  Object& Str(absl::string_view key, absl::string_view value) {
    return Raw(key, JsonQuote(value));
  }
  Object& Int(absl::string_view key, int64_t value) {
    return Raw(key, absl::StrCat(value));
  }
  std::string Close() const { return text_.empty() ? "{}" : text_ + "}"; }

 private:
  std::string text_;
};

template <typename Strings>
std::string StringArray(const Strings& strings) {
  std::vector<std::string> quoted;
  for (const auto& s : strings) quoted.push_back(JsonQuote(s));
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

absl::Time TimeOf(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

absl::Duration DurationOf(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

int64_t Nanos(absl::Duration d) { return absl::ToInt64Nanoseconds(d); }

std::string OpcodeName(v1::Opcode opcode) {
  if (!v1::Opcode_IsValid(opcode)) return absl::StrCat("opcode ", opcode);
  return std::string(absl::StripPrefix(v1::Opcode_Name(opcode), "OPCODE_"));
}

std::string PipeName(int pipe) {
  if (!v1::Pipe_IsValid(pipe)) return absl::StrCat("PIPE_", pipe);
  return v1::Pipe_Name(static_cast<v1::Pipe>(pipe));
}

std::string TargetName(v1::Target target) {
  if (!v1::Target_IsValid(target)) return absl::StrCat("target ", target);
  return absl::AsciiStrToLower(
      absl::StripPrefix(v1::Target_Name(target), "TARGET_"));
}

// A complete slice ("X") of `tid`, `ts` and `dur` in nanoseconds.
Object Slice(absl::string_view name, absl::string_view category, int64_t ts,
             int64_t dur, int tid) {
  Object slice;
  slice.Str("name", name)
      .Str("cat", category)
      .Str("ph", "X")
      .Raw("ts", Micros(ts))
      .Raw("dur", Micros(dur))
      .Int("pid", kTraceProcessId)
      .Int("tid", tid);
  return slice;
}

// A metadata event ("M") naming or ordering a process or a thread.
std::string Metadata(absl::string_view name, int tid, absl::string_view arg,
                     absl::string_view json) {
  return Object()
      .Str("name", name)
      .Str("ph", "M")
      .Raw("ts", "0")
      .Int("pid", kTraceProcessId)
      .Int("tid", tid)
      .Raw("args", Object().Raw(arg, json).Close())
      .Close();
}

// A slice and where it sorts: by start, the longer first (so that a slice
// precedes those nested in it), then by instruction.
struct Placed {
  int64_t ts = 0;
  int64_t dur = 0;
  int instruction = 0;
  std::vector<std::string> events;  // the slice, then its children

  bool operator<(const Placed& other) const {
    if (ts != other.ts) return ts < other.ts;
    if (dur != other.dur) return dur > other.dur;
    return instruction < other.instruction;
  }
};

// One event's times, in nanoseconds from the job's first enqueue: when it
// was queued, started, how long it waited and ran, and the two durations
// as the server measured them (else as the times give them).
struct EventTimes {
  int64_t enqueue = 0;
  int64_t start = 0;
  int64_t waited = 0;
  int64_t dur = 0;
  int64_t queue_time = 0;
  int64_t execution_time = 0;
};

EventTimes TimesOf(const v1::EventRecord& e, absl::Time origin) {
  EventTimes t;
  t.enqueue = Nanos(TimeOf(e.enqueue_time()) - origin);
  t.start = Nanos(TimeOf(e.start_time()) - origin);
  const int64_t end = Nanos(TimeOf(e.end_time()) - origin);
  t.waited = std::max<int64_t>(0, t.start - t.enqueue);
  t.dur = std::max<int64_t>(0, end - t.start);
  t.queue_time =
      e.has_queue_time() ? Nanos(DurationOf(e.queue_time())) : t.waited;
  t.execution_time =
      e.has_execution_time() ? Nanos(DurationOf(e.execution_time())) : t.dur;
  return t;
}

// What an instruction's slice shows when it is selected.
std::string InstructionArgs(const v1::EventRecord& e, int index,
                            const EventTimes& t) {
  Object args;
  args.Int("instruction", index)
      .Str("event", e.id())
      .Str("opcode", OpcodeName(e.opcode()))
      .Str("pipe", PipeName(e.pipe()))
      .Raw("batch_id", absl::StrCat(e.batch_id()))
      .Int("batch_size", e.batch_size())
      .Raw("waited_on", StringArray(e.waited_on()))
      .Raw("notes", StringArray(e.notes()))
      .Raw("queue_time_us", Micros(t.queue_time))
      .Raw("execution_time_us", Micros(t.execution_time))
      .Int("steps", e.trace_size());
  if (e.operands_size() > 0) {
    std::vector<std::string> operands;
    for (const v1::OperandRange& o : e.operands()) {
      operands.push_back(
          Object()
              .Str("role", o.role())
              .Str("tile", o.tile())
              .Str("begin", Hex(o.begin()))
              .Str("end", Hex(o.end()))
              .Raw("bytes",
                   absl::StrCat(o.end() >= o.begin() ? o.end() - o.begin() : 0))
              .Close());
    }
    args.Raw("operands", absl::StrCat("[", absl::StrJoin(operands, ", "), "]"));
  }
  return args.Close();
}

// The instruction's slice on its pipe's row `tid`, then its steps inside it.
Placed Ran(const v1::EventRecord& e, absl::string_view name, int index,
           const EventTimes& t, int tid) {
  Placed instruction{t.start, t.dur, index, {}};
  instruction.events.push_back(Slice(name, "instruction", t.start, t.dur, tid)
                                   .Raw("args", InstructionArgs(e, index, t))
                                   .Close());
  // The steps share the instruction's time: step k of n runs from
  // start + dur * k / n to start + dur * (k + 1) / n, in whole nanoseconds,
  // so each lies inside the instruction and the last ends with it.
  const int64_t n = e.trace_size();
  const int64_t dur = t.dur;
  auto offset = [&](int64_t k) { return dur / n * k + dur % n * k / n; };
  for (int64_t k = 0; k < n; ++k) {
    const v1::MicroOp& op = e.trace(static_cast<int>(k));
    const int64_t begin = t.start + offset(k);
    instruction.events.push_back(
        Slice(op.op().empty() ? "step" : op.op(), "step", begin,
              t.start + offset(k + 1) - begin, tid)
            .Raw("args", Object()
                             .Int("instruction", index)
                             .Int("step", k)
                             .Str("dst", op.dst())
                             .Raw("srcs", StringArray(op.srcs()))
                             .Int("repeats", op.repeats())
                             .Int("elements", op.elements())
                             .Close())
            .Close());
  }
  return instruction;
}

}  // namespace

std::string ChromeTrace(const v1::JobResult& result) {
  std::set<int> pipes;
  absl::Time origin = absl::InfiniteFuture();
  for (const v1::EventRecord& e : result.events()) {
    pipes.insert(e.pipe());
    origin = std::min(origin, TimeOf(e.enqueue_time()));
  }
  std::map<int, int> tid_of_pipe;
  for (int pipe : pipes) {
    tid_of_pipe[pipe] =
        kTraceFirstPipeThreadId + static_cast<int>(tid_of_pipe.size());
  }

  std::vector<std::string> events;
  const std::string job =
      result.id().empty() ? "job" : absl::StrCat("job ", result.id());
  events.push_back(Metadata(
      "process_name", kTraceFirstPipeThreadId, "name",
      JsonQuote(absl::StrCat(job, " (", TargetName(result.target()), ")"))));
  for (const auto& [pipe, tid] : tid_of_pipe) {
    events.push_back(
        Metadata("thread_name", tid, "name", JsonQuote(PipeName(pipe))));
    events.push_back(
        Metadata("thread_sort_index", tid, "sort_index", absl::StrCat(tid)));
  }
  // Each wait on a row of its own, after the pipes.
  const int first_queue_tid =
      kTraceFirstPipeThreadId + static_cast<int>(tid_of_pipe.size());

  std::vector<Placed> queued, ran;
  for (int i = 0; i < result.events_size(); ++i) {
    const v1::EventRecord& e = result.events(i);
    const EventTimes t = TimesOf(e, origin);
    const std::string name =
        e.id().empty() ? OpcodeName(e.opcode())
                       : absl::StrCat(OpcodeName(e.opcode()), " ", e.id());
    const int index = static_cast<int>(e.instruction_index());

    const int queue_tid = first_queue_tid + i;
    events.push_back(Metadata("thread_name", queue_tid, "name",
                              JsonQuote(absl::StrCat("queue ", name))));
    events.push_back(Metadata("thread_sort_index", queue_tid, "sort_index",
                              absl::StrCat(queue_tid)));
    Placed queue{t.enqueue, t.waited, index, {}};
    queue.events.push_back(
        Slice(name, "queue", t.enqueue, t.waited, queue_tid)
            .Raw("args", Object()
                             .Int("instruction", index)
                             .Str("event", e.id())
                             .Raw("queue_time_us", Micros(t.queue_time))
                             .Close())
            .Close());
    queued.push_back(std::move(queue));
    ran.push_back(Ran(e, name, index, t, tid_of_pipe.at(e.pipe())));
  }
  std::stable_sort(queued.begin(), queued.end());
  std::stable_sort(ran.begin(), ran.end());
  for (const std::vector<Placed>* slices : {&queued, &ran}) {
    for (const Placed& placed : *slices) {
      events.insert(events.end(), placed.events.begin(), placed.events.end());
    }
  }
  return absl::StrCat("{\"traceEvents\": [\n", absl::StrJoin(events, ",\n"),
                      "\n],\n\"displayTimeUnit\": \"ns\"}\n");
}

}  // namespace ptoserve
