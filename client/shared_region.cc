#include "client/shared_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ptoserve {

namespace {

// A key no other region of this process has: prefix, pid, counter.
std::string NewKey(const std::string& prefix) {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(prefix, "-", getpid(), "-",
                      counter.fetch_add(1, std::memory_order_relaxed));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SharedRegion>> SharedRegion::Create(
    const Client& client, uint64_t bytes) {
  if (bytes == 0) {
    return absl::InvalidArgumentError("a region holds at least one byte");
  }
  absl::StatusOr<v1::Capabilities> caps = client.GetCapabilities();
  if (!caps.ok()) return caps.status();
  if (!caps->shared_memory().enabled()) {
    return absl::FailedPreconditionError(
        "the server has shared memory off (ptoserve --shared_memory)");
  }
  std::unique_ptr<SharedRegion> region(new SharedRegion());
  region->client_ = &client;
  region->key_ = NewKey(caps->shared_memory().key_prefix());
  region->name_ = region->key_.substr(1);
  const int fd = shm_open(region->key_.c_str(),
                          O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrFormat("shm_open(\"%s\"): %s", region->key_, strerror(errno)));
  }
  const int truncated = ftruncate(fd, static_cast<off_t>(bytes));
  const int error = errno;
  void* map = truncated == 0 ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                    MAP_SHARED, fd, 0)
                             : MAP_FAILED;
  const int map_error = errno;
  close(fd);
  if (map == MAP_FAILED) {
    shm_unlink(region->key_.c_str());
    return absl::ResourceExhaustedError(
        absl::StrFormat("a shared-memory object of %u bytes: %s", bytes,
                        strerror(truncated == 0 ? map_error : error)));
  }
  region->data_ = static_cast<uint8_t*>(map);
  region->size_ = bytes;
  v1::RegisterRequest request;
  request.set_name(region->name_);
  request.set_key(region->key_);
  request.set_size(bytes);
  absl::StatusOr<v1::Region> registered = client.RegisterRegion(request);
  if (!registered.ok()) return registered.status();  // the destructor frees
  region->registered_ = true;
  return region;
}

SharedRegion::~SharedRegion() {
  if (registered_) (void)client_->UnregisterRegion(name_);
  if (data_ != nullptr) munmap(data_, size_);
  if (!key_.empty() && data_ != nullptr) shm_unlink(key_.c_str());
}

absl::StatusOr<uint8_t*> SharedRegion::Reserve(size_t bytes) {
  constexpr uint64_t kAlign = 64;
  const uint64_t at = (used_ + kAlign - 1) / kAlign * kAlign;
  if (at > size_ || bytes > size_ - at) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("region \"%s\" has %u of %u bytes free; %u asked for",
                        name_, size_ - std::min(at, size_), size_, bytes));
  }
  used_ = at + bytes;
  return data_ + at;
}

absl::StatusOr<v1::RegionSlice> SharedRegion::SliceOf(const void* p,
                                                      size_t bytes) const {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const auto base = reinterpret_cast<uintptr_t>(data_);
  if (begin < base || begin - base > size_ || bytes > size_ - (begin - base)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%u bytes at %p are not all in region \"%s\"", bytes, p, name_));
  }
  v1::RegionSlice slice;
  slice.set_region(name_);
  slice.set_offset(begin - base);
  slice.set_size(bytes);
  return slice;
}

}  // namespace ptoserve
