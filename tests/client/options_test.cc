// ConnectionOptionsFromFlags on flags defined here as a tool defines them:
// TLS implied by its files, the token's sources, and the defaults that a
// tool without --timeout keeps.
#include "client/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "");
ABSL_FLAG(bool, tls, false, "");
ABSL_FLAG(std::string, tls_ca, "", "");
ABSL_FLAG(std::string, tls_cert, "", "");
ABSL_FLAG(std::string, tls_key, "", "");
ABSL_FLAG(std::string, tls_server_name, "", "");
ABSL_FLAG(std::string, token, "", "");
ABSL_FLAG(std::string, token_file, "", "");

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

// Writes `text` to $TEST_TMPDIR/`name` and returns its path.
std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

class ConnectionOptionsTest : public ::testing::Test {
 private:
  absl::FlagSaver saver_;  // each test's flags are its own
};

TEST_F(ConnectionOptionsTest, PlaintextWithoutTlsFlags) {
  absl::StatusOr<ConnectionOptions> o = ConnectionOptionsFromFlags();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->server, "127.0.0.1:50051");
  EXPECT_FALSE(o->client.tls);
  EXPECT_EQ(o->client.token, "");
}

TEST_F(ConnectionOptionsTest, TlsFilesImplyTlsAndAreRead) {
  absl::SetFlag(&FLAGS_tls_ca, WriteFile("ca.pem", "CA PEM"));
  absl::SetFlag(&FLAGS_tls_cert, WriteFile("cert.pem", "CERT PEM"));
  absl::SetFlag(&FLAGS_tls_key, WriteFile("key.pem", "KEY PEM"));
  absl::SetFlag(&FLAGS_tls_server_name, "ptoserve.test");
  absl::StatusOr<ConnectionOptions> o = ConnectionOptionsFromFlags();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->client.tls);
  EXPECT_EQ(o->client.tls_ca_pem, "CA PEM");
  EXPECT_EQ(o->client.tls_cert_pem, "CERT PEM");
  EXPECT_EQ(o->client.tls_key_pem, "KEY PEM");
  EXPECT_EQ(o->client.tls_server_name, "ptoserve.test");
}

TEST_F(ConnectionOptionsTest, ServerNameAloneImpliesTls) {
  absl::SetFlag(&FLAGS_tls_server_name, "ptoserve.test");
  absl::StatusOr<ConnectionOptions> o = ConnectionOptionsFromFlags();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->client.tls);
}

TEST_F(ConnectionOptionsTest, CertificateWithoutKeyIsAUsageError) {
  absl::SetFlag(&FLAGS_tls_cert, WriteFile("cert.pem", "CERT PEM"));
  absl::StatusOr<ConnectionOptions> o = ConnectionOptionsFromFlags();
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(o.status().message(),
              HasSubstr("--tls_cert and --tls_key go together"));
}

TEST_F(ConnectionOptionsTest, UnreadableFileSaysWhich) {
  absl::SetFlag(&FLAGS_tls_ca, "/nonexistent/ca.pem");
  absl::StatusOr<ConnectionOptions> o = ConnectionOptionsFromFlags();
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(o.status().message(),
              HasSubstr("cannot read /nonexistent/ca.pem"));
}

TEST_F(ConnectionOptionsTest, TokenFileFirstLineThatIsNotAComment) {
  absl::SetFlag(&FLAGS_token_file,
                WriteFile("tokens", "# tokens\n\n  sesame  \nother\n"));
  absl::StatusOr<ConnectionOptions> o = ConnectionOptionsFromFlags();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->client.token, "sesame");
}

TEST_F(ConnectionOptionsTest, TokenFileWithoutTokenIsAUsageError) {
  absl::SetFlag(&FLAGS_token_file, WriteFile("no_tokens", "# none\n\n"));
  absl::StatusOr<ConnectionOptions> o = ConnectionOptionsFromFlags();
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(o.status().message(), HasSubstr("holds no token"));
}

TEST_F(ConnectionOptionsTest, TokenAndTokenFileDoNotGoTogether) {
  absl::SetFlag(&FLAGS_token, "a");
  absl::SetFlag(&FLAGS_token_file, WriteFile("tokens", "b\n"));
  absl::StatusOr<ConnectionOptions> o = ConnectionOptionsFromFlags();
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ConnectionOptionsTest, TokenVariableOnlyWhenNamedAndNoFlagGivesOne) {
  setenv("OPTIONS_TEST_TOKEN", "from-env", 1);
  absl::StatusOr<ConnectionOptions> o = ConnectionOptionsFromFlags();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->client.token, "");
  o = ConnectionOptionsFromFlags("OPTIONS_TEST_TOKEN");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->client.token, "from-env");
  absl::SetFlag(&FLAGS_token, "from-flag");
  o = ConnectionOptionsFromFlags("OPTIONS_TEST_TOKEN");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->client.token, "from-flag");
  unsetenv("OPTIONS_TEST_TOKEN");
}

// This binary, like ptobench, defines no --timeout.
TEST_F(ConnectionOptionsTest, WithoutTimeoutFlagTheDefaultsStay) {
  absl::StatusOr<ConnectionOptions> o = ConnectionOptionsFromFlags();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->client.connect_timeout, ClientOptions().connect_timeout);
  EXPECT_EQ(o->client.call_timeout, ClientOptions().call_timeout);
}

}  // namespace
}  // namespace ptoserve
