// Transport security and caller authentication: TLS (optionally mutual)
// credentials from PEM files, and bearer tokens from a file.
#ifndef PTOSERVE_SERVER_AUTH_H_
#define PTOSERVE_SERVER_AUTH_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ptoserve {

struct TlsFiles {
  std::string cert;       // server certificate chain (PEM); empty: plaintext
  std::string key;        // its private key (PEM)
  std::string client_ca;  // if set, clients must present a certificate it signed
};

// Plaintext credentials when `files.cert` is empty, else TLS (mutual TLS
// with a client CA). INVALID_ARGUMENT names a file that cannot be read or
// a cert given without its key.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const TlsFiles& files);

// Checks "authorization: Bearer <token>" call metadata against a set of
// tokens, in time that does not depend on where a guess first differs.
class TokenAuthenticator {
 public:
  // Reads one token per line from `path`; blank lines and lines starting
  // with '#' are skipped. INVALID_ARGUMENT if unreadable or holding none.
  static absl::StatusOr<TokenAuthenticator> FromFile(const std::string& path);

  explicit TokenAuthenticator(std::vector<std::string> tokens)
      : tokens_(std::move(tokens)) {}

  // OK, or UNAUTHENTICATED saying whether the token was missing or wrong.
  absl::Status Check(const grpc::ServerContextBase& context) const;

 private:
  std::vector<std::string> tokens_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_AUTH_H_
