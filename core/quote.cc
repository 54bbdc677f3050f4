#include "core/quote.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace ptoserve {

std::string ShortQuote(absl::string_view text, size_t max) {
  if (text.size() <= max) {
    return absl::StrCat("\"", absl::CHexEscape(text), "\"");
  }
  return absl::StrCat("\"", absl::CHexEscape(text.substr(0, max)), "...\" (",
                      text.size(), " bytes)");
}

}  // namespace ptoserve
