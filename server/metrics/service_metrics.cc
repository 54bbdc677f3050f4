#include "server/metrics/service_metrics.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "core/ops.h"
#include "core/version.h"

namespace ptoserve {

namespace {

// From 1 us (a small backend call) to 10 s (a long queue), three per decade.
std::vector<double> SecondsBounds() {
  return {1e-6, 2.5e-6, 5e-6,   1e-5, 2.5e-5, 5e-5,  1e-4, 2.5e-4,
          5e-4, 1e-3,   2.5e-3, 5e-3, 0.01,   0.025, 0.05, 0.1,
          0.25, 0.5,    1,      2.5,  5,      10};
}

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

}  // namespace

void JobRecord::CountInstructions(absl::Span<const Instruction> program) {
  for (const Instruction& inst : program) {
    auto it = std::find_if(
        instructions.begin(), instructions.end(),
        [&](const auto& entry) { return entry.first == inst.opcode; });
    if (it == instructions.end()) {
      instructions.push_back({inst.opcode, 1});
    } else {
      ++it->second;
    }
  }
}

ServiceMetrics::ServiceMetrics(MetricsRegistry* registry)
    : jobs_(registry->AddCounter(
          "ptoserve_jobs_total",
          "Jobs answered, by target and status code (OK: ran; otherwise "
          "refused or dropped).",
          {"target", "code"})),
      instructions_(registry->AddCounter(
          "ptoserve_instructions_total",
          "Instructions of the jobs answered, by opcode, target and the "
          "job's status code; jobs that could not be decoded have none.",
          {"opcode", "target", "code"})),
      request_latency_(registry->AddHistogram(
          "ptoserve_request_latency_seconds",
          "Per job, from its arrival to its result (or refusal), by target "
          "and status code.",
          {"target", "code"}, SecondsBounds())),
      queue_time_(registry->AddHistogram(
          "ptoserve_queue_time_seconds",
          "Per instruction run, from the job's admission to the start of its "
          "batch (waiting for earlier instructions included).",
          {"opcode", "target"}, SecondsBounds())),
      execution_time_(
          registry->AddHistogram("ptoserve_execution_time_seconds",
                                 "Per batch, how long its backend call took.",
                                 {"opcode", "target"}, SecondsBounds())),
      batch_size_(registry->AddHistogram(
          "ptoserve_batch_size", "Per batch, the instructions it ran.",
          {"opcode", "target"}, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024})),
      ran_here_(&registry
                     ->AddCounter("ptoserve_jobs_run_here_total",
                                  "Jobs run to completion on the thread that "
                                  "received them, without the scheduler.",
                                  {})
                     ->With({})) {
  registry->AddGauge("ptoserve_build_info",
                     "The ptoserve version serving, as a label; always 1.",
                     {{"version", kVersion}}, [] { return 1.0; });
}

const ServiceMetrics::JobSeries* ServiceMetrics::CachedJob(
    absl::string_view target, int code) {
  int t = 0;
  while (t < kTargets && TargetName(kEveryTarget[t]) != target) ++t;
  if (t == kTargets || code < 0 || code >= kCodes) return nullptr;
  std::atomic<const JobSeries*>& slot = job_series_[t * kCodes + code];
  if (const JobSeries* series = slot.load(std::memory_order_acquire)) {
    return series;
  }
  const std::string code_name =
      absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  auto series = std::make_unique<JobSeries>();
  series->jobs = &jobs_->With({target, code_name});
  series->latency = &request_latency_->With({target, code_name});
  for (int op = 0; op < kOpcodeCount; ++op) {
    series->instructions[op] = &instructions_->With(
        {OpcodeName(static_cast<Opcode>(op)), target, code_name});
  }
  const JobSeries* made = series.get();
  MutexLock lock(&cache_mu_);
  // Another thread may have made the same: both point at the same series.
  job_kept_.push_back(std::move(series));
  slot.store(made, std::memory_order_release);
  return made;
}

const ServiceMetrics::BatchSeries& ServiceMetrics::CachedBatch(Opcode opcode,
                                                               Target target) {
  std::atomic<const BatchSeries*>& slot =
      batch_series_[static_cast<int>(opcode) * kTargets +
                    static_cast<int>(target)];
  if (const BatchSeries* series = slot.load(std::memory_order_acquire)) {
    return *series;
  }
  const LabelValues labels = {OpcodeName(opcode), TargetName(target)};
  auto series = std::make_unique<BatchSeries>(
      BatchSeries{&batch_size_->With(labels), &execution_time_->With(labels),
                  &queue_time_->With(labels)});
  const BatchSeries* made = series.get();
  MutexLock lock(&cache_mu_);
  batch_kept_.push_back(std::move(series));
  slot.store(made, std::memory_order_release);
  return *made;
}

void ServiceMetrics::JobAnswered(const JobRecord& job, absl::StatusCode code) {
  const double latency = Seconds(absl::Now() - job.arrival);
  if (const JobSeries* series = CachedJob(job.target, static_cast<int>(code))) {
    series->jobs->Increment();
    for (const auto& [opcode, count] : job.instructions) {
      series->instructions[static_cast<int>(opcode)]->Increment(count);
    }
    series->latency->Observe(latency);
    return;
  }
  const std::string code_name = absl::StatusCodeToString(code);
  jobs_->With({job.target, code_name}).Increment();
  for (const auto& [opcode, count] : job.instructions) {
    instructions_->With({OpcodeName(opcode), job.target, code_name})
        .Increment(count);
  }
  request_latency_->With({job.target, code_name}).Observe(latency);
}

void ServiceMetrics::BatchRan(absl::Span<const WorkItem> batch) {
  const Event& first = batch[0].job->event(batch[0].index);
  const BatchSeries& series = CachedBatch(first.opcode, first.target);
  series.size->Observe(static_cast<double>(batch.size()));
  series.execution->Observe(Seconds(first.end_time - first.start_time));
  for (const WorkItem& item : batch) {
    const Event& event = item.job->event(item.index);
    series.queue->Observe(Seconds(event.start_time - event.enqueue_time));
  }
}

}  // namespace ptoserve
