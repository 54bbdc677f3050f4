// A JSON body checked before it is parsed, for what parsing would cost:
// protobuf's JSON parser makes a message of every object, so a body of
// "{}," repeated (3 bytes each) would cost some 100 bytes per 3 before the
// job's limits are ever checked. Counting the objects and the depth first
// bounds that by the job's own limits.
#ifndef PTOSERVE_SERVER_INTAKE_JSON_SCAN_H_
#define PTOSERVE_SERVER_INTAKE_JSON_SCAN_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ptoserve {

struct JsonBounds {
  size_t max_objects;  // objects ({...}) in all, at any depth
  size_t max_depth;    // objects and arrays nested in one another
};

// OK, or INVALID_ARGUMENT naming the byte offset where the body passed a
// bound (or where a string never ends). Braces inside strings do not count.
// Whatever else is wrong with the JSON is the parser's to say.
absl::Status ScanJson(absl::string_view body, const JsonBounds& bounds);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_INTAKE_JSON_SCAN_H_
