// Keeps a TaskPool's one thread busy until a test lets it go: a request
// handed to the pool meanwhile waits, and the test sees it waiting.
// Signal, not absl::Notification, both ways (tests/server/signal.h says
// why): ThreadSanitizer sees the order of what each side did.
#ifndef PTOSERVE_TESTS_SERVER_HOLD_POOL_H_
#define PTOSERVE_TESTS_SERVER_HOLD_POOL_H_

#include <memory>

#include "absl/time/time.h"
#include "server/exec/task_pool.h"
#include "tests/server/signal.h"

namespace ptoserve {

// Returns once `pool`'s thread runs the hold; Notify the result to end it.
// The result must outlive the hold's task (keep it until the pool is shut
// down, or notified and the pool's later tasks done).
inline std::shared_ptr<Signal> HoldPool(TaskPool* pool) {
  auto release = std::make_shared<Signal>();
  auto started = std::make_shared<Signal>();
  pool->Post([started, release] {
    started->Notify();
    release->WaitForNotificationWithTimeout(absl::InfiniteDuration());
  });
  started->WaitForNotificationWithTimeout(absl::InfiniteDuration());
  return release;
}

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_SERVER_HOLD_POOL_H_
