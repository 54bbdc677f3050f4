// The engine's backends, one per target, each with its target's spec.
#ifndef PTOSERVE_CORE_BACKENDS_REGISTRY_H_
#define PTOSERVE_CORE_BACKENDS_REGISTRY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "core/backends/backend.h"
#include "core/types.h"

namespace ptoserve {

// Owns one backend per target.
class BackendRegistry {
 public:
  // `host_buffer_bytes`: the host target's unified buffer (manual mode).
  explicit BackendRegistry(uint64_t host_buffer_bytes);

  const Backend& Get(Target target) const;
  // In Target order.
  std::vector<const Backend*> All() const;

 private:
  std::vector<std::unique_ptr<Backend>> backends_;  // indexed by Target
};

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_BACKENDS_REGISTRY_H_
