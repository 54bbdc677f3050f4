#include "proto/error_result.h"

#include <string>
#include <utility>

namespace ptoserve {

void ToErrorResult(absl::string_view id, const absl::Status& status,
                   v1::JobResult* result) {
  std::string kept(id);  // `id` may be the result's own
  result->Clear();
  result->set_id(std::move(kept));
  result->mutable_status()->set_code(static_cast<v1::Code>(status.code()));
  result->mutable_status()->set_message(std::string(status.message()));
}

}  // namespace ptoserve
