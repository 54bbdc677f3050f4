#include "server/transport/auth.h"

#include <grpc/grpc_security_constants.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/setting_names.h"
#include "core/quote.h"
#include "server/log/log.h"

namespace ptoserve {

namespace {

absl::StatusOr<std::string> ReadFile(Setting setting, const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::InvalidArgumentError(absl::StrCat(
        SettingName(setting), "=", path, ": cannot read the file"));
  }
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Equal iff `a` and `b` are; its time depends only on their lengths.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? a[i] : 0;
    const unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const TlsFiles& files) {
  if (files.cert.empty() && files.key.empty()) {
    if (!files.client_ca.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(SettingName(Setting::kTlsClientCa), " needs ",
                       SettingName(Setting::kTlsCert), " and ",
                       SettingName(Setting::kTlsKey)));
    }
    return grpc::InsecureServerCredentials();
  }
  if (files.cert.empty() || files.key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(SettingName(Setting::kTlsCert), " and ",
                     SettingName(Setting::kTlsKey), " go together"));
  }
  grpc::SslServerCredentialsOptions options;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  auto cert = ReadFile(Setting::kTlsCert, files.cert);
  if (!cert.ok()) return cert.status();
  auto key = ReadFile(Setting::kTlsKey, files.key);
  if (!key.ok()) return key.status();
  pair.cert_chain = *cert;
  pair.private_key = *key;
  options.pem_key_cert_pairs.push_back(pair);
  if (!files.client_ca.empty()) {
    auto ca = ReadFile(Setting::kTlsClientCa, files.client_ca);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<TokenAuthenticator> TokenAuthenticator::FromFile(
    const std::string& path) {
  auto text = ReadFile(Setting::kAuthTokenFile, path);
  if (!text.ok()) return text.status();
  std::vector<std::string> tokens;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    tokens.emplace_back(line);
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(SettingName(Setting::kAuthTokenFile), "=", path,
                     " holds no token (one per line)"));
  }
  return TokenAuthenticator(std::move(tokens));
}

absl::Status TokenAuthenticator::Check(
    const grpc::ServerContextBase& context) const {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return CheckHeader(nullptr);
  const absl::string_view value(it->second.data(), it->second.size());
  return CheckHeader(&value);
}

absl::Status TokenAuthenticator::CheckHeader(
    const absl::string_view* authorization) const {
  if (authorization == nullptr) {
    return absl::UnauthenticatedError(
        "missing credentials: send the metadata \"authorization: Bearer "
        "<token>\"");
  }
  absl::string_view value = *authorization;
  if (!absl::ConsumePrefix(&value, "Bearer ")) {
    return absl::UnauthenticatedError(
        "the authorization metadata must read \"Bearer <token>\"");
  }
  bool known = false;
  for (const std::string& token : tokens_) {
    known |= ConstantTimeEquals(value, token);  // no early exit
  }
  if (!known) return absl::UnauthenticatedError("unknown bearer token");
  return absl::OkStatus();
}

int TokenAuthenticator::Identify(const grpc::ServerContextBase& context) const {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return -1;
  const absl::string_view value(it->second.data(), it->second.size());
  return IdentifyHeader(&value);
}

int TokenAuthenticator::IdentifyHeader(
    const absl::string_view* authorization) const {
  if (authorization == nullptr) return -1;
  absl::string_view value = *authorization;
  if (!absl::ConsumePrefix(&value, "Bearer ")) return -1;
  int found = -1;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    // No early exit. A token listed twice is one client (its last line).
    const bool equal = ConstantTimeEquals(value, tokens_[i]);
    found = equal ? static_cast<int>(i) : found;
  }
  return found;
}

namespace {

class Gate final : public grpc::AuthMetadataProcessor {
 public:
  Gate(const TokenAuthenticator* auth, std::vector<std::string> client_names)
      : auth_(auth), client_names_(std::move(client_names)) {}

  // A few short comparisons: cheap enough for gRPC's thread.
  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& metadata,
                       grpc::AuthContext* context, OutputMetadata*,
                       OutputMetadata*) override {
    // Probes (kubelet, load balancers) carry no token.
    if (auto path = metadata.find(":path");
        path != metadata.end() &&
        absl::StartsWith(
            absl::string_view(path->second.data(), path->second.size()),
            "/grpc.health.v1.Health/")) {
      return grpc::Status::OK;
    }
    if (!client_names_.empty()) {
      bool allowed = false;
      std::string seen;
      for (const grpc::string_ref& name :
           context->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME)) {
        seen.assign(name.data(), name.size());
        allowed |= std::find(client_names_.begin(), client_names_.end(),
                             seen) != client_names_.end();
      }
      if (!allowed) {
        return Refused(
            metadata, grpc::StatusCode::PERMISSION_DENIED,
            absl::StrCat("the client certificate's common name ",
                         seen.empty() ? "(none)" : ShortQuote(seen),
                         " is not one ", SettingName(Setting::kTlsClientNames),
                         " allows"));
      }
    }
    if (auth_ == nullptr) return grpc::Status::OK;
    auto it = metadata.find("authorization");
    absl::string_view value;
    if (it != metadata.end()) {
      value = absl::string_view(it->second.data(), it->second.size());
    }
    absl::Status allowed =
        auth_->CheckHeader(it == metadata.end() ? nullptr : &value);
    if (allowed.ok()) return grpc::Status::OK;
    return Refused(metadata, grpc::StatusCode::UNAUTHENTICATED,
                   std::string(allowed.message()));
  }

 private:
  // A call refused here never reaches the calls' own logging (it has no
  // handler): its line is written here, as the handlers' would be.
  static grpc::Status Refused(const InputMetadata& metadata,
                              grpc::StatusCode code, std::string message) {
    CallLine line;
    line.door = "grpc";
    if (auto path = metadata.find(":path"); path != metadata.end()) {
      line.method = absl::string_view(path->second.data(), path->second.size());
    }
    line.code = code == grpc::StatusCode::UNAUTHENTICATED ? "UNAUTHENTICATED"
                                                          : "PERMISSION_DENIED";
    line.ok = false;
    line.message = message;
    Log::Get().Called(line);
    return grpc::Status(code, std::move(message));
  }

  const TokenAuthenticator* auth_;
  const std::vector<std::string> client_names_;
};

}  // namespace

std::shared_ptr<grpc::AuthMetadataProcessor> CallGate(
    const TokenAuthenticator* auth, std::vector<std::string> client_names) {
  return std::make_shared<Gate>(auth, std::move(client_names));
}

}  // namespace ptoserve
