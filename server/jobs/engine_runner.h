// Runs the scheduler's batches on the engine, and counts each batch in the
// service's metrics.
#ifndef PTOSERVE_SERVER_JOBS_ENGINE_RUNNER_H_
#define PTOSERVE_SERVER_JOBS_ENGINE_RUNNER_H_

#include "absl/types/span.h"
#include "core/engine.h"
#include "server/exec/scheduler.h"
#include "server/metrics/service_metrics.h"

namespace ptoserve {

class EngineRunner final : public BatchRunner {
 public:
  // `engine` and `metrics` must outlive the runner.
  EngineRunner(const Engine* engine, ServiceMetrics* metrics)
      : engine_(engine), metrics_(metrics) {}
  void RunBatch(absl::Span<const WorkItem> batch) override {
    engine_->RunBatch(batch);
    // Here, not from the job's result: this sees each batch exactly once.
    metrics_->BatchRan(batch);
  }
  // Every instruction of `job` on the calling thread, each a batch of one,
  // in order (each one's predecessors come before it): a job run to
  // completion without the scheduler.
  void RunToCompletion(PreparedJob* job) {
    for (uint32_t i = 0; i < job->num_instructions(); ++i) {
      const WorkItem item{job, i};
      RunBatch(absl::Span<const WorkItem>(&item, 1));
    }
    metrics_->RanHere();
  }

 private:
  const Engine* engine_;
  ServiceMetrics* metrics_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_JOBS_ENGINE_RUNNER_H_
