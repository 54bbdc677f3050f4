// A few threads that run tasks from a bounded queue: where the service
// decodes requests too large to decode on gRPC's own threads, which every
// other call (health checks included) needs.
#ifndef PTOSERVE_SERVER_TASK_POOL_H_
#define PTOSERVE_SERVER_TASK_POOL_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace ptoserve {

class TaskPool {
 public:
  // `threads` threads; at most `capacity` tasks wait at once.
  TaskPool(int threads, size_t capacity);
  // Shutdown().
  ~TaskPool();

  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  // Queues `task`; false (and `task` dropped unrun) when the queue is full
  // or the pool is shutting down.
  bool Post(std::function<void()> task) ABSL_LOCKS_EXCLUDED(mu_);

  // Refuses new tasks, runs every queued one, and joins the threads.
  // Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // Whether Shutdown has begun (Post refuses everything from then on).
  bool Stopping() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Work() ABSL_LOCKS_EXCLUDED(mu_);

  const size_t capacity_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_TASK_POOL_H_
