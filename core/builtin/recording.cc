#include "core/builtin/recording.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/json_quote.h"
#include "core/builtin/recorded_events.h"
#include "core/ops.h"
#include "core/quote.h"
#include "core/types.h"

namespace ptoserve {
namespace builtin {

namespace {

struct RecordedTile {
  TileRef ref;  // as first seen; ref.name points into `name`
  std::string name;
  std::string data;      // the elements it carries; empty: none
  bool written = false;  // by an instruction recorded before
  bool output = false;
};

struct RecordedInstruction {
  Opcode opcode;
  std::string dst, src0, src1, tmp;
  std::vector<std::string> waits;  // the events it waits on
};

struct Recording {
  bool on = false;
  Target target = Target::kHost;
  std::vector<RecordedTile> tiles;  // in the order first seen
  std::vector<RecordedInstruction> instructions;
  std::vector<Event> events;  // one per instruction that ran
  // The thread's number of the first instruction recorded: the job's 0.
  uint32_t first_instruction = 0;
  std::string problem;  // why it is not a job, the first reason found
};

Recording& Current() {
  thread_local Recording recording;
  return recording;
}

size_t BytesOf(const TileRef& t) {
  return size_t{t.rows} * t.cols * ElementBytes(t.dtype);
}

bool AllZero(const uint8_t* p, size_t n) {
  return std::all_of(p, p + n, [](uint8_t b) { return b == 0; });
}

// The tile named as `t` is, registering it when first seen; null (and a
// problem noted) when another tile has its name or its valid shape
// changed.
RecordedTile* Register(Recording& r, const TileRef& t) {
  for (RecordedTile& seen : r.tiles) {
    if (seen.name != t.name) continue;
    if (seen.ref.data != t.data &&
        !(seen.ref.bound && t.bound && seen.ref.address == t.address)) {
      if (r.problem.empty()) {
        r.problem = absl::StrFormat(
            "two tiles are named \"%s\"; a job names each tile once "
            "(Tile::SetName)",
            t.name);
      }
      return nullptr;
    }
    if (seen.ref.valid_rows != t.valid_rows ||
        seen.ref.valid_cols != t.valid_cols) {
      if (r.problem.empty()) {
        r.problem = absl::StrFormat(
            "tile \"%s\" changed its valid shape from %ux%u to %ux%u; a job's "
            "tile has one",
            t.name, seen.ref.valid_rows, seen.ref.valid_cols, t.valid_rows,
            t.valid_cols);
      }
      return nullptr;
    }
    return &seen;
  }
  RecordedTile tile;
  tile.name = t.name;
  tile.ref = t;
  r.tiles.push_back(std::move(tile));
  return &r.tiles.back();
}

void Carry(RecordedTile* tile, const TileRef& t) {
  const size_t n = BytesOf(t);
  if (AllZero(t.data, n)) {
    tile->data.clear();
  } else {
    tile->data.assign(reinterpret_cast<const char*>(t.data), n);
  }
}

// The name, in the job, of the event of the thread's instruction `n`:
// "e" and its number from the recording's first instruction; a problem
// noted when that instruction ran before the recording.
std::string EventName(Recording& r, uint32_t n) {
  if (n < r.first_instruction) {
    if (r.problem.empty()) {
      r.problem = absl::StrFormat(
          "an instruction waits on the event of instruction %u, which ran "
          "before the recording started",
          n);
    }
    return absl::StrCat("e", n);
  }
  return absl::StrCat("e", n - r.first_instruction);
}

std::string EnumName(absl::string_view prefix, absl::string_view name) {
  return JsonQuote(absl::StrCat(prefix, absl::AsciiStrToUpper(name)));
}

}  // namespace

void StartRecording(Target target) {
  Recording& r = Current();
  r = Recording();
  r.on = true;
  r.target = target;
  r.first_instruction = InstructionsRun();
}

void StopRecording() { Current().on = false; }

void RecordLoad(const TileRef& t) {
  Recording& r = Current();
  if (!r.on) return;
  RecordedTile* tile = Register(r, t);
  if (tile == nullptr) return;
  const bool used = std::any_of(r.instructions.begin(), r.instructions.end(),
                                [&](const RecordedInstruction& i) {
                                  return i.dst == t.name || i.src0 == t.name ||
                                         i.src1 == t.name || i.tmp == t.name;
                                });
  // A bound tile's bytes are shared: once an instruction ran, they may be
  // some other tile's result.
  if ((used || (t.bound && !r.instructions.empty())) && r.problem.empty()) {
    r.problem = absl::StrFormat(
        "tile \"%s\" is loaded after instruction %u ran; a job's tiles hold "
        "their elements before its first instruction",
        t.name, r.instructions.size() - 1);
    return;
  }
  Carry(tile, t);
}

void RecordStore(const TileRef& t) {
  Recording& r = Current();
  if (!r.on) return;
  if (RecordedTile* tile = Register(r, t)) tile->output = true;
}

bool RecordingOn() { return Current().on; }

void RecordReset() {
  Recording& r = Current();
  if (!r.on) return;
  if (r.problem.empty() && !r.instructions.empty()) {
    r.problem =
        "ResetKernel ran during the recording, after an instruction; a job "
        "is one run";
  }
  r.first_instruction = 0;
}

void RecordRan(Event event, uint32_t index, const uint32_t* waits,
               size_t num_waits) {
  Recording& r = Current();
  if (!r.on) return;
  // Numbered from the recording's first instruction, as the job's are; a
  // batch of its own.
  event.id = EventName(r, index);
  event.index =
      index >= r.first_instruction ? index - r.first_instruction : index;
  event.batch_id = event.index + 1;
  event.batch_size = 1;
  for (size_t w = 0; w < num_waits; ++w) {
    event.waited_on.push_back(EventName(r, waits[w]));
  }
  r.events.push_back(std::move(event));
}

Target RecordedTarget() { return Current().target; }

const std::vector<Event>& RecordedEvents() { return Current().events; }

void RecordInstruction(Opcode opcode, const TileRef& dst, const TileRef& src0,
                       const TileRef& src1, const TileRef* tmp,
                       const uint32_t* waits, size_t num_waits) {
  Recording& r = Current();
  if (!r.on) return;
  const bool two_sources = Op(opcode).sources > 1;
  std::vector<const TileRef*> operands = {&dst, &src0};
  if (two_sources) operands.push_back(&src1);
  if (tmp != nullptr) operands.push_back(tmp);
  for (const TileRef* t : operands) {
    const bool seen =
        std::any_of(r.tiles.begin(), r.tiles.end(),
                    [&](const RecordedTile& s) { return s.name == t->name; });
    RecordedTile* tile = Register(r, *t);
    if (tile == nullptr) return;
    // An unbound tile first used here, never loaded: what it holds now.
    if (!seen && !t->bound) Carry(tile, *t);
  }
  RecordedInstruction inst{opcode,
                           dst.name,
                           src0.name,
                           two_sources ? src1.name : "",
                           tmp != nullptr ? tmp->name : "",
                           {}};
  for (size_t w = 0; w < num_waits; ++w) {
    inst.waits.push_back(EventName(r, waits[w]));
  }
  r.instructions.push_back(std::move(inst));
}

std::string RecordedJob(std::string* error, bool name_target) {
  const Recording& r = Current();
  if (!r.problem.empty()) {
    *error = r.problem;
    return "";
  }
  if (r.instructions.empty()) {
    *error = "no instruction was recorded";
    return "";
  }
  const bool manual =
      std::any_of(r.tiles.begin(), r.tiles.end(),
                  [](const RecordedTile& t) { return t.ref.bound; });
  std::vector<std::string> head;
  if (name_target) {
    head.push_back(absl::StrCat("\"target\": ",
                                EnumName("TARGET_", TargetName(r.target))));
  }
  if (manual) head.push_back("\"mode\": \"MODE_MANUAL\"");
  std::string json = absl::StrCat("{", absl::StrJoin(head, ", "),
                                  head.empty() ? "" : ",\n ", "\"tiles\": {");
  for (size_t i = 0; i < r.tiles.size(); ++i) {
    const RecordedTile& t = r.tiles[i];
    absl::StrAppendFormat(
        &json,
        "%s\n  %s: {\"dtype\": %s, \"rows\": %u, \"cols\": %u, "
        "\"validRows\": %u, \"validCols\": %u",
        i == 0 ? "" : ",", JsonQuote(t.name),
        EnumName("DTYPE_", DTypeName(t.ref.dtype)), t.ref.rows, t.ref.cols,
        t.ref.valid_rows, t.ref.valid_cols);
    if (t.ref.bound) absl::StrAppend(&json, ", \"address\": ", t.ref.address);
    if (!t.data.empty()) {
      absl::StrAppend(&json,
                      ", \"data\": ", JsonQuote(absl::Base64Escape(t.data)));
    }
    absl::StrAppend(&json, "}");
  }
  absl::StrAppend(&json, "},\n \"instructions\": [");
  for (size_t i = 0; i < r.instructions.size(); ++i) {
    const RecordedInstruction& inst = r.instructions[i];
    absl::StrAppendFormat(
        &json, "%s\n  {\"opcode\": %s, \"dst\": %s, \"src0\": %s",
        i == 0 ? "" : ",", EnumName("OPCODE_", OpcodeName(inst.opcode)),
        JsonQuote(inst.dst), JsonQuote(inst.src0));
    if (!inst.src1.empty())
      absl::StrAppend(&json, ", \"src1\": ", JsonQuote(inst.src1));
    if (!inst.tmp.empty())
      absl::StrAppend(&json, ", \"tmp\": ", JsonQuote(inst.tmp));
    if (!inst.waits.empty()) {
      std::vector<std::string> quoted;
      for (const std::string& w : inst.waits) quoted.push_back(JsonQuote(w));
      absl::StrAppend(&json, ", \"waitEvents\": [", absl::StrJoin(quoted, ", "),
                      "]");
    }
    absl::StrAppend(&json, "}");
  }
  absl::StrAppend(&json, "]");
  std::vector<std::string> outputs;
  for (const RecordedTile& t : r.tiles) {
    if (t.output) outputs.push_back(JsonQuote(t.name));
  }
  if (!outputs.empty()) {
    absl::StrAppend(&json, ",\n \"outputs\": [", absl::StrJoin(outputs, ", "),
                    "]");
  }
  absl::StrAppend(&json, "}\n");
  return json;
}

}  // namespace builtin
}  // namespace ptoserve
