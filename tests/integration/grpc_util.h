// gRPC helpers shared by the fault and load tests.
#ifndef PTOSERVE_TESTS_INTEGRATION_GRPC_UTIL_H_
#define PTOSERVE_TESTS_INTEGRATION_GRPC_UTIL_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "common/mutex.h"

namespace ptoserve {

// A channel to `address` with a connection of its own (gRPC otherwise
// shares one among channels with equal arguments), no retries and 64 MiB
// messages.
std::shared_ptr<grpc::Channel> OwnChannel(const std::string& address);

// OwnChannel over a TCP connection to `address` (IP:PORT) whose socket
// belongs to user `uid`: it is made while the calling thread's file-system
// user is `uid`, and the kernel names the socket's maker as its owner in
// its socket tables. A server on loopback then takes its calls for that
// user's, a client apart from the test's own (PeerClient). Null if the
// socket cannot be made (not root) or connected.
std::shared_ptr<grpc::Channel> OwnChannelAs(uid_t uid,
                                            const std::string& address);

// A user for OwnChannelAs: none of this machine's, and not the test's.
inline constexpr uid_t kOtherUser = 54321;

// Now plus `d`, as gRPC deadlines are given.
std::chrono::system_clock::time_point In(absl::Duration d);

// "DEADLINE_EXCEEDED".
std::string CodeName(grpc::StatusCode code);

// The bytes `buffer` holds.
std::string Bytes(const grpc::ByteBuffer& buffer);

// Sends `bytes` as the request of a unary Execute, whatever they hold, with
// a deadline `deadline` from now; on OK, `reply` gets the response's bytes.
grpc::Status RawExecute(grpc::GenericStub* stub, const std::string& bytes,
                        std::string* reply,
                        absl::Duration deadline = absl::Seconds(10));

// gRPC runs a call's callback after the call was started, but that ordering
// passes through libgrpc's lock-free queues, which ThreadSanitizer cannot
// see (Debian's libgrpc is not instrumented; tools/tsan/absl_sync.cc shows
// it only gRPC's mutexes). BeforeStartingCall(key) just before starting the
// call and InCallback(key) first thing in its callback state it; `key` is
// any address the two share. No effect outside ThreadSanitizer builds.
inline void BeforeStartingCall(const void* key) { TsanReleasing(key); }
inline void InCallback(const void* key) { TsanAcquired(key); }

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_INTEGRATION_GRPC_UTIL_H_
