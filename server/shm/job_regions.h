// The shared-memory slices one job reads and writes (server/shm/
// shared_memory.h): each checked against its region's bounds, against the
// caller's right to the region's object, and against the job's other
// slices, with the region held until the job is done with it.
#ifndef PTOSERVE_SERVER_SHM_JOB_REGIONS_H_
#define PTOSERVE_SERVER_SHM_JOB_REGIONS_H_

#include <cstdint>
#include <optional>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/codec.h"
#include "server/shm/shared_memory.h"

namespace ptoserve {

// The slices one job reads and writes: the codec's SharedSlices, holding
// each region the job names until the job is done with it.
class JobRegions final : public SharedSlices {
 public:
  // `registry` must outlive the resolutions' use, not this object. Each
  // region the job names must be one the user `caller` names could open
  // (MappedRegion::MayUse); null `caller`: not checked.
  explicit JobRegions(const SharedMemoryRegistry* registry,
                      CallerUid caller = nullptr)
      : registry_(registry), caller_(std::move(caller)) {}

  absl::StatusOr<absl::Span<uint8_t>> Resolve(const v1::RegionSlice& slice,
                                              absl::string_view tile,
                                              bool write) override;
  absl::Status CheckOverlaps() const override;

  // Whether any slice was resolved.
  bool empty() const { return uses_.empty(); }
  // After the job ran: FAILED_PRECONDITION if an access to a region it
  // used faulted since the job's first use of it (the object was cut short
  // underneath it: its results are not to be trusted), naming the object's
  // size now.
  absl::Status CheckIntact() const;

 private:
  struct Claim {
    const MappedRegion::Extent* extent;
    uint64_t begin, end;     // in the object
    absl::string_view tile;  // the job's name for it (outlives the check)
    bool write;
  };

  const SharedMemoryRegistry* registry_;
  CallerUid caller_;
  std::optional<absl::StatusOr<uid_t>> caller_uid_;  // asked once a job
  // Inline for the usual job (a few slices of one or two regions): no heap
  // allocation per job.
  struct Held {
    RegionUse use;
    uint64_t entered;  // MappedRegion::Enter's fault count
  };
  absl::InlinedVector<Held, 2> uses_;  // each region once
  absl::InlinedVector<Claim, 4> claims_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_SHM_JOB_REGIONS_H_
