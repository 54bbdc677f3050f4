// Showing client-supplied text in error messages without echoing it whole
// (as a JSON string: common/json_quote.h).
#ifndef PTOSERVE_CORE_QUOTE_H_
#define PTOSERVE_CORE_QUOTE_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace ptoserve {

// The longest name (tile, event) a job may use, in bytes. Names are keys
// that error messages quote, so a bound on them bounds every message.
inline constexpr size_t kMaxNameBytes = 256;

// `text` in double quotes, C-escaped, cut after `max` bytes with the full
// length noted: "\"abc\"", "\"aaaa...\" (8388608 bytes)".
std::string ShortQuote(absl::string_view text, size_t max = 48);

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_QUOTE_H_
