// A job's JobResult written straight from what the job made (its
// JobOutcome) into protobuf's encoding, without building the message: the
// reply path of the doors that send bytes. The bytes are those that
// ToJobResult's message serializes to deterministically (map entries in
// key order); tests/proto/result_wire_test holds the two equal.
#ifndef PTOSERVE_PROTO_RESULT_WIRE_H_
#define PTOSERVE_PROTO_RESULT_WIRE_H_

#include <cstddef>
#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "core/job.h"
#include "proto/codec.h"
#include "proto/wire_out.h"

namespace ptoserve {

class ResultWriter {
 public:
  // The lengths of the nested messages, in the order they start.
  using Sizes = WireSizes;

  // Sizes the result of a job with id `id`; everything must outlive the
  // writer.
  ResultWriter(absl::string_view id, const JobOutcome& outcome,
               const ResultEncodings& encodings);

  // The encoding's length in bytes.
  size_t size() const { return size_; }
  // Writes the encoding, exactly size() bytes, to `out`.
  void Write(uint8_t* out) const;

 private:
  const absl::string_view id_;
  const JobOutcome& outcome_;
  const ResultEncodings& encodings_;
  size_t size_ = 0;
  Sizes sizes_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_RESULT_WIRE_H_
