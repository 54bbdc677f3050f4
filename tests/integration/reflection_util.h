// Calls to the server reflection service as grpcurl makes them, over either
// of its versions.
#ifndef PTOSERVE_TESTS_INTEGRATION_REFLECTION_UTIL_H_
#define PTOSERVE_TESTS_INTEGRATION_REFLECTION_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"

namespace ptoserve {
namespace test {

// The generated types of one reflection version.
struct ReflectionV1 {
  using Service = grpc::reflection::v1::ServerReflection;
  using Request = grpc::reflection::v1::ServerReflectionRequest;
  using Response = grpc::reflection::v1::ServerReflectionResponse;
};
struct ReflectionV1Alpha {
  using Service = grpc::reflection::v1alpha::ServerReflection;
  using Request = grpc::reflection::v1alpha::ServerReflectionRequest;
  using Response = grpc::reflection::v1alpha::ServerReflectionResponse;
};

template <typename Version>
struct ReflectionAnswer {
  grpc::Status status;
  std::vector<typename Version::Response> responses;
};

// One request on a stream of its own, and every answer to it.
template <typename Version>
ReflectionAnswer<Version> Reflect(const std::shared_ptr<grpc::Channel>& channel,
                                  const typename Version::Request& request) {
  auto stub = Version::Service::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
  auto stream = stub->ServerReflectionInfo(&context);
  ReflectionAnswer<Version> answer;
  stream->Write(request);
  stream->WritesDone();
  typename Version::Response response;
  while (stream->Read(&response)) answer.responses.push_back(response);
  answer.status = stream->Finish();
  return answer;
}

struct ServiceList {
  grpc::Status status;
  std::set<std::string> names;
};

// What `grpcurl list` does: ask the reflection service for the services.
template <typename Version = ReflectionV1Alpha>
ServiceList ListServices(const std::shared_ptr<grpc::Channel>& channel) {
  typename Version::Request request;
  request.set_list_services("");
  ReflectionAnswer<Version> answer = Reflect<Version>(channel, request);
  ServiceList list{answer.status, {}};
  for (const auto& response : answer.responses) {
    for (const auto& s : response.list_services_response().service()) {
      list.names.insert(s.name());
    }
  }
  return list;
}

}  // namespace test
}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_INTEGRATION_REFLECTION_UTIL_H_
