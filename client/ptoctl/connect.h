// Connect: ptoctl's connection to the server its flags name, or the reason
// there is none printed, with the likely cause of a closed handshake.
#ifndef PTOSERVE_CLIENT_PTOCTL_CONNECT_H_
#define PTOSERVE_CLIENT_PTOCTL_CONNECT_H_

#include <memory>
#include <string>
#include <vector>

#include "client/client.h"

namespace ptoserve {
namespace ptoctl {

// Connects as the connection flags say (client/options.h; the token may
// also come from $PTOSERVE_TOKEN, and -H headers add metadata), or prints
// why not, sets `exit_code` and returns null.
std::unique_ptr<Client> Connect(int* exit_code);

// The -H "NAME: VALUE" headers of the command line, sent with every call
// (as grpcurl's -H): "authorization: Bearer TOKEN" is the token. Call
// before Connect.
void SetHeaders(std::vector<std::string> headers);

}  // namespace ptoctl
}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_PTOCTL_CONNECT_H_
