#include "client/options.h"

#include <cstdlib>
#include <utility>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/read_input.h"
#include "core/status_macros.h"

namespace ptoserve {

namespace {

// The tool's flag --`name`, or `otherwise` where the tool defines none.
template <typename T>
absl::StatusOr<T> FlagOr(absl::string_view name, T otherwise) {
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  if (flag == nullptr) return otherwise;
  auto value = flag->TryGet<T>();
  if (!value.has_value()) {
    return absl::InternalError(absl::StrCat(
        "--", name, " is not of the type client/options.h expects"));
  }
  return *std::move(value);
}

// The bearer token, as ConnectionOptionsFromFlags says.
absl::StatusOr<std::string> Token(absl::string_view token_variable) {
  PTO_ASSIGN_OR_RETURN(const std::string token,
                       FlagOr<std::string>("token", ""));
  PTO_ASSIGN_OR_RETURN(const std::string file,
                       FlagOr<std::string>("token_file", ""));
  if (!token.empty() && !file.empty()) {
    return absl::InvalidArgumentError("give --token or --token_file, not both");
  }
  if (!token.empty()) return token;
  if (!file.empty()) {
    PTO_ASSIGN_OR_RETURN(const std::string text, ReadInput(file));
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (!line.empty() && line[0] != '#') return std::string(line);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "--token_file=", file, " holds no token (only blank or # lines)"));
  }
  if (token_variable.empty()) return std::string();
  const char* value = std::getenv(std::string(token_variable).c_str());
  return std::string(value == nullptr ? "" : value);
}

}  // namespace

absl::StatusOr<ConnectionOptions> ConnectionOptionsFromFlags(
    absl::string_view token_variable) {
  ConnectionOptions options;
  ClientOptions& client = options.client;
  PTO_ASSIGN_OR_RETURN(options.server, FlagOr<std::string>("server", ""));
  PTO_ASSIGN_OR_RETURN(const std::string ca, FlagOr<std::string>("tls_ca", ""));
  PTO_ASSIGN_OR_RETURN(const std::string cert,
                       FlagOr<std::string>("tls_cert", ""));
  PTO_ASSIGN_OR_RETURN(const std::string key,
                       FlagOr<std::string>("tls_key", ""));
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key go together (mutual TLS needs both)");
  }
  PTO_ASSIGN_OR_RETURN(client.tls_server_name,
                       FlagOr<std::string>("tls_server_name", ""));
  PTO_ASSIGN_OR_RETURN(const bool tls, FlagOr("tls", false));
  client.tls =
      tls || !ca.empty() || !cert.empty() || !client.tls_server_name.empty();
  for (auto [path, pem] : {std::pair{&ca, &client.tls_ca_pem},
                           std::pair{&cert, &client.tls_cert_pem},
                           std::pair{&key, &client.tls_key_pem}}) {
    if (path->empty()) continue;
    PTO_ASSIGN_OR_RETURN(*pem, ReadInput(*path));
  }
  PTO_ASSIGN_OR_RETURN(client.token, Token(token_variable));
  PTO_ASSIGN_OR_RETURN(client.connect_timeout,
                       FlagOr("timeout", client.connect_timeout));
  PTO_ASSIGN_OR_RETURN(client.call_timeout,
                       FlagOr("timeout", client.call_timeout));
  return options;
}

}  // namespace ptoserve
