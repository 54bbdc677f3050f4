// Text as a JSON string: what the server's HTTP errors and ptoctl's Chrome
// traces write by hand (for JSON that is not a proto message).
#ifndef PTOSERVE_COMMON_JSON_QUOTE_H_
#define PTOSERVE_COMMON_JSON_QUOTE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace ptoserve {

// `text` in double quotes, with '"', '\' and control characters escaped;
// other bytes as they are (proto3 strings are UTF-8).
std::string JsonQuote(absl::string_view text);

}  // namespace ptoserve

#endif  // PTOSERVE_COMMON_JSON_QUOTE_H_
