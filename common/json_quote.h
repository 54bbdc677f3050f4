// Client-given text made safe where it is written: as a JSON string (the
// server's HTTP errors and log lines, ptoctl's Chrome traces, a recorded
// kernel's job, ptobench's report) and as one line of plain text (the
// server's text log).
#ifndef PTOSERVE_COMMON_JSON_QUOTE_H_
#define PTOSERVE_COMMON_JSON_QUOTE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace ptoserve {

// `text` in double quotes, valid JSON and valid UTF-8 whatever the bytes:
// '"', '\' and control characters escaped, a byte that is not part of
// well-formed UTF-8 written as U+FFFD.
std::string JsonQuote(absl::string_view text);

// `text` as part of one line of plain text, valid UTF-8: control characters
// (a newline, ESC, CR, DEL) and bytes that are not well-formed UTF-8
// written as \xHH, and '\' as "\\", so that no client's text starts a line
// or changes a terminal, and the escaped text reads back unambiguously.
std::string LineSafe(absl::string_view text);

}  // namespace ptoserve

#endif  // PTOSERVE_COMMON_JSON_QUOTE_H_
