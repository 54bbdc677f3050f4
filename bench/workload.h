// Workload: the job ptobench sends, the dst it expects back, and the units
// (serialized messages) that carry it, one per message in flight with --shm.
#ifndef PTOSERVE_BENCH_WORKLOAD_H_
#define PTOSERVE_BENCH_WORKLOAD_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/settings.h"
#include "client/client.h"
#include "client/shared_region.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {
namespace ptobench {

// --shm: one job's dst in the shared-memory region.
struct ShmJob {
  uint8_t* dst = nullptr;   // where the server writes it
  uint64_t dst_offset = 0;  // the same, from the region's start
  uint64_t uses = 0;        // times sent
  bool checking = false;    // the job in flight is to be compared
};

// What one message sends: a unary call's or a stream's job, or a batch.
// Without --shm every call sends the one unit; with it each message that
// can be in flight has its own, whose tiles no other unit's overlap.
struct Unit {
  grpc::ByteBuffer request;  // the (first) job, serialized
  // Batch mode: JobBatch field 1 holding the unit's other jobs (--batch - 1
  // of them): all of a batch but its first job, which carries the
  // message's id.
  grpc::Slice batch_rest;
  std::vector<ShmJob> shm;  // --shm: one per job, in the message's order
};

struct Workload {
  // What units carry: Jobs, FlatJobs (--wire=flat) or the inference
  // protocol's ModelInferRequests (--wire=oip).
  enum class Wire { kJob, kFlat, kOip };
  Wire wire = Wire::kJob;
  v1::Job job;
  std::string expected;  // dst's data
  std::string poison;    // --shm: ~expected, written over a dst to check
  // Without --shm: one unit, sent by every call. With it: unit i is unary
  // call i's, or units [s * per_stream, (s + 1) * per_stream) are stream
  // s's.
  std::vector<Unit> units;
  int units_per_stream = 1;
  int shm_check_every = 1;
  // --shm: the connection that registered the region (it must outlive the
  // region, which unregisters through it), and the region.
  std::unique_ptr<Client> client;
  std::unique_ptr<SharedRegion> region;

  bool shm() const { return region != nullptr; }
};

// The job of --opcode on random --shape tiles of --dtype for --target, its
// expected dst, and the one unit every call sends (with the rest of a batch
// in batch mode). INVALID_ARGUMENT names the flag that is wrong.
absl::StatusOr<Workload> MakeWorkload(const Settings& settings);

// A JobBatch's field 1 (jobs) header for a job of `size` bytes.
std::string JobsFieldHeader(size_t size);

// The messages each stream keeps in flight: `stream_depth` jobs, in
// messages of `batch` jobs (0: stream mode, a job a message), at least one.
// REQUIRES: stream_depth >= 1, batch >= 0.
int MessagesPerStream(int stream_depth, int batch);

}  // namespace ptobench
}  // namespace ptoserve

#endif  // PTOSERVE_BENCH_WORKLOAD_H_
