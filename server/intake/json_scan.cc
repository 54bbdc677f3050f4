#include "server/intake/json_scan.h"

#include "absl/strings/str_format.h"

namespace ptoserve {

absl::Status ScanJson(absl::string_view body, const JsonBounds& bounds) {
  size_t objects = 0;
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '{':
        if (++objects > bounds.max_objects) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "the body holds more than %u JSON objects (at byte %u): more "
              "than a job of the most tiles and instructions this server "
              "takes",
              bounds.max_objects, i));
        }
        [[fallthrough]];
      case '[':
        if (++depth > bounds.max_depth) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "the body nests objects and arrays more than %u deep (at byte "
              "%u); a job's JSON nests 4 deep",
              bounds.max_depth, i));
        }
        break;
      case '}':
      case ']':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  if (in_string) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the body ends inside a string (%u bytes)", body.size()));
  }
  return absl::OkStatus();
}

}  // namespace ptoserve
