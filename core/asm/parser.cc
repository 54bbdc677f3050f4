#include "core/asm/parser.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/asm/lexer.h"
#include "core/ops.h"
#include "core/status_macros.h"

namespace ptoserve {
namespace pasm {

namespace {

constexpr Location kLocations[] = {
    Location::kVec, Location::kMat,  Location::kLeft,   Location::kRight,
    Location::kAcc, Location::kBias, Location::kScaling};

constexpr char kKeyList[] =
    "loc, dtype, rows, cols, v_row, v_col, blayout, slayout, fractal or pad";
constexpr char kElementTypeList[] =
    "i8, i16, i32, si8, si16, si32, ui8, ui16, ui32, int8, int16, int32, "
    "uint8, uint16, uint32, f16, bf16, f32, float16, bfloat16 or float32";

// "tand" -> TAND; with `prefixed`, "pto.tand" -> TAND.
std::optional<Opcode> Mnemonic(absl::string_view word, bool prefixed) {
  if (prefixed) {
    if (!absl::ConsumePrefix(&word, "pto.")) return std::nullopt;
  }
  const OpInfo* op = FindOpByMnemonic(word);
  if (op == nullptr) return std::nullopt;
  return op->opcode;
}

// "a, b, c or d".
std::string OrList(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += items[i];
  }
  return out;
}

// Every instruction's mnemonic, each with `prefix` in front.
std::vector<std::string> Mnemonics(absl::string_view prefix) {
  std::vector<std::string> out;
  for (const OpInfo& op : kOps) {
    out.push_back(absl::StrCat(prefix, op.mnemonic));
  }
  return out;
}

// "%src0, %src1" or "%src0".
std::string SourceOperands(const OpInfo& op) {
  return op.sources == 2 ? "%src0, %src1" : "%src0";
}

std::string Spelled(Opcode opcode, Form form) {
  const absl::string_view bare = Op(opcode).mnemonic;
  return form == Form::kSync ? std::string(bare) : absl::StrCat("pto.", bare);
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  absl::StatusOr<Program> Run() && {
    Program program;
    while (Peek().kind != TokenKind::kEnd) {
      if (Peek().kind == TokenKind::kNewline) {
        Next();
        continue;
      }
      Statement statement;
      statement.pos = Peek().pos;
      if (Peek().kind == TokenKind::kComment) {
        statement.node = Comment{CommentText(Next())};
      } else {
        PTO_RETURN_IF_ERROR(ParseStatement(&statement));
        if (Peek().kind == TokenKind::kComment) {
          statement.trailing_comment = CommentText(Next());
        }
        if (Peek().kind != TokenKind::kNewline &&
            Peek().kind != TokenKind::kEnd) {
          return Error(Peek(), "expected end of line after the statement");
        }
      }
      program.statements.push_back(std::move(statement));
    }
    return program;
  }

 private:
  const Token& Peek() const { return tokens_[at_]; }
  // REQUIRES: Peek() is not kEnd, the last token.
  const Token& Next() { return tokens_[at_++]; }

  bool PeekPunct(absl::string_view punct) const {
    return Peek().kind == TokenKind::kPunct && Peek().text == punct;
  }
  bool PeekWord(absl::string_view word) const {
    return Peek().kind == TokenKind::kWord && Peek().text == word;
  }

  // "L:C: <expected>, found <what is at `at`>"
  static absl::Status Error(const Token& at, absl::string_view expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        ToString(at.pos), ": ", expected, ", found ", Describe(at)));
  }
  // "L:C: <message>", for errors about the token itself.
  static absl::Status ErrorAbout(const Token& at, absl::string_view message) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToString(at.pos), ": ", message));
  }

  // Consumes punctuation `punct`, or fails with "expected '<punct>'
  // <context>".
  absl::Status Expect(absl::string_view punct, absl::string_view context) {
    if (!PeekPunct(punct)) {
      return Error(Peek(), absl::StrCat("expected '", punct, "' ", context));
    }
    Next();
    return absl::OkStatus();
  }

  static std::string CommentText(const Token& token) {
    return std::string(absl::StripTrailingAsciiWhitespace(token.text));
  }

  absl::Status ParseStatement(Statement* statement) {
    const Token& first = Peek();
    if (first.kind == TokenKind::kTileName) return ParseDefinition(statement);
    if (first.kind == TokenKind::kWord) {
      if (first.text == "pto.tassign") return ParseBinding(statement);
      if (std::optional<Opcode> opcode = Mnemonic(first.text, true)) {
        return ParseDps(*opcode, statement);
      }
      if (std::optional<Opcode> opcode = Mnemonic(first.text, false)) {
        return ErrorAbout(
            first,
            absl::StrCat("'", first.text,
                         "' needs a result in the synchronous form: `%dst = ",
                         first.text, " ", SourceOperands(Op(*opcode)),
                         " : !pto.tile<...>`"));
      }
      if (absl::StartsWith(first.text, "pto.")) {
        std::vector<std::string> known = Mnemonics("pto.");
        known.push_back("pto.tassign");
        return ErrorAbout(first,
                          absl::StrCat("unknown instruction '", first.text,
                                       "'; expected ", OrList(known)));
      }
    }
    std::vector<std::string> forms = {"`%dst = ...`"};
    for (const std::string& m : Mnemonics("pto.")) {
      forms.push_back(absl::StrCat("`", m, " ins(...)`"));
    }
    forms.push_back("`pto.tassign`");
    return Error(first,
                 absl::StrCat("expected a statement (", OrList(forms), ")"));
  }

  // %name, as `role` (e.g. "as the first operand of 'tand'").
  absl::StatusOr<ValueRef> ParseOperand(absl::string_view role) {
    if (Peek().kind != TokenKind::kTileName) {
      return Error(Peek(),
                   absl::StrCat("expected a tile name (`%name`) ", role));
    }
    const Token& token = Next();
    ValueRef operand;
    operand.name = std::string(token.text);
    operand.pos = token.pos;
    return operand;
  }

  // %dst = tand %src0, %src1 : T
  // %dst = pto.tand %src0, %src1 : (T, T) -> T
  // and for an instruction with one source, %dst = tnot %src0 : T and
  // %dst = pto.tnot %src0 : (T) -> T.
  absl::Status ParseDefinition(Statement* statement) {
    Operation op;
    PTO_ASSIGN_OR_RETURN(op.dst, ParseOperand(""));
    PTO_RETURN_IF_ERROR(Expect("=", absl::StrCat("after %", op.dst.name)));
    const Token& mnemonic = Peek();
    std::optional<Opcode> opcode;
    if (mnemonic.kind == TokenKind::kWord) {
      if ((opcode = Mnemonic(mnemonic.text, false))) {
        op.form = Form::kSync;
      } else if ((opcode = Mnemonic(mnemonic.text, true))) {
        op.form = Form::kSsa;
      }
    }
    if (!opcode) {
      std::vector<std::string> known = Mnemonics("");
      for (const std::string& m : Mnemonics("pto.")) known.push_back(m);
      return Error(mnemonic, absl::StrCat("expected an instruction after '=' (",
                                          OrList(known), ")"));
    }
    op.opcode = *opcode;
    const bool two = Op(op.opcode).sources == 2;
    Next();
    const std::string name = Spelled(op.opcode, op.form);
    PTO_ASSIGN_OR_RETURN(op.src0, ParseOperand(absl::StrCat(
                                      "as the first operand of '", name, "'")));
    const ValueRef* last = &op.src0;
    if (two) {
      PTO_RETURN_IF_ERROR(
          Expect(",", absl::StrCat("after operand %", op.src0.name)));
      PTO_ASSIGN_OR_RETURN(
          op.src1,
          ParseOperand(absl::StrCat("as the second operand of '", name, "'")));
      last = &op.src1;
    }
    PTO_RETURN_IF_ERROR(
        Expect(":", absl::StrCat("and the types after operand %", last->name)));
    if (op.form == Form::kSync) {
      PTO_ASSIGN_OR_RETURN(TileBufType type, ParseType());
      op.src0.type = op.dst.type = type;
      if (two) op.src1.type = type;
    } else {
      PTO_RETURN_IF_ERROR(Expect(
          "(", two ? "to start the operand types of the SSA form `(T, T) -> T`"
                   : "to start the operand type of the SSA form `(T) -> T`"));
      PTO_ASSIGN_OR_RETURN(op.src0.type, ParseType());
      if (two) {
        PTO_RETURN_IF_ERROR(
            Expect(",", absl::StrCat("after the type of %", op.src0.name)));
        PTO_ASSIGN_OR_RETURN(op.src1.type, ParseType());
      }
      PTO_RETURN_IF_ERROR(Expect(
          ")", two ? "after the two operand types" : "after the operand type"));
      PTO_RETURN_IF_ERROR(
          Expect("->", "and the result type after the operand types"));
      PTO_ASSIGN_OR_RETURN(op.dst.type, ParseType());
    }
    statement->node = std::move(op);
    return absl::OkStatus();
  }

  // pto.tand ins(%src0, %src1[, %tmp] : T, T[, T]) outs(%dst : T)
  absl::Status ParseDps(Opcode opcode, Statement* statement) {
    Operation op;
    op.opcode = opcode;
    op.form = Form::kDps;
    const std::string name = std::string(Next().text);
    const OpInfo& info = Op(opcode);
    const size_t min_inputs = static_cast<size_t>(info.sources);
    const size_t max_inputs = min_inputs + (info.accepts_tmp ? 1 : 0);
    const std::string sources = info.sources == 2 ? "src0, src1" : "src0";
    const std::string count = max_inputs > min_inputs
                                  ? absl::StrCat(min_inputs, " or ", max_inputs)
                                  : absl::StrCat(min_inputs);
    const std::string arity =
        absl::StrCat("'", name, "' takes ", count,
                     max_inputs == 1 ? " input (" : " inputs (", sources,
                     info.accepts_tmp ? "[, tmp])" : ")");

    if (!PeekWord("ins")) {
      return Error(Peek(), absl::StrCat("expected 'ins(' after '", name, "'"));
    }
    Next();
    PTO_RETURN_IF_ERROR(Expect("(", "after 'ins'"));
    std::vector<ValueRef> inputs;
    PTO_ASSIGN_OR_RETURN(
        ValueRef first,
        ParseOperand(absl::StrCat("as the first input of '", name, "'")));
    inputs.push_back(std::move(first));
    while (!PeekPunct(":")) {
      if (!PeekPunct(",")) {
        return Error(Peek(), absl::StrCat("expected ',' or ':' after operand %",
                                          inputs.back().name));
      }
      Next();
      PTO_ASSIGN_OR_RETURN(ValueRef input, ParseOperand("after ','"));
      if (inputs.size() == max_inputs) {
        return ErrorAbout(
            Token{TokenKind::kTileName, input.name, input.pos},
            absl::StrCat(arity, "; %", input.name, " is one too many"));
      }
      inputs.push_back(std::move(input));
    }
    if (inputs.size() < min_inputs) {
      return ErrorAbout(Peek(), absl::StrCat(arity, ", found ", inputs.size()));
    }
    Next();  // ':'
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (i > 0) {
        PTO_RETURN_IF_ERROR(
            Expect(",", absl::StrCat("and a type for each of the ",
                                     inputs.size(), " inputs")));
      }
      PTO_ASSIGN_OR_RETURN(inputs[i].type, ParseType());
    }
    PTO_RETURN_IF_ERROR(Expect(")", absl::StrCat("after the types of the ",
                                                 inputs.size(), " inputs")));
    if (!PeekWord("outs")) {
      return Error(Peek(), "expected 'outs(' after 'ins(...)'");
    }
    Next();
    PTO_RETURN_IF_ERROR(Expect("(", "after 'outs'"));
    PTO_ASSIGN_OR_RETURN(op.dst, ParseOperand("as the output"));
    PTO_RETURN_IF_ERROR(
        Expect(":", absl::StrCat("and the type after operand %", op.dst.name)));
    PTO_ASSIGN_OR_RETURN(op.dst.type, ParseType());
    PTO_RETURN_IF_ERROR(Expect(")", "after the output type"));

    op.src0 = std::move(inputs[0]);
    if (min_inputs == 2) op.src1 = std::move(inputs[1]);
    if (inputs.size() > min_inputs) op.tmp = std::move(inputs[min_inputs]);
    statement->node = std::move(op);
    return absl::OkStatus();
  }

  // pto.tassign %tile, @tile(ADDRESS)
  absl::Status ParseBinding(Statement* statement) {
    Next();
    Binding binding;
    PTO_ASSIGN_OR_RETURN(ValueRef tile, ParseOperand("after 'pto.tassign'"));
    binding.tile = std::move(tile.name);
    binding.tile_pos = tile.pos;
    PTO_RETURN_IF_ERROR(Expect(",", absl::StrCat("after %", binding.tile)));
    if (Peek().kind != TokenKind::kSymbol || Peek().text != "tile") {
      return Error(Peek(), "expected '@tile(ADDRESS)'");
    }
    Next();
    PTO_RETURN_IF_ERROR(Expect("(", "after '@tile'"));
    PTO_ASSIGN_OR_RETURN(binding.address,
                         ParseNumber("an address", "address",
                                     std::numeric_limits<uint64_t>::max()));
    PTO_RETURN_IF_ERROR(Expect(")", "after the address"));
    statement->node = std::move(binding);
    return absl::OkStatus();
  }

  // A decimal or 0x-hexadecimal number of at most `max`.
  absl::StatusOr<uint64_t> ParseNumber(absl::string_view what,
                                       absl::string_view name, uint64_t max) {
    if (Peek().kind != TokenKind::kNumber) {
      return Error(Peek(), absl::StrCat("expected ", what));
    }
    const Token& token = Next();
    absl::string_view digits = token.text;
    const bool hex =
        digits.size() > 2 && (digits[1] == 'x' || digits[1] == 'X');
    if (hex) digits.remove_prefix(2);
    const uint64_t base = hex ? 16 : 10;
    uint64_t value = 0;
    for (char c : digits) {
      const uint64_t digit =
          absl::ascii_isdigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10;
      if (value > (max - digit) / base) {
        return ErrorAbout(token,
                          absl::StrCat(name, " ", token.text,
                                       " is too large (at most ", max, ")"));
      }
      value = value * base + digit;
    }
    return value;
  }

  absl::StatusOr<uint32_t> ParseSize(absl::string_view key) {
    PTO_ASSIGN_OR_RETURN(
        uint64_t value, ParseNumber(absl::StrCat("a number after '", key, "='"),
                                    key, std::numeric_limits<uint32_t>::max()));
    return static_cast<uint32_t>(value);
  }

  absl::StatusOr<ValidExtent> ParseValidExtent(absl::string_view key) {
    if (PeekPunct("?")) {
      Next();
      return ValidExtent{};
    }
    PTO_ASSIGN_OR_RETURN(
        uint64_t value,
        ParseNumber(absl::StrCat("a number or '?' after '", key, "='"), key,
                    std::numeric_limits<uint32_t>::max()));
    return ValidExtent{static_cast<uint32_t>(value)};
  }

  // A word among `choices` (parallel to `values`), else an error listing
  // them.
  template <typename T, size_t N>
  absl::StatusOr<T> ParseChoice(absl::string_view key,
                                const absl::string_view (&choices)[N],
                                const T (&values)[N]) {
    if (Peek().kind == TokenKind::kWord) {
      for (size_t i = 0; i < N; ++i) {
        if (Peek().text == choices[i]) {
          Next();
          return values[i];
        }
      }
    }
    std::string listed;
    for (size_t i = 0; i < N; ++i) {
      absl::StrAppend(&listed,
                      i == 0       ? ""
                      : i + 1 == N ? " or "
                                   : ", ",
                      choices[i]);
    }
    return Error(Peek(),
                 absl::StrCat("expected ", listed, " after '", key, "='"));
  }

  absl::StatusOr<ElementType> ParseDType() {
    if (Peek().kind == TokenKind::kWord) {
      if (std::optional<ElementType> type = ParseElementType(Peek().text)) {
        Next();
        return *type;
      }
      return ErrorAbout(Peek(),
                        absl::StrCat("unknown element type '", Peek().text,
                                     "'; expected ", kElementTypeList));
    }
    return Error(Peek(), "expected an element type after 'dtype='");
  }

  template <typename T>
  static absl::Status SetOnce(const Token& key, std::optional<T>* field,
                              T value) {
    if (field->has_value()) {
      return ErrorAbout(key,
                        absl::StrCat("key '", key.text, "' is given twice"));
    }
    *field = std::move(value);
    return absl::OkStatus();
  }

  // One `key=value` of a spelled-out type.
  absl::Status ParseKeyValue(TileBufType* type) {
    if (Peek().kind != TokenKind::kWord) {
      return Error(Peek(), absl::StrCat("expected a key (", kKeyList, ")"));
    }
    const Token& key = Next();
    const absl::string_view k = key.text;
    static constexpr absl::string_view kKeys[] = {
        "loc",   "dtype",   "rows",    "cols",    "v_row",
        "v_col", "blayout", "slayout", "fractal", "pad"};
    if (std::find(std::begin(kKeys), std::end(kKeys), k) == std::end(kKeys)) {
      return ErrorAbout(
          key, absl::StrCat("unknown key '", k, "' in the tile type; expected ",
                            kKeyList));
    }
    PTO_RETURN_IF_ERROR(Expect("=", absl::StrCat("after '", k, "'")));
    static constexpr absl::string_view kLocationNames[] = {
        "vec", "mat", "left", "right", "acc", "bias", "scaling"};
    static constexpr absl::string_view kLayoutNames[] = {"row_major",
                                                         "col_major"};
    static constexpr Layout kLayouts[] = {Layout::kRowMajor, Layout::kColMajor};
    static constexpr absl::string_view kBoxNames[] = {"none_box", "row_major",
                                                      "col_major"};
    static constexpr BoxLayout kBoxes[] = {
        BoxLayout::kNoneBox, BoxLayout::kRowMajor, BoxLayout::kColMajor};
    if (k == "loc") {
      PTO_ASSIGN_OR_RETURN(Location v,
                           ParseChoice(k, kLocationNames, kLocations));
      return SetOnce(key, &type->loc, v);
    }
    if (k == "dtype") {
      PTO_ASSIGN_OR_RETURN(ElementType v, ParseDType());
      return SetOnce(key, &type->dtype, v);
    }
    if (k == "blayout") {
      PTO_ASSIGN_OR_RETURN(Layout v, ParseChoice(k, kLayoutNames, kLayouts));
      return SetOnce(key, &type->blayout, v);
    }
    if (k == "slayout") {
      PTO_ASSIGN_OR_RETURN(BoxLayout v, ParseChoice(k, kBoxNames, kBoxes));
      return SetOnce(key, &type->slayout, v);
    }
    if (k == "v_row" || k == "v_col") {
      PTO_ASSIGN_OR_RETURN(ValidExtent v, ParseValidExtent(k));
      return SetOnce(key, k == "v_row" ? &type->v_row : &type->v_col, v);
    }
    std::optional<uint32_t>* field = k == "rows"      ? &type->rows
                                     : k == "cols"    ? &type->cols
                                     : k == "fractal" ? &type->fractal
                                                      : &type->pad;
    PTO_ASSIGN_OR_RETURN(uint32_t v, ParseSize(k));
    return SetOnce(key, field, v);
  }

  // !pto.tile<...>, !pto.tile_buf<key=value, ...>
  absl::StatusOr<TileBufType> ParseType() {
    const Token& start = Peek();
    if (start.kind != TokenKind::kTypeName) {
      return Error(start,
                   "expected a tile type (`!pto.tile<...>` or "
                   "`!pto.tile_buf<...>`)");
    }
    TileBufType type;
    type.pos = start.pos;
    if (start.text == "pto.tile") {
      type.name = TypeName::kTile;
    } else if (start.text == "pto.tile_buf") {
      type.name = TypeName::kTileBuf;
    } else {
      return ErrorAbout(start, absl::StrCat("unknown type '!", start.text,
                                            "'; expected !pto.tile<...> or "
                                            "!pto.tile_buf<...>"));
    }
    Next();
    PTO_RETURN_IF_ERROR(Expect("<", absl::StrCat("after '!", start.text, "'")));
    if (PeekPunct("...")) {
      Next();
      PTO_RETURN_IF_ERROR(Expect(">", "after '...'"));
      return type;
    }
    if (Peek().kind != TokenKind::kWord) {
      return Error(Peek(), absl::StrCat("expected '...' or a key (", kKeyList,
                                        ") after '<'"));
    }
    type.elided = false;
    while (true) {
      const size_t key_at = at_;
      PTO_RETURN_IF_ERROR(ParseKeyValue(&type));
      if (PeekPunct(">")) break;
      if (!PeekPunct(",")) {
        return Error(Peek(), absl::StrCat("expected ',' or '>' after '",
                                          tokens_[key_at].text, "=",
                                          tokens_[at_ - 1].text, "'"));
      }
      Next();
    }
    Next();  // '>'
    return type;
  }

  std::vector<Token> tokens_;
  size_t at_ = 0;
};

}  // namespace

absl::StatusOr<Program> Parse(absl::string_view text,
                              const ParseOptions& options) {
  if (text.size() > options.max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("assembly is %u bytes, over the limit of %u",
                        text.size(), options.max_bytes));
  }
  Program program;
  size_t counted = 0;
  uint32_t number = 0;
  for (size_t start = 0; start <= text.size();) {
    ++number;
    size_t end = text.find('\n', start);
    const bool last = end == absl::string_view::npos;
    if (last) end = text.size();
    // The line and its '\n', which the parser reads as the end of a statement.
    const absl::string_view line =
        text.substr(start, end - start + (last ? 0 : 1));
    start = end + 1;
    if (line.size() > options.max_line_bytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%u:1: line is %u bytes, over the limit of %u",
                          number, line.size(), options.max_line_bytes));
    }
    PTO_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(line, number));
    PTO_ASSIGN_OR_RETURN(Program one, Parser(std::move(tokens)).Run());
    for (Statement& statement : one.statements) {
      if (std::holds_alternative<Comment>(statement.node)) {
        if (!options.keep_comments) continue;
      } else if (++counted > options.max_statements) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "%u:1: assembly has more than %u statements (operations and "
            "bindings), the limit",
            number, options.max_statements));
      }
      if (!options.keep_comments) statement.trailing_comment.clear();
      program.statements.push_back(std::move(statement));
    }
    if (last) break;
  }
  return program;
}

const std::vector<std::string>& AcceptedForms() {
  static const auto* kForms = [] {
    auto* forms = new std::vector<std::string>;
    for (const OpInfo& op : kOps) {
      const bool two = op.sources == 2;
      const std::string srcs = SourceOperands(op);
      const char* in_types =
          two ? "!pto.tile<...>, !pto.tile<...>" : "!pto.tile<...>";
      const char* buf_types =
          two ? "!pto.tile_buf<...>, !pto.tile_buf<...>" : "!pto.tile_buf<...>";
      forms->push_back(
          absl::StrCat("%dst = ", op.mnemonic, " ", srcs, " : !pto.tile<...>"));
      forms->push_back(absl::StrCat("%dst = pto.", op.mnemonic, " ", srcs,
                                    " : (", in_types, ") -> !pto.tile<...>"));
      forms->push_back(absl::StrCat(
          "pto.", op.mnemonic, " ins(", srcs, op.accepts_tmp ? "[, %tmp]" : "",
          " : ", buf_types, op.accepts_tmp ? "[, !pto.tile_buf<...>]" : "",
          ") outs(%dst : !pto.tile_buf<...>)"));
    }
    forms->push_back("pto.tassign %tile, @tile(0x1000)");
    return forms;
  }();
  return *kForms;
}

}  // namespace pasm
}  // namespace ptoserve
