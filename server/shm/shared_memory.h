// Shared-memory regions: ranges of POSIX shared-memory objects that clients
// on the server's host register under a name (the SharedMemory service), so
// that jobs read tiles from them and write outputs to them in place
// (Tile.shared, Job.output_regions) instead of copying them through gRPC.
//
// What a hostile client can do, and why it cannot crash the server
// (docs/SECURITY.md says more): the server maps only regular objects under
// /dev/shm whose name starts with the configured prefix, never through a
// symbolic link; every slice is checked against its region's bounds with
// arithmetic that cannot overflow before a job is admitted; the object's
// size is not read again per job (a system call each): an object cut
// short under a region faults (SIGBUS) when a job reads or writes a page
// past its new end, into a handler that puts zero pages in place of the
// missing ones, so the access completes and every job that used the
// mapping across the fault is answered FAILED_PRECONDITION naming the
// object's size; the next job reads the size, and is refused while the
// object is short, or maps it again once it is whole. The bytes themselves are
// only ever computed on, never read as sizes or offsets, so contents that
// change underneath a job give wrong elements, nothing worse.
#ifndef PTOSERVE_SERVER_SHM_SHARED_MEMORY_H_
#define PTOSERVE_SERVER_SHM_SHARED_MEMORY_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "proto/codec.h"
#include "ptoserve/v1/service.pb.h"
#include "server/exec/memory_budget.h"
#include "server/identity/peer_credentials.h"

namespace ptoserve {

struct SharedMemoryOptions {
  // Whether regions may be registered and used at all (--shared_memory);
  // unset: on exactly when every address the server listens on is a
  // loopback one (the server decides; the registry takes unset as off).
  std::optional<bool> enabled;
  // Every key must start with this ("/" and the start of a name).
  std::string key_prefix = "/ptoserve";
  // The most regions registered at once, by everyone and by one user.
  uint32_t max_regions = 64;
  uint32_t max_regions_per_user = 16;
  // A region is leased to the connection that registered it, unless it
  // asked to outlive it: it is unregistered this long after that
  // connection closes.
  absl::Duration lease_grace = absl::Seconds(10);
  // How often a thread of the registry's looks at leased regions'
  // connections (SweepLeases); zero: no thread, the owner sweeps. No flag:
  // the server sweeps at a fraction of lease_grace (server.cc).
  absl::Duration lease_sweep = absl::ZeroDuration();
};

// The most regions registered at once in one process, across servers.
inline constexpr uint32_t kMaxSharedRegions = 1024;

// One registered region, mapped. The registry and each job that uses it
// hold it; it is unmapped, and its bytes given back to the memory budget,
// when the last of them lets go.
class MappedRegion {
 public:
  ~MappedRegion();
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  const std::string& name() const { return name_; }
  uint64_t size() const { return size_; }
  uint8_t* data() const { return data_; }

  // The bytes of [offset, offset + size) of the region, or OUT_OF_RANGE
  // when they are not all in it. No overflow for any values.
  absl::StatusOr<absl::Span<uint8_t>> Slice(uint64_t offset,
                                            uint64_t size) const;

  // Before a job's first use of the region: the count of faults its
  // mapping has taken (MappingFaults), for CheckNoFaultSince once the job
  // is done. No system call while the mapping is whole. After a fault
  // (the object was cut short under a job, and zero pages replaced the
  // rest of the mapping) the object's size is read: FAILED_PRECONDITION
  // naming it while the object is too short for the region, else the
  // object is mapped again over the whole region, and the region serves
  // again.
  absl::StatusOr<uint64_t> Enter() const;
  // OK when no access to the mapping faulted since Enter returned
  // `entered`; else FAILED_PRECONDITION naming the object's size now: the
  // job's bytes were not all the object's.
  absl::Status CheckNoFaultSince(uint64_t entered) const;

  // Where the region lies, as an object and a byte range in it: two
  // regions of one object share bytes where their ranges overlap.
  struct Extent {
    dev_t device;
    ino_t inode;
    uint64_t begin;  // in the object
  };
  const Extent& extent() const { return extent_; }

  // The region as List and Unregister describe it.
  v1::Region Describe() const;

  // OK when user `caller` could open the region's object for reading and
  // writing itself (CallerMayMap, with its owner and mode at Register), so
  // that the server does not read or write it for anyone who could not.
  absl::Status MayUse(uid_t caller) const;

 private:
  friend class SharedMemoryRegistry;
  friend class RegionUse;
  MappedRegion() = default;

  std::string name_, key_;
  uint64_t offset_ = 0, size_ = 0;
  // The connection it is leased to; none: it outlives it. The registry's
  // lock guards them, and when the connection was seen closed.
  std::optional<PeerConnection> lease_;
  absl::Time closed_at_ = absl::InfiniteFuture();
  uid_t owner_ = 0;      // the object's, at Register
  uid_t registrar_ = 0;  // the user whose Register call made it
  absl::Time registered_at_;
  mode_t mode_ = 0;
  Extent extent_{};
  int fd_ = -1;
  void* map_ = nullptr;  // page-aligned start of the mapping
  size_t map_bytes_ = 0;
  uint8_t* data_ = nullptr;  // the region's first byte, inside the mapping
  int guard_ = -1;           // its slot in the SIGBUS handler's table
  MemoryBudget::Hold hold_;
  std::shared_ptr<std::atomic<uint64_t>> mapped_bytes_;  // the registry's
  std::atomic<uint64_t> in_flight_{0};
  std::atomic<uint64_t> total_{0};
  off_t map_offset_ = 0;  // the mapping's first byte in the object
  // The fault count the mapping was last whole at (Enter maps it again
  // when the guard's count has moved past it), and the lock of that.
  mutable std::atomic<uint64_t> whole_at_{0};
  mutable absl::Mutex remap_mu_;

  absl::StatusOr<uint64_t> MapAgain() const;
  // FAILED_PRECONDITION naming the object's size when it no longer holds
  // every byte of the region (or cannot be read); OK otherwise.
  absl::Status CheckSize(absl::string_view after_fault) const;
};

// A job's hold on a region: counted in its jobs_in_flight while it lives.
class RegionUse {
 public:
  explicit RegionUse(std::shared_ptr<MappedRegion> region);
  ~RegionUse() { Release(); }
  RegionUse(RegionUse&& other) noexcept = default;  // leaves `other` empty
  RegionUse& operator=(RegionUse&& other) noexcept;

  MappedRegion& region() const { return *region_; }

 private:
  void Release();

  std::shared_ptr<MappedRegion> region_;
};

// OK when a process of user `caller` could open an object of user `owner`
// with permission bits `mode` for reading and writing: `caller` is root, or
// is `owner` with read and write permission, or every user has both. Group
// permission does not count (the server cannot see the caller's groups).
// Else PERMISSION_DENIED naming `key`, its owner and mode.
absl::Status CallerMayMap(uid_t caller, uid_t owner, mode_t mode,
                          absl::string_view key);

// The user a job's caller runs as, asked for when the job first names a
// region (server/identity/peer_credentials.h); null for callers inside the
// process, which are not checked.
using CallerUid = std::function<absl::StatusOr<uid_t>()>;

// The regions registered with one server.
class SharedMemoryRegistry {
 public:
  // `budget` must outlive the registry and every region it maps.
  SharedMemoryRegistry(const SharedMemoryOptions& options,
                       MemoryBudget* budget);

  const SharedMemoryOptions& options() const { return options_; }
  bool enabled() const { return options_.enabled.value_or(false); }

  // Stops the lease thread, if there is one.
  ~SharedMemoryRegistry();
  SharedMemoryRegistry(const SharedMemoryRegistry&) = delete;
  SharedMemoryRegistry& operator=(const SharedMemoryRegistry&) = delete;

  // SharedMemory.Register for a caller running as user `caller`: opens and
  // maps the object, counting the region's bytes against the memory
  // budget. The server maps only objects the caller could open for reading
  // and writing itself (CallerMayMap), never one it reaches through the
  // server's own permissions. The region is leased to `connection` (the
  // call's) unless the request asks it to outlive it or there is none.
  // Errors as service.proto says.
  absl::StatusOr<v1::Region> Register(
      const v1::RegisterRequest& request, uid_t caller,
      std::optional<PeerConnection> connection = std::nullopt);
  // SharedMemory.Unregister for a caller running as user `caller`: forgets
  // the name; the mapping lasts while jobs use it. NOT_FOUND for a name not
  // registered, PERMISSION_DENIED for a caller that may not use it
  // (MappedRegion::MayUse).
  absl::StatusOr<v1::Region> Unregister(absl::string_view name, uid_t caller);
  // SharedMemory.List, in name order.
  v1::ListResponse List() const;
  // Regions registered now, and the bytes mapped for regions registered or
  // still used by jobs (the metrics' gauges).
  size_t regions() const;
  uint64_t mapped_bytes() const {
    return mapped_bytes_->load(std::memory_order_relaxed);
  }

  // Looks at the connections of leased regions as of `now`: notes when
  // each is first seen closed, and unregisters those whose connection
  // closed options().lease_grace or more before `now` (jobs admitted
  // finish against them). Returns how many it unregistered.
  size_t SweepLeases(absl::Time now);
  // Regions unregistered so far because their connection closed.
  uint64_t leases_expired() const {
    return leases_expired_.load(std::memory_order_relaxed);
  }

  // The region named `name`, held for a job; NOT_FOUND when no region has
  // that name.
  absl::StatusOr<RegionUse> Use(absl::string_view name) const;

  // FAILED_PRECONDITION: the path is off.
  static absl::Status Off();

 private:
  // Why a region `name` of `caller` cannot be registered now: the name is
  // taken, or every slot (or the user's share of them) is.
  absl::Status CheckRoom(absl::string_view name, uid_t caller) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Opens and maps the object `request` names into `region`, checked
  // against what the caller could open and the object's size.
  absl::Status Map(const v1::RegisterRequest& request, uid_t caller,
                   MappedRegion* region) const;

  const SharedMemoryOptions options_;
  MemoryBudget* const budget_;
  // Shared with the regions, which may outlive a registration.
  std::shared_ptr<std::atomic<uint64_t>> mapped_bytes_ =
      std::make_shared<std::atomic<uint64_t>>(0);
  std::atomic<uint64_t> leases_expired_{0};
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<MappedRegion>, std::less<>> regions_
      ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread sweeper_;  // when options().lease_sweep is set
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_SHM_SHARED_MEMORY_H_
