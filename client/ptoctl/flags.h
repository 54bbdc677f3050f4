// The flags of ptoctl that its commands read; client/ptoctl/flags.cc defines
// them, and the connection flags that client/options.h reads by name.
#ifndef PTOSERVE_CLIENT_PTOCTL_FLAGS_H_
#define PTOSERVE_CLIENT_PTOCTL_FLAGS_H_

#include <string>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(std::string, format);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::string, dtype);
ABSL_DECLARE_FLAG(std::string, shape);
ABSL_DECLARE_FLAG(std::string, valid);
ABSL_DECLARE_FLAG(std::string, src0);
ABSL_DECLARE_FLAG(std::string, src1);
ABSL_DECLARE_FLAG(std::string, tmp);
ABSL_DECLARE_FLAG(bool, shm);
ABSL_DECLARE_FLAG(std::string, target);
ABSL_DECLARE_FLAG(std::string, trace);
ABSL_DECLARE_FLAG(std::string, service);
ABSL_DECLARE_FLAG(std::string, d);
ABSL_DECLARE_FLAG(bool, plaintext);

#endif  // PTOSERVE_CLIENT_PTOCTL_FLAGS_H_
