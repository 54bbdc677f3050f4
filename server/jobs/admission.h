// What a job will hold in memory while the server has it, as admission
// counts it before any of its tiles is made (docs/SECURITY.md, "What a job
// costs"). The service reserves this much of the memory budget; the job
// fuzzer checks that the heap never holds more than a small factor of it.
#ifndef PTOSERVE_SERVER_JOBS_ADMISSION_H_
#define PTOSERVE_SERVER_JOBS_ADMISSION_H_

#include <cstdint>

#include "core/job.h"
#include "server/jobs/decode.h"

namespace ptoserve {

struct Footprint {
  uint64_t request =
      0;               // the request on the wire (the parsed job holds as much)
  uint64_t tiles = 0;  // the tiles the engine makes (JobCost::tile_bytes)
  uint64_t result = 0;  // the result's tiles (ResultBytes), held twice
  // Event records, tile bookkeeping and the assembly's syntax tree.
  uint64_t bookkeeping = 0;

  uint64_t total() const { return request + tiles + 2 * result + bookkeeping; }
};

// The footprint of `decoded`, whose request was `request_bytes` long, at
// `cost` (Prepare's admission); a default JobCost gives what is known
// before Prepare.
Footprint JobFootprint(uint64_t request_bytes, const DecodedJob& decoded,
                       const JobCost& cost = {});

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_JOBS_ADMISSION_H_
