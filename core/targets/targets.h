// Every target's spec, by Target.
#ifndef PTOSERVE_CORE_TARGETS_TARGETS_H_
#define PTOSERVE_CORE_TARGETS_TARGETS_H_

#include <cstddef>

#include "core/targets/a2a3.h"
#include "core/targets/a5.h"
#include "core/targets/host.h"
#include "core/targets/target_spec.h"
#include "core/types.h"

namespace ptoserve {

// In Target order.
inline constexpr const TargetSpec* kTargetSpecs[] = {
    &targets::kHost, &targets::kA2A3, &targets::kA5};

constexpr const TargetSpec& SpecOf(Target target) {
  return *kTargetSpecs[static_cast<size_t>(target)];
}

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_TARGETS_TARGETS_H_
