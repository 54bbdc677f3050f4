// protobuf's JSON parse errors in a job sender's words: the tile by its
// name and the field ("tiles[\"a\"].dtype", not "(tiles[0].value.dtype)"),
// what a value should have been, an enum's valid values, "the body is
// empty", never a type URL.
#ifndef PTOSERVE_PROTO_JSON_ERRORS_H_
#define PTOSERVE_PROTO_JSON_ERRORS_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

#include <string>

#include "absl/strings/string_view.h"

namespace ptoserve {

// How every door parses a job's JSON: unknown fields refused; an enum by
// any of its names in any case ("int16", "INT16", "Int16" for DTYPE_INT16,
// through the schema's aliases).
google::protobuf::util::JsonParseOptions JobJsonParseOptions();

// What is wrong with `body` (called `what`: "the body"), given protobuf's
// `message` for it as a `type` (ptoserve.v1.Job) in proto3 JSON. Messages
// it does not know come back as they are, but for their caret line.
std::string ReadableJsonError(absl::string_view what, absl::string_view body,
                              absl::string_view message,
                              const google::protobuf::Descriptor& type);

// The `index`th key (from 0) of the object that `body`'s top-level field
// `field` holds (its JSON name or its proto name), or "" if there is none.
std::string KeyAt(absl::string_view body, absl::string_view field,
                  size_t index);

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_JSON_ERRORS_H_
