// The Open Inference Protocol's small path, as proto/small_job.h is
// ptoserve.v1's: a ModelInferRequest of the shape most calls carry (an
// instruction model, its inputs' elements in raw_input_contents) read from
// its bytes in one pass straight into the engine's job, the inputs' bytes
// as views into the request; and the ModelInferResponse written straight
// from the job's outcome. A request it does not cover it declines, and
// the generic path (ScanInferRequest, the protobuf parse,
// JobOfInferRequest, ToJobSpec; InferResponseOf) takes it as any other:
// it refuses nothing itself, so a request's answer, or its refusal, is
// the same whichever path reads it. tests/server/infer_wire_test holds
// the two paths equal.
#ifndef PTOSERVE_SERVER_OIP_INFER_WIRE_H_
#define PTOSERVE_SERVER_OIP_INFER_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "core/job.h"
#include "proto/small_job.h"
#include "proto/wire_out.h"
#include "server/oip/infer.h"
#include "server/oip/models.h"

namespace ptoserve {

struct SmallInfer {
  SmallJob job;  // its id and tiles' bytes are views into the request
  InferEnvelope envelope;
};

// The request `bytes` encode as its model's job, when the small path
// covers it, else nullopt. Covered: at most kSmallJobBytes, and as many
// inputs, outputs and raw contents as `limits` let ScanInferRequest pass;
// a model of
// `catalog` that runs one instruction, at version "" or "1"; no
// parameters of an input or an output, and of the request's at most
// `target`, a string naming one of the server's targets; each input src0
// (and src1, for a two-source model) once, of a datatype the model
// accepts, of shape [rows, cols] (each at least 1), its elements in
// raw_input_contents (one entry per input, of exactly its shape's bytes)
// and not in contents; outputs dst (and tmp, where the job's target takes
// one), each once; names, the id and the target in ASCII of at most
// kMaxNameBytes; each field that is not repeated at most once; no field
// the schema lacks; and bytes that are well formed to the end. Reads
// `bytes` once; they must outlive the job and any PreparedJob made of it.
std::optional<SmallInfer> ReadSmallInfer(absl::string_view bytes,
                                         const ModelCatalog& catalog,
                                         const EngineLimits& limits);

// The ModelInferResponse to the request `envelope` describes, written
// from its job's outcome: the bytes that InferResponseOf's message of the
// outcome's JobResult serializes to deterministically (map entries in key
// order), or those of the ModelStreamInferResponse carrying that message.
// REQUIRES: no output of the outcome was placed in shared memory
// (the inference protocol places none).
class InferResponseWriter {
 public:
  // The message written: the ModelInferResponse (ModelInfer's), or a
  // ModelStreamInferResponse that carries it (ModelStreamInfer's).
  enum class Form { kResponse, kStreamResponse };

  // Sizes the response; both must outlive the writer.
  InferResponseWriter(const InferEnvelope& envelope, const JobOutcome& outcome,
                      Form form = Form::kResponse);

  // The encoding's length in bytes.
  size_t size() const { return size_; }
  // Writes the encoding, exactly size() bytes, to `out`.
  void Write(uint8_t* out) const;

 private:
  // What the response describes twice, counting then writing.
  template <typename Out>
  void Response(Out& out) const;
  // The message `form_` says, around the response.
  template <typename Out>
  void Message(Out& out) const;

  const InferEnvelope& envelope_;
  const JobOutcome& outcome_;
  const Form form_;
  // The outputs answered, in order; the target and events as text.
  absl::InlinedVector<const OutputTile*, 2> outputs_;
  absl::string_view target_;  // TargetText's word, as the engine names it
  std::string events_;
  size_t size_ = 0;
  WireSizes sizes_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_OIP_INFER_WIRE_H_
