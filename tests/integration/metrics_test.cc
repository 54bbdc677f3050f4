// The Prometheus endpoint of the real server: scraped over HTTP before and
// after some jobs, the counters and histograms move by what the jobs did.
#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <strings.h>

#include <future>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "client/shared_region.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "inference/grpc_service.pb.h"
#include "tests/integration/metrics_scrape.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_files.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(MetricsTest, ScrapesCountJobsByTargetAndCode) {
  ServerProcess server;
  ASSERT_THAT(server.metrics_url(), StartsWith("http://127.0.0.1:"));
  auto client = Client::Connect(server.address()).value();

  const std::map<std::string, double> before = Scrape(server.metrics_url());
  EXPECT_EQ(before.at("ptoserve_build_info{version=\"0.1.0\"}"), 1);
  EXPECT_EQ(before.at("ptoserve_queue_depth"), 0);
  EXPECT_EQ(before.at("ptoserve_jobs_in_flight"), 0);
  EXPECT_EQ(before.at("ptoserve_serving"), 1);

  const std::vector<int32_t> a(16 * 16, 0x0ff0), b(16 * 16, 0x00ff);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client->Tand<int32_t>({a, b, 16, 16}).ok());
  }
  // Refused by the engine: a2a3 rows must be a multiple of 32 bytes.
  const std::vector<int16_t> narrow(16 * 8, 1);
  EXPECT_EQ(
      client->Txor<int16_t>({narrow, narrow, 16, 8, 0, 0, v1::TARGET_A2A3})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  // Refused by the codec: no opcode.
  v1::Job broken =
      BinaryJob<int32_t>(v1::OPCODE_TAND, BinaryArgs<int32_t>{a, b, 16, 16});
  broken.mutable_instructions(0)->set_opcode(v1::OPCODE_UNSPECIFIED);
  EXPECT_EQ(client->Execute(broken).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Refused by the scheduler: priority out of range (4 levels by default).
  v1::Job urgent =
      BinaryJob<int32_t>(v1::OPCODE_TAND, BinaryArgs<int32_t>{a, b, 16, 16});
  urgent.set_priority(99);
  EXPECT_EQ(client->Execute(urgent).status().code(),
            absl::StatusCode::kInvalidArgument);

  const std::map<std::string, double> after = Scrape(server.metrics_url());
  auto delta = [&](const std::string& series) {
    return Delta(before, after, series);
  };
  EXPECT_EQ(delta("ptoserve_jobs_total{target=\"host\",code=\"OK\"}"), 3);
  EXPECT_EQ(
      delta("ptoserve_jobs_total{target=\"host\",code=\"INVALID_ARGUMENT\"}"),
      2);
  EXPECT_EQ(
      delta("ptoserve_jobs_total{target=\"a2a3\",code=\"INVALID_ARGUMENT\"}"),
      1);
  EXPECT_EQ(delta("ptoserve_instructions_total{opcode=\"TAND\",target=\"host\","
                  "code=\"OK\"}"),
            3);
  // The codec's refusal has no instructions to count; the others do.
  EXPECT_EQ(delta("ptoserve_instructions_total{opcode=\"TAND\",target=\"host\","
                  "code=\"INVALID_ARGUMENT\"}"),
            1);
  EXPECT_EQ(delta("ptoserve_instructions_total{opcode=\"TXOR\",target=\"a2a3\","
                  "code=\"INVALID_ARGUMENT\"}"),
            1);
  EXPECT_EQ(delta("ptoserve_request_latency_seconds_count{target=\"host\",code="
                  "\"OK\"}"),
            3);
  EXPECT_GT(
      delta(
          "ptoserve_request_latency_seconds_sum{target=\"host\",code=\"OK\"}"),
      0);
  EXPECT_EQ(delta("ptoserve_request_latency_seconds_bucket{target=\"host\","
                  "code=\"OK\",le=\"+Inf\"}"),
            3);
  EXPECT_EQ(
      delta(
          "ptoserve_queue_time_seconds_count{opcode=\"TAND\",target=\"host\"}"),
      3);
  // Three jobs, one at a time: three batches of one.
  EXPECT_EQ(delta("ptoserve_batch_size_count{opcode=\"TAND\",target=\"host\"}"),
            3);
  EXPECT_EQ(delta("ptoserve_batch_size_sum{opcode=\"TAND\",target=\"host\"}"),
            3);
  EXPECT_EQ(delta("ptoserve_batch_size_bucket{opcode=\"TAND\",target=\"host\","
                  "le=\"1\"}"),
            3);
  EXPECT_EQ(delta("ptoserve_execution_time_seconds_count{opcode=\"TAND\","
                  "target=\"host\"}"),
            3);
  // The split of a job's time: compute is the backend calls' time (the
  // same three batches, counted in whole nanoseconds); decode and encode
  // took some time for the jobs that ran, none for the refused ones.
  EXPECT_NEAR(delta("ptoserve_compute_infer_seconds_total{target=\"host\","
                    "opcode=\"TAND\"}"),
              delta("ptoserve_execution_time_seconds_sum{opcode=\"TAND\","
                    "target=\"host\"}"),
              3e-9);
  EXPECT_GT(delta("ptoserve_compute_input_seconds_total{target=\"host\","
                  "opcode=\"TAND\"}"),
            0);
  EXPECT_GT(delta("ptoserve_compute_output_seconds_total{target=\"host\","
                  "opcode=\"TAND\"}"),
            0);
  EXPECT_EQ(delta("ptoserve_compute_input_seconds_total{target=\"a2a3\","
                  "opcode=\"TXOR\"}"),
            0);
  EXPECT_EQ(after.at("ptoserve_queue_depth"), 0);
  EXPECT_EQ(after.at("ptoserve_jobs_in_flight"), 0);
}

TEST(MetricsTest, StreamedAndDroppedJobsAreCountedToo) {
  // A lone job waits a second for company; a 50 ms timeout passes first.
  ServerProcess server({"--max_queue_delay_us=1000000"});
  auto client = Client::Connect(server.address()).value();
  const std::map<std::string, double> before = Scrape(server.metrics_url());

  const std::vector<int32_t> a(4, 1);
  v1::Job late =
      BinaryJob<int32_t>(v1::OPCODE_TXOR, BinaryArgs<int32_t>{a, a, 2, 2});
  late.mutable_timeout()->set_nanos(50 * 1000 * 1000);
  EXPECT_EQ(client->Execute(late).status().code(),
            absl::StatusCode::kDeadlineExceeded);

  std::vector<v1::Job> jobs;
  for (int i = 0; i < 10; ++i) {
    jobs.push_back(
        BinaryJob<int32_t>(v1::OPCODE_TAND, BinaryArgs<int32_t>{a, a, 2, 2}));
    jobs.back().set_id(std::to_string(i));
  }
  jobs[3].mutable_instructions(0)->set_src1("missing");
  int answered = 0;
  ASSERT_TRUE(
      client->ExecuteStream(jobs, [&](v1::JobResult) { ++answered; }).ok());
  EXPECT_EQ(answered, 10);

  const std::map<std::string, double> after = Scrape(server.metrics_url());
  auto delta = [&](const std::string& series) {
    return Delta(before, after, series);
  };
  EXPECT_EQ(
      delta("ptoserve_jobs_total{target=\"host\",code=\"DEADLINE_EXCEEDED\"}"),
      1);
  EXPECT_EQ(delta("ptoserve_instructions_total{opcode=\"TXOR\",target=\"host\","
                  "code=\"DEADLINE_EXCEEDED\"}"),
            1);
  EXPECT_EQ(delta("ptoserve_jobs_total{target=\"host\",code=\"OK\"}"), 9);
  EXPECT_EQ(
      delta("ptoserve_jobs_total{target=\"host\",code=\"INVALID_ARGUMENT\"}"),
      1);
  // The dropped job never ran: only the streamed ones queued and ran.
  EXPECT_EQ(
      delta(
          "ptoserve_queue_time_seconds_count{opcode=\"TXOR\",target=\"host\"}"),
      0);
  EXPECT_EQ(
      delta(
          "ptoserve_queue_time_seconds_count{opcode=\"TAND\",target=\"host\"}"),
      9);
  EXPECT_EQ(delta("ptoserve_batch_size_sum{opcode=\"TAND\",target=\"host\"}"),
            9);
}

// The standard gRPC server metrics count every method, health and
// reflection included, by code; a method the server does not have counts
// as "unknown" (a client cannot make a series per name it invents).
TEST(MetricsTest, GrpcMethodCountersByCode) {
  ServerProcess server;
  auto client = Client::Connect(server.address()).value();
  const std::map<std::string, double> before = Scrape(server.metrics_url());
  const std::vector<int32_t> a(4, 6);
  const v1::Job good =
      BinaryJob<int32_t>(v1::OPCODE_TAND, BinaryArgs<int32_t>{a, a, 2, 2});
  // The bytes each way, as protobuf serializes the messages.
  uint64_t sent_bytes = 0;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<v1::JobResult> result = client->Execute(good);
    ASSERT_TRUE(result.ok()) << result.status();
    sent_bytes += result->ByteSizeLong();
  }
  v1::Job broken = good;
  broken.mutable_instructions(0)->set_src1("missing");
  const uint64_t received_bytes =
      2 * good.ByteSizeLong() + broken.ByteSizeLong();
  ASSERT_EQ(client->Execute(broken).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_EQ(client->Health().value(), "SERVING");
  std::vector<v1::Job> jobs(3, good);
  uint64_t stream_sent_bytes = 0;
  ASSERT_TRUE(client
                  ->ExecuteStream(jobs,
                                  [&](const v1::JobResult& r) {
                                    stream_sent_bytes += r.ByteSizeLong();
                                  })
                  .ok());
  // Two batches on one ExecuteBatches call: two jobs, then one.
  std::vector<v1::JobBatch> batches(2);
  *batches[0].add_jobs() = good;
  *batches[0].add_jobs() = good;
  *batches[1].add_jobs() = good;
  uint64_t batches_sent_bytes = 0;
  ASSERT_TRUE(client
                  ->ExecuteBatches(batches,
                                   [&](const v1::JobResultBatch& r) {
                                     batches_sent_bytes += r.ByteSizeLong();
                                   })
                  .ok());
  for (const char* method :
       {"/no.Such/Method", "/ptoserve.v1.TileCompute/Nope"}) {
    grpc::GenericStub generic(client->channel());
    grpc::ClientContext context;
    grpc::Slice empty(std::string(""));
    grpc::ByteBuffer request(&empty, 1), response;
    std::promise<grpc::Status> done;
    generic.UnaryCall(&context, method, grpc::StubOptions(), &request,
                      &response, [&](grpc::Status s) { done.set_value(s); });
    ASSERT_EQ(done.get_future().get().error_code(),
              grpc::StatusCode::UNIMPLEMENTED);
  }
  const std::map<std::string, double> after = Scrape(server.metrics_url());
  auto delta = [&](const std::string& series) {
    return Delta(before, after, series);
  };
  const std::string execute =
      R"(grpc_type="unary",grpc_service="ptoserve.v1.TileCompute",grpc_method="Execute")";
  EXPECT_EQ(delta("grpc_server_started_total{" + execute + "}"), 3);
  EXPECT_EQ(
      delta("grpc_server_handled_total{" + execute + ",grpc_code=\"OK\"}"), 2);
  EXPECT_EQ(delta("grpc_server_handled_total{" + execute +
                  ",grpc_code=\"INVALID_ARGUMENT\"}"),
            1);
  EXPECT_EQ(delta("grpc_server_msg_received_total{" + execute + "}"), 3);
  // A reply message only for the two that succeeded. (Execute counts its
  // own calls, not through the interceptor: the same series either way.)
  EXPECT_EQ(delta("grpc_server_msg_sent_total{" + execute + "}"), 2);
  EXPECT_EQ(delta("grpc_server_msg_received_bytes_total{" + execute + "}"),
            received_bytes);
  EXPECT_EQ(delta("grpc_server_msg_sent_bytes_total{" + execute + "}"),
            sent_bytes);
  // Every call handled is timed by its code, its handling a positive time.
  const std::string execute_ok = execute + ",grpc_code=\"OK\"";
  EXPECT_EQ(delta("grpc_server_handling_seconds_count{" + execute_ok + "}"), 2);
  EXPECT_EQ(delta("grpc_server_handling_seconds_bucket{" + execute_ok +
                  ",le=\"+Inf\"}"),
            2);
  EXPECT_GT(delta("grpc_server_handling_seconds_sum{" + execute_ok + "}"), 0);
  EXPECT_EQ(delta("grpc_server_handling_seconds_count{" + execute +
                  ",grpc_code=\"INVALID_ARGUMENT\"}"),
            1);
  // A code no call has ended with has no series.
  EXPECT_EQ(after.count("grpc_server_handling_seconds_count{" + execute +
                        ",grpc_code=\"DATA_LOSS\"}"),
            0);
  EXPECT_EQ(
      delta(
          R"(grpc_server_handling_seconds_count{grpc_type="unary",grpc_service="grpc.health.v1.Health",grpc_method="Check",grpc_code="OK"})"),
      1);
  const std::string stream =
      R"(grpc_type="bidi_stream",grpc_service="ptoserve.v1.TileCompute",grpc_method="ExecuteStream")";
  EXPECT_EQ(delta("grpc_server_started_total{" + stream + "}"), 1);
  EXPECT_EQ(delta("grpc_server_msg_received_total{" + stream + "}"), 3);
  EXPECT_EQ(delta("grpc_server_msg_sent_total{" + stream + "}"), 3);
  // Counted by the stream's handler: bytes as it read them, and as
  // serialized for sending.
  EXPECT_EQ(delta("grpc_server_msg_received_bytes_total{" + stream + "}"),
            3 * good.ByteSizeLong());
  EXPECT_EQ(delta("grpc_server_msg_sent_bytes_total{" + stream + "}"),
            stream_sent_bytes);
  EXPECT_EQ(delta("grpc_server_handled_total{" + stream + ",grpc_code=\"OK\"}"),
            1);
  // ExecuteBatches counts itself as ExecuteStream does: one message each
  // way per batch.
  const std::string batch_stream =
      R"(grpc_type="bidi_stream",grpc_service="ptoserve.v1.TileCompute",grpc_method="ExecuteBatches")";
  EXPECT_EQ(delta("grpc_server_started_total{" + batch_stream + "}"), 1);
  EXPECT_EQ(delta("grpc_server_msg_received_total{" + batch_stream + "}"), 2);
  EXPECT_EQ(delta("grpc_server_msg_sent_total{" + batch_stream + "}"), 2);
  EXPECT_EQ(delta("grpc_server_msg_received_bytes_total{" + batch_stream + "}"),
            batches[0].ByteSizeLong() + batches[1].ByteSizeLong());
  EXPECT_EQ(delta("grpc_server_msg_sent_bytes_total{" + batch_stream + "}"),
            batches_sent_bytes);
  EXPECT_EQ(
      delta("grpc_server_handled_total{" + batch_stream + ",grpc_code=\"OK\"}"),
      1);
  EXPECT_EQ(delta("grpc_server_handling_seconds_count{" + batch_stream +
                  ",grpc_code=\"OK\"}"),
            1);
  EXPECT_EQ(
      delta(
          R"(grpc_server_handled_total{grpc_type="unary",grpc_service="grpc.health.v1.Health",grpc_method="Check",grpc_code="OK"})"),
      1);
  EXPECT_EQ(
      delta(
          R"(grpc_server_handled_total{grpc_type="unknown",grpc_service="unknown",grpc_method="unknown",grpc_code="UNIMPLEMENTED"})"),
      2);
  for (const auto& [series, value] : after) {
    EXPECT_THAT(series, Not(HasSubstr("no.Such"))) << series;
  }
}

// The inference protocol's job methods count their own calls, as
// TileCompute's do: the same series the interceptor would give, a small
// request's (read in place) and a generic one's alike, refusals by code.
TEST(MetricsTest, InferenceCallsAreCountedByTheirHandlers) {
  ServerProcess server;
  auto client = Client::Connect(server.address()).value();
  grpc::GenericStub generic(client->channel());
  inference::ModelInferRequest small;
  small.set_model_name("tand");
  for (const char* name : {"src0", "src1"}) {
    auto* input = small.add_inputs();
    input->set_name(name);
    input->set_datatype("UINT8");
    input->add_shape(1);
    input->add_shape(4);
    small.add_raw_input_contents(std::string("\x0f\xf0\xff\x00", 4));
  }
  inference::ModelInferRequest generic_request = small;  // a parameter
  (*generic_request.mutable_parameters())["priority"].set_int64_param(1);
  inference::ModelInferRequest missing = small;
  missing.set_model_name("no_such_model");
  const std::map<std::string, double> before = Scrape(server.metrics_url());
  uint64_t received = 0, sent = 0;
  for (const auto* request : {&small, &generic_request, &missing}) {
    const std::string bytes = request->SerializeAsString();
    received += bytes.size();
    grpc::Slice slice(bytes);
    grpc::ByteBuffer in(&slice, 1), out;
    grpc::ClientContext context;
    std::promise<grpc::Status> done;
    generic.UnaryCall(&context, "/inference.GRPCInferenceService/ModelInfer",
                      grpc::StubOptions(), &in, &out,
                      [&](grpc::Status s) { done.set_value(s); });
    const grpc::Status status = done.get_future().get();
    if (request == &missing) {
      ASSERT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
      continue;
    }
    ASSERT_TRUE(status.ok()) << status.error_message();
    sent += out.Length();
  }
  const std::map<std::string, double> after = Scrape(server.metrics_url());
  auto delta = [&](const std::string& series) {
    return Delta(before, after, series);
  };
  const std::string infer =
      R"(grpc_type="unary",grpc_service="inference.GRPCInferenceService",grpc_method="ModelInfer")";
  EXPECT_EQ(delta("grpc_server_started_total{" + infer + "}"), 3);
  EXPECT_EQ(delta("grpc_server_handled_total{" + infer + ",grpc_code=\"OK\"}"),
            2);
  EXPECT_EQ(
      delta("grpc_server_handled_total{" + infer + ",grpc_code=\"NOT_FOUND\"}"),
      1);
  EXPECT_EQ(delta("grpc_server_msg_received_total{" + infer + "}"), 3);
  EXPECT_EQ(delta("grpc_server_msg_sent_total{" + infer + "}"), 2);
  EXPECT_EQ(delta("grpc_server_msg_received_bytes_total{" + infer + "}"),
            received);
  EXPECT_EQ(delta("grpc_server_msg_sent_bytes_total{" + infer + "}"), sent);
  EXPECT_EQ(delta("grpc_server_handling_seconds_count{" + infer +
                  ",grpc_code=\"OK\"}"),
            2);
}

// A stream refused for want of a token is counted as started and handled
// UNAUTHENTICATED, with no message either way.
TEST(MetricsTest, RefusedStreamsAreCounted) {
  ServerProcess server(
      {"--auth_token_file=" + WriteTempFile("tokens", "the-token\n")});
  const std::map<std::string, double> before = Scrape(server.metrics_url());
  auto client = Client::Connect(server.address()).value();
  const std::vector<int32_t> a(4, 6);
  const std::vector<v1::Job> jobs = {
      BinaryJob<int32_t>(v1::OPCODE_TAND, BinaryArgs<int32_t>{a, a, 2, 2})};
  EXPECT_EQ(client->ExecuteStream(jobs, [](v1::JobResult) {}).code(),
            absl::StatusCode::kUnauthenticated);
  std::vector<v1::JobBatch> batches(1);
  *batches[0].add_jobs() = jobs[0];
  EXPECT_EQ(client->ExecuteBatches(batches, [](v1::JobResultBatch) {}).code(),
            absl::StatusCode::kUnauthenticated);
  const std::string prefix =
      R"(grpc_type="bidi_stream",grpc_service="ptoserve.v1.TileCompute",grpc_method=")";
  const std::map<std::string, double> after = Scrape(server.metrics_url());
  auto delta = [&](const std::string& series) {
    return Delta(before, after, series);
  };
  for (const char* method : {"ExecuteStream", "ExecuteBatches"}) {
    const std::string labels = prefix + method + "\"";
    EXPECT_EQ(delta("grpc_server_started_total{" + labels + "}"), 1) << method;
    EXPECT_EQ(delta("grpc_server_handled_total{" + labels +
                    ",grpc_code=\"UNAUTHENTICATED\"}"),
              1)
        << method;
    EXPECT_EQ(delta("grpc_server_msg_received_total{" + labels + "}"), 0)
        << method;
    EXPECT_EQ(delta("grpc_server_msg_sent_total{" + labels + "}"), 0) << method;
  }
}

// Calls, streams and connections open now: a health Watch holds a stream
// open on one connection, and the gauges follow it opened and closed.
TEST(MetricsTest, GaugesFollowOpenCallsStreamsAndConnections) {
  ServerProcess server;
  const auto all_closed = [](const std::map<std::string, double>& m) {
    return Value(m, "ptoserve_grpc_active_calls") == 0 &&
           Value(m, "ptoserve_grpc_active_streams") == 0 &&
           Value(m, "ptoserve_grpc_connections") == 0;
  };
  ASSERT_TRUE(all_closed(ScrapeUntil(server.metrics_url(), all_closed)));
  {
    std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(
        server.address(), grpc::InsecureChannelCredentials());
    auto health = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<grpc::health::v1::HealthCheckResponse>>
        watch = health->Watch(&context, {});
    grpc::health::v1::HealthCheckResponse status;
    ASSERT_TRUE(watch->Read(&status));  // the server has the stream open
    const std::map<std::string, double> open =
        ScrapeUntil(server.metrics_url(), [](const auto& m) {
          return Value(m, "ptoserve_grpc_active_streams") == 1 &&
                 Value(m, "ptoserve_grpc_connections") == 1;
        });
    EXPECT_EQ(Value(open, "ptoserve_grpc_active_calls"), 1);
    EXPECT_EQ(Value(open, "ptoserve_grpc_active_streams"), 1);
    EXPECT_EQ(Value(open, "ptoserve_grpc_connections"), 1);
    context.TryCancel();
    EXPECT_EQ(watch->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // The channel gone, its connection closes; the stream ended before.
  EXPECT_TRUE(all_closed(ScrapeUntil(server.metrics_url(), all_closed)));
}

// From SIGTERM on the server says it is not serving, on /metrics too,
// while it drains and through its lame duck.
TEST(MetricsTest, ServingGoesToZeroOnSigterm) {
  ServerProcess server({"--lame_duck=5s", "--shutdown_grace=1s"});
  EXPECT_EQ(Value(Scrape(server.metrics_url()), "ptoserve_serving"), 1);
  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);
  const std::map<std::string, double> draining =
      ScrapeUntil(server.metrics_url(), [](const auto& m) {
        return m.count("ptoserve_serving") == 1 &&
               m.at("ptoserve_serving") == 0;
      });
  EXPECT_EQ(Value(draining, "ptoserve_serving"), 0);
  EXPECT_EQ(draining.count("ptoserve_serving"), 1);
}

// With --shutdown_delay, SIGTERM first makes the server NOT_SERVING (its
// health, ptoserve_serving) while it still runs jobs, so that a load
// balancer takes it out of rotation before it refuses any.
TEST(MetricsTest, ShutdownDelayRunsJobsWhileNotServing) {
  ServerProcess server({"--shutdown_delay=10s", "--lame_duck=0s"});
  auto client = Client::Connect(server.address()).value();
  ASSERT_EQ(client->Health().value(), "SERVING");
  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);
  ScrapeUntil(server.metrics_url(), [](const auto& m) {
    return m.count("ptoserve_serving") == 1 && m.at("ptoserve_serving") == 0;
  });
  EXPECT_EQ(client->Health().value(), "NOT_SERVING");
  const std::vector<int32_t> a(4, 6), b(4, 3);
  absl::StatusOr<TileResult<int32_t>> ran = client->Tand<int32_t>({a, b, 2, 2});
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->elements, std::vector<int32_t>(4, 6 & 3));
  EXPECT_EQ(Value(Scrape(server.metrics_url()), "ptoserve_serving"), 0);
  // Then it drains and exits 0, as without a delay.
  client.reset();
  EXPECT_EQ(server.Terminate(), 0);
}

// Process metrics, as Prometheus's client libraries name them.
TEST(MetricsTest, ProcessMetrics) {
  ServerProcess server;
  const std::map<std::string, double> m = Scrape(server.metrics_url());
  EXPECT_GT(m.at("process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(m.at("process_virtual_memory_bytes"),
            m.at("process_resident_memory_bytes"));
  // stdin/out/err, the listeners, the metrics socket...
  EXPECT_GE(m.at("process_open_fds"), 5);
  EXPECT_GE(m.at("process_max_fds"), m.at("process_open_fds"));
  EXPECT_GE(m.at("process_cpu_seconds_total"), 0);
  const double now = absl::ToUnixSeconds(absl::Now());
  EXPECT_NEAR(m.at("process_start_time_seconds"), now, 120);
}

// The shared-memory gauges follow registrations: a region's bytes are
// mapped from Register to Unregister.
TEST(MetricsTest, SharedMemoryGaugesFollowRegions) {
  ServerProcess server;  // loopback: shared memory is on
  auto client = Client::Connect(server.address()).value();
  const auto sample = [&](const std::string& series) {
    return Value(Scrape(server.metrics_url()), series);
  };
  EXPECT_EQ(sample("ptoserve_shared_memory_regions"), 0);
  EXPECT_EQ(sample("ptoserve_shared_memory_mapped_bytes"), 0);
  auto one = SharedRegion::Create(*client, 1 << 20).value();
  auto two = SharedRegion::Create(*client, 3 << 20).value();
  EXPECT_EQ(sample("ptoserve_shared_memory_regions"), 2);
  EXPECT_EQ(sample("ptoserve_shared_memory_mapped_bytes"), 4 << 20);
  ASSERT_TRUE(client->UnregisterRegion(one->name()).ok());
  EXPECT_EQ(sample("ptoserve_shared_memory_regions"), 1);
  EXPECT_EQ(sample("ptoserve_shared_memory_mapped_bytes"), 3 << 20);
  ASSERT_TRUE(client->UnregisterRegion(two->name()).ok());
  EXPECT_EQ(sample("ptoserve_shared_memory_regions"), 0);
  EXPECT_EQ(sample("ptoserve_shared_memory_mapped_bytes"), 0);
}

TEST(MetricsTest, OnlyMetricsIsServed) {
  ServerProcess server;
  EXPECT_EQ(HttpGet(server.metrics_url(), "/").status, 404);
  EXPECT_EQ(HttpGet(server.metrics_url(), "/metrics/x").status, 404);
  EXPECT_EQ(HttpGet(server.metrics_url(), "/metrics?x=1").status, 200);
}

TEST(MetricsTest, EmptyAddressTurnsTheEndpointOff) {
  ServerProcess server({"--metrics_address="});
  EXPECT_EQ(server.metrics_url(), "");
  auto client = Client::Connect(server.address()).value();
  const std::vector<int32_t> a(4, 1);
  EXPECT_TRUE(client->Tand<int32_t>({a, a, 2, 2}).ok());
}

TEST(MetricsTest, AnAddressInUseStopsTheServerWithAMessage) {
  ServerProcess first;
  const std::string port =
      first.metrics_url().substr(first.metrics_url().rfind(':') + 1);
  const CommandResult r = RunCommand(
      "server/ptoserve --address=127.0.0.1:0 --http_address= "
      "--metrics_address=127.0.0.1:" +
      port.substr(0, port.find('/')));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("cannot serve --metrics_address=127.0.0.1:"));
  EXPECT_THAT(r.output, HasSubstr("the address is already in use"));
}

}  // namespace
}  // namespace ptoserve
