#include "core/unified_buffer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/error_site.h"

namespace ptoserve {

namespace {

uint64_t AlignUp(uint64_t n) {
  return (n + kAddressAlignment - 1) / kAddressAlignment * kAddressAlignment;
}

// "0x..." for a + b, which may pass 2^64 (an address near the top of the
// address space): the range a message prints must not wrap.
std::string HexSum(uint64_t a, uint64_t b) {
  const uint64_t low = a + b;
  if (low >= a) return absl::StrFormat("0x%x", low);
  return absl::StrFormat("0x1%016x", low);
}

// How many live tiles an error lists before "and N more".
constexpr size_t kListedTiles = 8;

// Tile `failed` found no room: says when, how many bytes the tiles live
// then need, and which they are (with their ranges where placed).
absl::Status NoRoom(absl::Span<const TileLife> tiles, const BufferPlan& plan,
                    const std::vector<bool>& placed, size_t failed,
                    Target target, uint64_t buffer_bytes) {
  const TileLife& f = tiles[failed];
  const std::string when = f.first < 0
                               ? std::string("before the first instruction")
                               : absl::StrFormat("at instruction %d", f.first);
  uint64_t needed = 0;
  size_t live = 0;
  size_t idle_bound = 0;  // bound tiles not live then
  std::string listed;
  for (size_t j = 0; j < tiles.size(); ++j) {
    const TileLife& t = tiles[j];
    // Bound tiles hold their bytes for the whole program.
    const bool live_then =
        j == failed || (t.first <= f.first && f.first <= t.last);
    if (!live_then && !t.desc.address.has_value()) continue;
    idle_bound += !live_then;
    needed += t.desc.bytes();
    if (++live > kListedTiles) continue;
    absl::StrAppendFormat(&listed, "%s\"%s\" %u bytes",
                          listed.empty() ? "" : ", ", t.name, t.desc.bytes());
    if (placed[j]) {
      absl::StrAppend(
          &listed, " at ",
          ByteRange{plan.address[j], plan.address[j] + t.desc.bytes()}
              .ToString());
    }
  }
  if (live > kListedTiles) {
    absl::StrAppendFormat(&listed, " and %u more", live - kListedTiles);
  }
  const char* held = idle_bound > 0 ? "live then or bound" : "live then";
  const std::string tiles_live =
      live == 1 ? absl::StrFormat("the 1 tile %s needs", held)
                : absl::StrFormat("the %u tiles %s need", live, held);
  std::string why =
      needed > buffer_bytes
          ? absl::StrFormat("%s %u bytes", tiles_live, needed)
          : absl::StrFormat(
                "%s %u bytes, but no free gap of %u bytes is left between "
                "them",
                tiles_live, needed, f.desc.bytes());
  absl::Status status = absl::InvalidArgumentError(absl::StrFormat(
      "tile \"%s\" (%s, %u bytes) does not fit in the %s unified buffer of %u "
      "bytes %s: %s (%s)",
      f.name, f.desc.ToString(), f.desc.bytes(), TargetName(target),
      buffer_bytes, when, why, listed));
  return f.first < 0
             ? AtTile(std::move(status), f.name)
             : AtInstruction(std::move(status), static_cast<size_t>(f.first));
}

}  // namespace

std::string ByteRange::ToString() const {
  return absl::StrFormat("[0x%x, 0x%x)", begin, end);
}

ByteRange PlacedRange(const TileDesc& desc) {
  return ByteRange{*desc.address, *desc.address + desc.bytes()};
}

absl::Status CheckPlacement(absl::string_view name, const TileDesc& desc,
                            Target target, uint64_t buffer_bytes) {
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
            "tile \"%s\": %s at [0x%x, %s) does not fit in the %s unified "
            "buffer of %u bytes",
            name, desc.ToString(), address, HexSum(address, desc.bytes()),
            TargetName(target), buffer_bytes)),
        name);
  }
  return absl::OkStatus();
}

absl::StatusOr<BufferPlan> PlaceTiles(absl::Span<const TileLife> tiles,
                                      Target target, uint64_t buffer_bytes) {
  const size_t n = tiles.size();
  BufferPlan plan;
  plan.address.assign(n, 0);
  plan.reused.assign(n, false);
  std::vector<bool> placed(n, false);
  std::vector<size_t> bound, pending;
  for (size_t i = 0; i < n; ++i) {
    if (tiles[i].desc.address) {
      plan.address[i] = *tiles[i].desc.address;
      placed[i] = true;
      bound.push_back(i);
    } else {
      pending.push_back(i);
    }
  }
  std::stable_sort(pending.begin(), pending.end(), [&](size_t a, size_t b) {
    return tiles[a].first < tiles[b].first;
  });
  auto range_of = [&](size_t j) {
    return ByteRange{plan.address[j], plan.address[j] + tiles[j].desc.bytes()};
  };
  // Bytes below this may hold an earlier tile's.
  uint64_t touched = 0;
  for (size_t j : bound) touched = std::max(touched, range_of(j).end);
  // Placed tiles, in the order they become live, that may still be live.
  std::vector<size_t> active;
  std::vector<ByteRange> busy;
  for (size_t i : pending) {
    const TileLife& tile = tiles[i];
    // In order of `first`: a tile dead before this one starts is dead for
    // every later one too.
    active.erase(
        std::remove_if(active.begin(), active.end(),
                       [&](size_t j) { return tiles[j].last < tile.first; }),
        active.end());
    busy.clear();
    for (size_t j : active) busy.push_back(range_of(j));
    // Bound tiles are the client's for the whole program: nothing is placed
    // in their bytes, even while they are not live.
    for (size_t j : bound) busy.push_back(range_of(j));
    std::sort(busy.begin(), busy.end(),
              [](const ByteRange& a, const ByteRange& b) {
                return a.begin < b.begin;
              });
    // First fit: the lowest aligned gap that holds the tile.
    const uint64_t bytes = tile.desc.bytes();
    uint64_t at = 0;
    for (const ByteRange& r : busy) {
      if (at + bytes <= r.begin) break;
      at = std::max(at, AlignUp(r.end));
    }
    if (at > buffer_bytes || bytes > buffer_bytes - at) {
      return NoRoom(tiles, plan, placed, i, target, buffer_bytes);
    }
    plan.address[i] = at;
    plan.reused[i] = at < touched;
    touched = std::max(touched, at + bytes);
    placed[i] = true;
    active.push_back(i);
  }
  for (size_t i = 0; i < n; ++i) {
    plan.high_water = std::max(plan.high_water, range_of(i).end);
  }
  return plan;
}

}  // namespace ptoserve
