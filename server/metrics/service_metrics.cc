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

// Whole nanoseconds of `d`; none if the clock stepped back meanwhile.
uint64_t Nanos(absl::Duration d) {
  return d > absl::ZeroDuration() ? absl::ToInt64Nanoseconds(d) : 0;
}

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
      // Triton's split of a request's time (nv_inference_compute_input,
      // _infer and _output_duration_us), in seconds.
      compute_input_(registry->AddCounter(
          "ptoserve_compute_input_seconds_total",
          "Time spent decoding jobs answered OK (request to tiles), by "
          "target and opcode (a job's time shared by its instructions).",
          {"target", "opcode"}, 1e-9)),
      compute_infer_(registry->AddCounter(
          "ptoserve_compute_infer_seconds_total",
          "Time spent running instructions (backend calls, each batch once), "
          "by target and opcode.",
          {"target", "opcode"}, 1e-9)),
      compute_output_(registry->AddCounter(
          "ptoserve_compute_output_seconds_total",
          "Time spent building the results of jobs answered OK from their "
          "tiles, by target and opcode (a job's time shared by its "
          "instructions).",
          {"target", "opcode"}, 1e-9)),
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
    const absl::string_view opcode = OpcodeName(static_cast<Opcode>(op));
    series->instructions[op] =
        &instructions_->With({opcode, target, code_name});
    // Made only for OK, the code whose jobs count their time.
    if (code == static_cast<int>(absl::StatusCode::kOk)) {
      series->decode[op] = &compute_input_->With({target, opcode});
      series->encode[op] = &compute_output_->With({target, opcode});
    }
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
  auto series = std::make_unique<BatchSeries>(BatchSeries{
      &batch_size_->With(labels), &execution_time_->With(labels),
      &queue_time_->With(labels),
      &compute_infer_->With({TargetName(target), OpcodeName(opcode)})});
  const BatchSeries* made = series.get();
  MutexLock lock(&cache_mu_);
  batch_kept_.push_back(std::move(series));
  slot.store(made, std::memory_order_release);
  return *made;
}

void ServiceMetrics::CountTime(const JobRecord& job, const JobSeries& series) {
  uint64_t instructions = 0;
  for (const auto& [opcode, count] : job.instructions) instructions += count;
  if (instructions == 0) return;
  const uint64_t decode = Nanos(job.decode);
  const uint64_t encode = Nanos(job.encode);
  for (const auto& [opcode, count] : job.instructions) {
    series.decode[static_cast<int>(opcode)]->Increment(decode * count /
                                                       instructions);
    series.encode[static_cast<int>(opcode)]->Increment(encode * count /
                                                       instructions);
  }
}

void ServiceMetrics::JobAnswered(const JobRecord& job, absl::StatusCode code) {
  const double latency = Seconds(absl::Now() - job.arrival);
  if (const JobSeries* series = CachedJob(job.target, static_cast<int>(code))) {
    series->jobs->Increment();
    for (const auto& [opcode, count] : job.instructions) {
      series->instructions[static_cast<int>(opcode)]->Increment(count);
    }
    series->latency->Observe(latency);
    if (code == absl::StatusCode::kOk) CountTime(job, *series);
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
  const absl::Duration took = first.end_time - first.start_time;
  series.execution->Observe(Seconds(took));
  series.compute->Increment(Nanos(took));
  for (const WorkItem& item : batch) {
    const Event& event = item.job->event(item.index);
    series.queue->Observe(Seconds(event.start_time - event.enqueue_time));
  }
}

}  // namespace ptoserve
