#include "core/hazards.h"

#include <iterator>
#include <utility>

namespace ptoserve {
namespace internal {

void BufferHazards::Add(const ByteRange& range, bool writes,
                        std::vector<uint32_t>* deps) const {
  const bool whole = writes || Spans(range) > kMaxSegmentsRead;
  auto it = std::prev(segments_.upper_bound(range.begin));
  for (; it != segments_.end() && it->first < range.end; ++it) {
    const Segment& seg = it->second;
    if (seg.writer >= 0) deps->push_back(static_cast<uint32_t>(seg.writer));
    if (whole || seg.readers.size() >= kMaxReaders) {
      deps->insert(deps->end(), seg.readers.begin(), seg.readers.end());
    }
  }
}

void BufferHazards::Commit(const ByteRange& range, bool writes,
                           uint32_t index) {
  if (writes || Spans(range) > kMaxSegmentsRead) {
    Split(range.begin);
    Split(range.end);
    segments_.erase(segments_.find(range.begin),
                    segments_.lower_bound(range.end));
    Segment& seg = segments_[range.begin];
    seg.end = range.end;
    seg.writer = index;
    return;
  }
  Split(range.begin);
  Split(range.end);
  auto last = segments_.lower_bound(range.end);
  for (auto it = segments_.find(range.begin); it != last; ++it) {
    auto& readers = it->second.readers;
    if (!readers.empty() && readers.back() == index) continue;
    if (readers.size() >= kMaxReaders) readers.clear();
    readers.push_back(index);
  }
}

size_t BufferHazards::Spans(const ByteRange& range) const {
  size_t n = 0;
  auto it = std::prev(segments_.upper_bound(range.begin));
  for (;
       it != segments_.end() && it->first < range.end && n <= kMaxSegmentsRead;
       ++it) {
    ++n;
  }
  return n;
}

void BufferHazards::Split(uint64_t at) {
  auto it = std::prev(segments_.upper_bound(at));
  if (it->first == at || it->second.end <= at) return;
  Segment tail = it->second;
  it->second.end = at;
  segments_.emplace(at, std::move(tail));
}

}  // namespace internal
}  // namespace ptoserve
