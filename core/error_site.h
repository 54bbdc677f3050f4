// Where in a job an error lies, carried by the status itself (as payloads)
// so that a caller can point at it, e.g. the assembler at a line and column,
// without reading the message's English.
#ifndef PTOSERVE_CORE_ERROR_SITE_H_
#define PTOSERVE_CORE_ERROR_SITE_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ptoserve {

struct ErrorSite {
  std::optional<size_t> instruction;  // index into JobSpec::instructions
  std::optional<std::string> tile;    // a tile's name in the job
};

// `status` marked as about instruction `index` / tile `name`. An OK status
// is returned as it is.
absl::Status AtInstruction(absl::Status status, size_t index);
absl::Status AtTile(absl::Status status, absl::string_view name);

// What AtInstruction and AtTile marked on `status`; both empty if nothing.
ErrorSite SiteOf(const absl::Status& status);

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_ERROR_SITE_H_
