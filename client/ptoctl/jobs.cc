#include "client/ptoctl/jobs.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/ptoctl/print.h"
#include "proto/json_errors.h"

namespace ptoserve {
namespace ptoctl {

namespace {

// "line:column" of byte `offset` of `text`, whose first line is
// `first_line`; columns count from 1.
std::string LineColumn(absl::string_view text, size_t offset, int first_line) {
  offset = std::min(offset, text.size());
  size_t line = first_line, column = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return absl::StrCat(line, ":", column);
}

// Protobuf's JSON parser reports a syntax error as "what\nSNIPPET\n   ^",
// the snippet being up to 20 bytes either side of the error, and a schema
// error as "field: what" or "(field): invalid value \"X\" ...". Returns
// "line:column", found from the snippet, or from the first quoted name or
// value of the message that appears in `text`; "" when neither is there.
std::string JsonErrorPlace(absl::string_view text, absl::string_view error,
                           int first_line) {
  std::vector<absl::string_view> lines = absl::StrSplit(error, '\n');
  const absl::string_view what = lines[0];
  if (lines.size() >= 3 && absl::EndsWith(lines.back(), "^")) {
    const size_t caret = lines.back().size() - 1;
    const std::string snippet =
        absl::StrJoin(lines.begin() + 1, lines.end() - 1, "\n");
    if (size_t at = text.find(snippet); at != absl::string_view::npos) {
      return LineColumn(text, at + caret, first_line);
    }
    return "";
  }
  // A quoted value ("TARGET_HOSTX"), else the field the message starts with.
  std::vector<std::string> candidates;
  if (size_t open = what.find('"'); open != absl::string_view::npos) {
    const size_t close = what.find('"', open + 1);
    if (close != absl::string_view::npos) {
      candidates.push_back(std::string(what.substr(open, close - open + 1)));
    }
  }
  if (size_t colon = what.find(':'); colon != absl::string_view::npos) {
    absl::string_view field = absl::StripPrefix(what.substr(0, colon), "(");
    field = absl::StripSuffix(field, ")");
    // "(tiles[0].value) value": the name after the path.
    if (size_t space = field.rfind(' '); space != absl::string_view::npos) {
      field = field.substr(space + 1);
    }
    if (size_t dot = field.rfind('.'); dot != absl::string_view::npos) {
      field = field.substr(dot + 1);
    }
    if (!field.empty()) candidates.push_back(absl::StrCat("\"", field, "\""));
  }
  for (const std::string& c : candidates) {
    if (size_t at = text.find(c); at != absl::string_view::npos) {
      return LineColumn(text, at, first_line);
    }
  }
  return "";
}

}  // namespace

std::string InputName(const std::string& path) {
  return path == "-" ? "<stdin>" : path;
}

absl::StatusOr<v1::Job> ParseJsonJob(absl::string_view text,
                                     absl::string_view where, int first_line) {
  v1::Job job;
  auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(text.data(), text.size()), &job,
      JobJsonParseOptions());
  if (!parsed.ok()) {
    // Where (line:column), then what, in the words the server's doors use.
    const std::string raw = parsed.message().as_string();
    const std::string place = JsonErrorPlace(text, raw, first_line);
    return absl::InvalidArgumentError(absl::StrCat(
        where, place.empty() ? "" : ":", place, ": ",
        ReadableJsonError("the file", text, raw, *v1::Job::descriptor())));
  }
  return job;
}

bool LooksLikeJson(const std::string& path, absl::string_view text) {
  if (absl::EndsWith(path, ".json")) return true;
  if (absl::EndsWith(path, ".pto")) return false;
  text = absl::StripLeadingAsciiWhitespace(text);
  return !text.empty() && text[0] == '{';
}

absl::Status ApplyTarget(v1::Target target, absl::string_view where,
                         v1::Job* job) {
  if (target == v1::TARGET_UNSPECIFIED) return absl::OkStatus();
  if (job->target() == v1::TARGET_UNSPECIFIED) {
    job->set_target(target);
    return absl::OkStatus();
  }
  if (job->target() != target) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " sets target ", TargetText(job->target()),
                     ", which --target=", TargetText(target), " contradicts"));
  }
  return absl::OkStatus();
}

}  // namespace ptoctl
}  // namespace ptoserve
