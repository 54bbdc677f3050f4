// Files a test writes and reads in its scratch directory ($TEST_TMPDIR),
// and a small PKI for the TLS tests.
#ifndef PTOSERVE_TESTS_INTEGRATION_TEST_FILES_H_
#define PTOSERVE_TESTS_INTEGRATION_TEST_FILES_H_

#include <string>

namespace ptoserve {

// $TEST_TMPDIR/`name`.
std::string TempPath(const std::string& name);

// Writes `bytes` to $TEST_TMPDIR/`name` and returns its path.
std::string WriteTempFile(const std::string& name, const std::string& bytes);

// The whole of the file at `path` ("" if it cannot be read).
std::string ReadWholeFile(const std::string& path);

// A CA, a server certificate for localhost and 127.0.0.1 (CN=localhost), a
// client certificate (CN=client), both signed by the CA, and a second CA
// that signed nothing ("other-ca.crt"), made by tools/make_certs.sh in
// $TEST_TMPDIR.
class Pki {
 public:
  Pki();
  // $TEST_TMPDIR/`name`, e.g. "ca.crt", "server.key".
  std::string path(const std::string& name) const { return TempPath(name); }
  // The file's PEM text.
  std::string pem(const std::string& name) const {
    return ReadWholeFile(path(name));
  }
};

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_INTEGRATION_TEST_FILES_H_
