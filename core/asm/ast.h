// The syntax tree of a PTO assembly program (docs/ASSEMBLY.md): what the
// text says, before it is bound to a request's tiles (lower.h).
//
// Equality (operator==) compares meaning, not spelling: it ignores source
// positions and which of the three instruction forms a statement was written
// in, so that a program printed in the canonical form (printer.h) and parsed
// again equals the original.
#ifndef PTOSERVE_CORE_ASM_AST_H_
#define PTOSERVE_CORE_ASM_AST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/types.h"

namespace ptoserve {
namespace pasm {

// 1-based line and column (in bytes) of a token in the program text.
struct SourcePos {
  uint32_t line = 0;
  uint32_t column = 0;
};
// "3:17"
std::string ToString(SourcePos pos);

// An element type as a tile type spells it. The plain integer types are
// signless (`i16` describes int16 and uint16 alike: the bound tile decides);
// `si16`/`ui16` and the wire names `int16`/`uint16` are signed/unsigned.
enum class ElementType : uint8_t {
  kI8,
  kI16,
  kI32,
  kSI8,
  kSI16,
  kSI32,
  kUI8,
  kUI16,
  kUI32,
  kF16,
  kBF16,
  kF32,
};
// The canonical spelling: "i16", "si16", "ui16", "f16", "bf16", "f32".
absl::string_view ElementTypeName(ElementType type);
// Accepts the canonical spellings and the wire names ("int16", "uint16",
// "float16", "bfloat16", "float32").
std::optional<ElementType> ParseElementType(absl::string_view text);
// Whether a tile of element type `dtype` has element type `type`.
bool Describes(ElementType type, DType dtype);
// The element type of a new tile of type `type`; a signless type takes its
// signedness from `like` when that has the same width, else it is signed.
DType ToDType(ElementType type, DType like);

// Which of the two type names the text used.
enum class TypeName : uint8_t { kTile, kTileBuf };  // !pto.tile, !pto.tile_buf

// The seeds' secondary (box) layout. Tiles here are never boxed.
enum class BoxLayout : uint8_t { kNoneBox, kRowMajor, kColMajor };
absl::string_view BoxLayoutName(BoxLayout layout);  // "none_box", ...

// A valid extent (`v_row`, `v_col`): a number, or `?`, which means dynamic:
// whatever the bound tile has.
struct ValidExtent {
  std::optional<uint32_t> value;  // nullopt: `?`
};

// A tile buffer's type: `!pto.tile<...>` (elided: everything comes from the
// bound tile) or key-value, e.g. `!pto.tile_buf<dtype=i16, rows=16,
// cols=16>`. Keys left out are unconstrained. `fractal` and `pad` are recorded
// and printed but never checked: they describe boxed layouts and padding, which
// TAND and TXOR do not use.
struct TileBufType {
  TypeName name = TypeName::kTile;
  bool elided = true;  // `<...>`; then every key below is unset
  std::optional<Location> loc;
  std::optional<ElementType> dtype;
  std::optional<uint32_t> rows;
  std::optional<uint32_t> cols;
  std::optional<ValidExtent> v_row;
  std::optional<ValidExtent> v_col;
  std::optional<Layout> blayout;
  std::optional<BoxLayout> slayout;
  std::optional<uint32_t> fractal;
  std::optional<uint32_t> pad;
  SourcePos pos;  // of the leading '!'
};

// A reference to an SSA value, `%name` (a tile), with the type the text
// gives it: each operand of an operation is one.
struct ValueRef {
  std::string name;  // without the '%'
  TileBufType type;
  SourcePos pos;  // of the '%'
};

// How an instruction was written. All three mean the same thing except that
// the two `%dst = ...` forms define %dst as a new tile.
enum class Form : uint8_t {
  kSync,  // %dst = txor %src0, %src1 : T
  kSsa,   // %dst = pto.txor %src0, %src1 : (T, T) -> T
  kDps,   // pto.txor ins(%src0, %src1[, %tmp] : T, T[, T]) outs(%dst : T)
};

// An instruction (core/ops.h). In the synchronous form the one type applies
// to every operand, so each operand carries its own copy.
struct Operation {
  Opcode opcode = Opcode::kTand;
  Form form = Form::kDps;
  ValueRef dst, src0;
  ValueRef src1;  // empty name for an instruction with one source (tnot)
  std::optional<ValueRef> tmp;  // only the DPS form can name one
};

// The sources `op` reads, in order: src0, and src1 unless it has one.
std::vector<const ValueRef*> Sources(const Operation& op);

// `pto.tassign %tile, @tile(ADDRESS)`: binds a tile to a unified-buffer
// address (manual mode).
struct Binding {
  std::string tile;  // without the '%'
  SourcePos tile_pos;
  uint64_t address = 0;
};

// A comment on a line of its own, with its marker (`#` or `//`).
struct Comment {
  std::string text;
};

struct Statement {
  std::variant<Operation, Binding, Comment> node;
  // A comment after an operation or binding on the same line; may be empty.
  std::string trailing_comment;
  SourcePos pos;  // of the statement's first token
};

struct Program {
  std::vector<Statement> statements;
};

// Equality of meaning (see the top of this file).
bool operator==(const ValidExtent& a, const ValidExtent& b);
bool operator==(const TileBufType& a, const TileBufType& b);
bool operator==(const ValueRef& a, const ValueRef& b);
bool operator==(const Operation& a, const Operation& b);
bool operator==(const Binding& a, const Binding& b);
bool operator==(const Comment& a, const Comment& b);
bool operator==(const Statement& a, const Statement& b);
bool operator==(const Program& a, const Program& b);
inline bool operator!=(const Program& a, const Program& b) { return !(a == b); }

}  // namespace pasm
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_ASM_AST_H_
