#include "server/task_pool.h"

#include "server/mutex.h"

namespace ptoserve {

TaskPool::TaskPool(int threads, size_t capacity) : capacity_(capacity) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

TaskPool::~TaskPool() { Shutdown(); }

bool TaskPool::Post(std::function<void()> task) {
  MutexLock lock(&mu_);
  if (stopping_ || tasks_.size() >= capacity_) return false;
  tasks_.push_back(std::move(task));
  return true;
}

bool TaskPool::Stopping() {
  MutexLock lock(&mu_);
  return stopping_;
}

void TaskPool::Shutdown() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void TaskPool::Work() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(&mu_);
      Await(
          &mu_,
          +[](TaskPool* pool) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return pool->stopping_ || !pool->tasks_.empty();
          },
          this);
      if (tasks_.empty()) return;  // stopping, and nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace ptoserve
