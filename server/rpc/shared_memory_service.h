// The ptoserve.v1.SharedMemory service: registering, unregistering and
// listing shared-memory regions (server/shm/shared_memory.h), behind the same
// authentication as TileCompute.
#ifndef PTOSERVE_SERVER_RPC_SHARED_MEMORY_SERVICE_H_
#define PTOSERVE_SERVER_RPC_SHARED_MEMORY_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include "ptoserve/v1/service.grpc.pb.h"
#include "server/shm/shared_memory.h"
#include "server/transport/auth.h"

namespace ptoserve {

class SharedMemoryService final : public v1::SharedMemory::CallbackService {
 public:
  // `registry` and `auth` (null: no authentication) must outlive the
  // service.
  SharedMemoryService(SharedMemoryRegistry* registry,
                      const TokenAuthenticator* auth)
      : registry_(registry), auth_(auth) {}

  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* context,
                                     const v1::RegisterRequest* request,
                                     v1::Region* region) override;
  grpc::ServerUnaryReactor* Unregister(grpc::CallbackServerContext* context,
                                       const v1::UnregisterRequest* request,
                                       v1::Region* region) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* context,
                                 const v1::ListRequest* request,
                                 v1::ListResponse* list) override;

 private:
  // Answers `context` with `answer`'s error, or fills `out` with its value.
  template <typename T>
  grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context,
                                   absl::StatusOr<T> answer, T* out);
  // The user `context`'s caller runs as, or why it may not call: no token,
  // the shared-memory path off, or a caller not on this host.
  absl::StatusOr<uid_t> Caller(
      const grpc::CallbackServerContext& context) const;
  absl::Status Authorize(const grpc::CallbackServerContext& context) const {
    return auth_ == nullptr ? absl::OkStatus() : auth_->Check(context);
  }

  SharedMemoryRegistry* registry_;
  const TokenAuthenticator* auth_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_SHARED_MEMORY_SERVICE_H_
