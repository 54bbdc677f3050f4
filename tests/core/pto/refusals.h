// A refusal of the built-in API caught as a message, for tests: the
// failure handler (pto::SetFailureHandler) throws, and RefusalOf returns
// what the call was refused with.
#ifndef PTOSERVE_TESTS_CORE_PTO_REFUSALS_H_
#define PTOSERVE_TESTS_CORE_PTO_REFUSALS_H_

#include <pto/pto-inst.hpp>
#include <stdexcept>
#include <string>

namespace ptoserve {
namespace refusals {

struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void Throw(const char* message) { throw Refused(message); }

// What `run` was refused with; "" if it ran to its end.
template <typename Run>
std::string RefusalOf(Run run) {
  const pto::FailureHandler previous = pto::SetFailureHandler(Throw);
  std::string refusal;
  try {
    run();
  } catch (const Refused& refused) {
    refusal = refused.what();
  }
  pto::SetFailureHandler(previous);
  return refusal;
}

}  // namespace refusals
}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_CORE_PTO_REFUSALS_H_
