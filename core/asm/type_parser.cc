#include "core/asm/type_parser.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/status_macros.h"
#include "core/types.h"

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

absl::StatusOr<uint32_t> ParseSize(TokenReader* in, absl::string_view key) {
  PTO_ASSIGN_OR_RETURN(
      uint64_t value,
      in->ParseNumber(absl::StrCat("a number after '", key, "='"), key,
                      std::numeric_limits<uint32_t>::max()));
  return static_cast<uint32_t>(value);
}

absl::StatusOr<ValidExtent> ParseValidExtent(TokenReader* in,
                                             absl::string_view key) {
  if (in->PeekPunct("?")) {
    in->Next();
    return ValidExtent{};
  }
  PTO_ASSIGN_OR_RETURN(
      uint64_t value,
      in->ParseNumber(absl::StrCat("a number or '?' after '", key, "='"), key,
                      std::numeric_limits<uint32_t>::max()));
  return ValidExtent{static_cast<uint32_t>(value)};
}

// A word among `choices` (parallel to `values`), else an error listing
// them.
template <typename T, size_t N>
absl::StatusOr<T> ParseChoice(TokenReader* in, absl::string_view key,
                              const absl::string_view (&choices)[N],
                              const T (&values)[N]) {
  if (in->Peek().kind == TokenKind::kWord) {
    for (size_t i = 0; i < N; ++i) {
      if (in->Peek().text == choices[i]) {
        in->Next();
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
  return Error(in->Peek(),
               absl::StrCat("expected ", listed, " after '", key, "='"));
}

absl::StatusOr<ElementType> ParseDType(TokenReader* in) {
  if (in->Peek().kind == TokenKind::kWord) {
    if (std::optional<ElementType> type = ParseElementType(in->Peek().text)) {
      in->Next();
      return *type;
    }
    return ErrorAbout(in->Peek(),
                      absl::StrCat("unknown element type '", in->Peek().text,
                                   "'; expected ", kElementTypeList));
  }
  return Error(in->Peek(), "expected an element type after 'dtype='");
}

template <typename T>
absl::Status SetOnce(const Token& key, std::optional<T>* field, T value) {
  if (field->has_value()) {
    return ErrorAbout(key, absl::StrCat("key '", key.text, "' is given twice"));
  }
  *field = std::move(value);
  return absl::OkStatus();
}

// One `key=value` of a spelled-out type.
absl::Status ParseKeyValue(TokenReader* in, TileBufType* type) {
  if (in->Peek().kind != TokenKind::kWord) {
    return Error(in->Peek(), absl::StrCat("expected a key (", kKeyList, ")"));
  }
  const Token& key = in->Next();
  const absl::string_view k = key.text;
  static constexpr absl::string_view kKeys[] = {
      "loc",   "dtype",   "rows",    "cols",    "v_row",
      "v_col", "blayout", "slayout", "fractal", "pad"};
  if (std::find(std::begin(kKeys), std::end(kKeys), k) == std::end(kKeys)) {
    return ErrorAbout(
        key, absl::StrCat("unknown key '", k, "' in the tile type; expected ",
                          kKeyList));
  }
  PTO_RETURN_IF_ERROR(in->Expect("=", absl::StrCat("after '", k, "'")));
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
                         ParseChoice(in, k, kLocationNames, kLocations));
    return SetOnce(key, &type->loc, v);
  }
  if (k == "dtype") {
    PTO_ASSIGN_OR_RETURN(ElementType v, ParseDType(in));
    return SetOnce(key, &type->dtype, v);
  }
  if (k == "blayout") {
    PTO_ASSIGN_OR_RETURN(Layout v, ParseChoice(in, k, kLayoutNames, kLayouts));
    return SetOnce(key, &type->blayout, v);
  }
  if (k == "slayout") {
    PTO_ASSIGN_OR_RETURN(BoxLayout v, ParseChoice(in, k, kBoxNames, kBoxes));
    return SetOnce(key, &type->slayout, v);
  }
  if (k == "v_row" || k == "v_col") {
    PTO_ASSIGN_OR_RETURN(ValidExtent v, ParseValidExtent(in, k));
    return SetOnce(key, k == "v_row" ? &type->v_row : &type->v_col, v);
  }
  std::optional<uint32_t>* field = k == "rows"      ? &type->rows
                                   : k == "cols"    ? &type->cols
                                   : k == "fractal" ? &type->fractal
                                                    : &type->pad;
  PTO_ASSIGN_OR_RETURN(uint32_t v, ParseSize(in, k));
  return SetOnce(key, field, v);
}

}  // namespace

absl::StatusOr<TileBufType> ParseType(TokenReader* in) {
  const Token& start = in->Peek();
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
  in->Next();
  PTO_RETURN_IF_ERROR(
      in->Expect("<", absl::StrCat("after '!", start.text, "'")));
  if (in->PeekPunct("...")) {
    in->Next();
    PTO_RETURN_IF_ERROR(in->Expect(">", "after '...'"));
    return type;
  }
  if (in->Peek().kind != TokenKind::kWord) {
    return Error(in->Peek(), absl::StrCat("expected '...' or a key (", kKeyList,
                                          ") after '<'"));
  }
  type.elided = false;
  while (true) {
    const Token& key = in->Peek();
    PTO_RETURN_IF_ERROR(ParseKeyValue(in, &type));
    if (in->PeekPunct(">")) break;
    if (!in->PeekPunct(",")) {
      return Error(in->Peek(),
                   absl::StrCat("expected ',' or '>' after '", key.text, "=",
                                in->Last().text, "'"));
    }
    in->Next();
  }
  in->Next();  // '>'
  return type;
}

}  // namespace pasm
}  // namespace ptoserve
