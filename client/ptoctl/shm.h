// RunShared: an instruction command's job run with its tiles, and dst, in a
// shared-memory region that ptoctl creates, registers and removes (--shm).
#ifndef PTOSERVE_CLIENT_PTOCTL_SHM_H_
#define PTOSERVE_CLIENT_PTOCTL_SHM_H_

#include "client/client.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {
namespace ptoctl {

// Runs `job` with its tiles, and dst, in a shared-memory region made for
// it, and prints dst as the request path does. Returns the exit status.
// REQUIRES: `job` is an instruction command's, with tile src0 and dst "dst".
int RunShared(v1::Job job, const Client& client);

}  // namespace ptoctl
}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_PTOCTL_SHM_H_
