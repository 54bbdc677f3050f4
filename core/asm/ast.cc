#include "core/asm/ast.h"

#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/ops.h"

namespace ptoserve {
namespace pasm {

namespace {

struct ElementTypeInfo {
  ElementType type;
  absl::string_view name;       // canonical spelling
  absl::string_view wire_name;  // the wire's name; empty for signless types
  DType dtype;                  // for signless types: the signed one
  bool signless;
};

constexpr ElementTypeInfo kElementTypes[] = {
    {ElementType::kI8, "i8", "", DType::kInt8, true},
    {ElementType::kI16, "i16", "", DType::kInt16, true},
    {ElementType::kI32, "i32", "", DType::kInt32, true},
    {ElementType::kSI8, "si8", "int8", DType::kInt8, false},
    {ElementType::kSI16, "si16", "int16", DType::kInt16, false},
    {ElementType::kSI32, "si32", "int32", DType::kInt32, false},
    {ElementType::kUI8, "ui8", "uint8", DType::kUInt8, false},
    {ElementType::kUI16, "ui16", "uint16", DType::kUInt16, false},
    {ElementType::kUI32, "ui32", "uint32", DType::kUInt32, false},
    {ElementType::kF16, "f16", "float16", DType::kFloat16, false},
    {ElementType::kBF16, "bf16", "bfloat16", DType::kBFloat16, false},
    {ElementType::kF32, "f32", "float32", DType::kFloat32, false},
};

const ElementTypeInfo& Info(ElementType type) {
  return kElementTypes[static_cast<size_t>(type)];
}

// The keys of a spelled-out type, for comparing two of them at once.
auto Keys(const TileBufType& t) {
  return std::tie(t.name, t.elided, t.loc, t.dtype, t.rows, t.cols, t.v_row,
                  t.v_col, t.blayout, t.slayout, t.fractal, t.pad);
}

}  // namespace

std::string ToString(SourcePos pos) {
  return absl::StrCat(pos.line, ":", pos.column);
}

absl::string_view ElementTypeName(ElementType type) { return Info(type).name; }

std::optional<ElementType> ParseElementType(absl::string_view text) {
  for (const ElementTypeInfo& info : kElementTypes) {
    if (text == info.name ||
        (!info.wire_name.empty() && text == info.wire_name)) {
      return info.type;
    }
  }
  return std::nullopt;
}

bool Describes(ElementType type, DType dtype) {
  const ElementTypeInfo& info = Info(type);
  if (!info.signless) return dtype == info.dtype;
  return IsInteger(dtype) && ElementBytes(dtype) == ElementBytes(info.dtype);
}

DType ToDType(ElementType type, DType like) {
  return Describes(type, like) ? like : Info(type).dtype;
}

absl::string_view BoxLayoutName(BoxLayout layout) {
  switch (layout) {
    case BoxLayout::kNoneBox:
      return "none_box";
    case BoxLayout::kRowMajor:
      return "row_major";
    case BoxLayout::kColMajor:
      return "col_major";
  }
  return "?";
}

bool operator==(const ValidExtent& a, const ValidExtent& b) {
  return a.value == b.value;
}

bool operator==(const TileBufType& a, const TileBufType& b) {
  return Keys(a) == Keys(b);
}

bool operator==(const ValueRef& a, const ValueRef& b) {
  return a.name == b.name && a.type == b.type;
}

std::vector<const ValueRef*> Sources(const Operation& op) {
  if (Op(op.opcode).sources == 1) return {&op.src0};
  return {&op.src0, &op.src1};
}

bool operator==(const Operation& a, const Operation& b) {
  return a.opcode == b.opcode && a.dst == b.dst && a.src0 == b.src0 &&
         a.src1 == b.src1 && a.tmp == b.tmp;
}

bool operator==(const Binding& a, const Binding& b) {
  return a.tile == b.tile && a.address == b.address;
}

bool operator==(const Comment& a, const Comment& b) { return a.text == b.text; }

bool operator==(const Statement& a, const Statement& b) {
  return a.node == b.node && a.trailing_comment == b.trailing_comment;
}

bool operator==(const Program& a, const Program& b) {
  return a.statements == b.statements;
}

}  // namespace pasm
}  // namespace ptoserve
