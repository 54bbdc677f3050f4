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
  // The script docs/DEPLOYING.md gives users, so that what it makes is
  // what these tests trust.
  CommandResult r =
      RunCommand("tools/make_certs.sh " + TempPath("") + " 1 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace ptoserve
