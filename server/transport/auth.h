// Transport security and caller authentication: TLS (optionally mutual)
// credentials from PEM files, and bearer tokens from a file.
#ifndef PTOSERVE_SERVER_TRANSPORT_AUTH_H_
#define PTOSERVE_SERVER_TRANSPORT_AUTH_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ptoserve {

struct TlsFiles {
  std::string cert;  // server certificate chain (PEM); empty: plaintext
  std::string key;   // its private key (PEM)
  // If set, clients must present a certificate it signed (mutual TLS).
  std::string client_ca;
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
  // The same, for the value of the "authorization" metadata (null: absent).
  absl::Status CheckHeader(const absl::string_view* authorization) const;
  // Which of the tokens `context`'s call sent (its line among the file's
  // tokens, from 0), or -1 if none; in time that does not depend on which.
  int Identify(const grpc::ServerContextBase& context) const;
  // The same, for the value of the "authorization" metadata or HTTP header
  // (null: absent).
  int IdentifyHeader(const absl::string_view* authorization) const;

 private:
  std::vector<std::string> tokens_;
};

// Checks every call but the health service's on its initial metadata, so
// that a call without a valid token (UNAUTHENTICATED), or from a client
// certificate whose common name is not in `client_names` (PERMISSION_DENIED;
// empty: any the CA signed), is refused before gRPC reads its request.
// gRPC 1.51 runs such a processor for TLS credentials only
// (ServerCredentials::SetAuthMetadataProcessor); plaintext servers check
// tokens in the handlers, once the request has arrived. `auth` (null: no
// tokens) must outlive the processor.
std::shared_ptr<grpc::AuthMetadataProcessor> CallGate(
    const TokenAuthenticator* auth, std::vector<std::string> client_names);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_TRANSPORT_AUTH_H_
