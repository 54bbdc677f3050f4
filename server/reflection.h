// gRPC server reflection (grpc.reflection.v1alpha, what grpcurl speaks),
// served from the descriptors compiled into the binary.
//
// ptoserve serves its own rather than Debian's libgrpc++_reflection because
// that library registers itself for every server it is linked into, which
// leaves no way to turn reflection off or to ask for credentials.
#ifndef PTOSERVE_SERVER_REFLECTION_H_
#define PTOSERVE_SERVER_REFLECTION_H_

#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "server/auth.h"

namespace ptoserve {

class ReflectionService final
    : public grpc::reflection::v1alpha::ServerReflection::CallbackService {
 public:
  // `services`: the full names to list. `commented`: a serialized
  // FileDescriptorSet whose files are served in place of the compiled-in
  // descriptors of the same name, for their comments. `auth` (null: open
  // to all) must outlive the service.
  ReflectionService(std::vector<std::string> services,
                    absl::string_view commented,
                    const TokenAuthenticator* auth);

  grpc::ServerBidiReactor<grpc::reflection::v1alpha::ServerReflectionRequest,
                          grpc::reflection::v1alpha::ServerReflectionResponse>*
  ServerReflectionInfo(grpc::CallbackServerContext* context) override;

  // The answer to one request (exposed for tests).
  grpc::reflection::v1alpha::ServerReflectionResponse Answer(
      const grpc::reflection::v1alpha::ServerReflectionRequest& request) const;

 private:
  class Stream;

  // Each file's serialized FileDescriptorProto, from `commented` where it
  // has the file.
  std::string Serialized(const google::protobuf::FileDescriptor* file) const;

  std::vector<std::string> services_;
  absl::flat_hash_map<std::string, std::string> commented_;  // by file name
  const TokenAuthenticator* auth_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_REFLECTION_H_
