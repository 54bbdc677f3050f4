#include "server/shm/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/full_for_now.h"
#include "common/mutex.h"
#include "common/setting_names.h"
#include "core/quote.h"
#include "core/status_macros.h"
#include "server/shm/sigbus_guard.h"

namespace ptoserve {

// Every registered region has a slot in the SIGBUS guard's table.
static_assert(kMaxSharedRegions <= kGuardSlots);

namespace {

absl::Status CheckName(absl::string_view name) {
  if (name.empty()) {
    return absl::InvalidArgumentError("name is not set; name the region");
  }
  if (name.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("name %s is longer than names may be (%u bytes)",
                        ShortQuote(name), kMaxNameBytes));
  }
  return absl::OkStatus();
}

// A key shm_open takes as one name in /dev/shm, starting with `prefix`.
absl::Status CheckKey(absl::string_view key, absl::string_view prefix) {
  constexpr size_t kMaxKeyBytes = 255;  // NAME_MAX, after the "/"
  if (key.empty()) {
    return absl::InvalidArgumentError(
        "key is not set; give the shared-memory object's name, e.g. "
        "\"/ptoserve-1\"");
  }
  if (key.size() > kMaxKeyBytes + 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("key %s is longer than an object name may be (a "
                        "\"/\" and %u bytes)",
                        ShortQuote(key), kMaxKeyBytes));
  }
  if (key[0] != '/' || key.find('/', 1) != absl::string_view::npos ||
      key.find('\0') != absl::string_view::npos || key == "/" || key == "/." ||
      key == "/..") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "key %s is not a shared-memory object name: \"/\" then a name with "
        "no \"/\"",
        ShortQuote(key)));
  }
  if (!absl::StartsWith(key, prefix)) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "key %s does not start with %s, as every key on this server must "
        "(%s)",
        ShortQuote(key), ShortQuote(prefix),
        SettingName(Setting::kSharedMemoryPrefix)));
  }
  return absl::OkStatus();
}

// The error for `what` failing on object `key` with `err`.
absl::Status OpenError(int err, absl::string_view key) {
  const std::string message = absl::StrFormat("shared-memory object %s: %s",
                                              ShortQuote(key), strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case ELOOP:
      return absl::PermissionDeniedError(
          absl::StrCat(message, " (a symbolic link, which is never followed)"));
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InvalidArgumentError(message);
  }
}

// [offset, offset + size) within `limit`, without overflow.
bool Within(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

}  // namespace

// --- MappedRegion -----------------------------------------------------------

MappedRegion::~MappedRegion() {
  if (guard_ >= 0) UnguardMapping(guard_);
  if (map_ != nullptr) {
    munmap(map_, map_bytes_);
    mapped_bytes_->fetch_sub(map_bytes_, std::memory_order_relaxed);
  }
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<absl::Span<uint8_t>> MappedRegion::Slice(uint64_t offset,
                                                        uint64_t size) const {
  if (size == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the slice of region %s has size 0; give the tile's bytes",
        ShortQuote(name_)));
  }
  if (!Within(offset, size, size_)) {
    return absl::OutOfRangeError(absl::StrFormat(
        "the slice at offset %u of %u bytes reaches past the end of region "
        "%s (%u bytes)",
        offset, size, ShortQuote(name_), size_));
  }
  return absl::MakeSpan(data_ + offset, size);
}

absl::StatusOr<uint64_t> MappedRegion::Enter() const {
  const uint64_t faults = MappingFaults(guard_);
  if (faults == whole_at_.load(std::memory_order_acquire)) return faults;
  return MapAgain();
}

absl::StatusOr<uint64_t> MappedRegion::MapAgain() const {
  MutexLock lock(&remap_mu_);
  // Read before the size and the new mapping: a fault after this point
  // counts past it, and the next job maps the region again.
  const uint64_t faults = MappingFaults(guard_);
  if (faults == whole_at_.load(std::memory_order_relaxed)) return faults;
  PTO_RETURN_IF_ERROR(CheckSize(""));
  // One call replaces the zero pages, under the kernel's lock of the
  // address space: a job still running against the old pages (it fails,
  // as its count moved) sees either them or the object's, never a hole.
  void* map = mmap(map_, map_bytes_, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_FIXED, fd_, map_offset_);
  if (map != map_) {
    const int err = errno;
    // Whatever a failed call left there becomes zero pages again, as the
    // guard would have made them, so that no access meets a hole.
    mmap(map_, map_bytes_, PROT_READ | PROT_WRITE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "region %s: mapping shared-memory object %s again after a fault: %s",
        ShortQuote(name_), ShortQuote(key_), strerror(err)));
  }
  whole_at_.store(faults, std::memory_order_release);
  return faults;
}

absl::Status MappedRegion::CheckSize(absl::string_view after_fault) const {
  struct stat st;
  if (fstat(fd_, &st) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "region %s: %s%s", ShortQuote(name_), strerror(errno), after_fault));
  }
  if (!Within(offset_, size_, static_cast<uint64_t>(st.st_size))) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "region %s: shared-memory object %s is now %d bytes, too short for "
        "the region (offset %u, %u bytes)%s; make the object large again "
        "(the next job maps it again), or unregister the region",
        ShortQuote(name_), ShortQuote(key_), st.st_size, offset_, size_,
        after_fault));
  }
  return absl::OkStatus();
}

absl::Status MappedRegion::CheckNoFaultSince(uint64_t entered) const {
  if (MappingFaults(guard_) == entered) return absl::OkStatus();
  constexpr absl::string_view kFaulted =
      ", and an access to it faulted while a job used it: the job's bytes "
      "were not all the object's";
  PTO_RETURN_IF_ERROR(CheckSize(kFaulted));
  // Whole again, or never short: /dev/shm had no room for a page.
  return absl::FailedPreconditionError(absl::StrFormat(
      "region %s: shared-memory object %s faulted while a job used it (it "
      "was cut short, or /dev/shm had no room for its pages): the job's "
      "bytes were not all the object's; the next job maps it again",
      ShortQuote(name_), ShortQuote(key_)));
}

v1::Region MappedRegion::Describe() const {
  v1::Region region;
  region.set_name(name_);
  region.set_key(key_);
  region.set_offset(offset_);
  region.set_size(size_);
  region.set_jobs_in_flight(in_flight_.load(std::memory_order_relaxed));
  region.set_jobs_total(total_.load(std::memory_order_relaxed));
  region.set_registered_by_uid(registrar_);
  region.set_outlives_connection(!lease_.has_value());
  region.set_connection_closed(closed_at_ != absl::InfiniteFuture());
  *region.mutable_registered_at() = ToTimestamp(registered_at_);
  return region;
}

absl::Status MappedRegion::MayUse(uid_t caller) const {
  return CallerMayMap(caller, owner_, mode_, key_);
}

RegionUse::RegionUse(std::shared_ptr<MappedRegion> region)
    : region_(std::move(region)) {
  region_->in_flight_.fetch_add(1, std::memory_order_relaxed);
  region_->total_.fetch_add(1, std::memory_order_relaxed);
}

RegionUse& RegionUse::operator=(RegionUse&& other) noexcept {
  if (this != &other) {
    Release();
    region_ = std::move(other.region_);
  }
  return *this;
}

void RegionUse::Release() {
  if (region_ != nullptr) {
    region_->in_flight_.fetch_sub(1, std::memory_order_relaxed);
    region_ = nullptr;
  }
}

// --- SharedMemoryRegistry ---------------------------------------------------

SharedMemoryRegistry::SharedMemoryRegistry(const SharedMemoryOptions& options,
                                           MemoryBudget* budget)
    : options_(options), budget_(budget) {
  if (!enabled() || options_.lease_sweep <= absl::ZeroDuration()) {
    return;
  }
  sweeper_ = std::thread([this] {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                                 options_.lease_sweep)) {
          return;
        }
      }
      SweepLeases(absl::Now());
    }
  });
}

SharedMemoryRegistry::~SharedMemoryRegistry() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (sweeper_.joinable()) sweeper_.join();
}

size_t SharedMemoryRegistry::SweepLeases(absl::Time now) {
  // The connections are looked at outside the lock (an address one reads
  // the kernel's socket tables), so that jobs naming regions never wait
  // for it.
  std::vector<std::shared_ptr<MappedRegion>> leased;
  std::vector<PeerConnection> connections;
  {
    MutexLock lock(&mu_);
    for (const auto& [name, region] : regions_) {
      if (!region->lease_.has_value()) continue;
      leased.push_back(region);
      connections.push_back(*region->lease_);
    }
  }
  if (leased.empty()) return 0;
  const std::vector<bool> open = ConnectionsOpen(connections);
  std::vector<std::shared_ptr<MappedRegion>> expired;  // unmapped unlocked
  MutexLock lock(&mu_);
  for (size_t i = 0; i < leased.size(); ++i) {
    if (open[i]) continue;
    MappedRegion& region = *leased[i];
    auto it = regions_.find(region.name_);
    if (it == regions_.end() || it->second != leased[i]) continue;  // gone
    // A connection that closed never opens again.
    if (region.closed_at_ == absl::InfiniteFuture()) region.closed_at_ = now;
    if (now - region.closed_at_ < options_.lease_grace) continue;
    expired.push_back(std::move(it->second));
    regions_.erase(it);
  }
  leases_expired_.fetch_add(expired.size(), std::memory_order_relaxed);
  return expired.size();
}

absl::Status SharedMemoryRegistry::Off() {
  return absl::FailedPreconditionError(absl::StrFormat(
      "shared memory is off on this server (%s; it is off by default when "
      "the server listens beyond loopback)",
      SettingName(Setting::kSharedMemory)));
}

absl::Status CallerMayMap(uid_t caller, uid_t owner, mode_t mode,
                          absl::string_view key) {
  constexpr mode_t kOwnerRw = S_IRUSR | S_IWUSR, kOtherRw = S_IROTH | S_IWOTH;
  if (caller == 0) return absl::OkStatus();
  if (owner == caller && (mode & kOwnerRw) == kOwnerRw) {
    return absl::OkStatus();
  }
  if ((mode & kOtherRw) == kOtherRw) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrFormat(
      "shared-memory object %s belongs to user %u with mode %04o: the caller "
      "(user %u) could not open it for reading and writing, so the server "
      "does not map or use it for the caller (group permission does not "
      "count)",
      ShortQuote(key), owner, mode & 07777, caller));
}

absl::Status SharedMemoryRegistry::CheckRoom(absl::string_view name,
                                             uid_t caller) const {
  if (regions_.count(name) != 0) {
    return absl::AlreadyExistsError(absl::StrFormat(
        "region %s is already registered; unregister it first, or choose "
        "another name",
        ShortQuote(name)));
  }
  if (regions_.size() >= options_.max_regions) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%u regions are registered, the most this server keeps "
        "(%s); unregister one first",
        regions_.size(), SettingName(Setting::kMaxSharedRegions)));
  }
  // One user's regions never take every slot from the others.
  uint32_t callers = 0;
  for (const auto& [other, region] : regions_) {
    callers += region->registrar_ == caller ? 1 : 0;
  }
  if (callers >= options_.max_regions_per_user) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "user %d has %u regions registered, the most one user may (%s); "
        "unregister one first",
        caller, callers, SettingName(Setting::kMaxSharedRegionsPerUser)));
  }
  return absl::OkStatus();
}

absl::Status SharedMemoryRegistry::Map(const v1::RegisterRequest& request,
                                       uid_t caller,
                                       MappedRegion* region) const {
  const uint64_t offset = request.offset(), size = request.size();
  // shm_open adds O_NOFOLLOW: a symbolic link in /dev/shm is refused.
  region->fd_ = shm_open(request.key().c_str(), O_RDWR | O_CLOEXEC, 0);
  if (region->fd_ < 0) return OpenError(errno, request.key());
  struct stat st;
  if (fstat(region->fd_, &st) != 0) return OpenError(errno, request.key());
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("shared-memory object %s is not a regular object",
                        ShortQuote(request.key())));
  }
  PTO_RETURN_IF_ERROR(
      CallerMayMap(caller, st.st_uid, st.st_mode, request.key()));
  if (!Within(offset, size, static_cast<uint64_t>(st.st_size))) {
    return absl::OutOfRangeError(absl::StrFormat(
        "the region at offset %u of %u bytes reaches past the end of "
        "shared-memory object %s (%d bytes)",
        offset, size, ShortQuote(request.key()), st.st_size));
  }
  const uint64_t page = PageBytes();
  const uint64_t start = offset - offset % page;
  const uint64_t span = offset - start + size;
  const uint64_t rounded = (span + page - 1) / page * page;
  void* map = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_SHARED,
                   region->fd_, static_cast<off_t>(start));
  if (map == MAP_FAILED) return OpenError(errno, request.key());
  region->map_ = map;
  region->map_bytes_ = span;
  region->map_offset_ = static_cast<off_t>(start);
  region->mapped_bytes_ = mapped_bytes_;
  mapped_bytes_->fetch_add(span, std::memory_order_relaxed);
  region->data_ = static_cast<uint8_t*>(map) + (offset - start);
  region->extent_ = {st.st_dev, st.st_ino, offset};
  region->owner_ = st.st_uid;
  region->mode_ = st.st_mode;
  const uintptr_t base = reinterpret_cast<uintptr_t>(map);
  region->guard_ = GuardMapping(base, base + rounded);
  if (region->guard_ < 0) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("this process maps %u regions, the most it can watch",
                        kMaxSharedRegions));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Region> SharedMemoryRegistry::Register(
    const v1::RegisterRequest& request, uid_t caller,
    std::optional<PeerConnection> connection) {
  if (!enabled()) return Off();
  PTO_RETURN_IF_ERROR(CheckName(request.name()));
  PTO_RETURN_IF_ERROR(CheckKey(request.key(), options_.key_prefix));
  const uint64_t offset = request.offset(), size = request.size();
  if (size == 0) {
    return absl::InvalidArgumentError(
        "size is 0; a region holds at least one byte");
  }
  if (!Within(offset, size, std::numeric_limits<int64_t>::max())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "offset %u + size %u is past any object's end (2^63 bytes)", offset,
        size));
  }
  MutexLock lock(&mu_);
  PTO_RETURN_IF_ERROR(CheckRoom(request.name(), caller));
  absl::StatusOr<MemoryBudget::Hold> hold = budget_->Reserve(size);
  if (!hold.ok()) {
    return FullForNowError(absl::StrFormat(
        "region %s of %u bytes does not fit in the memory budget: %u of %u "
        "bytes are held now (%s); mapped regions count against it",
        ShortQuote(request.name()), size, budget_->held(), budget_->limit(),
        SettingName(Setting::kMemoryBudget)));
  }
  // Held by a unique_ptr until it is complete: an error on the way closes
  // and unmaps whatever was done.
  std::unique_ptr<MappedRegion> region(new MappedRegion());
  region->name_ = request.name();
  region->key_ = request.key();
  region->offset_ = offset;
  region->size_ = size;
  region->hold_ = std::move(*hold);
  region->registrar_ = caller;
  region->registered_at_ = absl::Now();
  if (!request.outlive_connection()) region->lease_ = std::move(connection);
  PTO_RETURN_IF_ERROR(Map(request, caller, region.get()));
  v1::Region described = region->Describe();
  regions_.emplace(request.name(),
                   std::shared_ptr<MappedRegion>(std::move(region)));
  return described;
}

absl::StatusOr<v1::Region> SharedMemoryRegistry::Unregister(
    absl::string_view name, uid_t caller) {
  if (!enabled()) return Off();
  PTO_RETURN_IF_ERROR(CheckName(name));
  std::shared_ptr<MappedRegion> region;
  {
    MutexLock lock(&mu_);
    auto it = regions_.find(name);
    if (it == regions_.end()) {
      return absl::NotFoundError(
          absl::StrFormat("no region %s is registered", ShortQuote(name)));
    }
    PTO_RETURN_IF_ERROR(it->second->MayUse(caller));
    region = std::move(it->second);
    regions_.erase(it);
  }
  return region->Describe();
}

v1::ListResponse SharedMemoryRegistry::List() const {
  v1::ListResponse list;
  MutexLock lock(&mu_);
  for (const auto& [name, region] : regions_) {
    *list.add_regions() = region->Describe();
  }
  return list;
}

size_t SharedMemoryRegistry::regions() const {
  MutexLock lock(&mu_);
  return regions_.size();
}

absl::StatusOr<RegionUse> SharedMemoryRegistry::Use(
    absl::string_view name) const {
  if (!enabled()) return Off();
  std::shared_ptr<MappedRegion> region;
  {
    MutexLock lock(&mu_);
    auto it = regions_.find(name);
    if (it != regions_.end()) region = it->second;
  }
  if (region == nullptr) {
    return absl::NotFoundError(
        absl::StrFormat("no region %s is registered (SharedMemory.Register)",
                        ShortQuote(name)));
  }
  return RegionUse(std::move(region));
}

}  // namespace ptoserve
