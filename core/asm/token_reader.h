// One line's tokens, read in order, and the errors the parser reports about
// them ("line:column: expected ..., found ..."). Internal to the parser.
#ifndef PTOSERVE_CORE_ASM_TOKEN_READER_H_
#define PTOSERVE_CORE_ASM_TOKEN_READER_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/asm/lexer.h"

namespace ptoserve {
namespace pasm {

// "L:C: <expected>, found <what is at `at`>"
absl::Status Error(const Token& at, absl::string_view expected);
// "L:C: <message>", for errors about the token itself.
absl::Status ErrorAbout(const Token& at, absl::string_view message);

class TokenReader {
 public:
  // REQUIRES: `tokens` ends with kEnd, as Lex's do.
  explicit TokenReader(std::vector<Token> tokens)
      : tokens_(std::move(tokens)) {}

  const Token& Peek() const { return tokens_[at_]; }
  // REQUIRES: Peek() is not kEnd, the last token.
  const Token& Next() { return tokens_[at_++]; }
  // The token Next returned most recently. REQUIRES: Next was called.
  const Token& Last() const { return tokens_[at_ - 1]; }

  bool PeekPunct(absl::string_view punct) const {
    return Peek().kind == TokenKind::kPunct && Peek().text == punct;
  }
  bool PeekWord(absl::string_view word) const {
    return Peek().kind == TokenKind::kWord && Peek().text == word;
  }

  // Consumes punctuation `punct`, or fails with "expected '<punct>'
  // <context>".
  absl::Status Expect(absl::string_view punct, absl::string_view context);

  // A decimal or 0x-hexadecimal number of at most `max`: `what` is what the
  // error expected, `name` what it calls a number too large.
  absl::StatusOr<uint64_t> ParseNumber(absl::string_view what,
                                       absl::string_view name, uint64_t max);

 private:
  std::vector<Token> tokens_;
  size_t at_ = 0;
};

}  // namespace pasm
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_ASM_TOKEN_READER_H_
