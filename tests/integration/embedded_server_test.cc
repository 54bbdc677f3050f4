// Server::Start (server/server.h): the whole server in this process, as
// main.cc starts it, and its errors for options that cannot work.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "client/client.h"
#include "server/server.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

ServerOptions OnAnyPort() {
  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.scheduling.workers = 2;
  return options;
}

TEST(EmbeddedServerTest, ServesAJobAndStops) {
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(OnAnyPort());
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT((*server)->address(), HasSubstr("127.0.0.1:"));
  EXPECT_EQ((*server)->metrics_url(), "");
  auto client = Client::Connect((*server)->address()).value();
  EXPECT_EQ(client->Health().value(), "SERVING");
  std::vector<int16_t> a(32), b(32);
  for (int i = 0; i < 32; ++i) {
    a[i] = static_cast<int16_t>(i * 977);
    b[i] = static_cast<int16_t>(~i * 31);
  }
  BinaryArgs<int16_t> args;
  args.src0 = a;
  args.src1 = b;
  args.rows = 2;
  args.cols = 16;
  absl::StatusOr<TileResult<int16_t>> r = client->Txor(args);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->elements.size(), 32u);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(r->elements[i], static_cast<int16_t>(a[i] ^ b[i])) << i;
  }
  (*server)->Stop(absl::Seconds(1));
  EXPECT_FALSE(client->Health().ok());
}

TEST(EmbeddedServerTest, OptionsThatCannotWorkAreRefused) {
  ServerOptions names = OnAnyPort();
  names.tls_client_names = {"client"};
  EXPECT_EQ(Server::Start(names).status().code(),
            absl::StatusCode::kInvalidArgument);
  ServerOptions key = OnAnyPort();
  key.tls.cert = "/nonexistent/server.crt";
  EXPECT_EQ(Server::Start(key).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EmbeddedServerTest, AnAddressInUseIsUnavailable) {
  absl::StatusOr<std::unique_ptr<Server>> first = Server::Start(OnAnyPort());
  ASSERT_TRUE(first.ok()) << first.status();
  ServerOptions same = OnAnyPort();
  same.address = (*first)->address();
  absl::StatusOr<std::unique_ptr<Server>> second = Server::Start(same);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable)
      << second.status();
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr("Address already in use"));
}

}  // namespace
}  // namespace ptoserve
