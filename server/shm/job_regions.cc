#include "server/shm/job_regions.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/quote.h"
#include "core/status_macros.h"

namespace ptoserve {

absl::StatusOr<absl::Span<uint8_t>> JobRegions::Resolve(
    const v1::RegionSlice& slice, absl::string_view tile, bool write) {
  if (slice.region().empty()) {
    return absl::InvalidArgumentError("the slice names no region");
  }
  const MappedRegion* region = nullptr;
  for (const Held& held : uses_) {
    if (held.use.region().name() == slice.region()) {
      region = &held.use.region();
    }
  }
  if (region == nullptr) {
    PTO_ASSIGN_OR_RETURN(RegionUse use, registry_->Use(slice.region()));
    if (caller_ != nullptr) {
      if (!caller_uid_.has_value()) caller_uid_ = caller_();
      PTO_RETURN_IF_ERROR(caller_uid_->status());
      PTO_RETURN_IF_ERROR(use.region().MayUse(**caller_uid_));
    }
    // The mapping's fault count, for CheckIntact: after a fault, the
    // object's size is read and the region refused or mapped again here.
    PTO_ASSIGN_OR_RETURN(const uint64_t entered, use.region().Enter());
    uses_.push_back({std::move(use), entered});
    region = &uses_.back().use.region();
  }
  PTO_ASSIGN_OR_RETURN(absl::Span<uint8_t> bytes,
                       region->Slice(slice.offset(), slice.size()));
  const uint64_t begin = region->extent().begin + slice.offset();
  claims_.push_back(
      {&region->extent(), begin, begin + slice.size(), tile, write});
  return bytes;
}

absl::Status JobRegions::CheckOverlaps() const {
  // Written slices in object order: they must not overlap each other, and
  // then each slice meets at most the written ones a search finds.
  absl::InlinedVector<const Claim*, 4> writes;
  for (const Claim& c : claims_) {
    if (c.write) writes.push_back(&c);
  }
  if (writes.empty()) return absl::OkStatus();
  auto key = [](const Claim* c) {
    return std::make_tuple(c->extent->device, c->extent->inode, c->begin);
  };
  std::sort(writes.begin(), writes.end(),
            [&](const Claim* a, const Claim* b) { return key(a) < key(b); });
  auto same_object = [](const Claim& a, const Claim& b) {
    return a.extent->device == b.extent->device &&
           a.extent->inode == b.extent->inode;
  };
  auto what = [](const Claim& c) { return SharedFieldName(c.tile, c.write); };
  auto overlap = [&](const Claim& a, const Claim& b) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s and %s share bytes of one shared-memory object; a slice a job "
        "writes may overlap no other slice of the job except its own tile's "
        "input at the same bytes",
        what(a), what(b)));
  };
  for (size_t i = 1; i < writes.size(); ++i) {
    if (same_object(*writes[i - 1], *writes[i]) &&
        writes[i]->begin < writes[i - 1]->end) {
      return overlap(*writes[i - 1], *writes[i]);
    }
  }
  for (const Claim& c : claims_) {
    if (c.write) continue;
    // The first written slice of the same object that ends after c begins.
    auto it =
        std::partition_point(writes.begin(), writes.end(), [&](const Claim* w) {
          return std::make_tuple(w->extent->device, w->extent->inode, w->end) <=
                 std::make_tuple(c.extent->device, c.extent->inode, c.begin);
        });
    if (it == writes.end() || !same_object(**it, c) || (*it)->begin >= c.end) {
      continue;
    }
    const Claim& w = **it;
    const bool own = w.tile == c.tile && w.begin == c.begin && w.end == c.end;
    if (!own) return overlap(c, w);
  }
  return absl::OkStatus();
}

absl::Status JobRegions::CheckIntact() const {
  for (const Held& held : uses_) {
    PTO_RETURN_IF_ERROR(held.use.region().CheckNoFaultSince(held.entered));
  }
  return absl::OkStatus();
}

}  // namespace ptoserve
