#include "server/rpc/shared_memory_service.h"

#include <utility>

#include "server/identity/peer_credentials.h"
#include "server/rpc/status.h"

namespace ptoserve {

template <typename T>
grpc::ServerUnaryReactor* SharedMemoryService::Answer(
    grpc::CallbackServerContext* context, absl::StatusOr<T> answer, T* out) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (!answer.ok()) {
    reactor->Finish(ToGrpcStatus(answer.status()));
    return reactor;
  }
  *out = std::move(*answer);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

absl::StatusOr<uid_t> SharedMemoryService::Caller(
    const grpc::CallbackServerContext& context) const {
  if (absl::Status allowed = Authorize(context); !allowed.ok()) return allowed;
  if (!registry_->enabled()) return SharedMemoryRegistry::Off();
  // The caller's user, from its end of the connection: the server maps only
  // what that user could open itself, and only a caller who may use a
  // region may take it away (MayUse).
  return CachedPeerUid(context.peer());
}

grpc::ServerUnaryReactor* SharedMemoryService::Register(
    grpc::CallbackServerContext* context, const v1::RegisterRequest* request,
    v1::Region* region) {
  absl::StatusOr<uid_t> caller = Caller(*context);
  if (!caller.ok()) return Answer<v1::Region>(context, caller.status(), region);
  // Leased to this call's connection, unless it asks to outlive it.
  std::optional<PeerConnection> connection;
  if (!request->outlive_connection()) {
    absl::StatusOr<PeerConnection> found = FindConnection(context->peer());
    if (!found.ok()) {
      return Answer<v1::Region>(context, found.status(), region);
    }
    connection = std::move(*found);
  }
  return Answer(context,
                registry_->Register(*request, *caller, std::move(connection)),
                region);
}

grpc::ServerUnaryReactor* SharedMemoryService::Unregister(
    grpc::CallbackServerContext* context, const v1::UnregisterRequest* request,
    v1::Region* region) {
  absl::StatusOr<uid_t> caller = Caller(*context);
  if (!caller.ok()) return Answer<v1::Region>(context, caller.status(), region);
  return Answer(context, registry_->Unregister(request->name(), *caller),
                region);
}

grpc::ServerUnaryReactor* SharedMemoryService::List(
    grpc::CallbackServerContext* context, const v1::ListRequest*,
    v1::ListResponse* list) {
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    return Answer<v1::ListResponse>(context, allowed, list);
  }
  if (!registry_->enabled()) {
    return Answer<v1::ListResponse>(context, SharedMemoryRegistry::Off(), list);
  }
  return Answer(context, absl::StatusOr<v1::ListResponse>(registry_->List()),
                list);
}

}  // namespace ptoserve
