#include "bench/driver.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/shm_mode.h"

namespace ptoserve {
namespace ptobench {

std::string ErrorKey(absl::StatusCode code, absl::string_view message) {
  return absl::StrCat(absl::StatusCodeToString(code), ": ",
                      message.substr(0, 120));
}

absl::Duration NextBackoff(absl::Duration backoff) {
  return std::min(std::max(2 * backoff, absl::Milliseconds(1)),
                  absl::Milliseconds(100));
}

Driver::Driver(const Run& run, Tally* tally) : run_(run), tally_(tally) {}

std::unique_ptr<grpc::ClientContext> Driver::NewContext() const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!run_.authorization.empty()) {
    context->AddMetadata("authorization", run_.authorization);
  }
  return context;
}

Unit* Driver::UnitOf(int index, int k) {
  Workload& w = *run_.workload;
  if (!w.shm()) return &w.units[0];
  return &w.units.at(static_cast<size_t>(index) * w.units_per_stream + k);
}

void Driver::Arm(Unit* unit) {
  if (run_.check) ArmChecks(*run_.workload, unit);
}

std::string Driver::CheckResult(const v1::JobResult& result, const Unit* unit,
                                size_t k) const {
  if (result.status().code() != 0) {
    return ErrorKey(static_cast<absl::StatusCode>(result.status().code()),
                    result.status().message());
  }
  if (!run_.check) return "";
  const Workload& w = *run_.workload;
  auto it = result.tiles().find("dst");
  if (it == result.tiles().end()) return "wrong result";
  if (!w.shm()) {
    return it->second.data() == w.expected ? "" : "wrong result";
  }
  // --shm: the result names the job's dst slice and carries no elements;
  // the elements are in the region.
  return CheckSharedDst(w, it->second, unit, k);
}

bool Driver::Record(absl::Time sent, absl::Time now, const std::string& error,
                    bool whole_message) {
  if (sent < run_.measure_from || now > run_.end) return false;
  if (!error.empty()) {
    ++tally_->errors[error];
    return false;
  }
  ++tally_->done;
  if (whole_message) ++tally_->messages;
  tally_->latency_ns.push_back(absl::ToInt64Nanoseconds(now - sent));
  return true;
}

void Driver::Loop(Mode* mode) {
  absl::Time wake = absl::InfiniteFuture();
  const absl::Time cancel_at = run_.end + absl::Seconds(2);
  bool cancelled = false;
  while (!mode->Done()) {
    // At a rate, calls start on the pacing thread: look at the time and
    // the count now and then.
    if (mode->Paced()) {
      wake = std::min(absl::Now() + absl::Milliseconds(10), cancel_at);
    }
    absl::Time deadline =
        std::min(wake, cancelled ? absl::InfiniteFuture() : cancel_at);
    void* tag;
    bool ok;
    grpc::CompletionQueue::NextStatus st;
    if (deadline == absl::InfiniteFuture()) {
      st = cq_.Next(&tag, &ok) ? grpc::CompletionQueue::GOT_EVENT
                               : grpc::CompletionQueue::SHUTDOWN;
    } else {
      st = cq_.AsyncNext(&tag, &ok, absl::ToChronoTime(deadline));
    }
    if (st == grpc::CompletionQueue::SHUTDOWN) break;
    const absl::Time now = absl::Now();
    if (st == grpc::CompletionQueue::GOT_EVENT) {
      mode->OnEvent(*static_cast<Event*>(tag), ok);
    }
    if (!cancelled && now >= cancel_at) {
      // Whatever is still out after the grace is not measured: cut it.
      cancelled = true;
      mode->CancelAll();
    }
  }
  cq_.Shutdown();
  void* tag;
  bool ok;
  while (cq_.Next(&tag, &ok)) {
  }
}

}  // namespace ptobench
}  // namespace ptoserve
