// ptoserve's metrics: their names, labels and buckets, and what the service
// and the scheduler's runner record in them. docs/METRICS.md says
// what each one means.
#ifndef PTOSERVE_SERVER_METRICS_SERVICE_METRICS_H_
#define PTOSERVE_SERVER_METRICS_SERVICE_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/engine.h"
#include "server/metrics/metrics.h"

namespace ptoserve {

// What the metrics need to know of one job, filled in as the service
// learns it.
struct JobRecord {
  // `target`: a target name, or "unknown" for a target the server does not
  // know (the job is refused, but still counted); empty until it is known.
  JobRecord() = default;
  explicit JobRecord(absl::string_view target) : target(target) {}

  // Counts `program`'s instructions by opcode.
  void CountInstructions(absl::Span<const Instruction> program);

  absl::Time arrival = absl::Now();
  absl::string_view target;
  // How long the job took to decode (its request to tiles the engine
  // runs, admission included) and to encode (its result built from the
  // tiles); zero until it was.
  absl::Duration decode;
  absl::Duration encode;
  // Instructions by opcode; empty until the job is decoded (a job that
  // cannot be has no instructions to count).
  absl::InlinedVector<std::pair<Opcode, uint32_t>, 2> instructions;
};

class ServiceMetrics {
 public:
  // Adds ptoserve's metrics to `registry`, which must outlive this.
  explicit ServiceMetrics(MetricsRegistry* registry);

  ServiceMetrics(const ServiceMetrics&) = delete;
  ServiceMetrics& operator=(const ServiceMetrics&) = delete;

  // `job` was answered with `code`: OK once it ran, else refused at once
  // or dropped from the queue. An OK job's decode and encode time count
  // for its opcodes, shared by their instructions.
  void JobAnswered(const JobRecord& job, absl::StatusCode code);

  // `batch` has just run as one backend call: records its size, how long
  // the call took (also as compute time), and each instruction's time in
  // the queue.
  // REQUIRES: `batch` is not empty and its items share a BatchKey.
  void BatchRan(absl::Span<const WorkItem> batch);

  // A job ran to completion on the thread that admitted it, without the
  // scheduler.
  void RanHere() { ran_here_->Increment(); }

 private:
  // A job's series for its target and code, resolved at first use and
  // kept: a job costs no lookup in the families.
  struct JobSeries {
    Counter* jobs;
    Histogram* latency;
    std::array<Counter*, kOpcodeCount> instructions;  // by opcode
    // Decode and encode time by opcode, in nanoseconds; code OK only.
    std::array<Counter*, kOpcodeCount> decode;
    std::array<Counter*, kOpcodeCount> encode;
  };
  // A batch's series for its opcode and target.
  struct BatchSeries {
    Histogram* size;
    Histogram* execution;
    Histogram* queue;
    Counter* compute;  // nanoseconds
  };
  static constexpr int kCodes = 17;  // absl::StatusCode 0..16
  static constexpr int kTargets = std::size(kEveryTarget);

  // Null for a label set not kept (a target by another name, a code out of
  // range): those are looked up in the families each time.
  const JobSeries* CachedJob(absl::string_view target, int code);
  const BatchSeries& CachedBatch(Opcode opcode, Target target);
  // Adds an OK job's decode and encode time to `series`.
  static void CountTime(const JobRecord& job, const JobSeries& series);

  CounterFamily* const jobs_;
  CounterFamily* const instructions_;
  HistogramFamily* const request_latency_;
  HistogramFamily* const queue_time_;
  HistogramFamily* const execution_time_;
  HistogramFamily* const batch_size_;
  CounterFamily* const compute_input_;
  CounterFamily* const compute_infer_;
  CounterFamily* const compute_output_;
  Counter* const ran_here_;
  // Filled at first use; a series, once made, lives as long as its family.
  std::array<std::atomic<const JobSeries*>, kTargets * kCodes> job_series_{};
  std::array<std::atomic<const BatchSeries*>, kOpcodeCount * kTargets>
      batch_series_{};
  absl::Mutex cache_mu_;
  std::vector<std::unique_ptr<JobSeries>> job_kept_ ABSL_GUARDED_BY(cache_mu_);
  std::vector<std::unique_ptr<BatchSeries>> batch_kept_
      ABSL_GUARDED_BY(cache_mu_);
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_METRICS_SERVICE_METRICS_H_
