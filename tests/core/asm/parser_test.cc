// The assembler's syntax: every form the seeds show, spelled-out types,
// comments, errors with their line:column, and printing back.
#include "core/asm/parser.h"

#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/asm/printer.h"
#include "core/ops.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/asm/seed_programs.h"
#include "tests/core/test_util.h"

namespace ptoserve {
namespace pasm {

// Failures show programs as text.
void PrintTo(const Program& program, std::ostream* os) {
  *os << "\n" << Print(program);
}

namespace {

using test::kSeedPrograms;
using test::SeedProgram;
using test::StatusIs;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

const Operation& OnlyOperation(const Program& program) {
  static const Operation kNone;
  for (const Statement& s : program.statements) {
    if (const auto* op = std::get_if<Operation>(&s.node)) return *op;
  }
  ADD_FAILURE() << "no operation in the program";
  return kNone;
}

TEST(ParserTest, EverySeedProgramParses) {
  for (const SeedProgram& seed : kSeedPrograms) {
    SCOPED_TRACE(seed.name);
    ASSERT_OK_AND_ASSIGN(Program program, Parse(seed.text));
    const Operation& op = OnlyOperation(program);
    EXPECT_EQ(op.opcode, seed.opcode);
    EXPECT_EQ(op.dst.name, "dst");
    EXPECT_EQ(op.src0.name, "src0");
    EXPECT_EQ(op.src1.name, "src1");
    EXPECT_FALSE(op.tmp.has_value());
    for (const ValueRef* operand : {&op.dst, &op.src0, &op.src1}) {
      EXPECT_TRUE(operand->type.elided) << operand->name;
    }
  }
}

// Each line of each seed program is a program too.
TEST(ParserTest, EverySeedLineParsesAlone) {
  for (const SeedProgram& seed : kSeedPrograms) {
    for (absl::string_view line : absl::StrSplit(seed.text, '\n')) {
      EXPECT_TRUE(Parse(line).ok()) << seed.name << ": " << line;
    }
  }
}

TEST(ParserTest, FormsAndPositions) {
  ASSERT_OK_AND_ASSIGN(
      Program program,
      Parse("# three forms\n"
            "%a = txor %b, %c : !pto.tile<...>\n"
            "\n"
            "  %d = pto.tand %a, %c : (!pto.tile<...>, !pto.tile_buf<...>) -> "
            "!pto.tile<...>\n"
            "pto.txor ins(%d, %a, %t : !pto.tile_buf<...>, !pto.tile_buf<...>, "
            "!pto.tile_buf<...>) outs(%e : !pto.tile_buf<...>)  // trailing\n"
            "pto.tassign %e, @tile(4096)\n"));
  ASSERT_EQ(program.statements.size(), 5u);
  EXPECT_EQ(std::get<Comment>(program.statements[0].node).text,
            "# three forms");

  const auto& sync = std::get<Operation>(program.statements[1].node);
  EXPECT_EQ(sync.form, Form::kSync);
  EXPECT_EQ(sync.opcode, Opcode::kTxor);
  EXPECT_EQ(ToString(program.statements[1].pos), "2:1");
  EXPECT_EQ(ToString(sync.src1.pos), "2:15");
  EXPECT_EQ(ToString(sync.dst.type.pos), "2:20");

  const auto& ssa = std::get<Operation>(program.statements[2].node);
  EXPECT_EQ(ssa.form, Form::kSsa);
  EXPECT_EQ(ToString(program.statements[2].pos), "4:3");
  EXPECT_EQ(ssa.src1.type.name, TypeName::kTileBuf);
  EXPECT_EQ(ssa.dst.type.name, TypeName::kTile);

  const auto& dps = std::get<Operation>(program.statements[3].node);
  EXPECT_EQ(dps.form, Form::kDps);
  ASSERT_TRUE(dps.tmp.has_value());
  EXPECT_EQ(dps.tmp->name, "t");
  EXPECT_EQ(dps.dst.name, "e");
  EXPECT_EQ(program.statements[3].trailing_comment, "// trailing");

  const auto& binding = std::get<Binding>(program.statements[4].node);
  EXPECT_EQ(binding.tile, "e");
  EXPECT_EQ(binding.address, 0x1000u);
  EXPECT_EQ(ToString(binding.tile_pos), "6:13");
}

TEST(ParserTest, SpelledOutTypes) {
  ASSERT_OK_AND_ASSIGN(Program program,
                       Parse("%d = tand %a, %b : !pto.tile_buf<pad=0, "
                             "fractal=512, slayout=none_box, "
                             "blayout=row_major, v_col=?, v_row=16, cols=0x10, "
                             "rows=16, dtype=i16, "
                             "loc=vec>"));
  const TileBufType& t = OnlyOperation(program).src0.type;
  EXPECT_FALSE(t.elided);
  EXPECT_EQ(t.name, TypeName::kTileBuf);
  EXPECT_EQ(t.loc, Location::kVec);
  EXPECT_EQ(t.dtype, ElementType::kI16);
  EXPECT_EQ(t.rows, 16u);
  EXPECT_EQ(t.cols, 16u);
  ASSERT_TRUE(t.v_row.has_value());
  EXPECT_EQ(t.v_row->value, 16u);
  ASSERT_TRUE(t.v_col.has_value());
  EXPECT_FALSE(t.v_col->value.has_value());  // '?'
  EXPECT_EQ(t.blayout, Layout::kRowMajor);
  EXPECT_EQ(t.slayout, BoxLayout::kNoneBox);
  EXPECT_EQ(t.fractal, 512u);
  EXPECT_EQ(t.pad, 0u);

  ASSERT_OK_AND_ASSIGN(program, Parse("%d = tand %a, %b : !pto.tile<cols=8>"));
  const TileBufType& partial = OnlyOperation(program).src1.type;
  EXPECT_EQ(partial.cols, 8u);
  EXPECT_FALSE(partial.rows.has_value());
  EXPECT_FALSE(partial.dtype.has_value());
}

TEST(ParserTest, ElementTypeSpellings) {
  const std::vector<std::pair<std::string, ElementType>> cases = {
      {"i8", ElementType::kI8},       {"i16", ElementType::kI16},
      {"i32", ElementType::kI32},     {"si8", ElementType::kSI8},
      {"si16", ElementType::kSI16},   {"si32", ElementType::kSI32},
      {"ui8", ElementType::kUI8},     {"ui16", ElementType::kUI16},
      {"ui32", ElementType::kUI32},   {"int8", ElementType::kSI8},
      {"int16", ElementType::kSI16},  {"int32", ElementType::kSI32},
      {"uint8", ElementType::kUI8},   {"uint16", ElementType::kUI16},
      {"uint32", ElementType::kUI32}, {"f16", ElementType::kF16},
      {"bf16", ElementType::kBF16},   {"f32", ElementType::kF32},
      {"float16", ElementType::kF16}, {"bfloat16", ElementType::kBF16},
      {"float32", ElementType::kF32},
  };
  for (const auto& [spelling, type] : cases) {
    ASSERT_OK_AND_ASSIGN(
        Program program,
        Parse("%d = tand %a, %b : !pto.tile<dtype=" + spelling + ">"));
    EXPECT_EQ(OnlyOperation(program).dst.type.dtype, type) << spelling;
  }
  EXPECT_TRUE(Describes(ElementType::kI16, DType::kInt16));
  EXPECT_TRUE(Describes(ElementType::kI16, DType::kUInt16));
  EXPECT_FALSE(Describes(ElementType::kI16, DType::kInt32));
  EXPECT_FALSE(Describes(ElementType::kI16, DType::kFloat16));
  EXPECT_FALSE(Describes(ElementType::kSI16, DType::kUInt16));
  EXPECT_TRUE(Describes(ElementType::kUI8, DType::kUInt8));
  EXPECT_EQ(ToDType(ElementType::kI16, DType::kUInt16), DType::kUInt16);
  EXPECT_EQ(ToDType(ElementType::kI16, DType::kInt32), DType::kInt16);
  EXPECT_EQ(ToDType(ElementType::kUI32, DType::kInt32), DType::kUInt32);
}

TEST(ParserTest, CommentsBlankLinesAndLineEnds) {
  ASSERT_OK_AND_ASSIGN(Program program,
                       Parse("\r\n"
                             "   # hash comment   \r\n"
                             "// slash comment\n"
                             "\t%d = tand %a, %b : !pto.tile<...> # why\r\n"
                             "\n\n"));
  ASSERT_EQ(program.statements.size(), 3u);
  EXPECT_EQ(std::get<Comment>(program.statements[0].node).text,
            "# hash comment");
  EXPECT_EQ(std::get<Comment>(program.statements[1].node).text,
            "// slash comment");
  EXPECT_EQ(program.statements[2].trailing_comment, "# why");
  EXPECT_EQ(ToString(program.statements[2].pos), "4:2");

  ASSERT_OK_AND_ASSIGN(Program empty, Parse(""));
  EXPECT_TRUE(empty.statements.empty());
}

TEST(ParserTest, Addresses) {
  ASSERT_OK_AND_ASSIGN(Program program,
                       Parse("pto.tassign %a, @tile(0x1000)\n"
                             "pto.tassign %b, @tile(8192)\n"
                             "pto.tassign %c, @tile(0XfFfFfFfFfFfFfFfF)\n"));
  EXPECT_EQ(std::get<Binding>(program.statements[0].node).address, 0x1000u);
  EXPECT_EQ(std::get<Binding>(program.statements[1].node).address, 8192u);
  EXPECT_EQ(std::get<Binding>(program.statements[2].node).address,
            0xFFFFFFFFFFFFFFFFu);
}

struct ErrorCase {
  const char* text;
  const char* message;  // the whole status message
};

TEST(ParserTest, ErrorsSayWhereWhatAndWhatWasExpected) {
  const ErrorCase cases[] = {
      {"%dst = pto.txor %src0 %src1 : (!pto.tile<...>, !pto.tile<...>) -> "
       "!pto.tile<...>",
       "1:23: expected ',' after operand %src0, found '%src1'"},
      {"\n\npto.txor ins(%src0 %src1 : !pto.tile_buf<...>, !pto.tile_buf<...>) "
       "outs(%dst : !pto.tile_buf<...>)",
       "3:20: expected ',' or ':' after operand %src0, found '%src1'"},
      {"%dst = tshl %a, %b : !pto.tile<...>",
       "1:8: expected an instruction after '=' (tand, txor, tor, tnot, "
       "pto.tand, pto.txor, pto.tor or pto.tnot), found 'tshl'"},
      {"pto.tshl ins(%a, %b : !pto.tile<...>, !pto.tile<...>) outs(%c : "
       "!pto.tile<...>)",
       "1:1: unknown instruction 'pto.tshl'; expected pto.tand, pto.txor, "
       "pto.tor, pto.tnot or pto.tassign"},
      {"tand %a, %b : !pto.tile<...>",
       "1:1: 'tand' needs a result in the synchronous form: `%dst = tand "
       "%src0, %src1 : !pto.tile<...>`"},
      {"dst = tand %a, %b : !pto.tile<...>",
       "1:1: expected a statement (`%dst = ...`, `pto.tand ins(...)`, "
       "`pto.txor ins(...)`, `pto.tor ins(...)`, `pto.tnot ins(...)` or "
       "`pto.tassign`), found 'dst'"},
      {"%d tand %a, %b : !pto.tile<...>",
       "1:4: expected '=' after %d, found 'tand'"},
      {"%d = tand a, %b : !pto.tile<...>",
       "1:11: expected a tile name (`%name`) as the first operand of 'tand', "
       "found 'a'"},
      {"%d = tand %a, %b !pto.tile<...>",
       "1:18: expected ':' and the types after operand %b, found '!pto.tile'"},
      {"%d = tand %a, %b : pto.tile<...>",
       "1:20: expected a tile type (`!pto.tile<...>` or `!pto.tile_buf<...>`), "
       "found 'pto.tile'"},
      {"%d = tand %a, %b : !pto.tensor<...>",
       "1:20: unknown type '!pto.tensor'; expected !pto.tile<...> or "
       "!pto.tile_buf<...>"},
      {"%d = tand %a, %b : !pto.tile<..>", "1:30: unexpected character '.'"},
      {"%d = tand %a, %b : !pto.tile<...",
       "1:33: expected '>' after '...', found end of input"},
      {"%d = tand %a, %b : !pto.tile<>",
       "1:30: expected '...' or a key (loc, dtype, rows, cols, v_row, v_col, "
       "blayout, slayout, fractal or pad) after '<', found '>'"},
      {"%d = tand %a, %b : !pto.tile<row=16>",
       "1:30: unknown key 'row' in the tile type; expected loc, dtype, rows, "
       "cols, v_row, v_col, blayout, slayout, fractal or pad"},
      {"%d = tand %a, %b : !pto.tile<rows=16, rows=16>",
       "1:39: key 'rows' is given twice"},
      {"%d = tand %a, %b : !pto.tile<rows 16>",
       "1:35: expected '=' after 'rows', found '16'"},
      {"%d = tand %a, %b : !pto.tile<rows=16 cols=16>",
       "1:38: expected ',' or '>' after 'rows=16', found 'cols'"},
      {"%d = tand %a, %b : !pto.tile<rows=?>",
       "1:35: expected a number after 'rows=', found '?'"},
      {"%d = tand %a, %b : !pto.tile<v_col=x>",
       "1:36: expected a number or '?' after 'v_col=', found 'x'"},
      {"%d = tand %a, %b : !pto.tile<rows=4294967296>",
       "1:35: rows 4294967296 is too large (at most 4294967295)"},
      {"%d = tand %a, %b : !pto.tile<rows=16x16>",
       "1:35: malformed number '16x16'"},
      {"%d = tand %a, %b : !pto.tile<dtype=i64>",
       "1:36: unknown element type 'i64'; expected i8, i16, i32, si8, si16, "
       "si32, ui8, ui16, ui32, int8, int16, int32, uint8, uint16, uint32, f16, "
       "bf16, f32, float16, bfloat16 or float32"},
      {"%d = tand %a, %b : !pto.tile<loc=ub>",
       "1:34: expected vec, mat, left, right, acc, bias or scaling after "
       "'loc=', found 'ub'"},
      {"%d = tand %a, %b : !pto.tile<blayout=nz>",
       "1:38: expected row_major or col_major after 'blayout=', found 'nz'"},
      {"%d = tand %a, %b : !pto.tile<slayout=zz>",
       "1:38: expected none_box, row_major or col_major after 'slayout=', "
       "found 'zz'"},
      {"%d = pto.tand %a, %b : !pto.tile<...>",
       "1:24: expected '(' to start the operand types of the SSA form "
       "`(T, T) -> T`, found '!pto.tile'"},
      {"%d = pto.tand %a, %b : (!pto.tile<...>, !pto.tile<...>) !pto.tile<...>",
       "1:57: expected '->' and the result type after the operand types, found "
       "'!pto.tile'"},
      {"%d = pto.tand %a, %b : (!pto.tile<...>) -> !pto.tile<...>",
       "1:39: expected ',' after the type of %a, found ')'"},
      {"pto.tand ins(%a, %b, %c : !pto.tile<...>, !pto.tile<...>) outs(%d : "
       "!pto.tile<...>)",
       "1:22: 'pto.tand' takes 2 inputs (src0, src1); %c is one too many"},
      {"pto.txor ins(%a, %b, %c, %e : !pto.tile<...>) outs(%d : "
       "!pto.tile<...>)",
       "1:26: 'pto.txor' takes 2 or 3 inputs (src0, src1[, tmp]); %e is one "
       "too "
       "many"},
      {"pto.txor ins(%a : !pto.tile<...>) outs(%d : !pto.tile<...>)",
       "1:17: 'pto.txor' takes 2 or 3 inputs (src0, src1[, tmp]), found 1"},
      {"pto.txor ins(%a, %b : !pto.tile<...>) outs(%d : !pto.tile<...>)",
       "1:37: expected ',' and a type for each of the 2 inputs, found ')'"},
      {"pto.txor ins(%a, %b : !pto.tile<...>, !pto.tile<...>, !pto.tile<...>) "
       "outs(%d : !pto.tile<...>)",
       "1:53: expected ')' after the types of the 2 inputs, found ','"},
      {"pto.txor (%a, %b : !pto.tile<...>, !pto.tile<...>) outs(%d : "
       "!pto.tile<...>)",
       "1:10: expected 'ins(' after 'pto.txor', found '('"},
      {"pto.txor ins(%a, %b : !pto.tile<...>, !pto.tile<...>) out(%d : "
       "!pto.tile<...>)",
       "1:55: expected 'outs(' after 'ins(...)', found 'out'"},
      {"pto.txor ins(%a, %b : !pto.tile<...>, !pto.tile<...>) outs(%d : "
       "!pto.tile<...>",
       "1:79: expected ')' after the output type, found end of input"},
      {"pto.tassign %a @tile(0x1000)",
       "1:16: expected ',' after %a, found '@tile'"},
      {"pto.tassign %a, @buf(0x1000)",
       "1:17: expected '@tile(ADDRESS)', found '@buf'"},
      {"pto.tassign %a, @tile(x)", "1:23: expected an address, found 'x'"},
      {"pto.tassign %a, @tile(0x)", "1:23: malformed number '0x'"},
      {"pto.tassign %a, @tile(0x10000000000000000)",
       "1:23: address 0x10000000000000000 is too large (at most "
       "18446744073709551615)"},
      {"pto.tassign a, @tile(0)",
       "1:13: expected a tile name (`%name`) after 'pto.tassign', found 'a'"},
      {"%d = tand %a, %b : !pto.tile<...> extra",
       "1:35: expected end of line after the statement, found 'extra'"},
      {"%d = tand %a, %b : !pto.tile<...> %d = tand %a, %b : !pto.tile<...>",
       "1:35: expected end of line after the statement, found '%d'"},
      {"%d = tand %a,\n%b : !pto.tile<...>",
       "1:14: expected a tile name (`%name`) as the second operand of 'tand', "
       "found end of line"},
      {"% = tand %a, %b : !pto.tile<...>",
       "1:1: expected a tile name after '%', found ' '"},
      {"%d = tand %a, %b : !",
       "1:20: expected a type name after '!', found end of input"},
      {"%d = tand %a, %b : !pto.tile<...>; ", "1:34: unexpected character ';'"},
      {"%d = tand %a, %b : !pto.tile<\xff>",
       "1:30: unexpected character '\\xff'"},
      {"%d = tand %a, %b : !pto.tile<...> / x",
       "1:35: unexpected character '/'"},
  };
  for (const ErrorCase& c : cases) {
    EXPECT_THAT(Parse(c.text).status(), StatusIs(kInvalid, c.message))
        << "program: " << c.text;
  }
}

TEST(ParserTest, PrintsCanonicalDpsForm) {
  ASSERT_OK_AND_ASSIGN(
      Program program,
      Parse(
          "# c\n"
          "%a = txor %b, %c : !pto.tile<dtype=int16, rows=16>  # sync\n"
          "%d = pto.tand %a, %c : (!pto.tile<...>, !pto.tile_buf<v_row=?>) -> "
          "!pto.tile<loc=vec>\n"
          "pto.txor ins(%d, %a, %t : !pto.tile_buf<...>, !pto.tile_buf<...>, "
          "!pto.tile_buf<pad=1, fractal=1024>) outs(%e : !pto.tile_buf<...>)\n"
          "pto.tassign %e, @tile(4096)\n"));
  EXPECT_EQ(
      Print(program),
      "# c\n"
      "pto.txor ins(%b, %c : !pto.tile<dtype=si16, rows=16>, "
      "!pto.tile<dtype=si16, rows=16>) outs(%a : !pto.tile<dtype=si16, "
      "rows=16>)  # sync\n"
      "pto.tand ins(%a, %c : !pto.tile<...>, !pto.tile_buf<v_row=?>) "
      "outs(%d : !pto.tile<loc=vec>)\n"
      "pto.txor ins(%d, %a, %t : !pto.tile_buf<...>, !pto.tile_buf<...>, "
      "!pto.tile_buf<fractal=1024, pad=1>) outs(%e : !pto.tile_buf<...>)\n"
      "pto.tassign %e, @tile(0x1000)\n");
}

TEST(ParserTest, PrintThenParseGivesTheSameProgram) {
  std::vector<std::string> texts;
  for (const SeedProgram& seed : kSeedPrograms) texts.push_back(seed.text);
  texts.push_back(
      "%d = tand %a, %b : !pto.tile_buf<loc=acc, dtype=bf16, rows=1, cols=2, "
      "v_row=?, v_col=3, blayout=col_major, slayout=row_major, fractal=0, "
      "pad=4294967295>  // all keys\n"
      "pto.tassign %d, @tile(0)\n");
  for (const std::string& text : texts) {
    ASSERT_OK_AND_ASSIGN(Program program, Parse(text));
    const std::string printed = Print(program);
    ASSERT_OK_AND_ASSIGN(Program reparsed, Parse(printed));
    EXPECT_EQ(reparsed, program) << text;
    EXPECT_EQ(Print(reparsed), printed);
  }
}

// Each advertised form parses once its optional parts are chosen.
TEST(ParserTest, AcceptedFormsParse) {
  // Three forms of each instruction, and the binding.
  ASSERT_EQ(AcceptedForms().size(), 3 * std::size(kOps) + 1);
  for (const std::string& form : AcceptedForms()) {
    const std::string without = absl::StrReplaceAll(
        form, {{"[, %tmp]", ""}, {"[, !pto.tile_buf<...>]", ""}});
    const std::string with = absl::StrReplaceAll(
        form, {{"[, %tmp]", ", %tmp"},
               {"[, !pto.tile_buf<...>]", ", !pto.tile_buf<...>"}});
    EXPECT_TRUE(Parse(without).ok()) << without;
    EXPECT_TRUE(Parse(with).ok()) << with;
  }
}

// What equality looks at: meaning, not positions or the form.
TEST(ParserTest, EqualityIgnoresPositionsAndForm) {
  ASSERT_OK_AND_ASSIGN(Program sync,
                       Parse("%d = tand %a, %b : !pto.tile<...>"));
  ASSERT_OK_AND_ASSIGN(
      Program dps,
      Parse("\n  pto.tand ins(%a, %b : !pto.tile<...>, !pto.tile<...>) "
            "outs(%d : !pto.tile<...>)"));
  EXPECT_EQ(sync, dps);
  ASSERT_OK_AND_ASSIGN(
      Program other_type,
      Parse("pto.tand ins(%a, %b : !pto.tile<...>, !pto.tile_buf<...>) "
            "outs(%d : !pto.tile<...>)"));
  EXPECT_NE(sync, other_type);
  ASSERT_OK_AND_ASSIGN(
      Program other_name,
      Parse("pto.tand ins(%a, %c : !pto.tile<...>, !pto.tile<...>) "
            "outs(%d : !pto.tile<...>)"));
  EXPECT_NE(sync, other_name);
}

}  // namespace
}  // namespace pasm
}  // namespace ptoserve
