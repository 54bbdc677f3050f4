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

bool LiveTogether(const TileLife& a, const TileLife& b) {
  return a.first <= b.last && b.first <= a.last;
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
                               ? std::string("when the job's tiles are loaded")
                               : absl::StrFormat("at instruction %d", f.first);
  uint64_t needed = 0;
  size_t live = 0;
  std::string listed;
  for (size_t j = 0; j < tiles.size(); ++j) {
    const TileLife& t = tiles[j];
    if (!(t.first <= f.first && f.first <= t.last) && j != failed) continue;
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
  std::string why =
      needed > buffer_bytes
          ? absl::StrFormat("the %u tiles live then need %u bytes", live,
                            needed)
          : absl::StrFormat(
                "the %u tiles live then need %u bytes, but no free gap of %u "
                "bytes is left between them",
                live, needed, f.desc.bytes());
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
            "tile \"%s\": %s at %s does not fit in the %s unified buffer of %u "
            "bytes",
            name, desc.ToString(),
            ByteRange{address, address + desc.bytes()}.ToString(),
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
  auto by_first = [&](size_t a, size_t b) {
    return tiles[a].first < tiles[b].first;
  };
  std::stable_sort(bound.begin(), bound.end(), by_first);
  std::stable_sort(pending.begin(), pending.end(), by_first);
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
    for (size_t j : bound) {
      if (tiles[j].first > tile.last) break;
      if (LiveTogether(tile, tiles[j])) busy.push_back(range_of(j));
    }
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
