// Watching the built-in API run: an observer sees each instruction on its
// thread just before and just after it runs. For tracing, and for testing
// programs written against the seeds' API, whose tiles are local to the
// program: Before may write the operands' elements (to fill them) and
// After may read the results.
#ifndef PTO_COMMON_OBSERVER_HPP
#define PTO_COMMON_OBSERVER_HPP

#include "pto/common/event.hpp"

namespace pto {

// A tile as an observer sees it: row-major elements of element_bytes
// bytes, element (r, c) at byte (r * cols + c) * element_bytes of data.
struct TileView {
  void* data = nullptr;
  int rows = 0;
  int cols = 0;
  int valid_rows = 0;
  int valid_cols = 0;
  int element_bytes = 0;
};

struct InstructionView {
  Op op = Op::TAND;
  TileView dst, src0, src1;
  const TileView* tmp = nullptr;  // TXOR's tmp; nullptr for TAND
};

class InstructionObserver {
 public:
  virtual ~InstructionObserver() = default;
  // After the instruction's checks passed, before it computes anything.
  virtual void Before(const InstructionView& instruction) {}
  virtual void After(const InstructionView& instruction,
                     const RecordEvent& event) {}
};

namespace detail {
inline thread_local InstructionObserver* current_observer = nullptr;
}  // namespace detail

// Installs an observer for this thread for its own lifetime, restoring the
// previous one (if any) afterwards.
class ScopedInstructionObserver {
 public:
  explicit ScopedInstructionObserver(InstructionObserver* observer)
      : previous_(detail::current_observer) {
    detail::current_observer = observer;
  }
  ~ScopedInstructionObserver() { detail::current_observer = previous_; }
  ScopedInstructionObserver(const ScopedInstructionObserver&) = delete;
  ScopedInstructionObserver& operator=(const ScopedInstructionObserver&) =
      delete;

 private:
  InstructionObserver* previous_;
};

}  // namespace pto

#endif  // PTO_COMMON_OBSERVER_HPP
