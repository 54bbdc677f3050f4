// ConnectionOptionsFromFlags: the server and how to reach it, from the
// connection flags that ptoctl and ptobench share.
//
// Each tool defines the flags itself, with its own help text:
//   --server                 the address, as Client::Connect takes it
//   --tls, --tls_ca, --tls_cert, --tls_key, --tls_server_name
//   --token, --token_file    the bearer token
//   --timeout                the wait for a connection, and each call's
// This reads them by name, so that the files they name are read, and the
// rules between them kept, in one place for both tools. A flag a tool does
// not define keeps ClientOptions' default (ptobench has no --timeout).
#ifndef PTOSERVE_CLIENT_OPTIONS_H_
#define PTOSERVE_CLIENT_OPTIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/client.h"

namespace ptoserve {

// Where to connect, and how.
struct ConnectionOptions {
  std::string server;    // --server
  ClientOptions client;  // TLS with its files read, the token, timeouts
};

// The connection the flags describe. TLS is on with --tls or with any
// other --tls_ flag. The token is --token, else --token_file's first line
// that is neither blank nor a # comment (so a server's token file works),
// else the environment variable `token_variable` unless that is empty.
// INVALID_ARGUMENT, a usage error, for flags that do not go together and
// for a file that cannot be read; INTERNAL for a tool that defines one of
// the flags with another type (--tls is a bool, --timeout an
// absl::Duration, the others strings).
// REQUIRES: absl::ParseCommandLine has run.
absl::StatusOr<ConnectionOptions> ConnectionOptionsFromFlags(
    absl::string_view token_variable = "");

}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_OPTIONS_H_
