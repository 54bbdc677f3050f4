// Whether an HTTP request names this server: the Host check that keeps a
// page of another site, whose DNS name was pointed here (DNS rebinding),
// from using the server's HTTP endpoints.
#ifndef PTOSERVE_SERVER_HTTPD_HOST_CHECK_H_
#define PTOSERVE_SERVER_HTTPD_HOST_CHECK_H_

#include <sys/socket.h>

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ptoserve {

// Whether a request with Host header `host` ("name:port", "[::1]:8000"; ""
// when absent), on a connection that reached `local`, may be answered: its
// name is localhost, an IP literal of `local`, or one of `allowed` ("*"
// allows any). Names compare without case and without the port.
bool HostAllowed(absl::string_view host, const sockaddr_storage& local,
                 const std::vector<std::string>& allowed);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_HTTPD_HOST_CHECK_H_
