// End to end: the real ptoserve binary on a loopback port, driven through
// the C++ SDK, raw stubs, reflection and the health service.
#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstring>
#include <future>
#include <random>
#include <set>
#include <tuple>

#include "client/client.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "tests/integration/reflection_util.h"
#include "tests/integration/server_process.h"
#include "tests/integration/shared_server.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using ServerTest = test::SharedServerTest;

template <typename T>
std::vector<T> RandomElements(size_t n, std::mt19937* rng) {
  std::uniform_int_distribution<int64_t> dist(std::numeric_limits<T>::min(),
                                              std::numeric_limits<T>::max());
  std::vector<T> out(n);
  for (T& v : out) v = static_cast<T>(dist(*rng));
  return out;
}

// Runs TAND and TXOR through the SDK on every target and compares each
// element with a scalar loop: the valid region computed, the rest zero
// (the server allocated dst).
template <typename T>
void CheckBinaryOnEveryTarget(Client& client) {
  std::mt19937 rng(sizeof(T) * 7 + std::is_signed_v<T>);
  constexpr uint32_t kRows = 6, kCols = 64, kValidRows = 5, kValidCols = 61;
  const std::vector<T> a = RandomElements<T>(kRows * kCols, &rng);
  const std::vector<T> b = RandomElements<T>(kRows * kCols, &rng);
  for (v1::Target target : {v1::TARGET_HOST, v1::TARGET_A2A3, v1::TARGET_A5}) {
    for (bool is_xor : {false, true}) {
      SCOPED_TRACE(absl::StrCat(v1::Target_Name(target),
                                is_xor ? " TXOR " : " TAND ",
                                v1::DType_Name(DTypeOf<T>())));
      BinaryArgs<T> args{a, b, kRows, kCols, kValidRows, kValidCols, target};
      absl::StatusOr<TileResult<T>> r =
          is_xor ? client.Txor(args) : client.Tand(args);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->elements.size(), a.size());
      EXPECT_EQ(r->target, target);
      for (uint32_t i = 0; i < kRows; ++i) {
        for (uint32_t j = 0; j < kCols; ++j) {
          const size_t k = i * kCols + j;
          T want = 0;
          if (i < kValidRows && j < kValidCols) {
            want = static_cast<T>(is_xor ? a[k] ^ b[k] : a[k] & b[k]);
          }
          ASSERT_EQ(r->elements[k], want) << "element " << i << "," << j;
        }
      }
      ASSERT_EQ(r->events.size(), 1u);
      EXPECT_EQ(r->events[0].pipe(), v1::PIPE_V);
    }
  }
}

TEST_F(ServerTest, BinaryOpsMatchScalarReferenceForEveryTypeAndTarget) {
  CheckBinaryOnEveryTarget<int8_t>(*client_);
  CheckBinaryOnEveryTarget<uint8_t>(*client_);
  CheckBinaryOnEveryTarget<int16_t>(*client_);
  CheckBinaryOnEveryTarget<uint16_t>(*client_);
  CheckBinaryOnEveryTarget<int32_t>(*client_);
  CheckBinaryOnEveryTarget<uint32_t>(*client_);
}

// The same over `values`: each integer type sent as numbers and answered
// as numbers, on every target, element by element against a scalar loop.
template <typename T>
void CheckValuesOnEveryTarget(Client& client) {
  std::mt19937 rng(sizeof(T) * 11 + std::is_signed_v<T>);
  constexpr uint32_t kRows = 2, kCols = 32;  // 32-byte rows for every type
  const std::vector<T> a = RandomElements<T>(kRows * kCols, &rng);
  const std::vector<T> b = RandomElements<T>(kRows * kCols, &rng);
  for (v1::Target target : {v1::TARGET_HOST, v1::TARGET_A2A3, v1::TARGET_A5}) {
    for (bool is_xor : {false, true}) {
      SCOPED_TRACE(absl::StrCat(v1::Target_Name(target),
                                is_xor ? " TXOR " : " TAND ",
                                v1::DType_Name(DTypeOf<T>())));
      v1::Job job;
      job.set_target(target);
      for (auto [name, elements] : {std::pair{"a", &a}, std::pair{"b", &b}}) {
        v1::Tile& t = (*job.mutable_tiles())[name];
        t.set_dtype(DTypeOf<T>());
        t.set_rows(kRows);
        t.set_cols(kCols);
        for (T v : *elements) t.add_values(static_cast<double>(v));
      }
      v1::Instruction* inst = job.add_instructions();
      inst->set_opcode(is_xor ? v1::OPCODE_TXOR : v1::OPCODE_TAND);
      inst->set_dst("c");
      inst->set_src0("a");
      inst->set_src1("b");
      if (is_xor) inst->set_tmp("t");
      absl::StatusOr<v1::JobResult> r = client.Execute(job);
      ASSERT_TRUE(r.ok()) << r.status();
      const v1::Tile& c = r->tiles().at("c");
      EXPECT_TRUE(c.data().empty());
      ASSERT_EQ(c.values_size(), static_cast<int>(a.size()));
      for (size_t k = 0; k < a.size(); ++k) {
        ASSERT_EQ(c.values(k),
                  static_cast<T>(is_xor ? a[k] ^ b[k] : a[k] & b[k]))
            << k;
      }
    }
  }
}

TEST_F(ServerTest, EveryIntegerTypeAsValuesOnEveryTarget) {
  CheckValuesOnEveryTarget<int8_t>(*client_);
  CheckValuesOnEveryTarget<uint8_t>(*client_);
  CheckValuesOnEveryTarget<int16_t>(*client_);
  CheckValuesOnEveryTarget<uint16_t>(*client_);
  CheckValuesOnEveryTarget<int32_t>(*client_);
  CheckValuesOnEveryTarget<uint32_t>(*client_);
}

// Tiles of other element types travel through a job untouched when asked
// for as outputs: float32 as values and as data, float16 as data.
TEST_F(ServerTest, FloatTilesPassThroughBothEncodings) {
  v1::Job job;
  for (const char* name : {"a", "b"}) {
    v1::Tile& t = (*job.mutable_tiles())[name];
    t.set_dtype(v1::DTYPE_INT32);
    t.set_rows(1);
    t.set_cols(8);
    t.set_fill(name[0] == 'a' ? 12 : 10);
  }
  v1::Tile& f_values = (*job.mutable_tiles())["fv"];
  f_values.set_dtype(v1::DTYPE_FLOAT32);
  f_values.set_rows(1);
  f_values.set_cols(4);
  for (double v : {1.5, -0.25, 3.0e38, 0.0}) f_values.add_values(v);
  v1::Tile& f_data = (*job.mutable_tiles())["fd"];
  f_data = f_values;
  f_data.clear_values();
  const float floats[4] = {2.5f, -1.0f, 7.0f, 1e-3f};
  f_data.set_data(reinterpret_cast<const char*>(floats), sizeof(floats));
  v1::Tile& h_data = (*job.mutable_tiles())["h"];
  h_data.set_dtype(v1::DTYPE_FLOAT16);
  h_data.set_rows(1);
  h_data.set_cols(2);
  h_data.set_data(std::string("\x00\x3c\x00\xc0", 4));  // 1.0, -2.0
  v1::Instruction* inst = job.add_instructions();
  inst->set_opcode(v1::OPCODE_TAND);
  inst->set_dst("c");
  inst->set_src0("a");
  inst->set_src1("b");
  for (const char* name : {"c", "fv", "fd", "h"}) job.add_outputs(name);
  absl::StatusOr<v1::JobResult> r = client_->Execute(job);
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::Tile& fv = r->tiles().at("fv");
  ASSERT_EQ(fv.values_size(), 4);
  EXPECT_EQ(fv.values(0), 1.5);
  EXPECT_EQ(fv.values(1), -0.25);
  EXPECT_EQ(fv.values(2), static_cast<double>(3.0e38f));
  EXPECT_EQ(fv.values(3), 0.0);
  EXPECT_EQ(r->tiles().at("fd").data(),
            std::string(reinterpret_cast<const char*>(floats), sizeof(floats)));
  EXPECT_EQ(r->tiles().at("h").data(), std::string("\x00\x3c\x00\xc0", 4));
  const std::vector<int32_t> c =
      TileElements<int32_t>(r->tiles().at("c")).value();
  EXPECT_EQ(c, std::vector<int32_t>(8, 12 & 10));
}

// Manual mode over gRPC on every target: tiles bound to 32-byte aligned
// addresses run and give the scalar loop's answer; a misaligned address is
// refused on a2a3 and a5 as on host; two tiles at one address run where
// the target allows it (host, a5), and are refused for a2a3's TXOR.
TEST_F(ServerTest, ManualModeOnEveryTarget) {
  std::mt19937 rng(21);
  const std::vector<int16_t> a = RandomElements<int16_t>(4 * 16, &rng);
  const std::vector<int16_t> b = RandomElements<int16_t>(4 * 16, &rng);
  auto job_at = [&](v1::Target target, bool is_xor, uint64_t dst_address) {
    v1::Job job;
    job.set_target(target);
    job.set_mode(v1::MODE_MANUAL);
    for (auto [name, address, elements] :
         {std::tuple{"a", uint64_t{0x100}, &a},
          std::tuple{"b", uint64_t{0x200}, &b}}) {
      v1::Tile& t = (*job.mutable_tiles())[name];
      SetTileData<int16_t>(*elements, &t);
      t.set_rows(4);
      t.set_cols(16);
      t.set_address(address);
    }
    for (auto [name, address] :
         {std::pair{"c", dst_address}, std::pair{"t", uint64_t{0x400}}}) {
      v1::Tile& t = (*job.mutable_tiles())[name];
      t.set_dtype(v1::DTYPE_INT16);
      t.set_rows(4);
      t.set_cols(16);
      t.set_address(address);
    }
    v1::Instruction* inst = job.add_instructions();
    inst->set_opcode(is_xor ? v1::OPCODE_TXOR : v1::OPCODE_TAND);
    inst->set_dst("c");
    inst->set_src0("a");
    inst->set_src1("b");
    if (is_xor) inst->set_tmp("t");
    job.add_outputs("c");
    return job;
  };
  for (v1::Target target : {v1::TARGET_HOST, v1::TARGET_A2A3, v1::TARGET_A5}) {
    for (bool is_xor : {false, true}) {
      SCOPED_TRACE(
          absl::StrCat(v1::Target_Name(target), is_xor ? " TXOR" : " TAND"));
      absl::StatusOr<v1::JobResult> r =
          client_->Execute(job_at(target, is_xor, 0x300));
      ASSERT_TRUE(r.ok()) << r.status();
      const std::vector<int16_t> c =
          TileElements<int16_t>(r->tiles().at("c")).value();
      ASSERT_EQ(c.size(), a.size());
      for (size_t k = 0; k < a.size(); ++k) {
        ASSERT_EQ(c[k],
                  static_cast<int16_t>(is_xor ? a[k] ^ b[k] : a[k] & b[k]))
            << k;
      }
      EXPECT_EQ(r->tiles().at("c").address(), 0x300u);
      // 0x310 is 16-byte aligned, not 32.
      absl::StatusOr<v1::JobResult> misaligned =
          client_->Execute(job_at(target, is_xor, 0x310));
      EXPECT_EQ(misaligned.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(std::string(misaligned.status().message()),
                  HasSubstr("address 0x310 is not 32-byte aligned"));
      // dst at src0's address.
      absl::StatusOr<v1::JobResult> shared =
          client_->Execute(job_at(target, is_xor, 0x100));
      if (is_xor && target == v1::TARGET_A2A3) {
        EXPECT_EQ(shared.status().code(), absl::StatusCode::kInvalidArgument);
        EXPECT_THAT(std::string(shared.status().message()),
                    HasSubstr("must not overlap"));
      } else {
        ASSERT_TRUE(shared.ok()) << shared.status();
        const std::vector<int16_t> c2 =
            TileElements<int16_t>(shared->tiles().at("c")).value();
        for (size_t k = 0; k < a.size(); ++k) {
          ASSERT_EQ(c2[k],
                    static_cast<int16_t>(is_xor ? a[k] ^ b[k] : a[k] & b[k]))
              << k;
        }
      }
    }
  }
}

TEST_F(ServerTest, ValuesInValuesOut) {
  v1::Job job;
  auto& tiles = *job.mutable_tiles();
  for (const char* name : {"a", "b"}) {
    tiles[name].set_dtype(v1::DTYPE_INT16);
    tiles[name].set_rows(2);
    tiles[name].set_cols(2);
  }
  for (double v : {-1.0, 2.0, 3.0, 32767.0}) tiles["a"].add_values(v);
  for (double v : {-32768.0, 6.0, 5.0, 255.0}) tiles["b"].add_values(v);
  v1::Instruction* inst = job.add_instructions();
  inst->set_opcode(v1::OPCODE_TXOR);
  inst->set_dst("c");
  inst->set_src0("a");
  inst->set_src1("b");
  absl::StatusOr<v1::JobResult> r = client_->Execute(job);
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::Tile& c = r->tiles().at("c");
  EXPECT_TRUE(c.data().empty());
  ASSERT_EQ(c.values_size(), 4);
  EXPECT_EQ(c.values(0), -1 ^ -32768);
  EXPECT_EQ(c.values(1), 2 ^ 6);
  EXPECT_EQ(c.values(2), 3 ^ 5);
  EXPECT_EQ(c.values(3), 32767 ^ 255);
}

TEST_F(ServerTest, A2A3TxorReportsItsFourSteps) {
  std::mt19937 rng(3);
  const std::vector<uint32_t> a = RandomElements<uint32_t>(16 * 16, &rng);
  const std::vector<uint32_t> b = RandomElements<uint32_t>(16 * 16, &rng);
  absl::StatusOr<TileResult<uint32_t>> r =
      client_->Txor<uint32_t>({a, b, 16, 16, 0, 0, v1::TARGET_A2A3});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->elements.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(r->elements[i], a[i] ^ b[i]) << i;
  }
  ASSERT_EQ(r->events.size(), 1u);
  const auto& trace = r->events[0].trace();
  ASSERT_EQ(trace.size(), 4);
  const std::vector<std::pair<std::string, std::string>> steps = {
      {"vor", "tmp"}, {"vand", "dst"}, {"vnot", "dst"}, {"vand", "dst"}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(trace[i].op(), steps[i].first);
    EXPECT_EQ(trace[i].dst(), steps[i].second);
    EXPECT_EQ(trace[i].repeats(), 4u);  // 16x16x4 bytes / 256
  }
}

// The unified buffer over the wire: c bound at a's address shares a's
// bytes, so d = a ^ b after c = a & b reads a = 5 & 3 and gives 1 ^ 3 = 2;
// the unbound d is placed by the server, and the result says where.
TEST_F(ServerTest, ManualModeTilesAtOneAddressShareBytes) {
  for (v1::Target target : {v1::TARGET_HOST, v1::TARGET_A2A3, v1::TARGET_A5}) {
    SCOPED_TRACE(v1::Target_Name(target));
    v1::Job job;
    job.set_target(target);
    job.set_mode(v1::MODE_MANUAL);
    for (auto [name, fill, address] :
         {std::tuple{"a", 5, 0x0}, std::tuple{"b", 3, 0x400},
          std::tuple{"c", -1, 0x0}}) {
      v1::Tile& t = (*job.mutable_tiles())[name];
      t.set_dtype(v1::DTYPE_INT32);
      t.set_rows(16);
      t.set_cols(16);
      t.set_address(address);
      if (fill >= 0) t.set_fill(fill);
    }
    v1::Instruction* tand = job.add_instructions();
    tand->set_opcode(v1::OPCODE_TAND);
    tand->set_dst("c");
    tand->set_src0("a");
    tand->set_src1("b");
    v1::Instruction* txor = job.add_instructions();
    txor->set_opcode(v1::OPCODE_TXOR);
    txor->set_dst("d");
    txor->set_src0("a");
    txor->set_src1("b");
    if (target == v1::TARGET_A2A3) txor->set_tmp("t");
    job.add_outputs("d");
    job.add_outputs("a");
    absl::StatusOr<v1::JobResult> r = client_->Execute(job);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(TileElements<int32_t>(r->tiles().at("d")).value(),
              std::vector<int32_t>(256, 2));
    EXPECT_EQ(TileElements<int32_t>(r->tiles().at("a")).value(),
              std::vector<int32_t>(256, 1));
    EXPECT_EQ(r->tiles().at("a").address(), 0x0u);
    EXPECT_EQ(r->tiles().at("d").address(), 0x800u);  // the lowest free
    ASSERT_EQ(r->events_size(), 2);
    const v1::EventRecord& e1 = r->events(1);
    ASSERT_GE(e1.operands_size(), 3);
    EXPECT_EQ(e1.operands(0).role(), "dst");
    EXPECT_EQ(e1.operands(0).tile(), "d");
    EXPECT_EQ(e1.operands(0).begin(), 0x800u);
    EXPECT_EQ(e1.operands(0).end(), 0xC00u);
    EXPECT_EQ(e1.operands(1).tile(), "a");
    EXPECT_EQ(e1.operands(1).begin(), 0x0u);
  }
}

// Auto mode on a2a3 places tiles in its 192 KiB and refuses more.
TEST_F(ServerTest, AutoModeProgramThatCannotFitIsRefused) {
  v1::Job job;
  job.set_target(v1::TARGET_A2A3);
  for (const char* name : {"a", "b"}) {
    v1::Tile& t = (*job.mutable_tiles())[name];
    t.set_dtype(v1::DTYPE_INT16);
    t.set_rows(256);
    t.set_cols(512);
    t.set_fill(1);
  }
  v1::Instruction* inst = job.add_instructions();
  inst->set_opcode(v1::OPCODE_TAND);
  inst->set_dst("c");
  inst->set_src0("a");
  inst->set_src1("b");
  absl::StatusOr<v1::JobResult> r = client_->Execute(job);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("does not fit in the a2a3 unified buffer of 196608 "
                        "bytes before the first instruction: the 2 tiles "
                        "live then need 524288 bytes"));
  // The same on the host, which models no buffer in auto mode, runs.
  job.set_target(v1::TARGET_HOST);
  r = client_->Execute(job);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->tiles().at("c").has_address());
  EXPECT_EQ(r->events(0).operands_size(), 0);
}

TEST_F(ServerTest, CapabilitiesDescribeEveryTarget) {
  absl::StatusOr<v1::Capabilities> caps = client_->GetCapabilities();
  ASSERT_TRUE(caps.ok()) << caps.status();
  EXPECT_EQ(caps->server_version(), "0.1.0");
  EXPECT_EQ(caps->default_target(), v1::TARGET_HOST);
  ASSERT_EQ(caps->targets_size(), 3);
  EXPECT_EQ(caps->targets(1).target(), v1::TARGET_A2A3);
  EXPECT_EQ(caps->targets(1).buffer_bytes(), 192u * 1024);
  EXPECT_TRUE(caps->targets(1).opcodes(1).tmp_required());
  EXPECT_EQ(caps->targets(2).buffer_bytes(), 256u * 1024);
  // Only the host keeps auto-mode tiles outside a modeled buffer.
  EXPECT_FALSE(caps->targets(0).auto_mode_in_buffer());
  EXPECT_TRUE(caps->targets(1).auto_mode_in_buffer());
  EXPECT_TRUE(caps->targets(2).auto_mode_in_buffer());
  EXPECT_FALSE(caps->targets(2).opcodes(1).tmp_required());
  EXPECT_EQ(caps->targets(0).opcodes(0).dtypes_size(), 6);
  EXPECT_EQ(caps->limits().max_message_bytes(), 64u << 20);
}

// gRPC turns SO_REUSEPORT on by default, so a second server on a busy port
// used to start and take a share of the connections. A second server on
// all of the first's ports (what starting one twice on the defaults does)
// names the gRPC port, the one its user gave first.
TEST(ServerStartTest, ASecondServerOnAPortInUseFailsToStart) {
  ServerProcess first;
  // "http://127.0.0.1:PORT/metrics" -> "127.0.0.1:PORT"
  std::string metrics = first.metrics_url().substr(strlen("http://"));
  metrics = metrics.substr(0, metrics.find('/'));
  for (const std::string& metrics_flag : {std::string(""), metrics}) {
    SCOPED_TRACE("--metrics_address=" + metrics_flag);
    // `timeout`: a server that does start must not hang the test.
    CommandResult r = RunCommand(
        "timeout 20 server/ptoserve --http_address= --metrics_address=" +
        metrics_flag + " --address=" + first.address());
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_THAT(r.output,
                HasSubstr("ptoserve: cannot listen on " + first.address() +
                          ": Address already in use"));
    EXPECT_THAT(r.output, Not(HasSubstr("metrics_address")));
  }
  auto client = Client::Connect(first.address()).value();
  EXPECT_EQ(client->Health().value(), "SERVING");
}

TEST_F(ServerTest, HealthReportsServing) {
  EXPECT_EQ(client_->Health().value(), "SERVING");
  EXPECT_EQ(client_->Health("ptoserve.v1.TileCompute").value(), "SERVING");
}

// What `grpcurl describe SERVICE` does: ask for the file that defines the
// symbol, build it and its imports into a pool of the client's own, and
// find the service there. Fails the test if any step fails.
template <typename Version>
void ExpectDescribable(const std::shared_ptr<grpc::Channel>& channel,
                       const std::string& service) {
  typename Version::Request request;
  request.set_file_containing_symbol(service);
  std::vector<google::protobuf::FileDescriptorProto> files;
  const test::ReflectionAnswer<Version> answer =
      test::Reflect<Version>(channel, request);
  EXPECT_TRUE(answer.status.ok())
      << service << ": " << answer.status.error_message();
  for (const auto& response : answer.responses) {
    EXPECT_FALSE(response.has_error_response())
        << service << ": " << response.error_response().error_message();
    for (const std::string& bytes :
         response.file_descriptor_response().file_descriptor_proto()) {
      ASSERT_TRUE(files.emplace_back().ParseFromString(bytes)) << service;
    }
  }
  google::protobuf::DescriptorPool pool;
  std::function<void(const std::string&)> build = [&](const std::string& name) {
    if (pool.FindFileByName(name) != nullptr) return;
    bool found = false;
    for (const auto& f : files) {
      if (f.name() != name) continue;
      found = true;
      for (const std::string& dep : f.dependency()) build(dep);
      ASSERT_NE(pool.BuildFile(f), nullptr) << name;
    }
    ASSERT_TRUE(found) << service << ": the answer lacks " << name;
  };
  for (const auto& f : files) build(f.name());
  EXPECT_NE(pool.FindServiceByName(service), nullptr) << service;
}

TEST_F(ServerTest, ReflectionListsTheServices) {
  const test::ServiceList list = test::ListServices(client_->channel());
  EXPECT_TRUE(list.status.ok()) << list.status.error_message();
  EXPECT_EQ(list.names,
            (std::set<std::string>{
                "ptoserve.v1.TileCompute", "ptoserve.v1.SharedMemory",
                "inference.GRPCInferenceService", "grpc.health.v1.Health",
                "grpc.reflection.v1.ServerReflection",
                "grpc.reflection.v1alpha.ServerReflection"}));
}

// Every service listed can be described, over both reflection versions
// (grpcurl could not describe grpc.health.v1.Health when its descriptors
// were not linked into the server).
TEST_F(ServerTest, ReflectionDescribesEveryListedServiceInBothVersions) {
  const std::set<std::string> names =
      test::ListServices<test::ReflectionV1Alpha>(client_->channel()).names;
  EXPECT_EQ(names.size(), 6u);
  EXPECT_EQ(test::ListServices<test::ReflectionV1>(client_->channel()).names,
            names);
  for (const std::string& name : names) {
    ExpectDescribable<test::ReflectionV1>(client_->channel(), name);
    ExpectDescribable<test::ReflectionV1Alpha>(client_->channel(), name);
  }
}

// What `grpcurl -d @ ... ptoserve.v1.TileCompute/Execute` does: learn the
// schema through reflection alone, turn hand-written JSON into a request,
// call the method generically and read the reply as JSON.
TEST_F(ServerTest, JsonThroughReflectionLikeGrpcurl) {
  using grpc::reflection::v1alpha::ServerReflection;
  auto stub = ServerReflection::NewStub(client_->channel());
  grpc::ClientContext context;
  auto stream = stub->ServerReflectionInfo(&context);
  grpc::reflection::v1alpha::ServerReflectionRequest request;
  request.set_file_containing_symbol("ptoserve.v1.TileCompute");
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();
  google::protobuf::DescriptorPool pool;
  grpc::reflection::v1alpha::ServerReflectionResponse response;
  std::vector<google::protobuf::FileDescriptorProto> files;
  while (stream->Read(&response)) {
    for (const std::string& bytes :
         response.file_descriptor_response().file_descriptor_proto()) {
      files.emplace_back().ParseFromString(bytes);
    }
  }
  ASSERT_TRUE(stream->Finish().ok());
  // Build each file after the files it imports.
  std::function<void(const std::string&)> build = [&](const std::string& name) {
    if (pool.FindFileByName(name) != nullptr) return;
    for (const auto& f : files) {
      if (f.name() != name) continue;
      for (const std::string& dep : f.dependency()) build(dep);
      ASSERT_NE(pool.BuildFile(f), nullptr) << name;
    }
  };
  for (const auto& f : files) build(f.name());
  const auto* service = pool.FindServiceByName("ptoserve.v1.TileCompute");
  ASSERT_NE(service, nullptr);
  const auto* method = service->FindMethodByName("Execute");
  ASSERT_NE(method, nullptr);
  // `grpcurl describe` shows the comments: reflection must carry them.
  const auto* tiles = method->input_type()->FindFieldByName("tiles");
  ASSERT_NE(tiles, nullptr);
  google::protobuf::SourceLocation where;
  ASSERT_TRUE(method->input_type()->GetSourceLocation(&where));
  EXPECT_THAT(where.leading_comments,
              HasSubstr("A job: tiles and an ordered program"));
  ASSERT_TRUE(tiles->GetSourceLocation(&where));
  EXPECT_THAT(where.leading_comments, HasSubstr("The job's tiles by name"));

  google::protobuf::DynamicMessageFactory factory(&pool);
  std::unique_ptr<google::protobuf::Message> job(
      factory.GetPrototype(method->input_type())->New());
  const std::string json = R"({
    "target": "TARGET_A5",
    "tiles": {
      "a": {"dtype": "DTYPE_UINT8", "rows": 1, "cols": 32, "values": [12, 10, 255]},
      "b": {"dtype": "DTYPE_UINT8", "rows": 1, "cols": 32, "values": [10, 12, 15]}
    },
    "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a", "src1": "b"}]
  })";
  // Three values for 32 elements: the server must say so.
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(json, job.get()).ok());
  auto call = [&](const google::protobuf::Message& req,
                  std::string* reply_json) {
    grpc::GenericStub generic(client_->channel());
    grpc::ClientContext ctx;
    std::string bytes = req.SerializeAsString();
    grpc::Slice slice(bytes);
    grpc::ByteBuffer send(&slice, 1), recv;
    std::promise<grpc::Status> done;
    generic.UnaryCall(&ctx, "/ptoserve.v1.TileCompute/Execute",
                      grpc::StubOptions(), &send, &recv,
                      [&](grpc::Status s) { done.set_value(s); });
    grpc::Status status = done.get_future().get();
    if (status.ok()) {
      std::vector<grpc::Slice> slices;
      recv.Dump(&slices);
      std::string out;
      for (const auto& s : slices) {
        out.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
      std::unique_ptr<google::protobuf::Message> reply(
          factory.GetPrototype(method->output_type())->New());
      reply->ParseFromString(out);
      (void)google::protobuf::util::MessageToJsonString(*reply, reply_json);
    }
    return status;
  };
  std::string reply;
  grpc::Status status = call(*job, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("values has 3 entries, expected 32"));

  std::string fixed = json;
  std::string values_a = "[12, 10, 255", values_b = "[10, 12, 15";
  for (int i = 3; i < 32; ++i) {
    values_a += ", 0";
    values_b += ", 0";
  }
  fixed.replace(fixed.find("[12, 10, 255]"), 13, values_a + "]");
  fixed.replace(fixed.find("[10, 12, 15]"), 12, values_b + "]");
  job->Clear();
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(fixed, job.get()).ok());
  status = call(*job, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  // Numbers in, numbers out: 12&10 = 8, 10&12 = 8, 255&15 = 15.
  EXPECT_THAT(reply, HasSubstr("\"values\":[8,8,15,0"));
}

// Bad requests of many kinds; each must get INVALID_ARGUMENT with a message
// naming the problem, and the server must keep answering correctly.
TEST_F(ServerTest, ThousandMalformedRequestsThenStillCorrect) {
  auto base = [] {
    v1::Job job;
    for (const char* name : {"a", "b"}) {
      v1::Tile& t = (*job.mutable_tiles())[name];
      t.set_dtype(v1::DTYPE_INT32);
      t.set_rows(8);
      t.set_cols(8);
      t.set_data(std::string(8 * 8 * 4, '\x5a'));
    }
    v1::Instruction* inst = job.add_instructions();
    inst->set_opcode(v1::OPCODE_TXOR);
    inst->set_dst("c");
    inst->set_src0("a");
    inst->set_src1("b");
    return job;
  };
  using Breaker = std::pair<std::function<void(v1::Job*)>, std::string>;
  const std::vector<Breaker> breakers = {
      {[](v1::Job* j) {
         (*j->mutable_tiles())["a"].set_dtype(v1::DTYPE_UNSPECIFIED);
       },
       "tile \"a\": dtype is not set"},
      {[](v1::Job* j) {
         (*j->mutable_tiles())["a"].set_dtype(v1::DTYPE_FLOAT32);
       },
       "dst element type float32 is not supported (supported: int8, uint8"},
      {[](v1::Job* j) {
         v1::Tile& t = (*j->mutable_tiles())["b"];
         t.set_dtype(v1::DTYPE_INT16);
         t.set_data(std::string(8 * 8 * 2, '\1'));
       },
       "src1 element type int16 differs from dst element type int32"},
      {[](v1::Job* j) { (*j->mutable_tiles())["b"].set_data("xyz"); },
       "tile \"b\": data has 3 bytes, expected 256"},
      {[](v1::Job* j) { j->mutable_instructions(0)->set_src1("nope"); },
       "src1 \"nope\" is not a tile of the job"},
      {[](v1::Job* j) {
         j->mutable_instructions(0)->set_opcode(v1::OPCODE_UNSPECIFIED);
       },
       "instruction 0: opcode is not set"},
      {[](v1::Job* j) { j->set_target(v1::TARGET_A2A3); },
       "tmp is required on a2a3"},
      {[](v1::Job* j) {
         (*j->mutable_tiles())["a"].set_layout(v1::LAYOUT_COL_MAJOR);
       },
       "src0 \"a\" is col_major"},
      {[](v1::Job* j) { (*j->mutable_tiles())["a"].set_valid_rows(9); },
       "valid region 9x8 exceeds its shape 8x8"},
      {[](v1::Job* j) { j->mutable_instructions(0)->add_wait_events("e7"); },
       "waits on event \"e7\", which no instruction records"},
      {[](v1::Job* j) {
         v1::Tile& t = (*j->mutable_tiles())["a"];
         t.clear_data();
         for (int i = 0; i < 64; ++i) t.add_values(i == 5 ? 1e10 : 0);
       },
       "values[5] (element 0,5) = 10000000000 is not an integer in the int32 "
       "range"},
      {[](v1::Job* j) { j->clear_instructions(); }, "job has no instructions"},
      {[](v1::Job* j) {
         j->set_mode(v1::MODE_MANUAL);
         (*j->mutable_tiles())["a"].set_address(0x1001);
       },
       "tile \"a\": address 0x1001 is not 32-byte aligned"},
      {[](v1::Job* j) { j->set_target(static_cast<v1::Target>(42)); },
       "unknown target 42"},
  };
  for (int i = 0; i < 1000; ++i) {
    const Breaker& breaker = breakers[i % breakers.size()];
    v1::Job job = base();
    breaker.first(&job);
    absl::StatusOr<v1::JobResult> r = client_->Execute(job);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << "request " << i << ": " << r.status();
    ASSERT_THAT(std::string(r.status().message()), HasSubstr(breaker.second))
        << "request " << i;
  }
  absl::StatusOr<v1::JobResult> r = client_->Execute(base());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tiles().at("c").data(), std::string(256, '\0'));  // x ^ x
}

TEST(ServerLimitsTest, OversizedMessageIsResourceExhausted) {
  ServerProcess server({"--max_message_mb=1"});
  ClientOptions options;
  auto client = Client::Connect(server.address(), options).value();
  std::vector<int32_t> big(512 * 1024, 1);  // 2 MiB per tile
  absl::StatusOr<TileResult<int32_t>> r =
      client->Tand<int32_t>({big, big, 512, 1024});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted)
      << r.status();
  // And it still serves small jobs.
  std::vector<int32_t> small(4, 3);
  EXPECT_TRUE(client->Tand<int32_t>({small, small, 2, 2}).ok());
}

TEST(ServerLimitsTest, DefaultTargetFlagApplies) {
  ServerProcess server({"--default_target=a2a3"});
  auto client = Client::Connect(server.address()).value();
  std::mt19937 rng(4);
  const std::vector<int8_t> a = RandomElements<int8_t>(32, &rng);
  const std::vector<int8_t> b = RandomElements<int8_t>(32, &rng);
  absl::StatusOr<TileResult<int8_t>> r = client->Txor<int8_t>({a, b, 1, 32});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->target, v1::TARGET_A2A3);
  EXPECT_EQ(r->events[0].trace_size(), 4);
  ASSERT_EQ(r->elements.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(r->elements[i], static_cast<int8_t>(a[i] ^ b[i])) << i;
  }
}

TEST(ServerShutdownTest, SigtermExitsCleanly) {
  ServerProcess server;
  auto client = Client::Connect(server.address()).value();
  std::vector<uint16_t> a(4, 6), b(4, 3);
  ASSERT_TRUE(client->Tand<uint16_t>({a, b, 2, 2}).ok());
  const int status = server.Terminate();
  ASSERT_NE(status, -1) << "server did not exit after SIGTERM";
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace ptoserve
