// Driver: one generator thread's completion queue, run until its mode's
// calls or streams are done, and the tally of the results they brought.
//
// A mode (bench/unary_mode.h, bench/stream_mode.h) starts its calls on the
// driver's queue, each completion-queue tag an Event of the mode's, and
// the driver hands every event back to the mode; results are checked and
// counted here, the same way for every mode.
#ifndef PTOSERVE_BENCH_DRIVER_H_
#define PTOSERVE_BENCH_DRIVER_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "bench/workload.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {
namespace ptobench {

// One measurement's window and what every thread shares.
struct Run {
  Workload* workload;  // --shm: its units' ShmJobs change as jobs go out
  std::vector<std::unique_ptr<grpc::GenericStub>>* stubs;
  absl::Time measure_from;
  absl::Time end;
  bool check;
  int stream_depth;
  int batch;  // jobs per message in batch mode; 0: not batch mode
  std::string authorization;  // "" for none
};

// What one thread measured.
struct Tally {
  std::vector<int64_t> latency_ns;
  std::map<std::string, int64_t> errors;  // by "CODE: message"
  int64_t done = 0;                       // jobs answered right
  int64_t messages = 0;                   // answers (a batch's counts once)
  int64_t max_in_flight = 0;
};

// "CODE: message" (the message cut at 120 bytes), how errors are counted.
std::string ErrorKey(absl::StatusCode code, absl::string_view message);

// A server that is going away answers UNAVAILABLE at once: a call slot (or
// stream) that saw it waits 1 ms, doubling to 100 ms, before it tries
// again, rather than spin on it.
absl::Duration NextBackoff(absl::Duration backoff);

// A completion-queue tag: event `kind`, in its mode's numbering, of the
// mode's call or stream `owner`.
struct Event {
  int kind;
  void* owner;
};

// What a driver runs: the calls or streams of one mode.
class Mode {
 public:
  virtual ~Mode() = default;
  // Handles one of the mode's events; `ok` as the completion queue said.
  virtual void OnEvent(const Event& event, bool ok) = 0;
  // Whether nothing of the mode's is in flight or due: the loop may end.
  virtual bool Done() const = 0;
  // Whether calls start on a thread of their own (at a rate), so that the
  // loop must look at the time and Done() now and then.
  virtual bool Paced() const { return false; }
  // Cancels whatever is still out once the window and a grace have passed.
  virtual void CancelAll() = 0;
};

class Driver {
 public:
  Driver(const Run& run, Tally* tally);

  // Hands `mode`'s events to it until it is done, cancelling what is still
  // out 2 s after the window; then drains and shuts the queue.
  void Loop(Mode* mode);

  const Run& run() const { return run_; }
  Tally* tally() { return tally_; }
  grpc::CompletionQueue* cq() { return &cq_; }
  grpc::GenericStub* Stub(int channel) { return (*run_.stubs)[channel].get(); }

  // A new call's context, with the authorization metadata if any.
  std::unique_ptr<grpc::ClientContext> NewContext() const;

  // The unit of call or stream `index`, the `k`th of a stream's (--shm),
  // or the one every call sends.
  Unit* UnitOf(int index, int k);

  // --shm with --check: ArmChecks before `unit` goes out.
  void Arm(Unit* unit);

  // What is wrong with the result of `unit`'s job `k` (unit null: a
  // result that names no message), or "".
  std::string CheckResult(const v1::JobResult& result, const Unit* unit,
                          size_t k) const;

  // Counts one result if it was sent in the measured window and arrived
  // before its end. Returns whether it counted it as right.
  // `whole_message`: the result was its message's only one, so a right one
  // counts the message too.
  bool Record(absl::Time sent, absl::Time now, const std::string& error,
              bool whole_message = true);

 private:
  const Run& run_;
  Tally* tally_;
  grpc::CompletionQueue cq_;
};

}  // namespace ptobench
}  // namespace ptoserve

#endif  // PTOSERVE_BENCH_DRIVER_H_
