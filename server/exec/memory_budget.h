// The memory a server lets its jobs hold at once. Every admitted job holds
// its estimated cost (its request, the tiles the engine makes, its result
// and the serialized reply) from admission until its reply has been handed
// to gRPC or, on a stream, written; a job that does not fit is refused at
// once instead of making the process grow without bound.
//
// Each client holds at most its share of the budget (a client is what the
// service says it is: a bearer token, or else one connection), so that one
// client cannot hold what every other client needs, however many calls it
// keeps waiting.
#ifndef PTOSERVE_SERVER_EXEC_MEMORY_BUDGET_H_
#define PTOSERVE_SERVER_EXEC_MEMORY_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace ptoserve {

class MemoryBudget {
 public:
  // What one client's calls hold together, at most the budget's share.
  class Share {
   public:
    Share(std::string client, uint64_t limit)
        : client_(std::move(client)), limit_(limit) {}
    const std::string& client() const { return client_; }
    uint64_t held() const { return held_.load(std::memory_order_relaxed); }

   private:
    friend class MemoryBudget;
    const std::string client_;
    const uint64_t limit_;
    std::atomic<uint64_t> held_{0};
  };

  // A part of the budget (and of a client's share); given back when
  // destroyed. Movable.
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
    Hold(MemoryBudget* budget, std::shared_ptr<Share> share, uint64_t bytes)
        : budget_(budget), share_(std::move(share)), bytes_(bytes) {}

    MemoryBudget* budget_ = nullptr;
    std::shared_ptr<Share> share_;
    uint64_t bytes_ = 0;
  };

  // `client_limit_bytes`: what one client may hold (0: the whole budget).
  explicit MemoryBudget(uint64_t limit_bytes, uint64_t client_limit_bytes = 0);
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // A hold on `bytes` for `share`'s client (null: the server's own, such as
  // a shared-memory region, bounded by the budget only), or
  // RESOURCE_EXHAUSTED naming the figures when they do not fit beside what
  // that client, or everyone, holds now. REQUIRES: outlives the hold.
  absl::StatusOr<Hold> Reserve(uint64_t bytes,
                               std::shared_ptr<Share> share = nullptr);

  // The share of `client` (a name the caller makes: "token 2",
  // "ipv4:127.0.0.1:40112"): the same one while any call of that client
  // holds it, a fresh one after. Thread-safe.
  std::shared_ptr<Share> ShareOf(absl::string_view client);

  uint64_t limit() const { return limit_; }
  uint64_t client_limit() const { return client_limit_; }
  uint64_t held() const { return held_.load(std::memory_order_relaxed); }
  // Clients with a call in progress, and the most any one of them holds.
  size_t clients() const;
  uint64_t largest_share_held() const;
  // Reservations refused because the budget was full, and because the
  // client's share was.
  uint64_t refused_full() const {
    return refused_full_.load(std::memory_order_relaxed);
  }
  uint64_t refused_share() const {
    return refused_share_.load(std::memory_order_relaxed);
  }

 private:
  // The clients' shares, by name; a share leaves when its last holder lets
  // go of it. Shared with each share's deleter, which may outlive the
  // budget.
  struct Clients {
    mutable absl::Mutex mu;
    absl::flat_hash_map<std::string, std::weak_ptr<Share>> shares
        ABSL_GUARDED_BY(mu);
  };

  const uint64_t limit_;
  const uint64_t client_limit_;
  std::atomic<uint64_t> held_{0};
  std::atomic<uint64_t> refused_full_{0};
  std::atomic<uint64_t> refused_share_{0};
  const std::shared_ptr<Clients> clients_ = std::make_shared<Clients>();
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_EXEC_MEMORY_BUDGET_H_
