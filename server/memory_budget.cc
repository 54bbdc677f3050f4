#include "server/memory_budget.h"

#include "absl/strings/str_format.h"

namespace ptoserve {

MemoryBudget::Hold& MemoryBudget::Hold::operator=(Hold&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = other.budget_;
    bytes_ = other.bytes_;
    other.budget_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void MemoryBudget::Hold::Release() {
  if (budget_ != nullptr) {
    budget_->held_.fetch_sub(bytes_, std::memory_order_relaxed);
    budget_ = nullptr;
    bytes_ = 0;
  }
}

absl::StatusOr<MemoryBudget::Hold> MemoryBudget::Reserve(uint64_t bytes) {
  uint64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ || held > limit_ - bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the server's memory budget is full: this job needs %u bytes and "
          "%u of %u (--memory_budget_mb) are held by jobs in flight and "
          "registered shared-memory regions; retry later",
          bytes, held, limit_));
    }
  } while (!held_.compare_exchange_weak(held, held + bytes,
                                        std::memory_order_relaxed));
  return Hold(this, bytes);
}

}  // namespace ptoserve
