// A test fixture whose tests share one ptoserve on its defaults and one
// connected client, started before the suite's first test and stopped after
// its last.
#ifndef PTOSERVE_TESTS_INTEGRATION_SHARED_SERVER_H_
#define PTOSERVE_TESTS_INTEGRATION_SHARED_SERVER_H_

#include <gtest/gtest.h>

#include "client/client.h"
#include "tests/integration/server_process.h"

namespace ptoserve {
namespace test {

class SharedServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess();
    client_ = Client::Connect(server_->address()).value().release();
  }
  static void TearDownTestSuite() {
    delete client_;
    delete server_;
    client_ = nullptr;
    server_ = nullptr;
  }

  static inline ServerProcess* server_ = nullptr;
  static inline Client* client_ = nullptr;
};

}  // namespace test
}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_INTEGRATION_SHARED_SERVER_H_
