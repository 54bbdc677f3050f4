// Server::Start (server/server.h): the whole server in this process, as
// main.cc starts it, and its errors for options that cannot work.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/client.h"
#include "server/server.h"
#include "server/transport/address.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ServerOptions OnAnyPort() {
  ServerOptions options;
  options.grpc.address = "127.0.0.1:0";
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
  // Its port is closed: a new connection is refused at once (it used to be
  // queued unserved until the caller's connect timeout, 20 s).
  const std::string address = (*server)->address();
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(std::stoi(address.substr(address.rfind(':') + 1)));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  EXPECT_NE(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  EXPECT_EQ(errno, ECONNREFUSED);
  close(fd);
  EXPECT_FALSE(client->Health().ok());
}

// Refused naming the option fields to set: an embedded server has no flags
// (the program's messages name them instead, server/flags.cc).
TEST(EmbeddedServerTest, OptionsThatCannotWorkAreRefused) {
  ServerOptions names = OnAnyPort();
  names.tls_client_names = {"client"};
  const absl::Status no_ca = Server::Start(names).status();
  EXPECT_EQ(no_ca.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_ca.message()),
              HasSubstr("tls_client_names needs tls.client_ca"));
  ServerOptions key = OnAnyPort();
  key.tls.cert = "/nonexistent/server.crt";
  const absl::Status no_key = Server::Start(key).status();
  EXPECT_EQ(no_key.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_key.message()),
              HasSubstr("tls.cert and tls.key go together"));
  EXPECT_THAT(std::string(no_key.message()), Not(HasSubstr("--")));
}

TEST(EmbeddedServerTest, AnAddressInUseIsUnavailable) {
  absl::StatusOr<std::unique_ptr<Server>> first = Server::Start(OnAnyPort());
  ASSERT_TRUE(first.ok()) << first.status();
  ServerOptions same = OnAnyPort();
  same.grpc.address = (*first)->address();
  absl::StatusOr<std::unique_ptr<Server>> second = Server::Start(same);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable)
      << second.status();
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr("Address already in use"));
}

// Shared memory is for clients on the server's host: on by default only
// where every address the server listens on is a loopback one, and as
// asked otherwise. Capabilities says which.
TEST(EmbeddedServerTest, SharedMemoryIsOnByDefaultOnlyOnLoopback) {
  struct Case {
    std::string address;
    std::optional<bool> asked;
    bool on;
  };
  // Addresses beyond loopback are judged without listening on them.
  for (const char* address :
       {"0.0.0.0:50051", ":50051", "[::]:50051", "10.1.2.3:50051",
        "[::ffff:10.1.2.3]:1", "[::2]:1"}) {
    EXPECT_FALSE(IsLoopbackAddress(address)) << address;
  }
  // Numeric addresses only: whether "localhost" resolves depends on the
  // machine's /etc/hosts (a fresh Debian root has no entry for it).
  for (const char* address : {"127.0.0.1:50051", "127.9.9.9:1", "[::1]:0",
                              "[::ffff:127.0.0.1]:1", "[::ffff:127.2.0.1]:1"}) {
    EXPECT_TRUE(IsLoopbackAddress(address)) << address;
  }
  const Case cases[] = {
      {"127.0.0.1:0", std::nullopt, true},
      {"[::1]:0", std::nullopt, true},
      {"127.0.0.1:0", false, false},
      {"127.0.0.1:0", true, true},
  };
  for (const Case& c : cases) {
    ServerOptions options = OnAnyPort();
    options.grpc.address = c.address;
    options.shared_memory.enabled = c.asked;
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
    if (!server.ok() &&
        server.status().code() == absl::StatusCode::kUnavailable &&
        c.address.find("::1") != std::string::npos) {
      continue;  // no IPv6 loopback here
    }
    ASSERT_TRUE(server.ok()) << c.address << ": " << server.status();
    EXPECT_EQ((*server)->shared_memory(), c.on) << c.address;
    std::string local = (*server)->address();
    local = "127.0.0.1" + local.substr(local.rfind(':'));
    if (c.address.find("::1") != std::string::npos) {
      local = (*server)->address();
    }
    auto client = Client::Connect(local).value();
    EXPECT_EQ(client->GetCapabilities()->shared_memory().enabled(), c.on)
        << c.address;
    (*server)->Stop(absl::ZeroDuration());
  }
}

}  // namespace
}  // namespace ptoserve
