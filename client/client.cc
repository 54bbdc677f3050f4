#include "client/client.h"

#include <cinttypes>
#include <cstdio>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace ptoserve {

namespace {

absl::Status FromGrpc(const grpc::Status& status) {
  // gRPC refuses to send a request over the message limit in its own words
  // ("Sent message larger than max (A vs. B)"); said as the server says a
  // limit, and as the Python client says it.
  uint64_t size = 0, limit = 0;
  if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
      std::sscanf(status.error_message().c_str(),
                  "Sent message larger than max (%" SCNu64 " vs. %" SCNu64 ")",
                  &size, &limit) == 2) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the request is ", size, " bytes, more than a message may be (", limit,
        "): send tiles this large through shared memory, as "
        "fill, or in parts"));
  }
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

// Round robin over every resolved address; the idempotent calls (a job has
// no side effects) retry on another one when a server is gone or going
// away: UNAVAILABLE (refused in its lame duck, or unreachable) and
// CANCELLED (gRPC cancels the calls that reach a server as it closes). A
// call the caller cancels, or whose deadline passes, is never retried.
constexpr char kServiceConfig[] = R"({
  "loadBalancingConfig": [{"round_robin": {}}],
  "methodConfig": [{
    "name": [{"service": "ptoserve.v1.TileCompute", "method": "Execute"},
             {"service": "ptoserve.v1.TileCompute", "method": "GetCapabilities"}],
    "retryPolicy": {
      "maxAttempts": 5,
      "initialBackoff": "0.05s",
      "maxBackoff": "1s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE", "CANCELLED"]
    }
  }]
})";

}  // namespace

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(
    const ClientOptions& options) {
  if (!options.tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = options.tls_ca_pem;
  ssl.pem_cert_chain = options.tls_cert_pem;
  ssl.pem_private_key = options.tls_key_pem;
  return grpc::SslCredentials(ssl);
}

std::string ChannelTarget(const std::string& address) {
  const bool list = address.find(',') != std::string::npos;
  const bool has_scheme = address.find(":/") != std::string::npos ||
                          absl::StartsWith(address, "ipv4:") ||
                          absl::StartsWith(address, "ipv6:");
  if (!list || has_scheme) return address;
  return (address[0] == '[' ? "ipv6:" : "ipv4:") + address;
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    const std::string& address, const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  args.SetServiceConfigJSON(kServiceConfig);
  if (!options.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls_server_name);
  }
  auto channel = grpc::CreateCustomChannel(ChannelTarget(address),
                                           ChannelCredentials(options), args);
  const auto deadline = std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(options.connect_timeout);
  // Waits for a connection, but no longer than the first failure of every
  // address: then gRPC's reason (connection refused, a TLS handshake
  // failure, ...) is the answer, as it is for grpcurl, not a timeout.
  for (grpc_connectivity_state state = channel->GetState(true);
       state != GRPC_CHANNEL_READY; state = channel->GetState(true)) {
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE ||
        state == GRPC_CHANNEL_SHUTDOWN) {
      // A call that does not wait for the channel fails at once with the
      // reason of the last failed connection attempt.
      grpc::ClientContext probe;
      probe.set_deadline(deadline);
      if (!options.token.empty()) {
        probe.AddMetadata("authorization", "Bearer " + options.token);
      }
      grpc::health::v1::HealthCheckResponse response;
      grpc::Status status = grpc::health::v1::Health::NewStub(channel)->Check(
          &probe, grpc::health::v1::HealthCheckRequest(), &response);
      if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
          status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
        break;  // connected after all: the server answered
      }
      return absl::UnavailableError(
          absl::StrCat("cannot connect to ptoserve at ", address, ": ",
                       status.error_message()));
    }
    if (!channel->WaitForStateChange(state, deadline)) {
      return absl::UnavailableError(absl::StrCat(
          "cannot connect to ptoserve at ", address, ": no connection within ",
          absl::FormatDuration(options.connect_timeout)));
    }
  }
  return std::unique_ptr<Client>(new Client(std::move(channel), options));
}

v1::Job InstructionJob(const InstructionJobArgs& args) {
  v1::Job job;
  job.set_target(args.target);
  std::vector<const char*> tiles = {"src0"};
  if (args.src1) tiles.push_back("src1");
  if (args.tmp_tile) tiles.push_back("tmp");
  for (const char* name : tiles) {
    v1::Tile& tile = (*job.mutable_tiles())[name];
    tile.set_dtype(args.dtype);
    tile.set_rows(args.rows);
    tile.set_cols(args.cols);
    tile.set_valid_rows(args.valid_rows);
    tile.set_valid_cols(args.valid_cols);
  }
  v1::Instruction* inst = job.add_instructions();
  inst->set_opcode(args.opcode);
  inst->set_dst("dst");
  inst->set_src0("src0");
  if (args.src1) inst->set_src1("src1");
  if (args.tmp) inst->set_tmp("tmp");
  return job;
}

Client::Client(std::shared_ptr<grpc::Channel> channel,
               const ClientOptions& options)
    : channel_(std::move(channel)),
      stub_(v1::TileCompute::NewStub(channel_)),
      shared_stub_(v1::SharedMemory::NewStub(channel_)),
      options_(options) {}

void Client::ConfigureContext(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(options_.call_timeout));
  if (!options_.token.empty()) {
    context->AddMetadata("authorization", "Bearer " + options_.token);
  }
  for (const auto& [name, value] : options_.metadata) {
    context->AddMetadata(name, value);
  }
}

template <typename Stub, typename Request, typename Response>
absl::StatusOr<Response> Client::Call(
    Stub* stub,
    grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                 Response*),
    const Request& request) const {
  grpc::ClientContext context;
  ConfigureContext(&context);
  Response response;
  grpc::Status status = (stub->*method)(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::JobResult> Client::Execute(const v1::Job& job) const {
  return Call(stub_.get(), &v1::TileCompute::Stub::Execute, job);
}

template <typename Request, typename Response>
absl::Status Client::Exchange(
    std::unique_ptr<grpc::ClientReaderWriter<Request, Response>> (
        v1::TileCompute::Stub::*open)(grpc::ClientContext*),
    absl::Span<const Request> requests,
    const std::function<void(Response)>& on_response) const {
  grpc::ClientContext context;
  ConfigureContext(&context);
  auto stream = (stub_.get()->*open)(&context);
  // Writes block while the server's window is full, so they run beside the
  // reads rather than before them.
  std::thread writer([&] {
    for (const Request& request : requests) {
      if (!stream->Write(request)) break;
    }
    stream->WritesDone();
  });
  Response response;
  while (stream->Read(&response)) on_response(std::move(response));
  writer.join();
  return FromGrpc(stream->Finish());
}

absl::Status Client::ExecuteStream(
    absl::Span<const v1::Job> jobs,
    const std::function<void(v1::JobResult)>& on_result) const {
  return Exchange(&v1::TileCompute::Stub::ExecuteStream, jobs, on_result);
}

absl::Status Client::ExecuteBatches(
    absl::Span<const v1::JobBatch> batches,
    const std::function<void(v1::JobResultBatch)>& on_answer) const {
  return Exchange(&v1::TileCompute::Stub::ExecuteBatches, batches, on_answer);
}

absl::StatusOr<v1::Capabilities> Client::GetCapabilities() const {
  return Call(stub_.get(), &v1::TileCompute::Stub::GetCapabilities,
              v1::GetCapabilitiesRequest());
}

absl::StatusOr<v1::Region> Client::RegisterRegion(
    const v1::RegisterRequest& request) const {
  return Call(shared_stub_.get(), &v1::SharedMemory::Stub::Register, request);
}

absl::StatusOr<v1::Region> Client::UnregisterRegion(
    const std::string& name) const {
  v1::UnregisterRequest request;
  request.set_name(name);
  return Call(shared_stub_.get(), &v1::SharedMemory::Stub::Unregister, request);
}

absl::StatusOr<v1::ListResponse> Client::ListRegions() const {
  return Call(shared_stub_.get(), &v1::SharedMemory::Stub::List,
              v1::ListRequest());
}

absl::StatusOr<std::string> Client::Health(const std::string& service) const {
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  absl::StatusOr<grpc::health::v1::HealthCheckResponse> response =
      Call(stub.get(), &grpc::health::v1::Health::Stub::Check, request);
  if (!response.ok()) return response.status();
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
      response->status());
}

}  // namespace ptoserve
