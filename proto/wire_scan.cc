#include "proto/wire_scan.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/quote.h"
#include "core/status_macros.h"

namespace ptoserve {

namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// How a field of the messages a Job holds travels (job.proto, tile.proto):
// a field the schema has, on another wire type, is an unknown field to the
// parser too.
enum class Wire { kVarint, kFixed64, kBytes, kPackedOrFixed64 };

struct FieldRule {
  int number;
  Wire wire;
};

// The fields CheckJobWire knows, per message.
constexpr FieldRule kJobFields[] = {{1, Wire::kBytes},  {2, Wire::kVarint},
                                    {3, Wire::kVarint}, {4, Wire::kBytes},
                                    {5, Wire::kBytes},  {6, Wire::kBytes},
                                    {7, Wire::kVarint}, {8, Wire::kBytes},
                                    {9, Wire::kBytes},  {10, Wire::kBytes}};
constexpr FieldRule kEntryFields[] = {{1, Wire::kBytes}, {2, Wire::kBytes}};
constexpr FieldRule kTileFields[] = {
    {1, Wire::kVarint},           {2, Wire::kVarint},   {3, Wire::kVarint},
    {4, Wire::kVarint},           {5, Wire::kVarint},   {6, Wire::kVarint},
    {7, Wire::kVarint},           {8, Wire::kVarint},   {9, Wire::kBytes},
    {10, Wire::kPackedOrFixed64}, {11, Wire::kFixed64}, {12, Wire::kBytes}};
constexpr FieldRule kSliceFields[] = {
    {1, Wire::kBytes}, {2, Wire::kVarint}, {3, Wire::kVarint}};
constexpr FieldRule kInstructionFields[] = {
    {1, Wire::kVarint}, {2, Wire::kBytes}, {3, Wire::kBytes}, {4, Wire::kBytes},
    {5, Wire::kBytes},  {6, Wire::kBytes}, {7, Wire::kBytes}};
constexpr FieldRule kDurationFields[] = {{1, Wire::kVarint},
                                         {2, Wire::kVarint}};
constexpr FieldRule kBatchFields[] = {{1, Wire::kBytes}};

// Whether `rules` are fields 1 to N in order, as WireScan::Message looks
// them up by number.
template <size_t N>
constexpr bool Dense(const FieldRule (&rules)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (rules[i].number != static_cast<int>(i) + 1) return false;
  }
  return true;
}
static_assert(Dense(kJobFields) && Dense(kEntryFields) && Dense(kTileFields) &&
                  Dense(kSliceFields) && Dense(kInstructionFields) &&
                  Dense(kDurationFields) && Dense(kBatchFields),
              "every message's rules are its fields 1 to N in order");

// The most fields a request may carry that this server's schema lacks (a
// newer client's): protobuf keeps each, at 16 bytes or more for as few as
// one or two on the wire.
constexpr size_t kMaxUnknownFields = 16;

// One pass over a serialized Job, one message at a time, that checks what
// parsing it would cost. It reads to the end before it answers, and bytes
// that are malformed anywhere (a field running past the end of its
// message, a bad tag or wire type) are refused as such: protobuf would
// parse, and keep, everything before or inside the malformed field first.
class WireScan {
 public:
  WireScan(google::protobuf::io::ZeroCopyInputStream* bytes, size_t size,
           const EngineLimits& limits)
      : in_(bytes), limits_(limits) {
    in_.PushLimit(static_cast<int>(size));
  }

  absl::StatusOr<WireShape> Run() {
    Message(kJobFields,
            [&](int field, uint32_t length) { JobField(field, length); });
    PTO_RETURN_IF_ERROR(Verdict("ptoserve.v1.Job"));
    return WireShape{tiles_, instructions_, assembly_bytes_, 0, std::move(id_)};
  }

  absl::StatusOr<BatchShape> RunBatch(size_t max_jobs) {
    BatchShape shape;
    Message(kBatchFields, [&](int, uint32_t length) {
      job_ = shape.jobs++;
      if (shape.jobs == max_jobs + 1) {
        Fail(absl::ResourceExhaustedError(absl::StrFormat(
            "the batch has more than %u jobs, the limit", max_jobs)));
      }
      tiles_ = instructions_ = outputs_ = placed_ = assembly_bytes_ = 0;
      Nested(length, kJobFields,
             [&](int field, uint32_t n) { JobField(field, n); });
      shape.total.tiles += tiles_;
      shape.total.instructions += instructions_;
      shape.total.assembly_bytes += assembly_bytes_;
      if (shape.jobs <= max_jobs) shape.job_bytes.push_back(length);
    });
    PTO_RETURN_IF_ERROR(Verdict("ptoserve.v1.JobBatch"));
    return shape;
  }

 private:
  // The scan's answer once it has read to the end: malformed bytes first,
  // whatever else is wrong, then the first problem found.
  absl::Status Verdict(absl::string_view message) {
    if (in_.BytesUntilLimit() != 0) corrupt_ = true;  // stopped at a 0 tag
    if (corrupt_) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "is not a %s: its protobuf encoding is truncated or corrupt",
          message));
    }
    return first_error_;
  }

  // Keeps the first problem found; the scan goes on to check the rest is
  // well formed.
  void Fail(absl::Status status) {
    if (!first_error_.ok()) return;
    first_error_ =
        job_ == kNoJob
            ? std::move(status)
            : absl::Status(status.code(), absl::StrFormat("job %u: %s", job_,
                                                          status.message()));
  }

  // Reads the fields of one message up to the current limit. `on_bytes`
  // sees each known length-delimited field (its length read, its bytes not:
  // it must consume them); every other field is skipped.
  template <size_t N, typename OnBytes>
  void Message(const FieldRule (&rules)[N], OnBytes on_bytes) {
    for (uint32_t tag; !corrupt_ && (tag = in_.ReadTag()) != 0;) {
      const int number = WireFormatLite::GetTagFieldNumber(tag);
      const WireFormatLite::WireType type = WireFormatLite::GetTagWireType(tag);
      if (type == WireFormatLite::WIRETYPE_END_GROUP) {
        corrupt_ = true;  // without its start
        return;
      }
      if (type == WireFormatLite::WIRETYPE_START_GROUP) {
        corrupt_ = !WireFormatLite::SkipField(&in_, tag);
        Fail(absl::InvalidArgumentError(absl::StrFormat(
            "field %u is a group, which ptoserve.v1 messages never hold",
            number)));
        continue;
      }
      // Each message's rules are its fields 1 to N in order (Dense).
      const FieldRule* rule = number >= 1 && static_cast<size_t>(number) <= N
                                  ? &rules[number - 1]
                                  : nullptr;
      const bool known =
          rule != nullptr &&
          (rule->wire == Wire::kVarint ? type == WireFormatLite::WIRETYPE_VARINT
           : rule->wire == Wire::kFixed64
               ? type == WireFormatLite::WIRETYPE_FIXED64
           : rule->wire == Wire::kBytes
               ? type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED
               : type == WireFormatLite::WIRETYPE_FIXED64 ||
                     type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
      if (!known && ++unknown_ > kMaxUnknownFields) {
        Fail(absl::InvalidArgumentError(absl::StrFormat(
            "the request has more than %u fields this server does not know "
            "(the last: field %u, wire type %d)",
            kMaxUnknownFields, number, type)));
      }
      if (!known || type != WireFormatLite::WIRETYPE_LENGTH_DELIMITED ||
          rule->wire == Wire::kPackedOrFixed64) {
        corrupt_ = !WireFormatLite::SkipField(&in_, tag);
        continue;
      }
      uint32_t length = 0;
      if (!in_.ReadVarint32(&length) ||
          static_cast<int64_t>(length) > in_.BytesUntilLimit()) {
        corrupt_ = true;
        return;
      }
      on_bytes(number, length);
    }
  }

  // Reads a nested message of `length` bytes with `rules`.
  template <size_t N, typename OnBytes>
  void Nested(uint32_t length, const FieldRule (&rules)[N], OnBytes on_bytes) {
    const CodedInputStream::Limit limit =
        in_.PushLimit(static_cast<int>(length));
    Message(rules, on_bytes);
    if (!corrupt_ && in_.BytesUntilLimit() != 0) corrupt_ = true;
    in_.PopLimit(limit);
  }

  void Skip(uint32_t length) {
    corrupt_ |= !in_.Skip(static_cast<int>(length));
  }

  // Skips a name of `length` bytes, noting it if it is longer than names
  // may be (quoting its start).
  void Name(uint32_t length, absl::string_view where) {
    NameAt(length, [where] { return std::string(where); });
  }
  // As above, `where` made only for the message: a name in bounds costs no
  // formatting.
  template <typename Where>
  void NameAt(uint32_t length, Where where) {
    if (length <= kMaxNameBytes) return Skip(length);
    std::string start;
    if (!in_.ReadString(&start, 32)) {
      corrupt_ = true;
      return;
    }
    Fail(absl::InvalidArgumentError(absl::StrFormat(
        "%s \"%s...\" (%u bytes) is longer than names may be (%u bytes)",
        where(), absl::CHexEscape(start), length, kMaxNameBytes)));
    Skip(length - 32);
  }

  // A RegionSlice of `length` bytes.
  void Slice(uint32_t length) {
    Nested(length, kSliceFields,
           [&](int, uint32_t n) { Name(n, "region name"); });
  }

  void JobField(int field, uint32_t length) {
    switch (field) {
      case 4:  // tiles
        if (++tiles_ == limits_.max_tiles_per_job + 1) {
          Fail(absl::ResourceExhaustedError(
              absl::StrFormat("job has more than %u tiles, the limit",
                              limits_.max_tiles_per_job)));
        }
        return Nested(length, kEntryFields, [&](int f, uint32_t n) {
          if (f == 1) return Name(n, "tile name");
          Nested(n, kTileFields, [&](int g, uint32_t m) {
            if (g != 12) return Skip(m);
            Slice(m);
          });
        });
      case 5:  // instructions
        if (++instructions_ == limits_.max_instructions_per_job + 1) {
          Fail(absl::ResourceExhaustedError(
              absl::StrFormat("job has more than %u instructions, the limit",
                              limits_.max_instructions_per_job)));
        }
        waits_ = 0;
        return Nested(length, kInstructionFields, [&](int f, uint32_t n) {
          if (f == 7 && ++waits_ == limits_.max_waits_per_instruction + 1) {
            Fail(absl::ResourceExhaustedError(absl::StrFormat(
                "instruction %u waits on more than %u events, the limit",
                instructions_ - 1, limits_.max_waits_per_instruction)));
          }
          NameAt(n, [this] {
            return absl::StrFormat("instruction %u: a name", instructions_ - 1);
          });
        });
      case 6:  // outputs
        if (++outputs_ == limits_.max_tiles_per_job + 1) {
          Fail(absl::ResourceExhaustedError(absl::StrFormat(
              "outputs lists more than %u names, the most tiles a job may have",
              limits_.max_tiles_per_job)));
        }
        return Name(length, "outputs entry");
      case 10:  // output_regions
        if (++placed_ == limits_.max_tiles_per_job + 1) {
          Fail(absl::ResourceExhaustedError(absl::StrFormat(
              "output_regions has more than %u entries, the most tiles a job "
              "may have",
              limits_.max_tiles_per_job)));
        }
        return Nested(length, kEntryFields, [&](int f, uint32_t n) {
          if (f == 1) return Name(n, "output_regions key");
          Slice(n);
        });
      case 8:  // timeout
        return Nested(length, kDurationFields,
                      [&](int, uint32_t n) { Skip(n); });
      case 9:  // assembly
        if (length > limits_.max_assembly_bytes) {
          Fail(absl::ResourceExhaustedError(
              absl::StrFormat("assembly is %u bytes, over the limit of %u",
                              length, limits_.max_assembly_bytes)));
        }
        assembly_bytes_ = length;
        return Skip(length);
      case 1:  // id, echoed in the result
        if (job_ != kNoJob || length > kMaxNameBytes) {
          return Name(length, "job id");
        }
        // Kept, so that a job refused before it is parsed is answered with
        // its id (the last one on the wire, as the parser takes it).
        if (!in_.ReadString(&id_, static_cast<int>(length))) corrupt_ = true;
        return;
      default:
        return Skip(length);
    }
  }

  static constexpr size_t kNoJob = ~size_t{0};

  CodedInputStream in_;
  const EngineLimits& limits_;
  size_t job_ = kNoJob;  // the batch's job being read, if a batch
  bool corrupt_ = false;
  absl::Status first_error_;
  size_t unknown_ = 0, tiles_ = 0, instructions_ = 0, outputs_ = 0, waits_ = 0;
  size_t placed_ = 0;  // output_regions entries
  size_t assembly_bytes_ = 0;
  std::string id_;  // the Job's id, outside a batch
};

}  // namespace

absl::StatusOr<WireShape> CheckJobWire(
    google::protobuf::io::ZeroCopyInputStream* bytes, size_t size,
    const EngineLimits& limits) {
  if (size > static_cast<size_t>(INT32_MAX)) {
    return absl::ResourceExhaustedError("a request is at most 2^31 bytes");
  }
  return WireScan(bytes, size, limits).Run();
}

absl::StatusOr<BatchShape> CheckJobBatchWire(
    google::protobuf::io::ZeroCopyInputStream* bytes, size_t size,
    const EngineLimits& limits, size_t max_jobs) {
  if (size > static_cast<size_t>(INT32_MAX)) {
    return absl::ResourceExhaustedError("a request is at most 2^31 bytes");
  }
  return WireScan(bytes, size, limits).RunBatch(max_jobs);
}

}  // namespace ptoserve
