// ptoctl's commands that send jobs or read them: the instructions (tand,
// txor, tor, tnot) made from flags, run, stream, and fmt.
#ifndef PTOSERVE_CLIENT_PTOCTL_JOB_COMMANDS_H_
#define PTOSERVE_CLIENT_PTOCTL_JOB_COMMANDS_H_

#include <string>
#include <vector>

#include "core/ops.h"

namespace ptoserve {
namespace ptoctl {

// Each command returns ptoctl's exit status: 0, 1 for a server error (or a
// job that failed), 2 for a usage error.

// The usage error "--out is for tand, txor, ... and run".
int OutIsForInstructionsAndRun();

// One instruction `op` on tiles src0, src1 (and tmp) made from the flags.
int Instruction(const OpInfo& op);

// Sends the job in `path` (proto3 JSON, or assembly with the input tiles
// `tiles`, --tile specs) and prints its result; with `ub_map` the unified
// buffer's layout after it.
int RunJob(const std::string& path, const std::vector<std::string>& tiles,
           bool ub_map);

// Prints the program in `path` in the canonical AS level 2 form; needs no
// server.
int Format(const std::string& path);

// Sends the JSON jobs of `path`, one a line, over one stream, and prints
// each result as its job finishes.
int StreamJobs(const std::string& path);

}  // namespace ptoctl
}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_PTOCTL_JOB_COMMANDS_H_
