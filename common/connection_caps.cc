#include "common/connection_caps.h"

#include <algorithm>

#include "common/mutex.h"

namespace ptoserve {

ConnectionCaps::Admission ConnectionCaps::Open(uint64_t id,
                                               const std::string& client) {
  MutexLock lock(&mu_);
  std::vector<uint64_t>& mine = by_client_[client];
  if (max_per_client_ > 0 && static_cast<int>(mine.size()) >= max_per_client_) {
    return Refuse(client);
  }
  Admission admission{true, std::nullopt};
  if (max_total_ > 0 && static_cast<int>(client_of_.size()) >= max_total_) {
    auto most = by_client_.end();
    for (auto it = by_client_.begin(); it != by_client_.end(); ++it) {
      if (most == by_client_.end() || it->second.size() > most->second.size()) {
        most = it;
      }
    }
    // Only a client holding at least two more than the newcomer's gives
    // way: else the newcomer's client is the one holding most (or as good
    // as), and it is the newcomer that is refused.
    if (most->second.size() < mine.size() + 2) return Refuse(client);
    const uint64_t victim = most->second.back();
    most->second.pop_back();
    if (most->second.empty()) by_client_.erase(most);
    client_of_.erase(victim);
    ++evicted_;
    admission.evict = victim;
  }
  // `mine` may have moved if the map rehashed when a client was erased.
  by_client_[client].push_back(id);
  client_of_[id] = client;
  return admission;
}

ConnectionCaps::Admission ConnectionCaps::Refuse(const std::string& client) {
  auto it = by_client_.find(client);
  if (it != by_client_.end() && it->second.empty()) by_client_.erase(it);
  ++refused_;
  return Admission{};
}

void ConnectionCaps::Close(uint64_t id) {
  MutexLock lock(&mu_);
  auto it = client_of_.find(id);
  if (it == client_of_.end()) return;
  auto client = by_client_.find(it->second);
  if (client != by_client_.end()) {
    std::vector<uint64_t>& ids = client->second;
    ids.erase(std::find(ids.begin(), ids.end(), id));
    if (ids.empty()) by_client_.erase(client);
  }
  client_of_.erase(it);
}

size_t ConnectionCaps::open() const {
  MutexLock lock(&mu_);
  return client_of_.size();
}

int ConnectionCaps::of(const std::string& client) const {
  MutexLock lock(&mu_);
  auto it = by_client_.find(client);
  return it == by_client_.end() ? 0 : static_cast<int>(it->second.size());
}

uint64_t ConnectionCaps::refused() const {
  MutexLock lock(&mu_);
  return refused_;
}

uint64_t ConnectionCaps::evicted() const {
  MutexLock lock(&mu_);
  return evicted_;
}

}  // namespace ptoserve
