// Protobuf's encoding read front to back, from a message's bytes alone (no
// generated code): the small-job paths' reader (proto/small_job.h,
// server/oip/infer_wire.h). Every read says whether it found what it asked
// for; a small path declines a request at the first that did not.
#ifndef PTOSERVE_PROTO_WIRE_READER_H_
#define PTOSERVE_PROTO_WIRE_READER_H_

#include <algorithm>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace ptoserve {

// Protobuf's wire types, as the fields the small paths cover use them.
inline constexpr int kWireVarint = 0;
inline constexpr int kWireBytes = 2;

class WireReader {
 public:
  explicit WireReader(absl::string_view bytes)
      : at_(reinterpret_cast<const uint8_t*>(bytes.data())),
        end_(at_ + bytes.size()) {}

  bool done() const { return at_ == end_; }

  // A value: at most 10 bytes.
  bool Varint(uint64_t* value) { return VarintOf<10>(value); }

  // A field's number and wire type; field 0 is no field.
  bool Tag(uint32_t* field, int* wire) {
    uint64_t tag = 0;
    if (!ShortVarint(&tag) || tag > UINT32_MAX || (tag >> 3) == 0) {
      return false;
    }
    *field = static_cast<uint32_t>(tag >> 3);
    *wire = static_cast<int>(tag & 7);
    return true;
  }

  bool Bytes(absl::string_view* out) {
    uint64_t length = 0;
    if (!ShortVarint(&length) || length > static_cast<uint64_t>(end_ - at_)) {
      return false;
    }
    *out = absl::string_view(reinterpret_cast<const char*>(at_), length);
    at_ += length;
    return true;
  }

  // A field of wire type `wire`: a varint into `value`, or bytes.
  bool VarintField(int wire, uint64_t* value) {
    return wire == kWireVarint && Varint(value);
  }
  bool BytesField(int wire, absl::string_view* out) {
    return wire == kWireBytes && Bytes(out);
  }

 private:
  // A tag or a length, which protobuf reads as at most 5 bytes (a value
  // may take 10): padded longer, protobuf refuses the message.
  bool ShortVarint(uint64_t* value) { return VarintOf<5>(value); }

  // A varint of at most kMaxBytes bytes.
  template <int kMaxBytes>
  bool VarintOf(uint64_t* value) {
    // Most varints of a small request (tags, lengths under 128, enums)
    // are a byte.
    if (at_ != end_ && *at_ < 0x80) {
      *value = *at_++;
      return true;
    }
    uint64_t v = 0;
    for (int shift = 0; shift < 7 * kMaxBytes && at_ != end_; shift += 7) {
      const uint8_t byte = *at_++;
      v |= uint64_t{byte & 0x7fu} << shift;
      if (byte < 0x80) {
        *value = v;
        return true;
      }
    }
    return false;
  }

  const uint8_t* at_;
  const uint8_t* const end_;
};

// Whether every byte of `text` is ASCII (and so valid UTF-8, as protobuf
// requires of a string).
inline bool WireAscii(absl::string_view text) {
  return std::none_of(text.begin(), text.end(), [](char c) {
    return static_cast<unsigned char>(c) >= 0x80;
  });
}

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_WIRE_READER_H_
