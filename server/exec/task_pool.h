// A few threads that run tasks from a bounded queue shared fairly by
// clients: where the service decodes requests too large to decode on
// gRPC's own threads (which every other call, health checks included,
// needs), and where the dispatcher builds large results.
//
// Tasks carry the client they work for, and what they cost (the bytes a
// decoder parses). The threads take the client that has been served the
// least cost so far among those with tasks waiting, one task at a time
// (start-time fair queuing: a client that had no task waiting comes back
// level with the least served, with no credit for its idle time). Equal
// costs make it round robin; a client whose tasks cost a megabyte each
// waits while another's of a kilobyte run a thousand, so that turns are
// shared by cost, not by count. A client runs at most all threads but one
// at once, so that a thread is free for another client's task when it
// comes rather than once a long one ends. And each client may have at
// most a part of the queue, so that one client's tasks never fill it for
// the others.
#ifndef PTOSERVE_SERVER_EXEC_TASK_POOL_H_
#define PTOSERVE_SERVER_EXEC_TASK_POOL_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace ptoserve {

class TaskPool {
 public:
  // `threads` threads; at most `capacity` tasks wait at once, at most
  // `client_capacity` (0: `capacity`) of them for one client.
  TaskPool(int threads, size_t capacity, size_t client_capacity = 0);
  // Shutdown().
  ~TaskPool();

  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  enum class Posted { kQueued, kFull, kClientFull, kStopping };
  // Queues `task` for `client` (any address that names it; null: the
  // server's own) and returns kQueued; otherwise `task` is dropped unrun,
  // and the answer says why: the queue is full, or the client's part of
  // it, or the pool is shutting down.
  // `cost`: what running it takes, in any unit the pool's callers share
  // (the decoders: bytes), at least 1.
  Posted Post(std::function<void()> task, const void* client = nullptr,
              uint64_t cost = 1) ABSL_LOCKS_EXCLUDED(mu_);

  // Refuses new tasks, runs every queued one, and joins the threads.
  // Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // Whether Shutdown has begun (Post refuses everything from then on).
  bool Stopping() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Work() ABSL_LOCKS_EXCLUDED(mu_);

  const size_t capacity_;
  const size_t client_capacity_;
  absl::Mutex mu_;
  struct Queued {
    std::function<void()> task;
    uint64_t cost;
  };
  struct Client {
    std::deque<Queued> tasks;
    uint64_t served = 0;  // the cost of its tasks taken since it arrived
    int running = 0;
  };
  // Whether a task may be taken: one of a client below max_running_.
  bool Runnable() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next task: the oldest of the client served least (the first to
  // arrive among equals) among those below max_running_; its client.
  // REQUIRES: Runnable().
  std::function<void()> Next(const void** client)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A task of `client` has ended.
  void Ended(const void* client) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_running_;
  // The clients with tasks waiting or running, and the order they arrived
  // in (those with tasks waiting only).
  absl::flat_hash_map<const void*, Client> clients_ ABSL_GUARDED_BY(mu_);
  std::vector<const void*> arrived_ ABSL_GUARDED_BY(mu_);
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_EXEC_TASK_POOL_H_
