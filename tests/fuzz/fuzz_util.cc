#include "tests/fuzz/fuzz_util.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ptoserve/v1/tile.pb.h"
#include "server/exec/scheduler.h"

namespace ptoserve {
namespace fuzz {

namespace {

// Everything about a tile's description, for comparing two of them.
std::string Describe(const TileDesc& d) {
  return absl::StrCat(d.ToString(), " ", LayoutName(d.layout), " ",
                      LocationName(d.location), " at ",
                      d.address ? absl::StrCat(*d.address) : "-");
}

std::string Describe(const MicroOp& op) {
  return absl::StrFormat("%s %s <- %s (%u repeats, %u elements)", op.op, op.dst,
                         absl::StrJoin(op.srcs, ", "), op.repeats, op.elements);
}

absl::Status Differ(absl::string_view what, absl::string_view expected,
                    absl::string_view actual) {
  return absl::InternalError(
      absl::StrFormat("%s: expected %s, got %s", what, expected, actual));
}

absl::Status SameEvent(const Event& a, const Event& b) {
  const std::string where = absl::StrCat("event ", a.index);
  if (a.id != b.id || a.index != b.index || a.opcode != b.opcode ||
      a.target != b.target) {
    return Differ(where,
                  absl::StrCat(a.id, " #", a.index, " ", OpcodeName(a.opcode),
                               " on ", TargetName(a.target)),
                  absl::StrCat(b.id, " #", b.index, " ", OpcodeName(b.opcode),
                               " on ", TargetName(b.target)));
  }
  if (a.waited_on != b.waited_on) {
    return Differ(absl::StrCat(where, " waited_on"),
                  absl::StrJoin(a.waited_on, ","),
                  absl::StrJoin(b.waited_on, ","));
  }
  auto ops = [](const Trace& t) {
    std::vector<std::string> out;
    for (const MicroOp& op : t.ops) out.push_back(Describe(op));
    return absl::StrJoin(out, "; ");
  };
  if (ops(a.trace) != ops(b.trace)) {
    return Differ(absl::StrCat(where, " trace"), ops(a.trace), ops(b.trace));
  }
  if (a.trace.notes != b.trace.notes) {
    return Differ(absl::StrCat(where, " notes"),
                  absl::StrJoin(a.trace.notes, " | "),
                  absl::StrJoin(b.trace.notes, " | "));
  }
  return absl::OkStatus();
}

}  // namespace

const Engine& SmallEngine() {
  static const Engine* const kEngine =
      new Engine(EngineOptions{.limits = {.max_tile_bytes = size_t{64} << 10,
                                          .max_tiles_per_job = 64,
                                          .max_instructions_per_job = 64}});
  return *kEngine;
}

void RunInOrder(const Engine& engine, PreparedJob* job) {
  for (uint32_t i = 0; i < job->num_instructions(); ++i) {
    const WorkItem item{job, i};
    engine.RunBatch(absl::MakeConstSpan(&item, 1));
  }
}

absl::Status RunReordered(const Engine& engine, PreparedJob* job) {
  const size_t n = job->num_instructions();
  std::vector<bool> done(n, false);
  for (size_t remaining = n; remaining > 0;) {
    std::vector<uint32_t> ready;
    for (uint32_t i = 0; i < n; ++i) {
      const std::vector<uint32_t>& preds = job->predecessors(i);
      if (!done[i] && std::all_of(preds.begin(), preds.end(),
                                  [&](uint32_t p) { return done[p]; })) {
        ready.push_back(i);
      }
    }
    if (ready.empty()) {
      return absl::InternalError(absl::StrFormat(
          "%u instructions never become ready: their predecessors form a "
          "cycle",
          remaining));
    }
    const BatchKey key = BatchKey::Of(*job, ready.back());
    std::vector<WorkItem> batch;
    for (auto it = ready.rbegin(); it != ready.rend(); ++it) {
      if (BatchKey::Of(*job, *it) == key) batch.push_back(WorkItem{job, *it});
    }
    engine.RunBatch(batch);
    for (const WorkItem& item : batch) done[item.index] = true;
    remaining -= batch.size();
  }
  return absl::OkStatus();
}

absl::Status SameOutcome(const JobOutcome& expected, const JobOutcome& actual) {
  if (expected.target != actual.target) {
    return Differ("target", TargetName(expected.target),
                  TargetName(actual.target));
  }
  if (expected.outputs.size() != actual.outputs.size()) {
    return Differ("number of outputs", absl::StrCat(expected.outputs.size()),
                  absl::StrCat(actual.outputs.size()));
  }
  for (size_t i = 0; i < expected.outputs.size(); ++i) {
    const OutputTile& a = expected.outputs[i];
    const OutputTile& b = actual.outputs[i];
    const std::string where = absl::StrCat("output ", i, " \"", a.name, "\"");
    if (a.name != b.name) return Differ(where, a.name, b.name);
    if (Describe(a.tile.desc()) != Describe(b.tile.desc())) {
      return Differ(where, Describe(a.tile.desc()), Describe(b.tile.desc()));
    }
    const size_t n = a.tile.size_bytes();
    for (size_t k = 0; k < n; ++k) {
      if (a.tile.data()[k] != b.tile.data()[k]) {
        return Differ(absl::StrCat(where, " byte ", k),
                      absl::StrCat(a.tile.data()[k]),
                      absl::StrCat(b.tile.data()[k]));
      }
    }
  }
  if (expected.events.size() != actual.events.size()) {
    return Differ("number of events", absl::StrCat(expected.events.size()),
                  absl::StrCat(actual.events.size()));
  }
  for (size_t i = 0; i < expected.events.size(); ++i) {
    if (absl::Status same = SameEvent(expected.events[i], actual.events[i]);
        !same.ok()) {
      return same;
    }
  }
  return absl::OkStatus();
}

}  // namespace fuzz
}  // namespace ptoserve
