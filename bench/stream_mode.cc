#include "bench/stream_mode.h"

#include <algorithm>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace ptoserve {
namespace ptobench {

namespace {

constexpr char kExecuteStream[] = "/ptoserve.v1.TileCompute/ExecuteStream";
constexpr char kExecuteBatches[] = "/ptoserve.v1.TileCompute/ExecuteBatches";
constexpr char kFlatTandStream[] = "/ptoserve.bench.Flat/TandStream";

// `base` followed by a Job holding only `id`: protobuf merges concatenated
// messages, so this is the job with that id, without serializing it again.
grpc::ByteBuffer WithId(const grpc::ByteBuffer& base, uint64_t id) {
  v1::Job only_id;
  only_id.set_id(absl::StrCat(id));
  std::vector<grpc::Slice> slices;
  (void)base.Dump(&slices);
  slices.emplace_back(only_id.SerializeAsString());
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// A JobBatch of the unit's --batch jobs, the first carrying `id`: the
// job's bytes and the rest of the batch are shared, not copied.
grpc::ByteBuffer BatchWithId(const Unit& w, uint64_t id) {
  v1::Job only_id;
  only_id.set_id(absl::StrCat(id));
  const std::string id_bytes = only_id.SerializeAsString();
  std::vector<grpc::Slice> job;  // Dump replaces what the vector holds
  (void)w.request.Dump(&job);
  std::vector<grpc::Slice> slices;
  slices.emplace_back(JobsFieldHeader(w.request.Length() + id_bytes.size()));
  slices.insert(slices.end(), job.begin(), job.end());
  slices.emplace_back(id_bytes);
  slices.push_back(w.batch_rest);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

}  // namespace

void StreamMode::Streams(const std::vector<int>& channels,
                         const std::vector<int>& indices) {
  for (size_t k = 0; k < channels.size(); ++k) {
    streams_.push_back(std::make_unique<Stream>(channels[k]));
    Stream* s = streams_.back().get();
    if (run_.workload->shm()) {
      for (int u = 0; u < run_.workload->units_per_stream; ++u) {
        s->units.push_back(driver_.UnitOf(indices[k], u));
      }
    }
    StartStream(s);
  }
  driver_.Loop(this);
}

void StreamMode::OnEvent(const Event& event, bool ok) {
  Stream* s = static_cast<Stream*>(event.owner);
  const absl::Time now = absl::Now();
  switch (event.kind) {
    case kStarted:
      if (!ok) {
        s->rw->Finish(&s->status, &s->finished);
        return;
      }
      s->rw->Read(&s->response, &s->read);
      MaybeWrite(s, now);
      return;
    case kWritten:
      s->writing = false;
      if (ok) MaybeWrite(s, now);
      return;
    case kRead: {
      if (!ok) {  // the server closed the stream: its status follows
        s->rw->Finish(&s->status, &s->finished);
        return;
      }
      if (run_.batch > 0) {
        OnBatchAnswer(s, now);
      } else {
        OnResult(s, now);
      }
      s->backoff = absl::ZeroDuration();
      s->response.Clear();
      s->rw->Read(&s->response, &s->read);
      MaybeWrite(s, now);
      return;
    }
    case kFinished:
      OnFinished(s, now);
      return;
    case kRetry:
      --pending_alarms_;
      if (now < run_.end) StartStream(s);
      return;
    default:
      return;
  }
}

bool StreamMode::Done() const {
  return live_streams_ == 0 && pending_alarms_ == 0;
}

void StreamMode::CancelAll() {
  for (auto& s : streams_) {
    if (s->live) s->context->TryCancel();
  }
}

void StreamMode::StartStream(Stream* s) {
  s->context = driver_.NewContext();
  s->rw = driver_.Stub(s->channel)
              ->PrepareCall(s->context.get(),
                            run_.batch > 0 ? kExecuteBatches
                            : run_.workload->wire == Workload::Wire::kFlat
                                ? kFlatTandStream
                                : kExecuteStream,
                            driver_.cq());
  s->sent_at.clear();
  s->next_answered = s->next_id;
  s->free_units = s->units;
  s->writing = false;
  s->writes_done = false;
  s->live = true;
  ++live_streams_;
  s->rw->StartCall(&s->started);
}

void StreamMode::MaybeWrite(Stream* s, absl::Time now) {
  if (s->writing || s->writes_done) return;
  if (now >= run_.end) {
    s->writes_done = true;
    s->writing = true;
    s->rw->WritesDone(&s->written);
    return;
  }
  const int messages = MessagesPerStream(run_.stream_depth, run_.batch);
  if (static_cast<int>(s->sent_at.size()) >= messages) return;
  Unit* unit = driver_.UnitOf(0, 0);
  if (run_.workload->shm()) {
    if (s->free_units.empty()) return;  // not while messages fit
    unit = s->free_units.back();
    s->free_units.pop_back();
    driver_.Arm(unit);
  }
  const uint64_t id = s->next_id++;
  s->sent_at[id] = {now, unit};
  s->writing = true;
  s->rw->Write(run_.batch > 0 ? BatchWithId(*unit, id)
               : run_.workload->wire == Workload::Wire::kFlat
                   ? unit->request
                   : WithId(unit->request, id),
               &s->written);
}

void StreamMode::Release(Stream* s, Unit* unit) {
  if (run_.workload->shm()) s->free_units.push_back(unit);
}

void StreamMode::OnFlatResult(Stream* s, absl::Time now) {
  const bool parsed = grpc::SerializationTraits<bench::FlatResult>::Deserialize(
                          &s->response, &flat_result_)
                          .ok();
  // Answered in order, one message at a time: the oldest sent.
  auto it = s->sent_at.find(s->next_answered++);
  if (it == s->sent_at.end()) {
    if (now <= run_.end) ++driver_.tally()->errors["an answer never asked"];
    return;
  }
  driver_.Record(it->second.at, now,
                 !parsed ? "unparseable result"
                 : !run_.check || flat_result_.dst() == run_.workload->expected
                     ? ""
                     : "wrong result");
  Release(s, it->second.unit);
  s->sent_at.erase(it);
}

void StreamMode::OnResult(Stream* s, absl::Time now) {
  if (run_.workload->wire == Workload::Wire::kFlat) return OnFlatResult(s, now);
  const bool parsed = grpc::SerializationTraits<v1::JobResult>::Deserialize(
                          &s->response, &result_)
                          .ok();
  uint64_t id = 0;
  auto it = s->sent_at.end();
  if (parsed && absl::SimpleAtoi(result_.id(), &id)) {
    it = s->sent_at.find(id);
  }
  if (it == s->sent_at.end()) {
    if (now <= run_.end) {
      ++driver_.tally()->errors[parsed ? "result with an unknown id"
                                       : "unparseable result"];
    }
  } else {
    driver_.Record(it->second.at, now,
                   driver_.CheckResult(result_, it->second.unit, 0));
    Release(s, it->second.unit);
    s->sent_at.erase(it);
  }
}

void StreamMode::OnBatchAnswer(Stream* s, absl::Time now) {
  const bool parsed =
      grpc::SerializationTraits<v1::JobResultBatch>::Deserialize(&s->response,
                                                                 &batch_result_)
          .ok();
  uint64_t id = 0;
  auto it = s->sent_at.end();
  if (parsed && batch_result_.results_size() > 0 &&
      absl::SimpleAtoi(batch_result_.results(0).id(), &id)) {
    it = s->sent_at.find(id);
  }
  if (it == s->sent_at.end()) {
    if (now <= run_.end) {
      ++driver_.tally()->errors[!parsed ? "unparseable answer"
                                : batch_result_.results_size() == 1
                                    ? driver_.CheckResult(
                                          batch_result_.results(0), nullptr, 0)
                                    : "answer with an unknown id"];
    }
    return;
  }
  const absl::Time sent = it->second.at;
  Unit* unit = it->second.unit;
  s->sent_at.erase(it);
  Release(s, unit);
  if (batch_result_.results_size() != run_.batch) {
    driver_.Record(sent, now,
                   absl::StrCat("answer with ", batch_result_.results_size(),
                                " results for ", run_.batch, " jobs"));
    return;
  }
  bool all_right = true;
  for (int i = 0; i < batch_result_.results_size(); ++i) {
    all_right &= driver_.Record(
        sent, now, driver_.CheckResult(batch_result_.results(i), unit, i),
        /*whole_message=*/false);
  }
  if (all_right) ++driver_.tally()->messages;
}

void StreamMode::OnFinished(Stream* s, absl::Time now) {
  s->live = false;
  --live_streams_;
  if (!s->status.ok() && now <= run_.end) {
    ++driver_.tally()->errors[absl::StrCat(
        "stream ",
        ErrorKey(static_cast<absl::StatusCode>(s->status.error_code()),
                 s->status.error_message()))];
  }
  if (now < run_.end) {
    // It ended early (refused, or the server going away): start
    // another after a backoff that a result received resets.
    s->backoff = NextBackoff(s->backoff);
    s->alarm.Set(driver_.cq(), absl::ToChronoTime(now + s->backoff), &s->retry);
    ++pending_alarms_;
  }
}

}  // namespace ptobench
}  // namespace ptoserve
