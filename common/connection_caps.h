// Connections by client, as every listener counts them (gRPC's, the HTTP
// API's, /metrics'): at most so many in all and so many of one client,
// the client being who the shares say it is (a local user, an address, an
// IPv6 /64), not the address and port a connection comes from. When all
// are taken, the newest connection of the client holding most gives way to
// a newcomer of a client holding at least two fewer: a client that opens
// every connection it can keeps none of them from another, nor from a
// health probe; when every client holds as many, a newcomer is refused.
// Decisions only: the caller closes what it is told to. Thread-safe.
#ifndef PTOSERVE_COMMON_CONNECTION_CAPS_H_
#define PTOSERVE_COMMON_CONNECTION_CAPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace ptoserve {

class ConnectionCaps {
 public:
  // 0: no bound.
  ConnectionCaps(int max_total, int max_per_client)
      : max_total_(max_total), max_per_client_(max_per_client) {}

  struct Admission {
    bool admitted = false;
    // A connection to close to make room (admitted only): the newest of
    // the client holding most.
    std::optional<uint64_t> evict;
  };

  // A new connection `id` of `client`: refused when its client has
  // max_per_client already, or when all are taken and its client holds
  // the most; otherwise admitted, with another to evict when all are
  // taken. An evicted connection no longer counts. REQUIRES: `id` unique
  // among open connections.
  Admission Open(uint64_t id, const std::string& client);
  // Connection `id` closed (or was never admitted: then nothing).
  void Close(uint64_t id);

  size_t open() const;
  // The connections of `client` open now.
  int of(const std::string& client) const;
  // Refused for their client's cap, and evicted for a newcomer, so far.
  uint64_t refused() const;
  uint64_t evicted() const;

 private:
  // Counts a refusal of `client`'s newcomer, forgetting the client if it
  // has no connection.
  Admission Refuse(const std::string& client)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_total_;
  const int max_per_client_;
  mutable absl::Mutex mu_;
  // Each client's connections, oldest first; and each connection's client.
  absl::flat_hash_map<std::string, std::vector<uint64_t>> by_client_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::string> client_of_ ABSL_GUARDED_BY(mu_);
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evicted_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ptoserve

#endif  // PTOSERVE_COMMON_CONNECTION_CAPS_H_
