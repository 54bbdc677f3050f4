#include "core/engine.h"

#include <cstring>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "core/job_binder.h"
#include "core/status_macros.h"

namespace ptoserve {

namespace {

Tile OwnedCopy(const Tile& tile) {
  Tile copy(tile.desc());
  std::memcpy(copy.data(), tile.data(), copy.size_bytes());
  return copy;
}

}  // namespace

Engine::Engine(const EngineOptions& options)
    : options_(options), backends_(options.host_buffer_bytes) {}

absl::StatusOr<std::unique_ptr<PreparedJob>> Engine::Prepare(
    const JobSpec& spec, const Admission& admit) const {
  return internal::JobBinder(spec, options_.limits, backends_,
                             options_.TargetOf(spec.target), admit)
      .Bind();
}

void Engine::RunBatch(absl::Span<const WorkItem> batch) const {
  const uint64_t batch_id = next_batch_id_.fetch_add(1);
  const uint32_t size = static_cast<uint32_t>(batch.size());
  absl::InlinedVector<const BoundInstruction*, 16> instructions;
  absl::InlinedVector<Trace*, 16> traces;
  for (const WorkItem& item : batch) {
    instructions.push_back(&item.job->bound_[item.index]);
    traces.push_back(&item.job->events_[item.index].trace);
  }
  const absl::Time start = absl::Now();
  const Backend& backend = *batch[0].job->backend_;
  size_t direct = 0;  // instructions that run as one batch
  for (size_t k = 0; k < batch.size(); ++k) {
    PreparedJob& job = *batch[k].job;
    if (job.buffer_work_.empty()) {
      instructions[direct] = instructions[k];
      traces[direct++] = traces[k];
      continue;
    }
    const PreparedJob::BufferWork& work = job.buffer_work_[batch[k].index];
    for (const ByteRange& r : work.clear) {
      std::memset(job.buffer_.get() + r.begin, 0, r.end - r.begin);
    }
    if (!work.stage_dst) {
      instructions[direct] = instructions[k];
      traces[direct++] = traces[k];
      continue;
    }
    backend.RunStaged(*instructions[k], traces[k]);
  }
  if (direct > 0) {
    backend.Run(absl::MakeConstSpan(instructions.data(), direct),
                absl::MakeConstSpan(traces.data(), direct));
  }
  const absl::Time end = absl::Now();
  for (const WorkItem& item : batch) {
    Event& event = item.job->events_[item.index];
    event.batch_id = batch_id;
    event.batch_size = size;
    event.start_time = start;
    event.end_time = end;
  }
}

JobOutcome Engine::Finish(PreparedJob* job) const {
  JobOutcome out;
  out.target = job->target_;
  out.events = std::move(job->events_);
  for (size_t slot : job->outputs_) {
    PreparedJob::Slot& s = job->slots_[slot];
    if (uint8_t* place = job->place_[slot]; place != nullptr) {
      // A tile in a unified buffer goes to its place now; a host tile is
      // there already.
      const Tile& tile = *s.tile;
      if (tile.data() != place) {
        std::memcpy(place, tile.data(), tile.size_bytes());
      }
      out.outputs.push_back(
          {s.name, Tile::Borrow(s.tile->desc(), place), /*placed=*/true});
      s.tile.reset();
      continue;
    }
    // An outcome owns all its tiles except placed ones: it may outlive the
    // job's inputs.
    Tile tile = s.tile->owned() ? std::move(*s.tile) : OwnedCopy(*s.tile);
    s.tile.reset();
    out.outputs.push_back({s.name, std::move(tile)});
  }
  return out;
}

absl::StatusOr<JobOutcome> Engine::Execute(const JobSpec& spec) const {
  PTO_ASSIGN_OR_RETURN(std::unique_ptr<PreparedJob> job, Prepare(spec));
  for (uint32_t i = 0; i < job->num_instructions(); ++i) {
    const WorkItem item{job.get(), i};
    RunBatch(absl::MakeConstSpan(&item, 1));
  }
  return Finish(job.get());
}

}  // namespace ptoserve
