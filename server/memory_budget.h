// The memory a server lets its jobs hold at once. Every admitted job holds
// its estimated cost (its request, the tiles the engine makes, its result
// and the serialized reply) from admission until its reply has been handed
// to gRPC or, on a stream, written; a job that does not fit is refused at
// once instead of making the process grow without bound.
#ifndef PTOSERVE_SERVER_MEMORY_BUDGET_H_
#define PTOSERVE_SERVER_MEMORY_BUDGET_H_

#include <atomic>
#include <cstdint>

#include "absl/status/statusor.h"

namespace ptoserve {

class MemoryBudget {
 public:
  // A share of the budget; given back when destroyed. Movable.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& other) noexcept { *this = std::move(other); }
    Hold& operator=(Hold&& other) noexcept;
    ~Hold() { Release(); }

    uint64_t bytes() const { return bytes_; }
    void Release();

   private:
    friend class MemoryBudget;
    Hold(MemoryBudget* budget, uint64_t bytes)
        : budget_(budget), bytes_(bytes) {}

    MemoryBudget* budget_ = nullptr;
    uint64_t bytes_ = 0;
  };

  explicit MemoryBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // A hold on `bytes`, or RESOURCE_EXHAUSTED naming the figures when they
  // do not fit beside what is held now. REQUIRES: outlives the hold.
  absl::StatusOr<Hold> Reserve(uint64_t bytes);

  uint64_t limit() const { return limit_; }
  uint64_t held() const { return held_.load(std::memory_order_relaxed); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> held_{0};
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_MEMORY_BUDGET_H_
