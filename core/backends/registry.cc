#include "core/backends/registry.h"

#include "core/targets/targets.h"

namespace ptoserve {

BackendRegistry::BackendRegistry(uint64_t host_buffer_bytes) {
  for (Target target : kEveryTarget) {
    const TargetSpec& spec = SpecOf(target);
    backends_.push_back(std::make_unique<Backend>(
        target, spec,
        target == Target::kHost ? host_buffer_bytes : spec.buffer_bytes));
  }
}

const Backend& BackendRegistry::Get(Target target) const {
  return *backends_[static_cast<size_t>(target)];
}

std::vector<const Backend*> BackendRegistry::All() const {
  std::vector<const Backend*> out;
  for (const auto& b : backends_) out.push_back(b.get());
  return out;
}

}  // namespace ptoserve
