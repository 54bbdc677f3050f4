#include "server/exec/memory_budget.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/full_for_now.h"
#include "common/setting_names.h"

namespace ptoserve {
namespace {

// Adds `bytes` to `held` unless that would pass `limit`; false then.
bool TryAdd(std::atomic<uint64_t>* held, uint64_t bytes, uint64_t limit,
            uint64_t* seen) {
  uint64_t now = held->load(std::memory_order_relaxed);
  do {
    if (bytes > limit || now > limit - bytes) {
      *seen = now;
      return false;
    }
  } while (!held->compare_exchange_weak(now, now + bytes,
                                        std::memory_order_relaxed));
  return true;
}

}  // namespace

MemoryBudget::Hold& MemoryBudget::Hold::operator=(Hold&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = other.budget_;
    share_ = std::move(other.share_);
    bytes_ = other.bytes_;
    other.budget_ = nullptr;
    other.share_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void MemoryBudget::Hold::Release() {
  if (budget_ != nullptr) {
    budget_->held_.fetch_sub(bytes_, std::memory_order_relaxed);
    if (share_ != nullptr) {
      share_->held_.fetch_sub(bytes_, std::memory_order_relaxed);
    }
    budget_ = nullptr;
    share_ = nullptr;
    bytes_ = 0;
  }
}

MemoryBudget::MemoryBudget(uint64_t limit_bytes, uint64_t client_limit_bytes)
    : limit_(limit_bytes),
      client_limit_(client_limit_bytes == 0
                        ? limit_bytes
                        : std::min(client_limit_bytes, limit_bytes)) {}

absl::StatusOr<MemoryBudget::Hold> MemoryBudget::Reserve(
    uint64_t bytes, std::shared_ptr<Share> share) {
  uint64_t seen = 0;
  if (share != nullptr && !TryAdd(&share->held_, bytes, share->limit_, &seen)) {
    refused_share_.fetch_add(1, std::memory_order_relaxed);
    return FullForNowError(absl::StrFormat(
        "this client's share of the server's memory budget is full: this "
        "job needs %u bytes and %u of the %u a client may hold (%s) are "
        "held by its calls in flight; read their results, or retry later",
        bytes, seen, share->limit_, SettingName(Setting::kClientMemory)));
  }
  if (!TryAdd(&held_, bytes, limit_, &seen)) {
    if (share != nullptr) {
      share->held_.fetch_sub(bytes, std::memory_order_relaxed);
    }
    refused_full_.fetch_add(1, std::memory_order_relaxed);
    return FullForNowError(absl::StrFormat(
        "the server's memory budget is full: this job needs %u bytes and "
        "%u of %u (%s) are held by jobs in flight and registered "
        "shared-memory regions; retry later",
        bytes, seen, limit_, SettingName(Setting::kMemoryBudget)));
  }
  return Hold(this, std::move(share), bytes);
}

std::shared_ptr<MemoryBudget::Share> MemoryBudget::ShareOf(
    absl::string_view client) {
  absl::MutexLock lock(&clients_->mu);
  std::weak_ptr<Share>& slot = clients_->shares[client];
  if (std::shared_ptr<Share> share = slot.lock()) return share;
  // The last holder's deleter takes the entry out, unless a new share has
  // taken its place by then.
  std::shared_ptr<Share> share(
      new Share(std::string(client), client_limit_),
      [clients = clients_](Share* gone) {
        {
          absl::MutexLock lock(&clients->mu);
          auto it = clients->shares.find(gone->client());
          if (it != clients->shares.end() && it->second.expired()) {
            clients->shares.erase(it);
          }
        }
        delete gone;
      });
  slot = share;
  return share;
}

size_t MemoryBudget::clients() const {
  absl::MutexLock lock(&clients_->mu);
  return clients_->shares.size();
}

uint64_t MemoryBudget::largest_share_held() const {
  // Each share is let go of after the lock: the last one to go would take
  // the lock again in its deleter.
  std::vector<std::shared_ptr<Share>> shares;
  {
    absl::MutexLock lock(&clients_->mu);
    shares.reserve(clients_->shares.size());
    for (const auto& [name, weak] : clients_->shares) {
      if (std::shared_ptr<Share> share = weak.lock()) {
        shares.push_back(std::move(share));
      }
    }
  }
  uint64_t largest = 0;
  for (const std::shared_ptr<Share>& share : shares) {
    largest = std::max(largest, share->held());
  }
  return largest;
}

}  // namespace ptoserve
