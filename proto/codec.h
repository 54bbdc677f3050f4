// Translation between the wire schema (ptoserve.v1) and a job's vocabulary
// (core/job.h): bytes and messages only, no engine. Assembly is parsed and
// lowered by server/jobs/decode.h; jobs are run by server/jobs/dispatcher.h.
#ifndef PTOSERVE_PROTO_CODEC_H_
#define PTOSERVE_PROTO_CODEC_H_

#include <google/protobuf/duration.pb.h>
#include <google/protobuf/timestamp.pb.h>

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/job.h"
#include "core/types.h"
#include "ptoserve/v1/job.pb.h"
#include "ptoserve/v1/service.pb.h"

namespace ptoserve {

// Slices of shared-memory regions (v1::RegionSlice) as bytes, for
// ToJobSpec. The server's implementation (server/shm/shared_memory.h) keeps
// the regions it resolves mapped for as long as it lives.
class SharedSlices {
 public:
  virtual ~SharedSlices() = default;
  // The bytes `slice` names, for tile `tile` (a name in the job, which
  // must stay valid until CheckOverlaps), which the job reads (`write`
  // false) or writes (an output_regions entry). The error says what is
  // wrong with the slice; ToJobSpec puts the field's name in front.
  virtual absl::StatusOr<absl::Span<uint8_t>> Resolve(
      const v1::RegionSlice& slice, absl::string_view tile, bool write) = 0;
  // Once every slice of a job is resolved: INVALID_ARGUMENT when a written
  // slice overlaps another slice of the job other than its own tile's input
  // at exactly the same bytes.
  virtual absl::Status CheckOverlaps() const = 0;
};

// The field of a job that holds a slice for tile `tile`: "tile \"a\"", or
// "output_regions[\"c\"]" for one it writes. Errors name it.
std::string SharedFieldName(absl::string_view tile, bool write);

// The engine's view of `job`'s tiles and instruction list. Tile elements are
// borrowed from `job` (or from `shared`), which must outlive the spec and
// any PreparedJob made from it. INVALID_ARGUMENT names the tile or
// instruction whose enum fields are unset or unknown, or whose elements are
// sent more than one way. Tiles in shared memory (Tile.shared) and
// output_regions are resolved by `shared`; without it (null) they are
// FAILED_PRECONDITION.
absl::StatusOr<JobSpec> ToJobSpec(const v1::Job& job,
                                  SharedSlices* shared = nullptr);

// The longest line of assembly a job may carry, in bytes: the seeds' forms
// with names at their longest fit in well under 4 KiB.
inline constexpr size_t kMaxAssemblyLineBytes = 4096;

// How each tile of a job travels back in its JobResult: as values when its
// elements came as values, else as bytes (data); a tile that came without
// elements, or that the job's instructions make, travels like the src0 of
// the first instruction that writes it, and a scratch tmp the target makes
// like that instruction's dst.
class ResultEncodings {
 public:
  ResultEncodings() = default;
  // `uses_tmp(opcode)`: whether the job's target computes that opcode
  // through its tmp (and so makes a tmp the job does not declare).
  ResultEncodings(const JobSpec& spec,
                  absl::FunctionRef<bool(Opcode)> uses_tmp);

  // Whether tile `name` travels as values rather than data.
  bool AsValues(absl::string_view name) const;

  // Outputs written to shared memory (Job.output_regions): they travel as
  // their shape and slice only.
  // `placed` (the job's) must outlive the encodings' use.
  void SetPlaced(
      const google::protobuf::Map<std::string, v1::RegionSlice>& placed) {
    placed_ = &placed;
  }
  // The slice output `name` is written to, or null.
  const v1::RegionSlice* Placed(absl::string_view name) const;

 private:
  absl::flat_hash_map<std::string, Encoding> of_;
  // Borrowed from the job, which outlives its result's building as the
  // spec's tile elements require.
  const google::protobuf::Map<std::string, v1::RegionSlice>* placed_ = nullptr;
};

// The bytes that the outputs of a job of `cost` take in its JobResult:
// 8 per element for those sent as values, none for those written to shared
// memory, their bytes for the others. A lower bound on the serialized
// result.
uint64_t ResultBytes(const JobCost& cost, const ResultEncodings& encodings);

// One event as the wire's record of it (a JobResult's events are these).
void ToEventRecord(const Event& event, v1::EventRecord* out);

// Appends proto/words.h's EventText of ToEventRecord(event), without the
// record: the small inference path's answers carry it for every job.
void AppendEventText(const Event& event, std::string* out);

// Fills `out` with the outcome's tiles (each as `encodings` says; data
// moves rather than copies) and events.
void ToJobResult(JobOutcome outcome, const ResultEncodings& encodings,
                 v1::JobResult* out);

// Abseil's durations and times as protobuf's well-known types (to the
// nanosecond, as both keep them).
google::protobuf::Duration ToDuration(absl::Duration d);
google::protobuf::Timestamp ToTimestamp(absl::Time t);
void SetDuration(absl::Duration d, google::protobuf::Duration* out);
void SetTimestamp(absl::Time t, google::protobuf::Timestamp* out);

v1::Target ToProto(Target target);
v1::DType ToProto(DType dtype);
v1::Opcode ToProto(Opcode opcode);
// REQUIRES: target != TARGET_UNSPECIFIED and is a known value.
absl::StatusOr<Target> FromProto(v1::Target target);

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_CODEC_H_
