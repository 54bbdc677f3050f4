// A fixed set of threads that run compute work off gRPC's callback threads,
// with a bounded queue: when it is full, work is refused at once rather than
// queued without limit.
#ifndef PTOSERVE_SERVER_WORKER_POOL_H_
#define PTOSERVE_SERVER_WORKER_POOL_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace ptoserve {

class WorkerPool {
 public:
  // Starts `threads` workers (>= 1) that take work from a queue of at most
  // `capacity` waiting items.
  WorkerPool(int threads, size_t capacity);
  // Runs everything already submitted, then joins the workers.
  ~WorkerPool();

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `work`; false (and `work` is dropped) if the queue is full.
  bool TrySubmit(std::function<void()> work);

  size_t capacity() const { return capacity_; }

 private:
  void Work();

  const size_t capacity_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_WORKER_POOL_H_
