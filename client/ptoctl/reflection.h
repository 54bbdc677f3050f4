// ptoctl's generic commands, as grpcurl has them, through server reflection
// alone (no .proto files): list, describe and call.
#ifndef PTOSERVE_CLIENT_PTOCTL_REFLECTION_H_
#define PTOSERVE_CLIENT_PTOCTL_REFLECTION_H_

#include <string>

namespace ptoserve {
namespace ptoctl {

// The services the server lists, one a line; with `service`, its methods.
int List(const std::string& service);

// `symbol`'s definition with its comments.
int Describe(const std::string& symbol);

// Calls unary `method` (SERVICE/METHOD) with the request --d gives: JSON,
// @FILE, or - for standard input; prints the response as JSON.
int CallMethod(const std::string& method);

}  // namespace ptoctl
}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_PTOCTL_REFLECTION_H_
