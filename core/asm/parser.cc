#include "core/asm/parser.h"

#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/asm/lexer.h"
#include "core/asm/token_reader.h"
#include "core/asm/type_parser.h"
#include "core/ops.h"
#include "core/status_macros.h"

namespace ptoserve {
namespace pasm {

namespace {

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
  explicit Parser(std::vector<Token> tokens) : in_(std::move(tokens)) {}

  absl::StatusOr<Program> Run() && {
    Program program;
    while (in_.Peek().kind != TokenKind::kEnd) {
      if (in_.Peek().kind == TokenKind::kNewline) {
        in_.Next();
        continue;
      }
      Statement statement;
      statement.pos = in_.Peek().pos;
      if (in_.Peek().kind == TokenKind::kComment) {
        statement.node = Comment{CommentText(in_.Next())};
      } else {
        PTO_RETURN_IF_ERROR(ParseStatement(&statement));
        if (in_.Peek().kind == TokenKind::kComment) {
          statement.trailing_comment = CommentText(in_.Next());
        }
        if (in_.Peek().kind != TokenKind::kNewline &&
            in_.Peek().kind != TokenKind::kEnd) {
          return Error(in_.Peek(), "expected end of line after the statement");
        }
      }
      program.statements.push_back(std::move(statement));
    }
    return program;
  }

 private:
  static std::string CommentText(const Token& token) {
    return std::string(absl::StripTrailingAsciiWhitespace(token.text));
  }

  absl::Status ParseStatement(Statement* statement) {
    const Token& first = in_.Peek();
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
    if (in_.Peek().kind != TokenKind::kTileName) {
      return Error(in_.Peek(),
                   absl::StrCat("expected a tile name (`%name`) ", role));
    }
    const Token& token = in_.Next();
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
    PTO_RETURN_IF_ERROR(in_.Expect("=", absl::StrCat("after %", op.dst.name)));
    const Token& mnemonic = in_.Peek();
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
    in_.Next();
    const std::string name = Spelled(op.opcode, op.form);
    PTO_ASSIGN_OR_RETURN(op.src0, ParseOperand(absl::StrCat(
                                      "as the first operand of '", name, "'")));
    const ValueRef* last = &op.src0;
    if (two) {
      PTO_RETURN_IF_ERROR(
          in_.Expect(",", absl::StrCat("after operand %", op.src0.name)));
      PTO_ASSIGN_OR_RETURN(
          op.src1,
          ParseOperand(absl::StrCat("as the second operand of '", name, "'")));
      last = &op.src1;
    }
    PTO_RETURN_IF_ERROR(in_.Expect(
        ":", absl::StrCat("and the types after operand %", last->name)));
    if (op.form == Form::kSync) {
      PTO_ASSIGN_OR_RETURN(TileBufType type, ParseType(&in_));
      op.src0.type = op.dst.type = type;
      if (two) op.src1.type = type;
    } else {
      PTO_RETURN_IF_ERROR(in_.Expect(
          "(", two ? "to start the operand types of the SSA form `(T, T) -> T`"
                   : "to start the operand type of the SSA form `(T) -> T`"));
      PTO_ASSIGN_OR_RETURN(op.src0.type, ParseType(&in_));
      if (two) {
        PTO_RETURN_IF_ERROR(
            in_.Expect(",", absl::StrCat("after the type of %", op.src0.name)));
        PTO_ASSIGN_OR_RETURN(op.src1.type, ParseType(&in_));
      }
      PTO_RETURN_IF_ERROR(in_.Expect(
          ")", two ? "after the two operand types" : "after the operand type"));
      PTO_RETURN_IF_ERROR(
          in_.Expect("->", "and the result type after the operand types"));
      PTO_ASSIGN_OR_RETURN(op.dst.type, ParseType(&in_));
    }
    statement->node = std::move(op);
    return absl::OkStatus();
  }

  // pto.tand ins(%src0, %src1[, %tmp] : T, T[, T]) outs(%dst : T)
  absl::Status ParseDps(Opcode opcode, Statement* statement) {
    Operation op;
    op.opcode = opcode;
    op.form = Form::kDps;
    const std::string name = std::string(in_.Next().text);
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

    if (!in_.PeekWord("ins")) {
      return Error(in_.Peek(),
                   absl::StrCat("expected 'ins(' after '", name, "'"));
    }
    in_.Next();
    PTO_RETURN_IF_ERROR(in_.Expect("(", "after 'ins'"));
    std::vector<ValueRef> inputs;
    PTO_ASSIGN_OR_RETURN(
        ValueRef first,
        ParseOperand(absl::StrCat("as the first input of '", name, "'")));
    inputs.push_back(std::move(first));
    while (!in_.PeekPunct(":")) {
      if (!in_.PeekPunct(",")) {
        return Error(in_.Peek(),
                     absl::StrCat("expected ',' or ':' after operand %",
                                  inputs.back().name));
      }
      in_.Next();
      PTO_ASSIGN_OR_RETURN(ValueRef input, ParseOperand("after ','"));
      if (inputs.size() == max_inputs) {
        return ErrorAbout(
            Token{TokenKind::kTileName, input.name, input.pos},
            absl::StrCat(arity, "; %", input.name, " is one too many"));
      }
      inputs.push_back(std::move(input));
    }
    if (inputs.size() < min_inputs) {
      return ErrorAbout(in_.Peek(),
                        absl::StrCat(arity, ", found ", inputs.size()));
    }
    in_.Next();  // ':'
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (i > 0) {
        PTO_RETURN_IF_ERROR(
            in_.Expect(",", absl::StrCat("and a type for each of the ",
                                         inputs.size(), " inputs")));
      }
      PTO_ASSIGN_OR_RETURN(inputs[i].type, ParseType(&in_));
    }
    PTO_RETURN_IF_ERROR(in_.Expect(
        ")",
        absl::StrCat("after the types of the ", inputs.size(), " inputs")));
    if (!in_.PeekWord("outs")) {
      return Error(in_.Peek(), "expected 'outs(' after 'ins(...)'");
    }
    in_.Next();
    PTO_RETURN_IF_ERROR(in_.Expect("(", "after 'outs'"));
    PTO_ASSIGN_OR_RETURN(op.dst, ParseOperand("as the output"));
    PTO_RETURN_IF_ERROR(in_.Expect(
        ":", absl::StrCat("and the type after operand %", op.dst.name)));
    PTO_ASSIGN_OR_RETURN(op.dst.type, ParseType(&in_));
    PTO_RETURN_IF_ERROR(in_.Expect(")", "after the output type"));

    op.src0 = std::move(inputs[0]);
    if (min_inputs == 2) op.src1 = std::move(inputs[1]);
    if (inputs.size() > min_inputs) op.tmp = std::move(inputs[min_inputs]);
    statement->node = std::move(op);
    return absl::OkStatus();
  }

  // pto.tassign %tile, @tile(ADDRESS)
  absl::Status ParseBinding(Statement* statement) {
    in_.Next();
    Binding binding;
    PTO_ASSIGN_OR_RETURN(ValueRef tile, ParseOperand("after 'pto.tassign'"));
    binding.tile = std::move(tile.name);
    binding.tile_pos = tile.pos;
    PTO_RETURN_IF_ERROR(in_.Expect(",", absl::StrCat("after %", binding.tile)));
    if (in_.Peek().kind != TokenKind::kSymbol || in_.Peek().text != "tile") {
      return Error(in_.Peek(), "expected '@tile(ADDRESS)'");
    }
    in_.Next();
    PTO_RETURN_IF_ERROR(in_.Expect("(", "after '@tile'"));
    PTO_ASSIGN_OR_RETURN(binding.address,
                         in_.ParseNumber("an address", "address",
                                         std::numeric_limits<uint64_t>::max()));
    PTO_RETURN_IF_ERROR(in_.Expect(")", "after the address"));
    statement->node = std::move(binding);
    return absl::OkStatus();
  }

  TokenReader in_;
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
