// ptoctl's commands about the server itself: capabilities, health, and the
// shared-memory regions it holds (regions, unregister).
#ifndef PTOSERVE_CLIENT_PTOCTL_SERVER_COMMANDS_H_
#define PTOSERVE_CLIENT_PTOCTL_SERVER_COMMANDS_H_

#include <string>

namespace ptoserve {
namespace ptoctl {

// Each command returns ptoctl's exit status: 0, 1 for a server error, 2
// for a usage error.

// Targets, element types, limits and version.
int Capabilities();

// The gRPC health status of --service; exits 0 only when SERVING.
int Health();

// The shared-memory regions registered with the server.
int Regions();

// Unregisters the region `name`: what an operator does for a region whose
// client died without unregistering it.
int Unregister(const std::string& name);

}  // namespace ptoctl
}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_PTOCTL_SERVER_COMMANDS_H_
