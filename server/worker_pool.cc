#include "server/worker_pool.h"

#include <utility>

namespace ptoserve {

WorkerPool::WorkerPool(int threads, size_t capacity) : capacity_(capacity) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

WorkerPool::~WorkerPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

bool WorkerPool::TrySubmit(std::function<void()> work) {
  absl::MutexLock lock(&mu_);
  if (queue_.size() >= capacity_) return false;
  queue_.push_back(std::move(work));
  return true;
}

void WorkerPool::Work() {
  while (true) {
    std::function<void()> work;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](WorkerPool* pool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pool->mu_) {
            return pool->stopping_ || !pool->queue_.empty();
          },
          this));
      if (queue_.empty()) return;  // stopping, and nothing left to run
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

}  // namespace ptoserve
