#include "core/unified_buffer.h"

#include "absl/strings/str_format.h"
#include "core/error_site.h"

namespace ptoserve {

std::string ByteRange::ToString() const {
  return absl::StrFormat("[0x%x, 0x%x)", begin, end);
}

ByteRange PlacedRange(const TileDesc& desc) {
  return ByteRange{*desc.address, *desc.address + desc.bytes()};
}

absl::Status CheckPlacement(absl::string_view name, const TileDesc& desc,
                            Target target, uint64_t buffer_bytes) {
  if (!desc.address.has_value()) {
    return AtTile(
        absl::InvalidArgumentError(absl::StrFormat(
            "tile \"%s\": manual mode needs an address for every tile (as "
            "`pto.tassign %%%s, @tile(0x1000)` binds one)",
            name, name)),
        name);
  }
  const uint64_t address = *desc.address;
  if (address % kAddressAlignment != 0) {
    return AtTile(absl::InvalidArgumentError(absl::StrFormat(
                      "tile \"%s\": address 0x%x is not %u-byte aligned", name,
                      address, kAddressAlignment)),
                  name);
  }
  if (address > buffer_bytes || desc.bytes() > buffer_bytes - address) {
    return AtTile(
        absl::InvalidArgumentError(absl::StrFormat(
            "tile \"%s\": %s at %s does not fit in the %s unified buffer of %u "
            "bytes",
            name, desc.ToString(),
            ByteRange{address, address + desc.bytes()}.ToString(),
            TargetName(target), buffer_bytes)),
        name);
  }
  return absl::OkStatus();
}

}  // namespace ptoserve
