// gRPC server reflection, what grpcurl and other generic clients speak,
// under both of its names: grpc.reflection.v1 and the older
// grpc.reflection.v1alpha (the same messages; clients try either). Served
// from the descriptors compiled into the binary.
//
// ptoserve serves its own rather than Debian's libgrpc++_reflection because
// that library registers itself for every server it is linked into, which
// leaves no way to turn reflection off or to ask for credentials, and it
// speaks only v1alpha.
#ifndef PTOSERVE_SERVER_TRANSPORT_REFLECTION_H_
#define PTOSERVE_SERVER_TRANSPORT_REFLECTION_H_

#include <google/protobuf/descriptor.h>
#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "server/transport/auth.h"

namespace ptoserve {

class ReflectionService {
 public:
  // `services`: the full names to list; each must be in the binary's
  // generated descriptor pool (grpc.health.v1.Health and both reflection
  // services always are). `commented`: a serialized FileDescriptorSet whose
  // files are served in place of the compiled-in descriptors of the same
  // name, for their comments. `auth` (null: open to all) must outlive the
  // service.
  ReflectionService(std::vector<std::string> services,
                    absl::string_view commented,
                    const TokenAuthenticator* auth);

  // The two gRPC services to register (v1, v1alpha); they live as long as
  // this object.
  std::vector<grpc::Service*> services();

  // The answer to one request (exposed for tests).
  grpc::reflection::v1::ServerReflectionResponse Answer(
      const grpc::reflection::v1::ServerReflectionRequest& request) const;

  // The full names of every service this binary serves reflection for.
  const std::vector<std::string>& listed() const { return services_; }

 private:
  class Stream;
  template <typename Base>
  class Endpoint;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Open(
      grpc::CallbackServerContext* context);
  // Each file's serialized FileDescriptorProto, from `commented` where it
  // has the file.
  std::string Serialized(const google::protobuf::FileDescriptor* file) const;

  std::vector<std::string> services_;
  absl::flat_hash_map<std::string, std::string> commented_;  // by file name
  const TokenAuthenticator* auth_;
  std::vector<std::unique_ptr<grpc::Service>> endpoints_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_TRANSPORT_REFLECTION_H_
