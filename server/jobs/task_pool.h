// A few threads that run tasks from a bounded queue shared fairly by
// clients: where the service decodes requests too large to decode on
// gRPC's own threads (which every other call, health checks included,
// needs), and where the dispatcher builds large results.
//
// Tasks carry the client they work for. The threads take the clients in
// turn, one task each, so that a client with many tasks queued delays
// another's by at most one task per client ahead of it, not by all of its
// own; and each client may have at most a part of the queue, so that one
// client's tasks never fill it for the others.
#ifndef PTOSERVE_SERVER_JOBS_TASK_POOL_H_
#define PTOSERVE_SERVER_JOBS_TASK_POOL_H_

#include <cstddef>
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
  Posted Post(std::function<void()> task, const void* client = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);

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
  // Each client's queued tasks, and the clients that have some, in the
  // order they take their turns.
  absl::flat_hash_map<const void*, std::deque<std::function<void()>>> tasks_
      ABSL_GUARDED_BY(mu_);
  std::deque<const void*> turns_ ABSL_GUARDED_BY(mu_);
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_JOBS_TASK_POOL_H_
