#include "client/client.h"

#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"

namespace ptoserve {

namespace {

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    const std::string& address, const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  auto channel = grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args);
  const auto deadline = std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(options.connect_timeout);
  if (!channel->WaitForConnected(deadline)) {
    return absl::UnavailableError("cannot connect to ptoserve at " + address);
  }
  return std::unique_ptr<Client>(new Client(std::move(channel), options));
}

Client::Client(std::shared_ptr<grpc::Channel> channel,
               const ClientOptions& options)
    : channel_(std::move(channel)),
      stub_(v1::TileCompute::NewStub(channel_)),
      options_(options) {}

void Client::SetDeadline(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(options_.call_timeout));
}

absl::StatusOr<v1::JobResult> Client::Execute(const v1::Job& job) const {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::JobResult result;
  grpc::Status status = stub_->Execute(&context, job, &result);
  if (!status.ok()) return FromGrpc(status);
  return result;
}

absl::Status Client::ExecuteStream(
    absl::Span<const v1::Job> jobs,
    const std::function<void(v1::JobResult)>& on_result) const {
  grpc::ClientContext context;
  SetDeadline(&context);
  auto stream = stub_->ExecuteStream(&context);
  // Writes block while the server's window is full, so they run beside the
  // reads rather than before them.
  std::thread writer([&] {
    for (const v1::Job& job : jobs) {
      if (!stream->Write(job)) break;
    }
    stream->WritesDone();
  });
  v1::JobResult result;
  while (stream->Read(&result)) on_result(std::move(result));
  writer.join();
  return FromGrpc(stream->Finish());
}

absl::StatusOr<v1::Capabilities> Client::GetCapabilities() const {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::Capabilities capabilities;
  grpc::Status status = stub_->GetCapabilities(
      &context, v1::GetCapabilitiesRequest(), &capabilities);
  if (!status.ok()) return FromGrpc(status);
  return capabilities;
}

absl::StatusOr<std::string> Client::Health(const std::string& service) const {
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext context;
  SetDeadline(&context);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
      response.status());
}

}  // namespace ptoserve
