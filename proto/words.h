// The words every door and client uses for ptoserve.v1's enums and event
// records: "int16" for DTYPE_INT16, "a2a3" for TARGET_A2A3, "TAND" for
// OPCODE_TAND, and an event record as one line with its micro-ops and
// notes under it. ptoctl prints them; the Open Inference Protocol's
// answers carry them (server/oip).
#ifndef PTOSERVE_PROTO_WORDS_H_
#define PTOSERVE_PROTO_WORDS_H_

#include <string>

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

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_WORDS_H_
