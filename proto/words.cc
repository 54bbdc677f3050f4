#include "proto/words.h"

#include <algorithm>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
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

// A line built in place and appended to `out` whole: std::string's append
// is a call a piece, and StrAppend's pieces and FormatDuration's strings
// cost as much again; an inference answer carries this text for every job.
class Line {
 public:
  explicit Line(std::string* out) : out_(*out) {}
  ~Line() { Flush(); }
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;

  Line& operator<<(absl::string_view s) {
    if (s.size() > sizeof(buffer_) - used_) {
      Flush();
      if (s.size() > sizeof(buffer_)) {  // a long name, as it is
        out_.append(s.data(), s.size());
        return *this;
      }
    }
    std::memcpy(buffer_ + used_, s.data(), s.size());
    used_ += s.size();
    return *this;
  }
  Line& operator<<(uint64_t n) {
    char digits[20];
    char* const end = digits + sizeof(digits);
    char* p = end;
    do {
      *--p = static_cast<char>('0' + n % 10);
      n /= 10;
    } while (n != 0);
    return *this << absl::string_view(p, end - p);
  }
  Line& operator<<(absl::Duration d);

  // `s`, then spaces up to `width` bytes (printf's "%-*s").
  Line& Padded(absl::string_view s, size_t width) {
    static constexpr absl::string_view kSpaces = "        ";
    *this << s;
    for (size_t n = width > s.size() ? width - s.size() : 0; n > 0;) {
      const size_t spaces = std::min(n, kSpaces.size());
      *this << kSpaces.substr(0, spaces);
      n -= spaces;
    }
    return *this;
  }
  // `names` joined by ", ".
  Line& Joined(absl::Span<const absl::string_view> names) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (i > 0) *this << ", ";
      *this << names[i];
    }
    return *this;
  }

 private:
  void Flush() {
    out_.append(buffer_, used_);
    used_ = 0;
  }

  std::string& out_;
  char buffer_[160];
  size_t used_ = 0;
};

// absl::FormatDuration's text ("0", "941ns", "12.474us", "1.5ms"), written
// here for a whole number of nanoseconds under a second, an event's usual
// times (words_test holds the two to the same text); absl's own otherwise.
Line& Line::operator<<(absl::Duration d) {
  const int64_t ns = absl::ToInt64Nanoseconds(d);
  if (ns < 0 || ns >= 1000000000 || absl::Nanoseconds(ns) != d) {
    return *this << absl::FormatDuration(d);
  }
  if (ns == 0) return *this << "0";
  if (ns < 1000) return *this << static_cast<uint64_t>(ns) << "ns";
  const bool micro = ns < 1000000;
  const int64_t unit = micro ? 1000 : 1000000;
  *this << static_cast<uint64_t>(ns / unit);
  int64_t fraction = ns % unit;
  if (fraction != 0) {
    // Its digits after the point, trailing zeros dropped.
    int places = micro ? 3 : 6;
    for (; fraction % 10 == 0; fraction /= 10) --places;
    char digits[7] = {'.'};
    for (int i = places; i > 0; --i, fraction /= 10) {
      digits[i] = static_cast<char>('0' + fraction % 10);
    }
    *this << absl::string_view(digits, places + 1);
  }
  return *this << (micro ? "us" : "ms");
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
  std::string text;
  const std::string opcode = OpcodeText(e.opcode());
  const std::string target = TargetText(e.target());
  EventHead head;
  head.id = e.id();
  head.index = e.instruction_index();
  head.opcode = opcode;
  head.target = target;
  head.pipe = v1::Pipe_Name(e.pipe());
  head.batch_id = e.batch_id();
  head.batch_size = e.batch_size();
  head.queued = Between(e.enqueue_time(), e.start_time());
  head.ran = Between(e.start_time(), e.end_time());
  absl::InlinedVector<absl::string_view, 4> names(e.waited_on().begin(),
                                                  e.waited_on().end());
  AppendEventHead(head, names, &text);
  for (const v1::MicroOp& op : e.trace()) {
    names.assign(op.srcs().begin(), op.srcs().end());
    AppendMicroOpLine(op.op(), op.dst(), names, op.repeats(), op.elements(),
                      &text);
  }
  for (const std::string& note : e.notes()) AppendNoteLine(note, &text);
  return text;
}

void AppendEventHead(const EventHead& head,
                     absl::Span<const absl::string_view> waited_on,
                     std::string* out) {
  Line line(out);
  line << "  ";
  line.Padded(head.id, 4) << " instruction " << head.index << " " << head.opcode
                          << " on " << head.target << ", " << head.pipe
                          << ", batch " << head.batch_id << " (size "
                          << head.batch_size << "), queued " << head.queued
                          << ", ran " << head.ran;
  if (!waited_on.empty()) line << ", waited on ";
  line.Joined(waited_on) << "\n";
}

void AppendMicroOpLine(absl::string_view op, absl::string_view dst,
                       absl::Span<const absl::string_view> srcs,
                       uint64_t repeats, uint64_t elements, std::string* out) {
  Line line(out);
  line << "       ";
  line.Padded(op, 5) << " " << dst << " <- ";
  line.Joined(srcs) << "  (" << repeats
                    << (repeats == 1 ? " repeat, " : " repeats, ") << elements
                    << (elements == 1 ? " element)\n" : " elements)\n");
}

void AppendNoteLine(absl::string_view note, std::string* out) {
  Line(out) << "       note: " << note << "\n";
}

}  // namespace ptoserve
