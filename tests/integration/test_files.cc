#include "tests/integration/test_files.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/integration/server_process.h"

namespace ptoserve {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir == nullptr ? "/tmp" : dir) + "/" + name;
}

std::string WriteTempFile(const std::string& name, const std::string& bytes) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

Pki::Pki() {
  const std::string ec =
      "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const std::string script =
      "cd " + TempPath("") +
      " && set -e\n"
      "openssl req -x509 " +
      ec +
      " -keyout ca.key -out ca.crt -days 1 -subj /CN=test-ca\n"
      "openssl req -x509 " +
      ec +
      " -keyout other.key -out other.crt -days 1 -subj /CN=other-ca\n"
      "openssl req " +
      ec +
      " -keyout server.key -out server.csr -subj /CN=localhost\n"
      "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > san.ext\n"
      "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key "
      "-CAcreateserial "
      "-out server.crt -days 1 -extfile san.ext\n"
      "openssl req " +
      ec +
      " -keyout client.key -out client.csr -subj /CN=client\n"
      "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key "
      "-CAcreateserial "
      "-out client.crt -days 1\n";
  CommandResult r = RunCommand(script);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace ptoserve
