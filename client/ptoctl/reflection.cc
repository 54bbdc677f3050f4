#include "client/ptoctl/reflection.h"

#include <iostream>
#include <memory>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "client/client.h"
#include "client/ptoctl/connect.h"
#include "client/ptoctl/flags.h"
#include "client/ptoctl/print.h"
#include "client/read_input.h"
#include "client/reflection_client.h"

namespace ptoserve {
namespace ptoctl {

namespace {

// Connects and runs `use` with a reflection client on the connection;
// returns its exit status.
template <typename Use>
int WithReflection(Use use) {
  int code = 0;
  std::unique_ptr<Client> client = Connect(&code);
  if (client == nullptr) return code;
  const Client* c = client.get();
  ReflectionClient reflection(
      client->channel(),
      [c](grpc::ClientContext* context) { c->ConfigureContext(context); });
  return use(reflection);
}

}  // namespace

int List(const std::string& service) {
  return WithReflection([&](ReflectionClient& reflection) {
    absl::StatusOr<std::vector<std::string>> names =
        service.empty() ? reflection.ListServices()
                        : reflection.ListMethods(service);
    if (!names.ok()) return Fail(names.status());
    for (const std::string& name : *names) std::cout << name << "\n";
    return 0;
  });
}

int Describe(const std::string& symbol) {
  return WithReflection([&](ReflectionClient& reflection) {
    absl::StatusOr<std::string> text = reflection.Describe(symbol);
    if (!text.ok()) return Fail(text.status());
    std::cout << *text;
    return 0;
  });
}

int CallMethod(const std::string& method) {
  // grpcurl's -d: the JSON itself, @FILE, or - (and @ alone) for stdin.
  std::string request = absl::GetFlag(FLAGS_d);
  if (request.empty()) {
    request = "{}";
  } else if (request == "-" || absl::StartsWith(request, "@")) {
    const std::string path =
        request == "-" || request == "@" ? "-" : request.substr(1);
    absl::StatusOr<std::string> text = ReadInput(path);
    if (!text.ok()) return UsageError(text.status().message());
    request = *std::move(text);
  }
  return WithReflection([&](ReflectionClient& reflection) {
    absl::StatusOr<ReflectionClient::PreparedCall> call =
        reflection.Prepare(method, request);
    // A method the server lacks, or a request not its message: the
    // command line's mistake, though reflection found it.
    if (!call.ok() && (absl::IsInvalidArgument(call.status()) ||
                       absl::IsNotFound(call.status()))) {
      return UsageError(call.status().message());
    }
    if (!call.ok()) return Fail(call.status());
    absl::StatusOr<std::string> reply = reflection.Invoke(*call);
    if (!reply.ok()) return Fail(reply.status());
    std::cout << *reply;
    return 0;
  });
}

}  // namespace ptoctl
}  // namespace ptoserve
