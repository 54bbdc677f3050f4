// Splits PTO assembly text into tokens. Line ends are tokens because a
// statement is exactly one line.
#ifndef PTOSERVE_CORE_ASM_LEXER_H_
#define PTOSERVE_CORE_ASM_LEXER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/asm/ast.h"

namespace ptoserve {
namespace pasm {

enum class TokenKind : uint8_t {
  kTileName,  // %src0: text is "src0"
  kSymbol,    // @tile: text is "tile"
  kTypeName,  // !pto.tile_buf: text is "pto.tile_buf"
  kWord,      // pto.txor, ins, dtype, i16, row_major, ...
  kNumber,    // 4096, 0x1000
  kPunct,     // = , : ( ) < > -> ? ...
  kComment,   // "# ..." or "// ...", to the end of the line
  kNewline,
  kEnd,
};

// A token's text points into the lexed program.
struct Token {
  TokenKind kind;
  absl::string_view text;
  SourcePos pos;
};

// The tokens of `text`, ending with one kEnd; INVALID_ARGUMENT
// "line:column: ..." at the first character that starts no token.
// `first_line` numbers the first line of `text` (Parse lexes one line at a
// time, so that the tokens of the whole text never exist at once).
absl::StatusOr<std::vector<Token>> Lex(absl::string_view text,
                                       uint32_t first_line = 1);

// How an error message shows a token: "'%src0'", "end of line", ...
std::string Describe(const Token& token);

}  // namespace pasm
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_ASM_LEXER_H_
