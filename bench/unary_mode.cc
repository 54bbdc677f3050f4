#include "bench/unary_mode.h"

#include <algorithm>
#include <thread>

#include "absl/time/clock.h"

namespace ptoserve {
namespace ptobench {

namespace {

constexpr char kExecute[] = "/ptoserve.v1.TileCompute/Execute";
constexpr char kFlatTand[] = "/ptoserve.bench.Flat/Tand";
constexpr char kModelInfer[] = "/inference.GRPCInferenceService/ModelInfer";

}  // namespace

void UnaryMode::Unary(const std::vector<int>& channels,
                      const std::vector<int>& indices) {
  for (size_t k = 0; k < channels.size(); ++k) {
    calls_.push_back(std::make_unique<Call>(channels[k]));
    calls_.back()->unit = driver_.UnitOf(indices[k], 0);
    StartCall(calls_.back().get(), absl::Now());
  }
  driver_.Loop(this);
}

void UnaryMode::UnaryAtRate(const std::vector<int>& channels, double rate,
                            absl::Time first) {
  rate_channels_ = channels;
  interval_ = absl::Seconds(1) / rate;
  pacing_.store(true);
  std::thread pacer([this, first] {
    size_t sent = 0;
    for (absl::Time due = first; due < run_.end; due += interval_) {
      const absl::Duration wait = due - absl::Now();
      if (wait > absl::ZeroDuration()) absl::SleepFor(wait);
      Call* call;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (free_.empty()) {
          calls_.push_back(std::make_unique<Call>(0));
          call = calls_.back().get();
          call->unit = driver_.UnitOf(0, 0);  // never with --shm
        } else {
          call = free_.back();
          free_.pop_back();
        }
      }
      // The channels in turn, whichever call object carries it.
      call->channel = rate_channels_[sent++ % rate_channels_.size()];
      StartCall(call, due);
    }
    pacing_.store(false);
  });
  driver_.Loop(this);
  pacer.join();
}

void UnaryMode::OnEvent(const Event& event, bool ok) {
  Call* call = static_cast<Call*>(event.owner);
  if (event.kind == kCallDone) {
    OnCallDone(call);
    return;
  }
  --pending_alarms_;
  const absl::Time now = absl::Now();
  if (now < run_.end) StartCall(call, now);
}

bool UnaryMode::Done() const {
  return in_flight_.load() == 0 && pending_alarms_ == 0 && !pacing_.load();
}

void UnaryMode::CancelAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& c : calls_) {
    if (c->busy) c->context->TryCancel();
  }
}

std::string UnaryMode::Check(const grpc::Status& status,
                             grpc::ByteBuffer* response, const Unit* unit) {
  if (!status.ok()) {
    return ErrorKey(static_cast<absl::StatusCode>(status.error_code()),
                    status.error_message());
  }
  if (run_.workload->wire == Workload::Wire::kFlat) {
    if (!grpc::SerializationTraits<bench::FlatResult>::Deserialize(
             response, &flat_result_)
             .ok()) {
      return "unparseable result";
    }
    return !run_.check || flat_result_.dst() == run_.workload->expected
               ? ""
               : "wrong result";
  }
  if (run_.workload->wire == Workload::Wire::kOip) {
    if (!grpc::SerializationTraits<inference::ModelInferResponse>::Deserialize(
             response, &infer_result_)
             .ok()) {
      return "unparseable result";
    }
    return !run_.check || (infer_result_.raw_output_contents_size() == 1 &&
                           infer_result_.raw_output_contents(0) ==
                               run_.workload->expected)
               ? ""
               : "wrong result";
  }
  if (!grpc::SerializationTraits<v1::JobResult>::Deserialize(response, &result_)
           .ok()) {
    return "unparseable result";
  }
  return driver_.CheckResult(result_, unit, 0);
}

const char* UnaryMode::Method() const {
  switch (run_.workload->wire) {
    case Workload::Wire::kFlat:
      return kFlatTand;
    case Workload::Wire::kOip:
      return kModelInfer;
    case Workload::Wire::kJob:
      break;
  }
  return kExecute;
}

void UnaryMode::StartCall(Call* call, absl::Time sent) {
  call->context = driver_.NewContext();
  call->sent = sent;
  call->busy = true;
  Tally* tally = driver_.tally();
  tally->max_in_flight =
      std::max(tally->max_in_flight, in_flight_.fetch_add(1) + 1);
  if (run_.workload->shm()) driver_.Arm(call->unit);
  call->reader = driver_.Stub(call->channel)
                     ->PrepareUnaryCall(call->context.get(), Method(),
                                        call->unit->request, driver_.cq());
  call->reader->StartCall();
  call->reader->Finish(&call->response, &call->status, &call->done);
}

void UnaryMode::OnCallDone(Call* call) {
  const absl::Time now = absl::Now();
  --in_flight_;
  call->busy = false;
  driver_.Record(call->sent, now,
                 Check(call->status, &call->response, call->unit));
  call->response.Clear();
  if (interval_ != absl::ZeroDuration()) {  // at a rate: free again
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(call);
    return;
  }
  if (now >= run_.end) return;
  if (call->status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    call->backoff = NextBackoff(call->backoff);
    call->alarm.Set(driver_.cq(), absl::ToChronoTime(now + call->backoff),
                    &call->retry);
    ++pending_alarms_;
    return;
  }
  call->backoff = absl::ZeroDuration();
  StartCall(call, now);
}

}  // namespace ptobench
}  // namespace ptoserve
