#include "client/ub_map.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "proto/wire.h"

namespace ptoserve {
namespace {

std::string Hex(uint64_t value) { return absl::StrFormat("0x%04x", value); }

std::string OpcodeName(v1::Opcode opcode) {
  if (!v1::Opcode_IsValid(opcode)) return absl::StrCat("opcode ", opcode);
  return std::string(absl::StripPrefix(v1::Opcode_Name(opcode), "OPCODE_"));
}

struct Placement {
  uint64_t address = 0;
  uint64_t bytes = 0;
};

}  // namespace

std::string UnifiedBufferMap(const v1::JobResult& result) {
  // Each tile where its first operand lay; the widest tile name.
  std::map<std::string, Placement> tiles;
  size_t width = 0;
  for (const v1::EventRecord& e : result.events()) {
    for (const v1::OperandRange& o : e.operands()) {
      tiles.insert(
          {o.tile(),
           {o.begin(), o.end() >= o.begin() ? o.end() - o.begin() : 0}});
      width = std::max(width, o.tile().size());
    }
  }
  if (tiles.empty()) {
    return "unified buffer: no operand ranges in the events (a host job in "
           "auto mode has no on-chip buffer model)\n";
  }
  std::string out = "unified buffer:\n";
  for (const v1::EventRecord& e : result.events()) {
    absl::StrAppendFormat(&out, "  %-4s instruction %u %s\n", e.id(),
                          e.instruction_index(), OpcodeName(e.opcode()));
    if (e.operands_size() == 0) out += "       (no operands)\n";
    for (const v1::OperandRange& o : e.operands()) {
      absl::StrAppendFormat(&out, "       %-4s  %-*s  [%s, %s)\n", o.role(),
                            static_cast<int>(width), o.tile(), Hex(o.begin()),
                            Hex(o.end()));
    }
  }
  // The result's own addresses win; a tile the operands never named is
  // sized from its shape.
  for (const auto& [name, tile] : result.tiles()) {
    if (!tile.has_address()) continue;
    Placement& placement = tiles[name];
    if (placement.bytes == 0) {
      placement.bytes =
          uint64_t{tile.rows()} * tile.cols() * WireElementBytes(tile.dtype());
    }
    placement.address = tile.address();
  }
  std::vector<std::tuple<uint64_t, std::string, uint64_t>> rows;
  size_t name_width = 4, address_width = 7, bytes_width = 5;
  for (const auto& [name, placement] : tiles) {
    rows.emplace_back(placement.address, name, placement.bytes);
    name_width = std::max(name_width, name.size());
    address_width = std::max(address_width, Hex(placement.address).size());
    bytes_width = std::max(bytes_width, absl::StrCat(placement.bytes).size());
  }
  std::sort(rows.begin(), rows.end());
  out += "tiles by address:\n";
  absl::StrAppendFormat(&out, "  %-*s  %-*s  %*s\n",
                        static_cast<int>(name_width), "tile",
                        static_cast<int>(address_width), "address",
                        static_cast<int>(bytes_width), "bytes");
  for (const auto& [address, name, bytes] : rows) {
    absl::StrAppendFormat(&out, "  %-*s  %-*s  %*d\n",
                          static_cast<int>(name_width), name,
                          static_cast<int>(address_width), Hex(address),
                          static_cast<int>(bytes_width), bytes);
  }
  return out;
}

}  // namespace ptoserve
