#include "server/jobs/task_pool.h"

#include <utility>

#include "common/mutex.h"

namespace ptoserve {

TaskPool::TaskPool(int threads, size_t capacity, size_t client_capacity)
    : capacity_(capacity),
      client_capacity_(client_capacity != 0 ? client_capacity : capacity) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

TaskPool::~TaskPool() { Shutdown(); }

TaskPool::Posted TaskPool::Post(std::function<void()> task,
                                const void* client) {
  MutexLock lock(&mu_);
  if (stopping_) return Posted::kStopping;
  if (queued_ >= capacity_) return Posted::kFull;
  auto [it, added] = tasks_.try_emplace(client);
  if (it->second.size() >= client_capacity_) return Posted::kClientFull;
  if (it->second.empty()) turns_.push_back(client);
  it->second.push_back(std::move(task));
  ++queued_;
  return Posted::kQueued;
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
            return pool->stopping_ || pool->queued_ > 0;
          },
          this);
      if (queued_ == 0) return;  // stopping, and nothing left
      // The next client's turn: its oldest task, then it goes to the back
      // of the line if it has more.
      const void* client = turns_.front();
      turns_.pop_front();
      auto it = tasks_.find(client);
      task = std::move(it->second.front());
      it->second.pop_front();
      --queued_;
      if (it->second.empty()) {
        tasks_.erase(it);
      } else {
        turns_.push_back(client);
      }
    }
    task();
  }
}

}  // namespace ptoserve
