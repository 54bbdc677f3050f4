// A JobResult that carries why its job did not run instead of its tiles:
// how every front door answers a job it refused, one job at a time.
#ifndef PTOSERVE_PROTO_ERROR_RESULT_H_
#define PTOSERVE_PROTO_ERROR_RESULT_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {

// Makes `*result` the answer to job `id` (empty when unknown) that failed
// with `status`: the id, the code and the message, nothing else.
// REQUIRES: !status.ok().
void ToErrorResult(absl::string_view id, const absl::Status& status,
                   v1::JobResult* result);

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_ERROR_RESULT_H_
