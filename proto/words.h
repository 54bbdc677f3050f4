// The words every door and client uses for ptoserve.v1's enums and event
// records: "int16" for DTYPE_INT16, "a2a3" for TARGET_A2A3, "TAND" for
// OPCODE_TAND, and an event record as one line with its micro-ops and
// notes under it. ptoctl prints them; the Open Inference Protocol's
// answers carry them (server/oip).
#ifndef PTOSERVE_PROTO_WORDS_H_
#define PTOSERVE_PROTO_WORDS_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "ptoserve/v1/job.pb.h"
#include "ptoserve/v1/tile.pb.h"

namespace ptoserve {

// Each strips its own enum's prefix, so what follows it may hold '_'; an
// unknown value's name is empty and stays so.
std::string DTypeText(v1::DType dtype);
std::string TargetText(v1::Target target);
std::string OpcodeText(v1::Opcode opcode);

// "  e0   instruction 0 TAND on host, PIPE_V, batch 3 (size 1), queued
// 1.2us, ran 800ns", then a line per micro-op and per note, each ending in
// a newline.
std::string EventText(const v1::EventRecord& event);

// EventText's lines one at a time, for an event in another form: the
// server's inference answers write the engine's events without building
// an EventRecord (proto/codec.h's AppendEventText). EventText is these
// three, in this order: the head, a line per micro-op, a line per note.
struct EventHead {
  absl::string_view id;
  uint32_t index = 0;
  absl::string_view opcode;  // OpcodeText's words
  absl::string_view target;  // TargetText's
  absl::string_view pipe;    // "PIPE_V"
  uint64_t batch_id = 0;
  uint32_t batch_size = 0;
  absl::Duration queued, ran;
};
void AppendEventHead(const EventHead& head,
                     absl::Span<const absl::string_view> waited_on,
                     std::string* out);
void AppendMicroOpLine(absl::string_view op, absl::string_view dst,
                       absl::Span<const absl::string_view> srcs,
                       uint64_t repeats, uint64_t elements, std::string* out);
void AppendNoteLine(absl::string_view note, std::string* out);

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_WORDS_H_
