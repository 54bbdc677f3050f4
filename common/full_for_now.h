// RESOURCE_EXHAUSTED means two things a client acts on differently: the
// server is full for now (the memory budget, a client's share of it, the
// queue, the decoders), which frees as other work finishes, so that the
// same request may succeed later; or the request is over a limit of its
// own (a tile, a message, a job), where trying again cannot help. The
// first kind is made here and carries a mark the doors read: the HTTP door
// answers it 429, the second kind 413.
#ifndef PTOSERVE_COMMON_FULL_FOR_NOW_H_
#define PTOSERVE_COMMON_FULL_FOR_NOW_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ptoserve {

// RESOURCE_EXHAUSTED with `message`, marked as full for now.
absl::Status FullForNowError(absl::string_view message);
// Whether `status` is such a refusal.
bool IsFullForNow(const absl::Status& status);

}  // namespace ptoserve

#endif  // PTOSERVE_COMMON_FULL_FOR_NOW_H_
