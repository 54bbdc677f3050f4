#include "client/ptoctl/tiles.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/client.h"
#include "client/read_input.h"
#include "core/status_macros.h"
#include "proto/wire.h"

namespace ptoserve {
namespace ptoctl {

namespace {

bool IsSigned(v1::DType dtype) {
  return dtype == v1::DTYPE_INT8 || dtype == v1::DTYPE_INT16 ||
         dtype == v1::DTYPE_INT32;
}

// One element value as typed: decimal ("-1", "255", "1.5" for float32) or
// hex, read as the element's bits ("0xffff" is -1 for int16). Range is the
// server's to check for decimal values; hex must fit the element.
absl::StatusOr<double> ParseValue(const std::string& flag,
                                  absl::string_view text, v1::DType dtype) {
  text = absl::StripAsciiWhitespace(text);
  if (absl::StartsWithIgnoreCase(text, "0x")) {
    uint64_t bits = 0;
    const int bytes = ElementBytes(dtype);
    if (!absl::SimpleHexAtoi(text.substr(2), &bits) || text.size() == 2 ||
        bits >> (8 * bytes) != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--%s: \"%s\" is not a hex value of at most %d bits",
                          flag, text, 8 * bytes));
    }
    if (IsSigned(dtype) && bits >> (8 * bytes - 1)) {
      return static_cast<double>(static_cast<int64_t>(bits) -
                                 (int64_t{1} << (8 * bytes)));
    }
    return static_cast<double>(bits);
  }
  int64_t integer = 0;
  if (absl::SimpleAtoi(text, &integer)) return static_cast<double>(integer);
  double real = 0;
  if (dtype == v1::DTYPE_FLOAT32 && absl::SimpleAtod(text, &real)) return real;
  return absl::InvalidArgumentError(
      absl::StrFormat("--%s: \"%s\" is not an integer", flag, text));
}

}  // namespace

absl::StatusOr<std::pair<uint32_t, uint32_t>> ParseShape(
    const std::string& flag, const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, 'x');
  uint32_t rows = 0, cols = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &rows) ||
      !absl::SimpleAtoi(parts[1], &cols)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, "=", text,
        " is not of the form ROWSxCOLS (each from 0 to 4294967295)"));
  }
  return std::make_pair(rows, cols);
}

absl::StatusOr<v1::DType> ParseDType(const std::string& name,
                                     absl::string_view where) {
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  if (!v1::DType_Parse("DTYPE_" + absl::AsciiStrToUpper(name), &dtype) ||
      dtype == v1::DTYPE_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, name,
        " is not an element type (int8, uint8, int16, uint16, int32, uint32)"));
  }
  return dtype;
}

absl::StatusOr<v1::Target> ParseTarget(const std::string& name) {
  if (name.empty()) return v1::TARGET_UNSPECIFIED;
  v1::Target target = v1::TARGET_UNSPECIFIED;
  if (!v1::Target_Parse("TARGET_" + absl::AsciiStrToUpper(name), &target) ||
      target == v1::TARGET_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat("--target=", name, " is not one of host, a2a3, a5"));
  }
  return target;
}

int ElementBytes(v1::DType dtype) {
  const size_t bytes = WireElementBytes(dtype);
  return bytes == 0 ? 4 : static_cast<int>(bytes);
}

absl::Status SetElements(const std::string& flag, const std::string& text,
                         v1::Tile* tile) {
  if (text.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " is required"));
  }
  if (text[0] == '@') {
    PTO_ASSIGN_OR_RETURN(std::string bytes, ReadInput(text.substr(1)));
    tile->set_data(std::move(bytes));
    return absl::OkStatus();
  }
  std::vector<double> values;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    PTO_ASSIGN_OR_RETURN(double v, ParseValue(flag, part, tile->dtype()));
    values.push_back(v);
  }
  if (values.size() == 1) {
    tile->set_fill(values[0]);
  } else {
    tile->mutable_values()->Add(values.begin(), values.end());
  }
  return absl::OkStatus();
}

absl::Status AddTileSpec(const std::string& spec, v1::Job* job) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tile ", spec,
        ": expected NAME=DTYPE:RxC[:valid=RxC][:VALUES or @FILE]"));
  }
  const std::string name = spec.substr(0, eq);
  std::vector<std::string> fields =
      absl::StrSplit(spec.substr(eq + 1), absl::MaxSplits(':', 3));
  if (fields.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tile ", spec, ": expected DTYPE:RxC after the name"));
  }
  PTO_ASSIGN_OR_RETURN(
      v1::DType dtype,
      ParseDType(fields[0], absl::StrCat("--tile ", spec, ": ")));
  PTO_ASSIGN_OR_RETURN(auto shape, ParseShape("tile " + name, fields[1]));
  v1::Tile& tile = (*job->mutable_tiles())[name];
  tile.set_dtype(dtype);
  tile.set_rows(shape.first);
  tile.set_cols(shape.second);
  size_t next = 2;
  if (fields.size() > next && absl::StartsWith(fields[next], "valid=")) {
    const std::string valid_text(absl::StripPrefix(fields[next], "valid="));
    PTO_ASSIGN_OR_RETURN(auto valid, ParseShape("tile " + name, valid_text));
    tile.set_valid_rows(valid.first);
    tile.set_valid_cols(valid.second);
    ++next;
  }
  if (fields.size() > next) {
    // What is left is V (an @FILE path may hold ':').
    std::vector<std::string> rest(fields.begin() + next, fields.end());
    return SetElements("tile " + name, absl::StrJoin(rest, ":"), &tile);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> Elements(const v1::Tile& tile) {
  auto widen = [](auto elements) -> absl::StatusOr<std::vector<int64_t>> {
    if (!elements.ok()) return elements.status();
    return std::vector<int64_t>(elements->begin(), elements->end());
  };
  switch (tile.dtype()) {
    case v1::DTYPE_INT8:
      return widen(TileElements<int8_t>(tile));
    case v1::DTYPE_UINT8:
      return widen(TileElements<uint8_t>(tile));
    case v1::DTYPE_INT16:
      return widen(TileElements<int16_t>(tile));
    case v1::DTYPE_UINT16:
      return widen(TileElements<uint16_t>(tile));
    case v1::DTYPE_INT32:
      return widen(TileElements<int32_t>(tile));
    case v1::DTYPE_UINT32:
      return widen(TileElements<uint32_t>(tile));
    default:
      break;
  }
  return absl::InvalidArgumentError("cannot print a tile of this element type");
}

absl::StatusOr<std::string> RawBytes(const v1::Tile& tile) {
  if (tile.values_size() == 0) return tile.data();
  PTO_ASSIGN_OR_RETURN(std::vector<int64_t> elements, Elements(tile));
  const int bytes = ElementBytes(tile.dtype());
  std::string out(elements.size() * bytes, '\0');
  for (size_t i = 0; i < elements.size(); ++i) {
    const uint64_t v = static_cast<uint64_t>(elements[i]);
    for (int b = 0; b < bytes; ++b) {
      out[i * bytes + b] = static_cast<char>(v >> (8 * b));
    }
  }
  return out;
}

}  // namespace ptoctl
}  // namespace ptoserve
