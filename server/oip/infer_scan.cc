// ScanInferRequest: a serialized ModelInferRequest's fields counted and
// bounded before it is parsed, from the protocol's field numbers alone.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/quote.h"
#include "server/oip/infer.h"

namespace ptoserve {

namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// The wire scan's walk of one message: its fields counted and bounded.
class InferScan {
 public:
  InferScan(CodedInputStream* in, const EngineLimits& limits)
      : in_(in), limits_(limits) {}

  absl::Status Request(WireShape* shape) {
    size_t unknown = 0, parameters = 0, outputs = 0, raw = 0;
    while (uint32_t tag = in_->ReadTag()) {
      const int field = WireFormatLite::GetTagFieldNumber(tag);
      const bool len = WireFormatLite::GetTagWireType(tag) ==
                       WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
      uint32_t size = 0;
      if (field >= 1 && field <= 7 && (!len || !in_->ReadVarint32(&size))) {
        return Corrupt();
      }
      switch (field) {
        case 1:
        case 2:
        case 3:
          if (size > kMaxNameBytes) {
            return absl::InvalidArgumentError(
                absl::StrFormat("%s is %u bytes, over the %u a name may be",
                                field == 1   ? "model_name"
                                : field == 2 ? "model_version"
                                             : "id",
                                size, kMaxNameBytes));
          }
          if (!in_->Skip(size)) return Corrupt();
          break;
        case 4:
          if (++parameters > kMaxInferParameters)
            return TooMany("parameters", kMaxInferParameters);
          shape->json_bytes += size;  // a job in JSON, if it is one
          if (!in_->Skip(size)) return Corrupt();
          break;
        case 5: {
          if (++shape->tiles > limits_.max_tiles_per_job)
            return TooMany("inputs", limits_.max_tiles_per_job);
          const auto limit = in_->PushLimit(size);
          if (absl::Status s = Input(); !s.ok()) return s;
          in_->PopLimit(limit);
          break;
        }
        case 6: {
          if (++outputs > limits_.max_tiles_per_job)
            return TooMany("outputs", limits_.max_tiles_per_job);
          const auto limit = in_->PushLimit(size);
          if (absl::Status s = WithParameters(2, "an output"); !s.ok())
            return s;
          in_->PopLimit(limit);
          break;
        }
        case 7:
          if (++raw > limits_.max_tiles_per_job)
            return TooMany("raw_input_contents", limits_.max_tiles_per_job);
          if (!in_->Skip(size)) return Corrupt();
          break;
        default:
          if (++unknown > kMaxUnknown) return Unknown();
          if (!WireFormatLite::SkipField(in_, tag)) return Corrupt();
      }
    }
    if (!in_->ConsumedEntireMessage()) return Corrupt();
    shape->instructions = 1;
    return absl::OkStatus();
  }

 private:
  static constexpr size_t kMaxUnknown = 16;

  static absl::Status Corrupt() {
    return absl::InvalidArgumentError(
        "is not an inference.ModelInferRequest: its protobuf encoding is "
        "truncated or corrupt");
  }
  static absl::Status TooMany(const char* what, size_t limit) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the request has more than %u %s, the limit", limit, what));
  }
  static absl::Status Unknown() {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the request carries more than %u fields the protocol lacks",
        kMaxUnknown));
  }

  // An input tensor: its parameters counted, its contents' elements
  // bounded by what a tile may hold.
  absl::Status Input() {
    size_t unknown = 0, parameters = 0;
    while (uint32_t tag = in_->ReadTag()) {
      const int field = WireFormatLite::GetTagFieldNumber(tag);
      if (field == 4 || field == 5) {
        uint32_t size = 0;
        if (WireFormatLite::GetTagWireType(tag) !=
                WireFormatLite::WIRETYPE_LENGTH_DELIMITED ||
            !in_->ReadVarint32(&size)) {
          return Corrupt();
        }
        if (field == 4) {
          if (++parameters > kMaxInferParameters)
            return TooMany("parameters on an input", kMaxInferParameters);
          if (!in_->Skip(size)) return Corrupt();
          continue;
        }
        const auto limit = in_->PushLimit(size);
        if (absl::Status s = Contents(); !s.ok()) return s;
        in_->PopLimit(limit);
        continue;
      }
      if (field > 3 && ++unknown > kMaxUnknown) return Unknown();
      if (!WireFormatLite::SkipField(in_, tag)) return Corrupt();
    }
    return absl::OkStatus();
  }

  // Contents: int_contents and uint_contents only, at most a tile's
  // elements (packed or not).
  absl::Status Contents() {
    uint64_t elements = 0;
    while (uint32_t tag = in_->ReadTag()) {
      const int field = WireFormatLite::GetTagFieldNumber(tag);
      if (field != 2 && field != 4) {
        return absl::InvalidArgumentError(
            "an input's contents may hold int_contents (INT8, INT16, INT32) "
            "or uint_contents (UINT8, UINT16, UINT32) only");
      }
      if (WireFormatLite::GetTagWireType(tag) ==
          WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
        uint32_t size = 0;
        if (!in_->ReadVarint32(&size)) return Corrupt();
        const auto limit = in_->PushLimit(size);
        uint64_t v = 0;
        while (in_->BytesUntilLimit() > 0) {
          if (!in_->ReadVarint64(&v)) return Corrupt();
          ++elements;
        }
        in_->PopLimit(limit);
      } else {
        uint64_t v = 0;
        if (!in_->ReadVarint64(&v)) return Corrupt();
        ++elements;
      }
      if (elements > limits_.max_tile_bytes) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "an input's contents hold more than %u elements, more than a "
            "tile may hold",
            limits_.max_tile_bytes));
      }
    }
    return absl::OkStatus();
  }

  // An output: its parameters (field `number`) counted.
  absl::Status WithParameters(int number, const char* what) {
    size_t unknown = 0, parameters = 0;
    while (uint32_t tag = in_->ReadTag()) {
      const int field = WireFormatLite::GetTagFieldNumber(tag);
      if (field == number) {
        if (++parameters > kMaxInferParameters) {
          return TooMany(absl::StrCat("parameters on ", what).c_str(),
                         kMaxInferParameters);
        }
      } else if (field > number && ++unknown > kMaxUnknown) {
        return Unknown();
      }
      if (!WireFormatLite::SkipField(in_, tag)) return Corrupt();
    }
    return absl::OkStatus();
  }

  CodedInputStream* const in_;
  const EngineLimits& limits_;
};

}  // namespace

absl::StatusOr<WireShape> ScanInferRequest(
    google::protobuf::io::ZeroCopyInputStream* bytes, size_t size,
    const EngineLimits& limits) {
  CodedInputStream in(bytes);
  (void)size;  // gRPC's message limit bounds it
  WireShape shape;
  InferScan scan(&in, limits);
  if (absl::Status s = scan.Request(&shape); !s.ok()) return s;
  return shape;
}

}  // namespace ptoserve
