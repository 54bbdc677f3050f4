#include "server/transport/reflection.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/support/proto_buffer_reader.h"

namespace ptoserve {

namespace {

using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptor;
using grpc::reflection::v1::ServerReflectionRequest;
using grpc::reflection::v1::ServerReflectionResponse;

void NotFound(const std::string& what, ServerReflectionResponse* out) {
  out->mutable_error_response()->set_error_code(
      static_cast<int>(grpc::StatusCode::NOT_FOUND));
  out->mutable_error_response()->set_error_message(what + " not found");
}

}  // namespace

std::string ReflectionService::Serialized(const FileDescriptor* file) const {
  if (auto it = commented_.find(file->name()); it != commented_.end()) {
    return it->second;
  }
  google::protobuf::FileDescriptorProto proto;
  file->CopyTo(&proto);
  return proto.SerializeAsString();
}

ServerReflectionResponse ReflectionService::Answer(
    const ServerReflectionRequest& request) const {
  ServerReflectionResponse out;
  out.set_valid_host(request.host());
  *out.mutable_original_request() = request;
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  // Adds a file and everything it imports, dependencies first, each once.
  std::set<const FileDescriptor*> seen;
  std::function<void(const FileDescriptor*)> add =
      [&](const FileDescriptor* f) {
        if (!seen.insert(f).second) return;
        for (int i = 0; i < f->dependency_count(); ++i) add(f->dependency(i));
        out.mutable_file_descriptor_response()->add_file_descriptor_proto(
            Serialized(f));
      };
  switch (request.message_request_case()) {
    case ServerReflectionRequest::kListServices:
      for (const std::string& name : services_) {
        out.mutable_list_services_response()->add_service()->set_name(name);
      }
      break;
    case ServerReflectionRequest::kFileByFilename:
      if (const FileDescriptor* f =
              pool->FindFileByName(request.file_by_filename())) {
        add(f);
      } else {
        NotFound(absl::StrCat("file ", request.file_by_filename()), &out);
      }
      break;
    case ServerReflectionRequest::kFileContainingSymbol:
      if (const FileDescriptor* f = pool->FindFileContainingSymbol(
              request.file_containing_symbol())) {
        add(f);
      } else {
        NotFound(absl::StrCat("symbol ", request.file_containing_symbol()),
                 &out);
      }
      break;
    case ServerReflectionRequest::kAllExtensionNumbersOfType:
      // ptoserve's protos declare no extensions.
      if (pool->FindMessageTypeByName(
              request.all_extension_numbers_of_type())) {
        out.mutable_all_extension_numbers_response()->set_base_type_name(
            request.all_extension_numbers_of_type());
      } else {
        NotFound(absl::StrCat("type ", request.all_extension_numbers_of_type()),
                 &out);
      }
      break;
    case ServerReflectionRequest::kFileContainingExtension:
      NotFound("extension", &out);
      break;
    case ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
      out.mutable_error_response()->set_error_code(
          static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
      out.mutable_error_response()->set_error_message("empty request");
      break;
  }
  return out;
}

// Answers each request as it is read, one write at a time. Works on bytes:
// v1 and v1alpha messages are the same on the wire.
class ReflectionService::Stream final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit Stream(const ReflectionService* service) : service_(service) {
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    ServerReflectionRequest request;
    grpc::ProtoBufferReader reader(&request_);
    if (!request.ParseFromZeroCopyStream(&reader)) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "not a ServerReflectionRequest"));
      return;
    }
    request_.Clear();
    response_.Clear();
    bool own = false;
    (void)grpc::SerializationTraits<ServerReflectionResponse>::Serialize(
        service_->Answer(request), &response_, &own);
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "client went away"));
      return;
    }
    StartRead(&request_);
  }
  void OnDone() override { delete this; }

 private:
  const ReflectionService* service_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
};

// One of reflection's two names, registered with gRPC.
template <typename Base>
class ReflectionService::Endpoint final : public Base {
 public:
  explicit Endpoint(ReflectionService* owner) : owner_(owner) {}
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
  ServerReflectionInfo(grpc::CallbackServerContext* context) override {
    return owner_->Open(context);
  }

 private:
  ReflectionService* owner_;
};

ReflectionService::ReflectionService(std::vector<std::string> services,
                                     absl::string_view commented,
                                     const TokenAuthenticator* auth)
    : services_(std::move(services)), auth_(auth) {
  // Puts the health service's descriptors in the generated pool: nothing
  // else in the server refers to them, so the linker would drop them.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  (void)grpc::reflection::v1alpha::ServerReflectionRequest::descriptor();
  endpoints_.push_back(
      std::make_unique<
          Endpoint<grpc::reflection::v1::ServerReflection::
                       WithRawCallbackMethod_ServerReflectionInfo<
                           grpc::reflection::v1::ServerReflection::Service>>>(
          this));
  endpoints_.push_back(
      std::make_unique<Endpoint<
          grpc::reflection::v1alpha::ServerReflection::
              WithRawCallbackMethod_ServerReflectionInfo<
                  grpc::reflection::v1alpha::ServerReflection::Service>>>(
          this));
  google::protobuf::FileDescriptorSet set;
  if (set.ParseFromArray(commented.data(),
                         static_cast<int>(commented.size()))) {
    for (const auto& file : set.file()) {
      commented_[file.name()] = file.SerializeAsString();
    }
  }
}

std::vector<grpc::Service*> ReflectionService::services() {
  std::vector<grpc::Service*> out;
  for (const auto& endpoint : endpoints_) out.push_back(endpoint.get());
  return out;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
ReflectionService::Open(grpc::CallbackServerContext* context) {
  if (auth_ != nullptr) {
    if (absl::Status allowed = auth_->Check(*context); !allowed.ok()) {
      class Refused final
          : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
       public:
        explicit Refused(const absl::Status& s) {
          Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                              std::string(s.message())));
        }
        void OnDone() override { delete this; }
      };
      return new Refused(allowed);
    }
  }
  return new Stream(this);
}

}  // namespace ptoserve
