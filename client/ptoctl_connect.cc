#include "client/ptoctl_connect.h"

#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/options.h"
#include "client/ptoctl_print.h"

namespace ptoserve {
namespace ptoctl {

std::unique_ptr<Client> Connect(int* exit_code) {
  absl::StatusOr<ConnectionOptions> options =
      ConnectionOptionsFromFlags("PTOSERVE_TOKEN");
  if (!options.ok()) {
    *exit_code = UsageError(options.status().message());
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect(options->server, options->client);
  if (!client.ok()) {
    absl::Status status = client.status();
    // A server that closes the connection during the handshake says no more
    // than that; the usual causes are these.
    if (absl::EndsWith(status.message(), "Socket closed")) {
      status = absl::Status(
          status.code(),
          absl::StrCat(
              status.message(),
              !options->client.tls
                  ? " (the server closed the connection: does it "
                    "want TLS? --tls, --tls_ca)"
              : options->client.tls_cert_pem.empty()
                  ? " (does the server want a client certificate? "
                    "--tls_cert, --tls_key)"
                  : " (does the server trust this client certificate?)"));
    }
    *exit_code = Fail(status);
    return nullptr;
  }
  return std::move(*client);
}

}  // namespace ptoctl
}  // namespace ptoserve
