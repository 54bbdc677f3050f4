// ReadInput: a file named on the command line, "-" being standard input:
// ptoctl's jobs and programs, and the PEM and token files of both tools.
#ifndef PTOSERVE_CLIENT_READ_INPUT_H_
#define PTOSERVE_CLIENT_READ_INPUT_H_

#include <string>

#include "absl/status/statusor.h"

namespace ptoserve {

// The contents of the file `path`, or of standard input for "-".
// INVALID_ARGUMENT, with the system's reason, if it cannot be read.
absl::StatusOr<std::string> ReadInput(const std::string& path);

}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_READ_INPUT_H_
