// ptoctl list, describe and call against the server's own reflection: what
// grpcurl does, with no .proto file on the client's side.
#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "ptoserve/v1/job.pb.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_files.h"

namespace ptoserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class PtoctlReflectionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess(); }
  static void TearDownTestSuite() { delete server_; }

  static CommandResult Ptoctl(const std::string& args) {
    return RunCommand("client/ptoctl/ptoctl --server=" + server_->address() +
                      " " + args);
  }

  static ServerProcess* server_;
};

ServerProcess* PtoctlReflectionTest::server_ = nullptr;

TEST_F(PtoctlReflectionTest, ListsTheServicesAndTheirMethods) {
  CommandResult r = Ptoctl("list");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output,
            "grpc.health.v1.Health\n"
            "grpc.reflection.v1.ServerReflection\n"
            "grpc.reflection.v1alpha.ServerReflection\n"
            "inference.GRPCInferenceService\n"
            "ptoserve.v1.SharedMemory\n"
            "ptoserve.v1.TileCompute\n");
  r = Ptoctl("list ptoserve.v1.TileCompute");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output,
            "ptoserve.v1.TileCompute.Execute\n"
            "ptoserve.v1.TileCompute.ExecuteStream\n"
            "ptoserve.v1.TileCompute.ExecuteBatches\n"
            "ptoserve.v1.TileCompute.GetCapabilities\n");
}

// What a grpcurl user types works as grpcurl does: the address first,
// -plaintext, -d, -H, and SERVICE/METHOD alone as a call.
TEST_F(PtoctlReflectionTest, TakesGrpcurlsCommandLines) {
  const std::string address = server_->address();
  CommandResult r =
      RunCommand("client/ptoctl/ptoctl -plaintext " + address + " list");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ptoserve.v1.TileCompute\n"));
  r = RunCommand("client/ptoctl/ptoctl " + address +
                 " list ptoserve.v1.TileCompute");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ptoserve.v1.TileCompute.Execute\n"));
  r = RunCommand("client/ptoctl/ptoctl -plaintext " + address +
                 " describe ptoserve.v1.Tile");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("message Tile {"));
  // A call by its name alone, its request from -d, a header sent along.
  r = RunCommand("client/ptoctl/ptoctl -plaintext -H 'x-trace: 1' -d '{}' " +
                 address + " grpc.health.v1.Health/Check");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"status\": \"SERVING\""));
  r = RunCommand("client/ptoctl/ptoctl " + address +
                 " ptoserve.v1.TileCompute/GetCapabilities");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"serverVersion\""));
  // ptoctl's own commands take the address first too.
  r = RunCommand("client/ptoctl/ptoctl " + address + " health");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "SERVING\n");
  // Contradictions are usage errors, saying what contradicts what.
  r = RunCommand("client/ptoctl/ptoctl --server=" + address + " " + address +
                 " list 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("the server is given twice"));
  r = RunCommand("client/ptoctl/ptoctl -plaintext --tls " + address +
                 " list 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("-plaintext asks for no TLS"));
  r = RunCommand("client/ptoctl/ptoctl -H nocolon " + address + " list 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("is not \"NAME: VALUE\""));
}

// grpcurl's -H 'authorization: Bearer TOKEN' is the token.
TEST(PtoctlHeaderTest, AnAuthorizationHeaderIsTheToken) {
  ServerProcess server(
      {"--auth_token_file=" + WriteTempFile("tokens", "secret-one\n")});
  CommandResult r = RunCommand(
      "client/ptoctl/ptoctl -plaintext -H 'authorization: Bearer secret-one' " +
      server.address() + " capabilities");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand("client/ptoctl/ptoctl -H 'authorization: Bearer wrong' " +
                 server.address() + " capabilities 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("UNAUTHENTICATED"));
}

TEST_F(PtoctlReflectionTest, DescribesEverySymbolKindWithItsComments) {
  // Every listed service, the health service included.
  for (const char* service :
       {"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection", "ptoserve.v1.SharedMemory",
        "ptoserve.v1.TileCompute"}) {
    CommandResult r = Ptoctl(std::string("describe ") + service);
    ASSERT_EQ(r.exit_code, 0) << service << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(std::string(service) + " is a service:\n"));
    EXPECT_THAT(r.output, HasSubstr("rpc "));
  }
  CommandResult r = Ptoctl("describe ptoserve.v1.Tile");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ptoserve.v1.Tile is a message:\n"));
  EXPECT_THAT(r.output, HasSubstr("optional double fill = 11"));
  EXPECT_THAT(r.output, HasSubstr("// One number for every element"));
  r = Ptoctl("describe ptoserve.v1.TileCompute/Execute");
  EXPECT_THAT(r.output,
              HasSubstr("ptoserve.v1.TileCompute.Execute is a method:\n"));
  EXPECT_THAT(r.output, HasSubstr("rpc Execute(.ptoserve.v1.Job) returns "
                                  "(.ptoserve.v1.JobResult);"));
  r = Ptoctl("describe ptoserve.v1.Opcode");
  EXPECT_THAT(r.output, HasSubstr("ptoserve.v1.Opcode is an enum:\n"));
  EXPECT_THAT(r.output, HasSubstr("OPCODE_TXOR = "));
  r = Ptoctl("describe ptoserve.v1.Job.tiles");
  EXPECT_THAT(r.output, HasSubstr("ptoserve.v1.Job.tiles is a field:\n"));
}

TEST_F(PtoctlReflectionTest, CallsAnyUnaryMethodWithJson) {
  CommandResult r = Ptoctl("call grpc.health.v1.Health/Check");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "{\n  \"status\": \"SERVING\"\n}\n");
  r = Ptoctl(
      "call grpc.health.v1.Health/Check "
      "-d '{\"service\": \"ptoserve.v1.SharedMemory\"}'");
  EXPECT_EQ(r.output, "{\n  \"status\": \"SERVING\"\n}\n");
  r = Ptoctl("call ptoserve.v1.SharedMemory/List");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "{}\n");
  // TXOR on a2a3 from standard input, checked against a scalar XOR.
  const std::string job =
      R"({"target": "TARGET_A2A3", "tiles": {)"
      R"("a": {"dtype": "DTYPE_UINT8", "rows": 1, "cols": 32, "fill": 12},)"
      R"("b": {"dtype": "DTYPE_UINT8", "rows": 1, "cols": 32, "fill": 10}},)"
      R"("instructions": [{"opcode": "OPCODE_TXOR", "dst": "c", "src0": "a",)"
      R"("src1": "b", "tmp": "t"}], "outputs": ["c"]})";
  r = RunCommand("printf '%s' '" + job +
                 "' | client/ptoctl/ptoctl --server=" + server_->address() +
                 " call ptoserve.v1.TileCompute/Execute -d @");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  v1::JobResult result;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(r.output, &result).ok())
      << r.output;
  const std::string& c = result.tiles().at("c").data();
  ASSERT_EQ(c.size(), 32u);
  for (char byte : c) EXPECT_EQ(static_cast<uint8_t>(byte), 12 ^ 10);
  ASSERT_EQ(result.events_size(), 1);
  EXPECT_EQ(result.events(0).trace_size(), 4);  // a2a3's four steps
}

TEST_F(PtoctlReflectionTest, ErrorsSayWhatIsWrong) {
  // What the command line asks that the server's methods cannot take is a
  // usage error (exit 2, no gRPC code), though reflection found it out.
  CommandResult r = Ptoctl("call ptoserve.v1.TileCompute/ExecuteStream");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("ExecuteStream streams"));
  EXPECT_THAT(r.output, Not(HasSubstr("INVALID_ARGUMENT")));
  r = Ptoctl("call ptoserve.v1.TileCompute/Nothing");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("has no method Nothing (it has Execute, "));
  r = Ptoctl("call grpc.health.v1.Health/Check -d '{\"bogus\": 1}'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output,
              HasSubstr("not a grpc.health.v1.HealthCheckRequest in JSON"));
  r = Ptoctl("describe no.such.Thing");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("NOT_FOUND"));
  EXPECT_THAT(r.output, Not(HasSubstr("did you mean")));
  // A name without its package: the one a listed service's package has.
  r = Ptoctl("describe Tile");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("(did you mean ptoserve.v1.Tile?)"));
  r = Ptoctl("describe ModelInferRequest");
  EXPECT_THAT(r.output,
              HasSubstr("(did you mean inference.ModelInferRequest?)"));
  r = Ptoctl(
      "call ptoserve.v1.TileCompute/Execute -d '{\"instructions\": []}'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("INVALID_ARGUMENT"));
  // Usage errors exit 2.
  EXPECT_EQ(Ptoctl("call").exit_code, 2);
  EXPECT_EQ(Ptoctl("describe").exit_code, 2);
  EXPECT_EQ(Ptoctl("health -d '{}'").exit_code, 2);
  EXPECT_EQ(Ptoctl("call x/y -d @/nonexistent/file").exit_code, 2);
}

}  // namespace
}  // namespace ptoserve
