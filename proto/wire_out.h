// Protobuf's encoding written from plain data, without a message: the
// reply writers of the small paths (proto/result_wire.h,
// server/oip/infer_wire.h). A writer describes its message once, as calls
// on a WireOut, and runs that description twice: counting (the message's
// length and each nested message's), then writing into exactly that many
// bytes.
#ifndef PTOSERVE_PROTO_WIRE_OUT_H_
#define PTOSERVE_PROTO_WIRE_OUT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "proto/wire_reader.h"

namespace ptoserve {

// The lengths of a message's nested messages, in the order they start.
using WireSizes = absl::InlinedVector<uint32_t, 16>;

// Protobuf's encoding, counted (kCount), then written: the same calls size
// a message and then write it, each pass compiled on its own. The count
// records each nested message's length in the order the messages start,
// and the writing reads them back in that order, so that each is sized
// once. Fields follow proto3's rules: a scalar or string at its default is
// left out, an element of a repeated field and a message that is set are
// not.
template <bool kCount>
class WireOut {
 public:
  // Counts, recording the nested messages' lengths in `sizes`.
  explicit WireOut(WireSizes* sizes) : sizes_(sizes) {}
  // Writes to `at`, with the lengths a count recorded.
  WireOut(uint8_t* at, const WireSizes& sizes)
      : at_(at), written_sizes_(&sizes) {}

  size_t count() const { return count_; }
  static constexpr bool counting() { return kCount; }

  void Varint(uint64_t v) {
    if constexpr (kCount) {
      // 1 byte per 7 bits, at least one.
      count_ += (64 - __builtin_clzll(v | 1) + 6) / 7;
    } else {
      while (v >= 0x80) {
        *at_++ = static_cast<uint8_t>(v | 0x80);
        v >>= 7;
      }
      *at_++ = static_cast<uint8_t>(v);
    }
  }
  void Raw(const void* bytes, size_t n) {
    if constexpr (kCount) {
      count_ += n;
    } else if (n > 0) {
      std::memcpy(at_, bytes, n);
      at_ += n;
    }
  }
  void Tag(int field, int wire) {
    Varint((static_cast<uint64_t>(field) << 3) | wire);
  }
  // uint32, uint64 and int64 alike; an int32 or enum is sign-extended.
  void Uint(int field, uint64_t v) {
    if (v == 0) return;
    Tag(field, kWireVarint);
    Varint(v);
  }
  void Int32(int field, int32_t v) {
    Uint(field, static_cast<uint64_t>(static_cast<int64_t>(v)));
  }
  void String(int field, absl::string_view s) {
    if (!s.empty()) Element(field, s);
  }
  // An element of a repeated string, or a map's key: written when empty.
  void Element(int field, absl::string_view s) {
    Tag(field, kWireBytes);
    Varint(s.size());
    Raw(s.data(), s.size());
  }
  // A message field that is set: its length, then what `body` writes.
  template <typename Body>
  void Message(int field, const Body& body) {
    if constexpr (kCount) {
      const size_t slot = sizes_->size();
      sizes_->push_back(0);
      const size_t before = count_;
      body(*this);
      const size_t size = count_ - before;
      (*sizes_)[slot] = static_cast<uint32_t>(size);
      Tag(field, kWireBytes);
      Varint(size);
    } else {
      const uint32_t size = (*written_sizes_)[next_++];
      Tag(field, kWireBytes);
      Varint(size);
      body(*this);
    }
  }

 private:
  uint8_t* at_ = nullptr;
  size_t count_ = 0;
  WireSizes* sizes_ = nullptr;
  const WireSizes* written_sizes_ = nullptr;
  size_t next_ = 0;
};

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_WIRE_OUT_H_
