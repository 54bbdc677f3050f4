#include "core/asm/token_reader.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace ptoserve {
namespace pasm {

absl::Status Error(const Token& at, absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat(ToString(at.pos), ": ", expected, ", found ", Describe(at)));
}

absl::Status ErrorAbout(const Token& at, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(ToString(at.pos), ": ", message));
}

absl::Status TokenReader::Expect(absl::string_view punct,
                                 absl::string_view context) {
  if (!PeekPunct(punct)) {
    return Error(Peek(), absl::StrCat("expected '", punct, "' ", context));
  }
  Next();
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> TokenReader::ParseNumber(absl::string_view what,
                                                  absl::string_view name,
                                                  uint64_t max) {
  if (Peek().kind != TokenKind::kNumber) {
    return Error(Peek(), absl::StrCat("expected ", what));
  }
  const Token& token = Next();
  absl::string_view digits = token.text;
  const bool hex = digits.size() > 2 && (digits[1] == 'x' || digits[1] == 'X');
  if (hex) digits.remove_prefix(2);
  const uint64_t base = hex ? 16 : 10;
  uint64_t value = 0;
  for (char c : digits) {
    const uint64_t digit =
        absl::ascii_isdigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10;
    if (value > (max - digit) / base) {
      return ErrorAbout(
          token, absl::StrCat(name, " ", token.text, " is too large (at most ",
                              max, ")"));
    }
    value = value * base + digit;
  }
  return value;
}

}  // namespace pasm
}  // namespace ptoserve
