#include "proto/words.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"

namespace ptoserve {

namespace {

// The time from `a` to `b`.
absl::Duration Between(const google::protobuf::Timestamp& a,
                       const google::protobuf::Timestamp& b) {
  return absl::Seconds(b.seconds() - a.seconds()) +
         absl::Nanoseconds(b.nanos() - a.nanos());
}

// `s`, then spaces up to `width` bytes (printf's "%-*s").
void AppendPadded(absl::string_view s, size_t width, std::string* out) {
  out->append(s.data(), s.size());
  if (s.size() < width) out->append(width - s.size(), ' ');
}

}  // namespace

std::string DTypeText(v1::DType dtype) {
  return absl::AsciiStrToLower(
      absl::StripPrefix(v1::DType_Name(dtype), "DTYPE_"));
}

std::string TargetText(v1::Target target) {
  return absl::AsciiStrToLower(
      absl::StripPrefix(v1::Target_Name(target), "TARGET_"));
}

std::string OpcodeText(v1::Opcode opcode) {
  return std::string(absl::StripPrefix(v1::Opcode_Name(opcode), "OPCODE_"));
}

std::string EventText(const v1::EventRecord& e) {
  // Built with StrAppend: StrFormat's parsing costs as much again, and an
  // inference protocol answer carries this text for every job.
  std::string text = "  ";
  AppendPadded(e.id(), 4, &text);
  absl::StrAppend(
      &text, " instruction ", e.instruction_index(), " ",
      OpcodeText(e.opcode()), " on ", TargetText(e.target()), ", ",
      v1::Pipe_Name(e.pipe()), ", batch ", e.batch_id(), " (size ",
      e.batch_size(), "), queued ",
      absl::FormatDuration(Between(e.enqueue_time(), e.start_time())), ", ran ",
      absl::FormatDuration(Between(e.start_time(), e.end_time())));
  if (e.waited_on_size() > 0) {
    absl::StrAppend(&text, ", waited on ", absl::StrJoin(e.waited_on(), ", "));
  }
  text += "\n";
  const auto count = [](uint32_t n, const char* noun) {
    return absl::StrCat(n, " ", noun, n == 1 ? "" : "s");
  };
  for (const v1::MicroOp& op : e.trace()) {
    text += "       ";
    AppendPadded(op.op(), 5, &text);
    absl::StrAppend(&text, " ", op.dst(), " <- ",
                    absl::StrJoin(op.srcs(), ", "), "  (",
                    count(op.repeats(), "repeat"), ", ",
                    count(op.elements(), "element"), ")\n");
  }
  for (const std::string& note : e.notes()) {
    absl::StrAppend(&text, "       note: ", note, "\n");
  }
  return text;
}

}  // namespace ptoserve
