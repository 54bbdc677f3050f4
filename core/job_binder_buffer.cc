// JobBinder's stage for jobs in a unified buffer (core/job_binder.h): each
// tile's place, and what each instruction must do there.
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/error_site.h"
#include "core/job_binder.h"
#include "core/ops.h"
#include "core/status_macros.h"

namespace ptoserve {
namespace internal {

absl::Status JobBinder::PlaceInBuffer() {
  const size_t n = descs_.size();
  constexpr int64_t kUntouched = std::numeric_limits<int64_t>::min();
  std::vector<TileLife> lives(n);
  for (size_t s = 0; s < n; ++s) {
    lives[s].name = job_->slots_[s].name;
    lives[s].desc = descs_[s];
    // A tile that arrives with elements holds them from the start.
    const bool loaded =
        s < spec_.tiles.size() && spec_.tiles[s].encoding != Encoding::kNone;
    lives[s].first = loaded ? -1 : kUntouched;
  }
  for (size_t i = 0; i < wiring_.size(); ++i) {
    for (auto [slot, writes] : Touches(i)) {
      TileLife& life = lives[slot];
      // Read before any write: its zeros are read, so it is live from
      // the start.
      if (life.first == kUntouched) {
        life.first = writes ? static_cast<int64_t>(i) : -1;
      }
      life.last = static_cast<int64_t>(i);
    }
  }
  for (TileLife& life : lives) {
    if (life.first == kUntouched) life.first = -1;
  }
  for (size_t s : job_->outputs_) {
    lives[s].last = static_cast<int64_t>(wiring_.size());
  }
  PTO_ASSIGN_OR_RETURN(
      plan_, PlaceTiles(lives, target_, backend_.rules().buffer_bytes));
  std::vector<ByteRange>& ranges = ranges_;
  ranges.resize(n);
  for (size_t s = 0; s < n; ++s) {
    descs_[s].address = plan_.address[s];
    ranges[s] = PlacedRange(descs_[s]);
  }
  PTO_RETURN_IF_ERROR(CheckLoadsDisjoint(ranges));
  auto& work = job_->buffer_work_;
  work.resize(wiring_.size());
  for (size_t s = 0; s < n; ++s) {
    if (plan_.reused[s] && lives[s].first >= 0) {
      work[lives[s].first].clear.push_back(ranges[s]);
    }
  }
  for (size_t i = 0; i < wiring_.size(); ++i) {
    const Wiring& w = wiring_[i];
    for (size_t src : {w.src0, w.src1}) {
      if (MustStageDst(ranges[w.dst], descs_[w.dst].row_bytes(), ranges[src],
                       descs_[src].row_bytes())) {
        work[i].stage_dst = true;
      }
    }
    std::vector<OperandPlacement>& operands = job_->events_[i].operands;
    auto add = [&](absl::string_view role, size_t slot) {
      operands.push_back({role, job_->slots_[slot].name, ranges[slot].begin,
                          ranges[slot].end});
    };
    add("dst", w.dst);
    add("src0", w.src0);
    if (Op(spec_.instructions[i].opcode).sources > 1) add("src1", w.src1);
    if (w.tmp) add("tmp", *w.tmp);
  }
  return absl::OkStatus();
}

absl::Status JobBinder::CheckLoadsDisjoint(
    const std::vector<ByteRange>& ranges) const {
  std::vector<size_t> loaded;
  for (size_t s = 0; s < spec_.tiles.size(); ++s) {
    if (spec_.tiles[s].encoding != Encoding::kNone) loaded.push_back(s);
  }
  std::sort(loaded.begin(), loaded.end(), [&](size_t a, size_t b) {
    return ranges[a].begin < ranges[b].begin;
  });
  // In order of address, each loaded tile against the one reaching
  // furthest before it.
  std::optional<size_t> reach;
  for (size_t t : loaded) {
    if (reach && ranges[*reach].Overlaps(ranges[t])) {
      const size_t s = std::min(*reach, t), u = std::max(*reach, t);
      const std::string& name = spec_.tiles[u].name;
      return AtTile(
          absl::InvalidArgumentError(absl::StrFormat(
              "tiles \"%s\" %s and \"%s\" %s both carry elements and "
              "overlap in the unified buffer; which would hold the shared "
              "bytes is not defined: give one of them no data (it then "
              "reads the other's bytes)",
              spec_.tiles[s].name, ranges[s].ToString(), name,
              ranges[u].ToString())),
          name);
    }
    if (!reach || ranges[t].end > ranges[*reach].end) reach = t;
  }
  return absl::OkStatus();
}

void JobBinder::MakeBuffer() {
  // The buffer reads as zeros wherever no input's bytes are copied in
  // (FillTiles copies them; their ranges are disjoint): only the rest is
  // zeroed, not bytes that are overwritten at once.
  job_->buffer_.reset(new uint8_t[plan_.high_water]);
  std::vector<ByteRange> copied;
  for (size_t s = 0; s < spec_.tiles.size(); ++s) {
    if (spec_.tiles[s].encoding == Encoding::kData)
      copied.push_back(ranges_[s]);
  }
  std::sort(
      copied.begin(), copied.end(),
      [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  uint64_t zeroed_to = 0;
  for (const ByteRange& r : copied) {
    if (r.begin > zeroed_to) {
      std::memset(job_->buffer_.get() + zeroed_to, 0, r.begin - zeroed_to);
    }
    zeroed_to = std::max(zeroed_to, r.end);
  }
  if (plan_.high_water > zeroed_to) {
    std::memset(job_->buffer_.get() + zeroed_to, 0,
                plan_.high_water - zeroed_to);
  }
}

}  // namespace internal
}  // namespace ptoserve
