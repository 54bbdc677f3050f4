#include "core/asm/lexer.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace ptoserve {
namespace pasm {

namespace {

// Longer error quotes are cut here: the position already says where.
constexpr size_t kMaxQuoted = 24;

bool IsWordStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsWordChar(char c) {
  return absl::ascii_isalnum(c) || c == '_' || c == '.';
}
// MLIR's value names: letters, digits and $ . _ -
bool IsNameChar(char c) {
  return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '$' || c == '-';
}

std::string Quote(absl::string_view text) {
  std::string shown = absl::CHexEscape(text.substr(0, kMaxQuoted));
  if (text.size() > kMaxQuoted) shown += "...";
  return absl::StrCat("'", shown, "'");
}

class Lexer {
 public:
  Lexer(absl::string_view text, uint32_t first_line)
      : text_(text), line_(first_line) {}

  absl::StatusOr<std::vector<Token>> Run() && {
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++at_;
      } else if (c == '\n') {
        Emit(TokenKind::kNewline, 1);
        ++line_;
        line_start_ = at_;
      } else if (c == '#' || text_.substr(at_, 2) == "//") {
        Emit(TokenKind::kComment,
             RunLength(at_, [](char c) { return c != '\n'; }));
      } else if (c == '%' || c == '@' || c == '!') {
        absl::Status status = Sigiled(c);
        if (!status.ok()) return status;
      } else if (IsWordStart(c)) {
        Emit(TokenKind::kWord, RunLength(at_, IsWordChar));
      } else if (absl::ascii_isdigit(c)) {
        absl::Status status = Number();
        if (!status.ok()) return status;
      } else if (text_.substr(at_, 3) == "...") {
        Emit(TokenKind::kPunct, 3);
      } else if (text_.substr(at_, 2) == "->") {
        Emit(TokenKind::kPunct, 2);
      } else if (absl::string_view("=,:()<>?").find(c) !=
                 absl::string_view::npos) {
        Emit(TokenKind::kPunct, 1);
      } else {
        return Error(
            absl::StrCat("unexpected character ", Quote(text_.substr(at_, 1))));
      }
    }
    tokens_.push_back({TokenKind::kEnd, text_.substr(text_.size()), Pos()});
    return std::move(tokens_);
  }

 private:
  SourcePos Pos() const {
    return SourcePos{line_, static_cast<uint32_t>(at_ - line_start_ + 1)};
  }

  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(ToString(Pos()), ": ", message));
  }

  template <typename Pred>
  size_t RunLength(size_t from, Pred pred) const {
    size_t end = from;
    while (end < text_.size() && pred(text_[end])) ++end;
    return end - from;
  }

  // Appends the `length` characters at the cursor as one token; its text
  // leaves out the first `skip` of them (a sigil).
  void Emit(TokenKind kind, size_t length, size_t skip = 0) {
    tokens_.push_back({kind, text_.substr(at_ + skip, length - skip), Pos()});
    at_ += length;
  }

  // %name, @symbol, !type.name
  absl::Status Sigiled(char sigil) {
    const bool is_name = sigil == '%';
    const size_t length =
        is_name ? RunLength(at_ + 1, IsNameChar)
                : (at_ + 1 < text_.size() && IsWordStart(text_[at_ + 1])
                       ? RunLength(at_ + 1, IsWordChar)
                       : 0);
    if (length == 0) {
      return Error(absl::StrCat("expected ",
                                is_name        ? "a tile name"
                                : sigil == '@' ? "a symbol"
                                               : "a type name",
                                " after '", std::string(1, sigil), "', found ",
                                at_ + 1 < text_.size()
                                    ? Quote(text_.substr(at_ + 1, 1))
                                    : std::string("end of input")));
    }
    const TokenKind kind = is_name        ? TokenKind::kTileName
                           : sigil == '@' ? TokenKind::kSymbol
                                          : TokenKind::kTypeName;
    Emit(kind, length + 1, 1);
    return absl::OkStatus();
  }

  // Decimal, or hexadecimal after 0x. The value is read by the parser.
  absl::Status Number() {
    const bool hex =
        text_.substr(at_, 2) == "0x" || text_.substr(at_, 2) == "0X";
    const size_t length = hex ? 2 + RunLength(at_ + 2, absl::ascii_isxdigit)
                              : RunLength(at_, absl::ascii_isdigit);
    const size_t junk = RunLength(at_ + length, IsWordChar);
    if (junk > 0 || length == (hex ? 2u : 0u)) {
      return Error(absl::StrCat("malformed number ",
                                Quote(text_.substr(at_, length + junk))));
    }
    Emit(TokenKind::kNumber, length);
    return absl::OkStatus();
  }

  absl::string_view text_;
  size_t at_ = 0;
  uint32_t line_;
  size_t line_start_ = 0;  // offset of the current line's first character
  std::vector<Token> tokens_;
};

}  // namespace

absl::StatusOr<std::vector<Token>> Lex(absl::string_view text,
                                       uint32_t first_line) {
  return Lexer(text, first_line).Run();
}

std::string Describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::kNewline:
      return "end of line";
    case TokenKind::kEnd:
      return "end of input";
    case TokenKind::kComment:
      return "a comment";
    case TokenKind::kTileName:
      return Quote(absl::StrCat("%", token.text));
    case TokenKind::kSymbol:
      return Quote(absl::StrCat("@", token.text));
    case TokenKind::kTypeName:
      return Quote(absl::StrCat("!", token.text));
    default:
      return Quote(token.text);
  }
}

}  // namespace pasm
}  // namespace ptoserve
