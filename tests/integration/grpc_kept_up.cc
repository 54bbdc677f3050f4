// Keeps gRPC initialized for the whole test binary. When the last channel
// or server of a process goes, gRPC 1.51 shuts itself down on that thread
// and waits there for its timers and threads to stop: in a test whose
// channels come and go between cases, that took up to 10 s at a time (in
// hostile_test, whichever case last sent a large request refused before it
// was read), and a server's SIGTERM then waited on the test's unpolled
// connection. Linked into every integration test (alwayslink).
#include <grpc/grpc.h>

namespace ptoserve {
namespace {

const bool kGrpcKeptUp = [] {
  grpc_init();
  return true;
}();

}  // namespace
}  // namespace ptoserve
