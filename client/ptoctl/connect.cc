#include "client/ptoctl/connect.h"

#include <utility>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "client/options.h"
#include "client/ptoctl/flags.h"
#include "client/ptoctl/print.h"

namespace ptoserve {
namespace ptoctl {

namespace {

std::vector<std::string>& Headers() {
  static auto* headers = new std::vector<std::string>();
  return *headers;
}

// The -H headers into `options`: the token, or metadata.
absl::Status ApplyHeaders(ClientOptions* options) {
  for (const std::string& header : Headers()) {
    const size_t colon = header.find(':');
    const std::string name = absl::AsciiStrToLower(
        absl::StripAsciiWhitespace(absl::string_view(header).substr(0, colon)));
    if (colon == std::string::npos || name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("-H \"", header,
                       "\" is not \"NAME: VALUE\" (e.g. -H "
                       "'authorization: Bearer TOKEN')"));
    }
    const std::string value(absl::StripAsciiWhitespace(
        absl::string_view(header).substr(colon + 1)));
    if (name == "authorization") {
      absl::string_view token = value;
      if (!absl::ConsumePrefix(&token, "Bearer ")) {
        return absl::InvalidArgumentError(
            "-H authorization: the server takes \"Bearer TOKEN\"");
      }
      options->token = std::string(absl::StripAsciiWhitespace(token));
      continue;
    }
    options->metadata.emplace_back(name, value);
  }
  return absl::OkStatus();
}

}  // namespace

void SetHeaders(std::vector<std::string> headers) {
  Headers() = std::move(headers);
}

std::unique_ptr<Client> Connect(int* exit_code) {
  absl::StatusOr<ConnectionOptions> options =
      ConnectionOptionsFromFlags("PTOSERVE_TOKEN");
  if (options.ok() && absl::GetFlag(FLAGS_plaintext) && options->client.tls) {
    options = absl::InvalidArgumentError(
        "-plaintext asks for no TLS, and a --tls flag for TLS: give one");
  }
  if (options.ok()) {
    if (absl::Status applied = ApplyHeaders(&options->client); !applied.ok()) {
      options = applied;
    }
  }
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
