// A shared-memory region from the client's side: a POSIX shared-memory
// object this process creates, maps and registers with a server, so that
// tiles laid out in it travel by reference (Tile.shared) and results are
// written straight into it (Job.output_regions) instead of through gRPC.
// For clients on the server's host.
//
//   auto region = ptoserve::SharedRegion::Create(*client, 3 * 256 * 4);
//   absl::Span<int32_t> a = *(*region)->Allocate<int32_t>(256);
//   absl::Span<int32_t> b = *(*region)->Allocate<int32_t>(256);
//   absl::Span<int32_t> c = *(*region)->Allocate<int32_t>(256);
//   ... fill a and b ...
//   auto job = ptoserve::SharedBinaryJob<int32_t>(
//       v1::OPCODE_TAND, **region, {.src0 = a, .src1 = b, .rows = 16,
//       .cols = 16}, c);
//   client->Execute(*job);  // c now holds a & b
//
// The region is unregistered, unmapped and its object removed when the
// SharedRegion is destroyed.
#ifndef PTOSERVE_CLIENT_SHARED_REGION_H_
#define PTOSERVE_CLIENT_SHARED_REGION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client/client.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {

class SharedRegion {
 public:
  // Creates a shared-memory object of `bytes` bytes named after the
  // server's key prefix (Capabilities.shared_memory), this process and a
  // counter, maps it and registers it with `client`'s server under the
  // same name. FAILED_PRECONDITION when the server has shared memory off;
  // the server's error when it refuses the region.
  // `client` must outlive the region.
  static absl::StatusOr<std::unique_ptr<SharedRegion>> Create(
      const Client& client, uint64_t bytes);

  // Unregisters the region (errors ignored), unmaps and removes the object.
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  // The region's name on the server, and the object's key.
  const std::string& name() const { return name_; }
  const std::string& key() const { return key_; }
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

  // `count` elements of T at the next 64-byte aligned offset, zero-filled
  // when the region was created; RESOURCE_EXHAUSTED when they do not fit.
  template <typename T>
  absl::StatusOr<absl::Span<T>> Allocate(size_t count) {
    absl::StatusOr<uint8_t*> at = Reserve(count * sizeof(T));
    if (!at.ok()) return at.status();
    return absl::MakeSpan(reinterpret_cast<T*>(*at), count);
  }

  // The slice of the region holding [p, p + bytes): INVALID_ARGUMENT when
  // those bytes are not all in it.
  absl::StatusOr<v1::RegionSlice> SliceOf(const void* p, size_t bytes) const;
  template <typename T>
  absl::StatusOr<v1::RegionSlice> SliceOf(absl::Span<const T> elements) const {
    return SliceOf(elements.data(), elements.size() * sizeof(T));
  }

 private:
  SharedRegion() = default;
  absl::StatusOr<uint8_t*> Reserve(size_t bytes);

  const Client* client_ = nullptr;
  std::string name_, key_;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t used_ = 0;
  bool registered_ = false;
};

// BinaryJob (client/client.h) with its operands in `region`: src0 and src1
// are sent as slices of it, and dst is written into `dst`, which must lie
// in it too. INVALID_ARGUMENT when a span is not in the region or is not
// rows * cols elements.
template <typename T>
absl::StatusOr<v1::Job> SharedBinaryJob(v1::Opcode opcode,
                                        const SharedRegion& region,
                                        const BinaryArgs<T>& args,
                                        absl::Span<T> dst) {
  const size_t n = size_t{args.rows} * args.cols;
  if (args.src0.size() != n || args.src1.size() != n || dst.size() != n) {
    return absl::InvalidArgumentError(
        "src0, src1 and dst must each hold rows * cols elements");
  }
  v1::Job job = BinaryJob<T>(opcode, args);
  for (const char* name : {"src0", "src1"}) {
    v1::Tile& tile = (*job.mutable_tiles())[name];
    absl::Span<const T> elements = name[3] == '0' ? args.src0 : args.src1;
    absl::StatusOr<v1::RegionSlice> slice = region.SliceOf(elements);
    if (!slice.ok()) return slice.status();
    tile.clear_data();
    *tile.mutable_shared() = *slice;
  }
  absl::StatusOr<v1::RegionSlice> out =
      region.SliceOf(absl::Span<const T>(dst.data(), dst.size()));
  if (!out.ok()) return out.status();
  (*job.mutable_output_regions())["dst"] = *out;
  return job;
}

}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_SHARED_REGION_H_
