// The models an Open Inference Protocol client sees (docs/INFERENCE.md):
// one per instruction the engine runs (`tand`, `txor`, `tor`, `tnot`:
// core/ops.h's table), each reading `src0` (and `src1`) and writing `dst`
// (and `tmp` where a target takes one), and `job`, which runs a whole
// program. All at version "1", all ready while the server is. Made once
// from the server's capabilities; read by both doors.
#ifndef PTOSERVE_SERVER_OIP_MODELS_H_
#define PTOSERVE_SERVER_OIP_MODELS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/ops.h"
#include "inference/grpc_service.pb.h"
#include "ptoserve/v1/service.pb.h"

namespace ptoserve {

// The one version every model has.
inline constexpr char kModelVersion[] = "1";
// The model that runs a program.
inline constexpr char kJobModel[] = "job";

struct InferModel {
  std::string name;            // "tand", or "job"
  const OpInfo* op = nullptr;  // null: the job model
  // The datatypes its inputs accept on some target ("INT8", ...), in the
  // protocol's words and the engine's order.
  std::vector<std::string> datatypes;
  // The targets that run it (host, a2a3, a5), and those that take a tmp.
  std::vector<v1::Target> targets;
  std::vector<v1::Target> tmp_targets;
};

class ModelCatalog {
 public:
  explicit ModelCatalog(const v1::Capabilities& capabilities);

  // The model `name` at `version` ("" or "1"), or NOT_FOUND naming what
  // was asked for and what there is.
  absl::StatusOr<const InferModel*> Find(absl::string_view name,
                                         absl::string_view version) const;
  const std::vector<InferModel>& models() const { return models_; }
  // "job, tand, tnot, tor, txor".
  std::string Names() const;
  v1::Target default_target() const { return default_target_; }
  const std::vector<v1::Target>& targets() const { return targets_; }

  inference::ModelMetadataResponse Metadata(const InferModel& model) const;
  // Every model, READY (they are while the server is).
  inference::RepositoryIndexResponse Index() const;

 private:
  std::vector<InferModel> models_;  // by name
  std::vector<v1::Target> targets_;
  v1::Target default_target_;
};

// What the server answers to ServerMetadata (and GET /v2): its name,
// version and the protocol's extensions it serves.
inference::ServerMetadataResponse ServerMetadataOf();

// "host, a2a3, a5": targets in their words, joined by `separator`.
std::string TargetList(const std::vector<v1::Target>& targets,
                       absl::string_view separator = ", ");

// The protocol's datatype of a ptoserve element type ("INT16"), or "" for
// one it has none of; and back (DTYPE_UNSPECIFIED for none of ours).
std::string DatatypeOf(v1::DType dtype);
v1::DType DTypeOfDatatype(absl::string_view datatype);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_OIP_MODELS_H_
