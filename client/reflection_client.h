// What grpcurl does, through server reflection alone: the services a
// server lists, any symbol's definition (with its comments), and a call of
// any unary method with a request in proto3 JSON. ptoctl list, describe
// and call use it.
#ifndef PTOSERVE_CLIENT_REFLECTION_CLIENT_H_
#define PTOSERVE_CLIENT_REFLECTION_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"

namespace ptoserve {

class ReflectionClient {
 public:
  // `configure` sets each call's deadline and credentials.
  ReflectionClient(std::shared_ptr<grpc::Channel> channel,
                   std::function<void(grpc::ClientContext*)> configure);

  // The services the server lists, sorted.
  absl::StatusOr<std::vector<std::string>> ListServices();

  // The fully-qualified methods of `service` ("pkg.Service.Method").
  absl::StatusOr<std::vector<std::string>> ListMethods(
      const std::string& service);

  // `symbol` (a service, method, message, field, enum or enum value) as
  // grpcurl describes it: "NAME is a message:" and its definition in
  // .proto syntax with its comments.
  absl::StatusOr<std::string> Describe(const std::string& symbol);

  // A call made ready: the method, loaded, and the request's bytes.
  struct PreparedCall {
    const google::protobuf::MethodDescriptor* method = nullptr;
    std::string request;
  };
  // The unary method `method` ("pkg.Service/Method" or
  // "pkg.Service.Method") and `request_json` as its request message. The
  // caller's mistakes are INVALID_ARGUMENT (JSON that is not the request
  // message, a streaming method, a method the service lacks) or NOT_FOUND
  // (a service the server does not know); the server's own answers to the
  // reflection questions keep their codes.
  absl::StatusOr<PreparedCall> Prepare(const std::string& method,
                                       const std::string& request_json);
  // Calls a prepared method; its response in proto3 JSON.
  absl::StatusOr<std::string> Invoke(const PreparedCall& call);
  // Prepare, then Invoke.
  absl::StatusOr<std::string> Call(const std::string& method,
                                   const std::string& request_json);

 private:
  // Loads the file that defines `symbol`, and its imports, into the pool.
  absl::Status Load(const std::string& symbol);
  // Asks the server one reflection question (v1, else v1alpha).
  absl::StatusOr<std::vector<std::string>> FilesContaining(
      const std::string& symbol);
  // " (did you mean ptoserve.v1.Tile?)" for "Tile", the name in the
  // package of a listed service that the server knows; "" for none.
  std::string DidYouMean(const std::string& symbol);
  // The unary method `method_name` names (SERVICE/METHOD), loaded;
  // INVALID_ARGUMENT saying what it is instead.
  absl::StatusOr<const google::protobuf::MethodDescriptor*> UnaryMethod(
      const std::string& method_name);
  // Calls `method` with `request`'s bytes; the reply's bytes.
  absl::StatusOr<std::string> CallBytes(
      const google::protobuf::MethodDescriptor& method,
      grpc::ByteBuffer request);

  std::shared_ptr<grpc::Channel> channel_;
  std::function<void(grpc::ClientContext*)> configure_;
  google::protobuf::DescriptorPool pool_;
  google::protobuf::DynamicMessageFactory factory_{&pool_};
  bool v1alpha_ = false;  // the server has no grpc.reflection.v1
};

// `message` as proto3 JSON (with `options`), indented two spaces a level
// and ending in a newline, as grpcurl prints: what `ptoctl call` and
// ptoctl's --json print.
std::string PrettyJson(const google::protobuf::Message& message,
                       google::protobuf::util::JsonPrintOptions options = {});

}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_REFLECTION_CLIENT_H_
