// Which earlier instructions a new one must follow, by tile (HazardTracker)
// or by bytes of a unified buffer (BufferHazards); JobBinder's, internal.
#ifndef PTOSERVE_CORE_HAZARDS_H_
#define PTOSERVE_CORE_HAZARDS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "core/unified_buffer.h"

namespace ptoserve {
namespace internal {

// Tracks, per tile, which earlier instructions a new one must follow.
class HazardTracker {
 public:
  explicit HazardTracker(size_t num_tiles) : tiles_(num_tiles) {}

  // Appends to `deps` the instructions that an access to tile `slot` must
  // follow.
  void Add(size_t slot, bool writes, std::vector<uint32_t>* deps) const {
    const Tile& tile = tiles_[slot];
    if (tile.last_writer >= 0) deps->push_back(tile.last_writer);
    if (writes)
      deps->insert(deps->end(), tile.readers.begin(), tile.readers.end());
  }
  // Records instruction `index`'s access to tile `slot`.
  void Commit(size_t slot, bool writes, uint32_t index) {
    Tile& tile = tiles_[slot];
    if (writes) {
      tile.last_writer = index;
      tile.readers.clear();
    } else {
      tile.readers.push_back(index);
    }
  }

 private:
  struct Tile {
    int64_t last_writer = -1;
    absl::InlinedVector<uint32_t, 2> readers;  // since the last write
  };
  absl::InlinedVector<Tile, 8> tiles_;  // inline for the few most jobs have
};

// The same for a unified buffer, by bytes rather than tiles: tiles that
// share bytes (aliases, or a dead tile's bytes reused) are hazards for each
// other. The buffer is a set of segments, each with the instruction that
// last wrote it and those that read it since; a write makes its range one
// segment again.
//
// Two rules keep the edges linear in the program's size. A reader joining
// a full reader list follows the readers in it, so that it alone stands for
// them. A read spanning many segments follows every access to them, as a
// write would, and then stands for them as one segment's last "writer":
// later accesses follow it alone, and through it everything before (it
// writes nothing, so this only orders; it never changes a result).
class BufferHazards {
 public:
  explicit BufferHazards(uint64_t bytes) { segments_[0].end = bytes; }

  // Appends to `deps` the instructions that an access to `range` must
  // follow.
  void Add(const ByteRange& range, bool writes,
           std::vector<uint32_t>* deps) const;
  // Records instruction `index`'s access to `range`.
  // REQUIRES: Add for every access of instruction `index` came first, and
  // Commit for its reads before its writes.
  void Commit(const ByteRange& range, bool writes, uint32_t index);

 private:
  static constexpr size_t kMaxReaders = 16;
  static constexpr size_t kMaxSegmentsRead = 8;

  struct Segment {
    uint64_t end = 0;
    int64_t writer = -1;
    absl::InlinedVector<uint32_t, 4> readers;
  };

  // How many segments `range` meets, counted up to kMaxSegmentsRead + 1.
  size_t Spans(const ByteRange& range) const;

  // Makes `at` the start of a segment (unless it is the end of the buffer).
  void Split(uint64_t at);

  std::map<uint64_t, Segment> segments_;  // by first byte
};

}  // namespace internal
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_HAZARDS_H_
