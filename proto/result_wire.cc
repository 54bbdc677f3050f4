#include "proto/result_wire.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "core/tile_codec.h"
#include "proto/wire_out.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {

namespace {

// google.protobuf.Timestamp and Duration alike, as SetTimestamp and
// SetDuration split them.
template <typename Out>
void Seconds(Out& out, int field, int64_t seconds, int32_t nanos) {
  out.Message(field, [seconds, nanos](auto& o) {
    o.Uint(1, static_cast<uint64_t>(seconds));
    o.Int32(2, nanos);
  });
}

template <typename Out>
void Seconds(Out& out, int field, int64_t nanos) {
  Seconds(out, field, nanos / 1000000000,
          static_cast<int32_t>(nanos % 1000000000));
}

// A time as SetTimestamp writes it. After the epoch (the engine's clock
// reads no other) timespec's split is the same, and cheaper than
// absl::ToUnixNanos, which divides 128 bits.
template <typename Out>
void Timestamp(Out& out, int field, absl::Time t) {
  const timespec ts = absl::ToTimespec(t);
  if (ts.tv_sec < 0) return Seconds(out, field, absl::ToUnixNanos(t));
  Seconds(out, field, ts.tv_sec, static_cast<int32_t>(ts.tv_nsec));
}

template <typename Out>
void Tile(Out& out, const OutputTile& tile, const ResultEncodings& encodings) {
  const TileDesc& d = tile.tile.desc();
  out.Int32(1, ToProto(d.dtype));
  out.Uint(2, d.rows);
  out.Uint(3, d.cols);
  out.Uint(4, d.valid_rows);
  out.Uint(5, d.valid_cols);
  out.Int32(6, d.layout == Layout::kRowMajor ? v1::LAYOUT_ROW_MAJOR
                                             : v1::LAYOUT_COL_MAJOR);
  out.Int32(7, static_cast<int32_t>(d.location));
  if (d.address.has_value()) {
    out.Tag(8, kWireVarint);
    out.Varint(*d.address);
  }
  const v1::RegionSlice* placed =
      tile.placed ? encodings.Placed(tile.name) : nullptr;
  if (placed != nullptr) {
    out.Message(12, [placed](auto& o) {
      o.String(1, placed->region());
      o.Uint(2, placed->offset());
      o.Uint(3, placed->size());
    });
  } else if (encodings.AsValues(tile.name)) {
    const size_t n = d.elements();
    if (n == 0) return;
    out.Tag(10, kWireBytes);
    out.Varint(n * sizeof(double));
    if (Out::counting()) return out.Raw(nullptr, n * sizeof(double));
    std::vector<double> values(n);
    ToValues(tile.tile, absl::MakeSpan(values));
    out.Raw(values.data(), n * sizeof(double));
  } else {
    out.String(
        9, absl::string_view(reinterpret_cast<const char*>(tile.tile.data()),
                             tile.tile.size_bytes()));
  }
}

template <typename Out>
void EventRecord(Out& out, const Event& e) {
  out.String(1, e.id);
  out.Uint(2, e.index);
  out.Int32(3, ToProto(e.opcode));
  out.Int32(4, ToProto(e.target));
  out.Int32(5, v1::PIPE_V);
  for (const std::string& w : e.waited_on) out.Element(6, w);
  Timestamp(out, 7, e.enqueue_time);
  Timestamp(out, 8, e.start_time);
  Timestamp(out, 9, e.end_time);
  out.Uint(10, e.batch_id);
  out.Uint(11, e.batch_size);
  for (const MicroOp& op : e.trace.ops) {
    out.Message(12, [&op](auto& o) {
      o.String(1, op.op);
      o.String(2, op.dst);
      for (absl::string_view s : op.srcs) o.Element(3, s);
      // As ToJobResult sets them: uint32 fields.
      o.Uint(4, static_cast<uint32_t>(op.repeats));
      o.Uint(5, static_cast<uint32_t>(op.elements));
    });
  }
  for (const std::string& note : e.trace.notes) out.Element(13, note);
  Seconds(out, 14, absl::ToInt64Nanoseconds(e.start_time - e.enqueue_time));
  Seconds(out, 15, absl::ToInt64Nanoseconds(e.end_time - e.start_time));
  for (const OperandPlacement& p : e.operands) {
    out.Message(16, [&p](auto& o) {
      o.String(1, p.role);
      o.String(2, p.tile);
      o.Uint(3, p.begin);
      o.Uint(4, p.end);
    });
  }
}

template <typename Out>
void Result(Out& out, absl::string_view id, const JobOutcome& outcome,
            const ResultEncodings& encodings) {
  out.String(1, id);
  out.Int32(2, ToProto(outcome.target));
  // The tiles map, its entries in key order as deterministic
  // serialization writes them; an entry carries its key and value always.
  absl::InlinedVector<const OutputTile*, 4> tiles;
  for (const OutputTile& tile : outcome.outputs) tiles.push_back(&tile);
  std::sort(tiles.begin(), tiles.end(),
            [](const OutputTile* a, const OutputTile* b) {
              return a->name < b->name;
            });
  for (const OutputTile* tile : tiles) {
    out.Message(3, [&](auto& entry) {
      entry.Element(1, tile->name);
      entry.Message(2, [&](auto& value) { Tile(value, *tile, encodings); });
    });
  }
  for (const Event& e : outcome.events) {
    out.Message(4, [&e](auto& o) { EventRecord(o, e); });
  }
}

}  // namespace

ResultWriter::ResultWriter(absl::string_view id, const JobOutcome& outcome,
                           const ResultEncodings& encodings)
    : id_(id), outcome_(outcome), encodings_(encodings) {
  WireOut<true> sized(&sizes_);
  Result(sized, id_, outcome_, encodings_);
  size_ = sized.count();
}

void ResultWriter::Write(uint8_t* out) const {
  WireOut<false> written(out, sizes_);
  Result(written, id_, outcome_, encodings_);
}

}  // namespace ptoserve
