#include "core/asm/printer.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/ops.h"

namespace ptoserve {
namespace pasm {

namespace {

std::string ExtentText(const ValidExtent& extent) {
  return extent.value ? absl::StrCat(*extent.value) : "?";
}

std::string OperationText(const Operation& op) {
  std::vector<const ValueRef*> inputs = Sources(op);
  if (op.tmp) inputs.push_back(&*op.tmp);
  std::vector<std::string> names, types;
  for (const ValueRef* in : inputs) {
    names.push_back(absl::StrCat("%", in->name));
    types.push_back(Print(in->type));
  }
  return absl::StrCat("pto.", Op(op.opcode).mnemonic, " ins(",
                      absl::StrJoin(names, ", "), " : ",
                      absl::StrJoin(types, ", "), ") outs(%", op.dst.name,
                      " : ", Print(op.dst.type), ")");
}

}  // namespace

std::string Print(const TileBufType& type) {
  const char* name =
      type.name == TypeName::kTile ? "!pto.tile" : "!pto.tile_buf";
  if (type.elided) return absl::StrCat(name, "<...>");
  std::vector<std::string> keys;
  if (type.loc) keys.push_back(absl::StrCat("loc=", LocationName(*type.loc)));
  if (type.dtype) {
    keys.push_back(absl::StrCat("dtype=", ElementTypeName(*type.dtype)));
  }
  if (type.rows) keys.push_back(absl::StrCat("rows=", *type.rows));
  if (type.cols) keys.push_back(absl::StrCat("cols=", *type.cols));
  if (type.v_row) {
    keys.push_back(absl::StrCat("v_row=", ExtentText(*type.v_row)));
  }
  if (type.v_col) {
    keys.push_back(absl::StrCat("v_col=", ExtentText(*type.v_col)));
  }
  if (type.blayout) {
    keys.push_back(absl::StrCat("blayout=", LayoutName(*type.blayout)));
  }
  if (type.slayout) {
    keys.push_back(absl::StrCat("slayout=", BoxLayoutName(*type.slayout)));
  }
  if (type.fractal) keys.push_back(absl::StrCat("fractal=", *type.fractal));
  if (type.pad) keys.push_back(absl::StrCat("pad=", *type.pad));
  return absl::StrCat(name, "<", absl::StrJoin(keys, ", "), ">");
}

std::string Print(const Statement& statement) {
  std::string text;
  if (const auto* op = std::get_if<Operation>(&statement.node)) {
    text = OperationText(*op);
  } else if (const auto* binding = std::get_if<Binding>(&statement.node)) {
    text = absl::StrFormat("pto.tassign %%%s, @tile(0x%x)", binding->tile,
                           binding->address);
  } else {
    text = std::get<Comment>(statement.node).text;
  }
  if (!statement.trailing_comment.empty()) {
    absl::StrAppend(&text, "  ", statement.trailing_comment);
  }
  return text;
}

std::string Print(const Program& program) {
  std::string text;
  for (const Statement& statement : program.statements) {
    absl::StrAppend(&text, Print(statement), "\n");
  }
  return text;
}

}  // namespace pasm
}  // namespace ptoserve
