#include "proto/recorded_result.h"

#include <utility>

#include "core/builtin/recorded_events.h"
#include "proto/codec.h"

namespace ptoserve {

v1::JobResult RecordedJobResult() {
  JobOutcome outcome;
  outcome.target = builtin::RecordedTarget();
  outcome.events = builtin::RecordedEvents();
  v1::JobResult result;
  ToJobResult(std::move(outcome), ResultEncodings(), &result);
  return result;
}

bool AnyInstructionRecorded() { return !builtin::RecordedEvents().empty(); }

}  // namespace ptoserve
