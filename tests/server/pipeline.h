// The request pipeline as a door sees it, for tests below the doors: an
// Intake over a dispatcher, a scheduler the test runs by hand (no
// workers), a memory budget and one decoder thread; and Execute, which
// hands bytes in as a door would. intake_test (the v1 formats) and
// protocol_test (a toy protocol through the seam) share it.
#ifndef PTOSERVE_TESTS_SERVER_PIPELINE_H_
#define PTOSERVE_TESTS_SERVER_PIPELINE_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/intake/intake.h"
#include "server/jobs/dispatcher.h"
#include "server/jobs/engine_runner.h"
#include "server/metrics/metrics.h"
#include "tests/server/hold_pool.h"
#include "tests/server/signal.h"

namespace ptoserve {

// What became of one request.
struct Outcome {
  Signal done;
  absl::Status status;
  std::thread::id thread;  // where its answer was given
  v1::Job job;
  v1::JobResult result;
  std::string reply_bytes;  // the reply, when asked for as bytes
  // Run with the reply before its message is built (a door that writes
  // its answer from the job's outcome reads it here).
  std::function<void(JobReply&)> before_message;
  CallInfo call;
  std::optional<IncomingBody> body;
};

class Pipeline {
 protected:
  // `client_share_bytes` 0: the budget's default share.
  Pipeline(const ServiceLimits& limits, uint64_t budget_bytes,
           uint64_t client_share_bytes = 0)
      : budget_(budget_bytes, client_share_bytes) {
    dispatcher_.emplace(&engine_, &scheduler_, limits, &metrics_, &budget_);
    intake_.emplace(&*dispatcher_, &metrics_, &budget_, &decoders_);
  }
  ~Pipeline() { decoders_.Shutdown(); }

  // Hands `bytes` to the pipeline as a door would: as `format`, named
  // `what` in errors, through `protocol` (null: v1's), its reply read as
  // `form` (bytes: into o->reply_bytes, as the gRPC door writes them;
  // otherwise into o->result, after o->before_message). The call is "a
  // client"'s unless `o` already has a share.
  void Execute(Outcome* o, BodyFormat format, const std::string& bytes,
               const char* what = "the request",
               const JobProtocol* protocol = nullptr,
               JobReply::Form form = JobReply::Form::kMessage) {
    if (o->call.share == nullptr) o->call.share = budget_.ShareOf("a client");
    o->body.emplace(format, &budget_, o->call.share, 64 << 20);
    ASSERT_TRUE(o->body->Append(bytes, "--max_message_mb").ok());
    ExecuteRequest request;
    request.body = &*o->body;
    request.what = what;
    request.call = &o->call;
    request.job = &o->job;
    request.result = &o->result;
    request.protocol = protocol;
    request.reply_form = form;
    request.done = [o, form](absl::StatusOr<JobReply*> r, MemoryBudget::Hold) {
      if (r.ok() && form == JobReply::Form::kBytes) {
        const ResultWriter& writer = (*r)->Bytes();
        o->reply_bytes.assign(writer.size(), '\0');
        writer.Write(reinterpret_cast<uint8_t*>(o->reply_bytes.data()));
      } else if (r.ok()) {
        // A protocol's small job comes as its outcome (JobReply::kOutcome).
        if (o->before_message) o->before_message(**r);
        (*r)->Message();
      }
      o->status = r.status();
      o->thread = std::this_thread::get_id();
      o->done.Notify();
    };
    intake_->Execute(std::move(request));
  }

  // Keeps the one decoder busy until the signal is notified.
  std::shared_ptr<Signal> HoldDecoder() { return HoldPool(&decoders_); }

  // Runs what the scheduler has queued, until it has nothing.
  void RunScheduler() {
    while (scheduler_.RunOnce() > 0) {
    }
  }

  const Engine engine_{EngineOptions{}};
  MetricsRegistry registry_;
  ServiceMetrics metrics_{&registry_};
  EngineRunner runner_{&engine_, &metrics_};
  Scheduler scheduler_{[] {
                         SchedulerOptions o;
                         o.run_by_owner = true;
                         return o;
                       }(),
                       &runner_};
  MemoryBudget budget_;
  TaskPool decoders_{1, 16};
  std::optional<Dispatcher> dispatcher_;
  std::optional<Intake> intake_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_SERVER_PIPELINE_H_
