// TLS, mutual TLS and bearer tokens, with certificates made at test time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "client/client.h"
#include "tests/integration/process_stats.h"
#include "tests/integration/reflection_util.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_files.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

absl::Status TryTand(const std::string& address, const ClientOptions& options) {
  auto client = Client::Connect(address, options);
  if (!client.ok()) return client.status();
  std::vector<int32_t> a(4, 6), b(4, 3);
  absl::StatusOr<TileResult<int32_t>> r =
      (*client)->Tand<int32_t>({a, b, 2, 2});
  if (!r.ok()) return r.status();
  return r->elements == std::vector<int32_t>(4, 2)
             ? absl::OkStatus()
             : absl::InternalError("wrong result");
}

ClientOptions Quick() {
  ClientOptions o;
  o.connect_timeout = absl::Seconds(2);
  return o;
}

TEST(SecurityTest, TlsServerRefusesPlaintextAndServesTls) {
  Pki pki;
  ServerProcess server({"--tls_cert=" + pki.path("server.crt"),
                        "--tls_key=" + pki.path("server.key")});
  EXPECT_EQ(TryTand(server.address(), Quick()).code(),
            absl::StatusCode::kUnavailable);
  ClientOptions tls = Quick();
  tls.tls = true;
  tls.tls_ca_pem = pki.pem("ca.crt");
  EXPECT_TRUE(TryTand(server.address(), tls).ok());
  // A client that trusts another CA does not get through, and says why.
  ClientOptions stranger = tls;
  stranger.tls_ca_pem = pki.pem("other-ca.crt");
  absl::Status refused = TryTand(server.address(), stranger);
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("certificate verify failed"));
  // The server is none the worse for it.
  EXPECT_TRUE(TryTand(server.address(), tls).ok());
}

TEST(SecurityTest, MutualTlsNeedsAClientCertificate) {
  Pki pki;
  ServerProcess server({"--tls_cert=" + pki.path("server.crt"),
                        "--tls_key=" + pki.path("server.key"),
                        "--tls_client_ca=" + pki.path("ca.crt")});
  ClientOptions tls = Quick();
  tls.tls = true;
  tls.tls_ca_pem = pki.pem("ca.crt");
  absl::Status refused =
      TryTand(server.address(), tls);  // no client certificate
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_THAT(std::string(refused.message()), HasSubstr("Socket closed"));
  tls.tls_cert_pem = pki.pem("client.crt");
  tls.tls_key_pem = pki.pem("client.key");
  EXPECT_TRUE(TryTand(server.address(), tls).ok());
  // A certificate another CA signed is no better than none.
  ClientOptions impostor = tls;
  impostor.tls_cert_pem = pki.pem("other-ca.crt");
  impostor.tls_key_pem = pki.pem("other-ca.key");
  EXPECT_EQ(TryTand(server.address(), impostor).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(TryTand(server.address(), tls).ok());
}

TEST(SecurityTest, BearerTokens) {
  const std::string tokens =
      WriteTempFile("tokens", "# ptoserve tokens\n\nsecret-one\nsecret-two\n");
  ServerProcess server({"--auth_token_file=" + tokens});
  ClientOptions o = Quick();
  absl::Status missing = TryTand(server.address(), o);
  EXPECT_EQ(missing.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(missing.message()), HasSubstr("missing credentials"));
  o.token = "secret-three";
  EXPECT_EQ(TryTand(server.address(), o).code(),
            absl::StatusCode::kUnauthenticated);
  o.token = "secret-on";  // a prefix of a real one
  EXPECT_EQ(TryTand(server.address(), o).code(),
            absl::StatusCode::kUnauthenticated);
  o.token = "secret-two";
  EXPECT_TRUE(TryTand(server.address(), o).ok());

  // Probes need no token; streams and capabilities do.
  auto anonymous = Client::Connect(server.address(), Quick()).value();
  EXPECT_EQ(anonymous->Health().value(), "SERVING");
  EXPECT_EQ(anonymous->GetCapabilities().status().code(),
            absl::StatusCode::kUnauthenticated);
  absl::Status stream = anonymous->ExecuteStream({}, [](v1::JobResult) {});
  EXPECT_EQ(stream.code(), absl::StatusCode::kUnauthenticated);
  absl::Status batches =
      anonymous->ExecuteBatches({}, [](v1::JobResultBatch) {});
  EXPECT_EQ(batches.code(), absl::StatusCode::kUnauthenticated);

  // ptoctl sends the token too.
  CommandResult r = RunCommand(
      "client/ptoctl/ptoctl --server=" + server.address() +
      " --token=secret-one tand --dtype=int8 --shape=1x2 --src0=3 --src1=6");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand("client/ptoctl/ptoctl --server=" + server.address() +
                 " tand --dtype=int8 --shape=1x2 --src0=3 --src1=6");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("UNAUTHENTICATED"));
  // The hint names ptoctl's own ways to send one.
  EXPECT_THAT(r.output, HasSubstr("ptoctl sends a token with --token_file"));
}

TEST(SecurityTest, ReflectionFollowsItsFlag) {
  auto list = [](const std::string& address) {
    return test::ListServices(
               grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))
        .status.error_code();
  };
  ServerProcess with;
  EXPECT_EQ(list(with.address()), grpc::StatusCode::OK);
  ServerProcess without({"--reflection=false"});
  EXPECT_EQ(list(without.address()), grpc::StatusCode::UNIMPLEMENTED);
}

TEST(SecurityTest, PtoctlOverTls) {
  Pki pki;
  ServerProcess server({"--tls_cert=" + pki.path("server.crt"),
                        "--tls_key=" + pki.path("server.key")});
  CommandResult r =
      RunCommand("client/ptoctl/ptoctl --server=" + server.address() +
                 " --tls --tls_ca=" + pki.path("ca.crt") + " health");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "SERVING\n");
}

// ptoctl reports why a connection failed, as gRPC says it, as soon as it
// fails: not after --timeout, and not as a bare "cannot connect".
TEST(SecurityTest, PtoctlConnectionFailuresFailFastWithTheReason) {
  Pki pki;
  ServerProcess server({"--tls_cert=" + pki.path("server.crt"),
                        "--tls_key=" + pki.path("server.key"),
                        "--tls_client_ca=" + pki.path("ca.crt")});
  const std::string ptoctl =
      "client/ptoctl/ptoctl --timeout=60s --server=" + server.address() + " ";
  struct Case {
    std::string flags, reason;
  };
  const Case cases[] = {
      {"",
       "Socket closed (the server closed the connection: does it want TLS?"},
      {"--tls_ca=" + pki.path("other-ca.crt"), "certificate verify failed"},
      {"--tls_ca=" + pki.path("ca.crt"),
       "does the server want a client certificate?"},
  };
  for (const Case& c : cases) {
    const auto start = std::chrono::steady_clock::now();
    CommandResult r = RunCommand(ptoctl + c.flags + " health");
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(r.exit_code, 1) << c.flags << ": " << r.output;
    EXPECT_THAT(r.output,
                HasSubstr("UNAVAILABLE: cannot connect to ptoserve at"))
        << c.flags;
    EXPECT_THAT(r.output, HasSubstr(c.reason)) << c.flags;
    // Far below --timeout=60s: the wait ended at the failure.
    EXPECT_LT(took, std::chrono::seconds(30)) << c.flags;
  }
  // --tls_ca implies --tls; a certificate without its key is a usage error.
  CommandResult r =
      RunCommand(ptoctl + "--tls_ca=" + pki.path("ca.crt") +
                 " --tls_cert=" + pki.path("client.crt") +
                 " --tls_key=" + pki.path("client.key") + " health");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "SERVING\n");
  r = RunCommand(ptoctl + "--tls_ca=" + pki.path("ca.crt") +
                 " --tls_cert=" + pki.path("client.crt") + " health");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--tls_cert and --tls_key go together"));
}

// Tokens need not be on the command line: --token_file (its first line
// that is not a comment, so a server's token file works) or
// $PTOSERVE_TOKEN.
TEST(SecurityTest, PtoctlTokenFromAFileOrTheEnvironment) {
  const std::string tokens = WriteTempFile(
      "tokens", "# ptoserve tokens\n\n  secret-one\nsecret-two\n");
  ServerProcess server({"--auth_token_file=" + tokens});
  const std::string ptoctl =
      "client/ptoctl/ptoctl --server=" + server.address() + " ";
  const std::string tand = " tand --dtype=int8 --shape=1x2 --src0=3 --src1=6";
  CommandResult r = RunCommand(ptoctl + "--token_file=" + tokens + tand);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("dst: 1x2 int8\n  2 2\n"));
  r = RunCommand("PTOSERVE_TOKEN=secret-two " + ptoctl + tand);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand("PTOSERVE_TOKEN=secret-three " + ptoctl + tand);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("UNAUTHENTICATED"));
  WriteTempFile("tokens.empty", "# nothing here\n");
  r = RunCommand(ptoctl + "--token_file=" + tokens + ".empty" + tand);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("holds no token"));
  r = RunCommand(ptoctl + "--token=a --token_file=" + tokens + tand);
  EXPECT_EQ(r.exit_code, 2);
}

// With TLS, a call without a valid token is refused on its metadata: the
// server does not read a 60 MiB request to refuse it. (Plaintext servers
// check in the handler, once gRPC has read the request: gRPC 1.51 runs
// metadata processors for TLS credentials only.)
TEST(SecurityTest, TlsTokensAreCheckedBeforeTheRequestIsRead) {
  Pki pki;
  const std::string tokens = WriteTempFile("tls_tokens", "secret\n");
  ServerProcess server({"--tls_cert=" + pki.path("server.crt"),
                        "--tls_key=" + pki.path("server.key"),
                        "--auth_token_file=" + tokens});
  const int64_t before = ReadProcessStats(server.pid()).hwm_kb;
  ClientOptions tls = Quick();
  tls.tls = true;
  tls.tls_ca_pem = pki.pem("ca.crt");
  tls.max_message_bytes = 64 << 20;
  auto client = Client::Connect(server.address(), tls).value();
  std::vector<int32_t> big(15 << 19, 7);  // two 30 MiB tiles
  absl::StatusOr<TileResult<int32_t>> r =
      client->Tand<int32_t>({big, big, 15 << 9, 1 << 10});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated)
      << r.status();
  const int64_t grown = ReadProcessStats(server.pid()).hwm_kb - before;
  std::cout << "peak grew by " << MiB(grown) << " refusing a 60 MiB request\n";
  if (kMemoryBoundsApply) {
    EXPECT_LT(grown, 40 * 1024);
  }
  // Health stays open to probes; a good token passes.
  EXPECT_EQ(client->Health().value(), "SERVING");
  tls.token = "secret";
  EXPECT_TRUE(TryTand(server.address(), tls).ok());
}

// --tls_client_names narrows mutual TLS from "any certificate the CA
// signed" to certificates with these common names.
TEST(SecurityTest, ClientCertificateNamesCanBeRestricted) {
  Pki pki;
  ClientOptions tls = Quick();
  tls.tls = true;
  tls.tls_ca_pem = pki.pem("ca.crt");
  tls.tls_cert_pem = pki.pem("client.crt");  // CN=client
  tls.tls_key_pem = pki.pem("client.key");
  {
    ServerProcess server({"--tls_cert=" + pki.path("server.crt"),
                          "--tls_key=" + pki.path("server.key"),
                          "--tls_client_ca=" + pki.path("ca.crt"),
                          "--tls_client_names=billing,client"});
    EXPECT_TRUE(TryTand(server.address(), tls).ok());
  }
  ServerProcess server({"--tls_cert=" + pki.path("server.crt"),
                        "--tls_key=" + pki.path("server.key"),
                        "--tls_client_ca=" + pki.path("ca.crt"),
                        "--tls_client_names=billing"});
  absl::Status refused = TryTand(server.address(), tls);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << refused;
  EXPECT_THAT(
      std::string(refused.message()),
      HasSubstr("common name \"client\" is not one --tls_client_names allows"));
  auto client = Client::Connect(server.address(), tls).value();
  EXPECT_EQ(client->Health().value(), "SERVING");
  CommandResult r = RunCommand(
      "server/ptoserve --address=127.0.0.1:0 --metrics_address= "
      "--http_address= "
      "--tls_client_names=x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--tls_client_names needs --tls_client_ca"));
}

TEST(SecurityTest, AKeyThatIsNotTheCertificatesSaysSo) {
  // No metrics port: the default one may be another server's.
  Pki pki;
  CommandResult r = RunCommand(
      "timeout 20 server/ptoserve --address=127.0.0.1:0 --metrics_address= "
      "--http_address= "
      "--tls_cert=" +
      pki.path("server.crt") + " --tls_key=" + pki.path("client.key"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("is --tls_key the key of --tls_cert?"));
}

TEST(SecurityTest, BadSecurityFlagsStopTheServerWithAMessage) {
  CommandResult r = RunCommand(
      "server/ptoserve --address=127.0.0.1:0 --metrics_address= "
      "--http_address= "
      "--tls_cert=/nonexistent");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--tls_cert and --tls_key go together"));
  r = RunCommand(
      "server/ptoserve --address=127.0.0.1:0 --metrics_address= "
      "--http_address= "
      "--auth_token_file=/nonexistent");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(
      r.output,
      HasSubstr("--auth_token_file=/nonexistent: cannot read the file"));
}

}  // namespace
}  // namespace ptoserve
