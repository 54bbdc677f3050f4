#include "client/reflection_client.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "proto/json_errors.h"

namespace ptoserve {

namespace {

absl::Status FromGrpc(const grpc::Status& status, absl::string_view what) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", status.error_message()));
}

// One question on a stream of its own, in either reflection version; the
// answers' error, service names and files.
struct Answer {
  grpc::Status status;
  std::string error;  // the server's ErrorResponse, if any
  std::vector<std::string> services;
  std::vector<std::string> files;  // serialized FileDescriptorProtos
};

template <typename Service, typename Request, typename Response>
Answer AskOne(const std::shared_ptr<grpc::Channel>& channel,
              const std::function<void(grpc::ClientContext*)>& configure,
              const Request& request) {
  auto stub = Service::NewStub(channel);
  grpc::ClientContext context;
  configure(&context);
  auto stream = stub->ServerReflectionInfo(&context);
  Answer answer;
  stream->Write(request);
  stream->WritesDone();
  Response response;
  while (stream->Read(&response)) {
    if (response.has_error_response()) {
      answer.error = response.error_response().error_message();
    }
    for (const auto& s : response.list_services_response().service()) {
      answer.services.push_back(s.name());
    }
    for (const std::string& f :
         response.file_descriptor_response().file_descriptor_proto()) {
      answer.files.push_back(f);
    }
  }
  answer.status = stream->Finish();
  return answer;
}

// The question `set` writes into a request, asked in grpc.reflection.v1,
// or in v1alpha once a server has answered v1 UNIMPLEMENTED (`*v1alpha`).
template <typename Set>
Answer Ask(const std::shared_ptr<grpc::Channel>& channel,
           const std::function<void(grpc::ClientContext*)>& configure,
           bool* v1alpha, const Set& set) {
  namespace v1 = grpc::reflection::v1;
  namespace v1a = grpc::reflection::v1alpha;
  Answer answer;
  if (!*v1alpha) {
    v1::ServerReflectionRequest request;
    set(&request);
    answer = AskOne<v1::ServerReflection, v1::ServerReflectionRequest,
                    v1::ServerReflectionResponse>(channel, configure, request);
    *v1alpha = answer.status.error_code() == grpc::StatusCode::UNIMPLEMENTED;
  }
  if (*v1alpha) {
    v1a::ServerReflectionRequest request;
    set(&request);
    answer = AskOne<v1a::ServerReflection, v1a::ServerReflectionRequest,
                    v1a::ServerReflectionResponse>(channel, configure, request);
  }
  return answer;
}

// "pkg.Service/Method" or "pkg.Service.Method" -> both parts.
bool SplitMethod(const std::string& name, std::string* service,
                 std::string* method) {
  size_t cut = name.rfind('/');
  if (cut == std::string::npos) cut = name.rfind('.');
  if (cut == std::string::npos || cut == 0 || cut + 1 == name.size()) {
    return false;
  }
  *service = name.substr(0, cut);
  *method = name.substr(cut + 1);
  return true;
}

// Whether `pool` defines `name`, of whatever kind.
bool Defines(const google::protobuf::DescriptorPool& pool,
             const std::string& name) {
  return pool.FindServiceByName(name) != nullptr ||
         pool.FindMethodByName(name) != nullptr ||
         pool.FindMessageTypeByName(name) != nullptr ||
         pool.FindEnumTypeByName(name) != nullptr ||
         pool.FindFieldByName(name) != nullptr ||
         pool.FindEnumValueByName(name) != nullptr;
}

// The definition of a descriptor in .proto syntax, with its comments.
template <typename Descriptor>
std::string Definition(const Descriptor& d) {
  google::protobuf::DebugStringOptions options;
  options.include_comments = true;
  return d.DebugStringWithOptions(options);
}

}  // namespace

ReflectionClient::ReflectionClient(
    std::shared_ptr<grpc::Channel> channel,
    std::function<void(grpc::ClientContext*)> configure)
    : channel_(std::move(channel)), configure_(std::move(configure)) {}

absl::StatusOr<std::vector<std::string>> ReflectionClient::ListServices() {
  Answer answer = Ask(channel_, configure_, &v1alpha_,
                      [](auto* request) { request->set_list_services(""); });
  if (!answer.status.ok()) {
    return FromGrpc(answer.status, "server reflection");
  }
  std::sort(answer.services.begin(), answer.services.end());
  return answer.services;
}

absl::StatusOr<std::vector<std::string>> ReflectionClient::FilesContaining(
    const std::string& symbol) {
  const Answer answer =
      Ask(channel_, configure_, &v1alpha_, [&symbol](auto* request) {
        request->set_file_containing_symbol(symbol);
      });
  if (!answer.status.ok()) {
    return FromGrpc(answer.status, "server reflection");
  }
  if (!answer.error.empty() || answer.files.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "the server knows no symbol ", symbol, answer.error.empty() ? "" : ": ",
        answer.error, DidYouMean(symbol)));
  }
  return answer.files;
}

std::string ReflectionClient::DidYouMean(const std::string& symbol) {
  // The name in a package of one of the services ("Tile" in ptoserve.v1).
  absl::StatusOr<std::vector<std::string>> services = ListServices();
  if (!services.ok()) return "";
  std::vector<std::string> tried;
  for (const std::string& service : *services) {
    const size_t dot = service.rfind('.');
    if (dot == std::string::npos) continue;
    const std::string candidate =
        absl::StrCat(service.substr(0, dot + 1), symbol);
    if (std::find(tried.begin(), tried.end(), candidate) != tried.end()) {
      continue;
    }
    tried.push_back(candidate);
    const Answer answer =
        Ask(channel_, configure_, &v1alpha_, [&candidate](auto* request) {
          request->set_file_containing_symbol(candidate);
        });
    if (answer.status.ok() && answer.error.empty() && !answer.files.empty()) {
      return absl::StrCat(" (did you mean ", candidate, "?)");
    }
  }
  return "";
}

absl::Status ReflectionClient::Load(const std::string& symbol) {
  if (Defines(pool_, symbol)) return absl::OkStatus();
  absl::StatusOr<std::vector<std::string>> files = FilesContaining(symbol);
  if (!files.ok()) return files.status();
  std::vector<google::protobuf::FileDescriptorProto> protos;
  for (const std::string& bytes : *files) {
    if (!protos.emplace_back().ParseFromString(bytes)) {
      return absl::DataLossError(
          "the server sent a file descriptor that does not parse");
    }
  }
  // Each file after the files it imports (a server sends a file's imports
  // with it; gRPC's does).
  std::function<absl::Status(const std::string&, int)> build =
      [&](const std::string& name, int depth) -> absl::Status {
    if (pool_.FindFileByName(name) != nullptr) return absl::OkStatus();
    if (depth > 64) return absl::DataLossError("imports nest past 64");
    for (const auto& f : protos) {
      if (f.name() != name) continue;
      for (const std::string& dep : f.dependency()) {
        if (absl::Status s = build(dep, depth + 1); !s.ok()) return s;
      }
      if (pool_.BuildFile(f) == nullptr) {
        return absl::DataLossError(
            absl::StrCat("the server's ", name, " does not build"));
      }
      return absl::OkStatus();
    }
    return absl::DataLossError(
        absl::StrCat("the server did not send ", name, ", which is imported"));
  };
  for (const auto& f : protos) {
    if (absl::Status s = build(f.name(), 0); !s.ok()) return s;
  }
  if (!Defines(pool_, symbol)) {
    return absl::NotFoundError(
        absl::StrCat("the server knows no symbol ", symbol));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ReflectionClient::ListMethods(
    const std::string& service) {
  if (absl::Status s = Load(service); !s.ok()) return s;
  const auto* found = pool_.FindServiceByName(service);
  if (found == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(service, " is not a service"));
  }
  std::vector<std::string> methods;
  for (int i = 0; i < found->method_count(); ++i) {
    methods.push_back(found->method(i)->full_name());
  }
  return methods;
}

absl::StatusOr<std::string> ReflectionClient::Describe(
    const std::string& symbol) {
  // A method may be named with a slash, as calls are.
  std::string name = symbol;
  if (size_t slash = name.rfind('/'); slash != std::string::npos) {
    name[slash] = '.';
  }
  // A field or enum value is defined by its parent's file.
  absl::Status loaded = Load(name);
  if (!loaded.ok() && name.rfind('.') != std::string::npos) {
    if (Load(name.substr(0, name.rfind('.'))).ok()) loaded = absl::OkStatus();
  }
  if (!loaded.ok()) return loaded;
  if (const auto* d = pool_.FindServiceByName(name)) {
    return absl::StrCat(name, " is a service:\n", Definition(*d));
  }
  if (const auto* d = pool_.FindMethodByName(name)) {
    return absl::StrCat(name, " is a method:\n", Definition(*d));
  }
  if (const auto* d = pool_.FindMessageTypeByName(name)) {
    return absl::StrCat(name, " is a message:\n", Definition(*d));
  }
  if (const auto* d = pool_.FindEnumTypeByName(name)) {
    return absl::StrCat(name, " is an enum:\n", Definition(*d));
  }
  if (const auto* d = pool_.FindFieldByName(name)) {
    return absl::StrCat(name, " is a field:\n", Definition(*d));
  }
  if (const auto* d = pool_.FindEnumValueByName(name)) {
    return absl::StrCat(name, " is an enum value:\n", Definition(*d));
  }
  return absl::NotFoundError(absl::StrCat("the server knows no symbol ", name));
}

absl::StatusOr<const google::protobuf::MethodDescriptor*>
ReflectionClient::UnaryMethod(const std::string& method_name) {
  std::string service_name, short_name;
  if (!SplitMethod(method_name, &service_name, &short_name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        method_name,
        " is not SERVICE/METHOD, e.g. grpc.health.v1.Health/Check"));
  }
  if (absl::Status s = Load(service_name); !s.ok()) return s;
  const auto* service = pool_.FindServiceByName(service_name);
  if (service == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(service_name, " is not a service"));
  }
  const auto* method = service->FindMethodByName(short_name);
  if (method == nullptr) {
    std::vector<std::string> names;
    for (int i = 0; i < service->method_count(); ++i) {
      names.push_back(service->method(i)->name());
    }
    return absl::InvalidArgumentError(
        absl::StrCat(service_name, " has no method ", short_name, " (it has ",
                     absl::StrJoin(names, ", "), ")"));
  }
  if (method->client_streaming() || method->server_streaming()) {
    return absl::InvalidArgumentError(absl::StrCat(
        method->full_name(),
        " streams; call takes unary methods (ptoctl stream sends jobs over "
        "ExecuteStream)"));
  }
  return method;
}

absl::StatusOr<std::string> ReflectionClient::CallBytes(
    const google::protobuf::MethodDescriptor& method,
    grpc::ByteBuffer request) {
  grpc::GenericStub stub(channel_);
  grpc::ClientContext context;
  configure_(&context);
  grpc::ByteBuffer reply_bytes;
  grpc::Status status;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  stub.UnaryCall(
      &context,
      absl::StrCat("/", method.service()->full_name(), "/", method.name()),
      grpc::StubOptions(), &request, &reply_bytes, [&](grpc::Status s) {
        std::lock_guard<std::mutex> lock(mu);
        status = std::move(s);
        done = true;
        cv.notify_one();
      });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  }
  if (!status.ok()) return FromGrpc(status, method.full_name());
  std::vector<grpc::Slice> slices;
  reply_bytes.Dump(&slices);
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return bytes;
}

absl::StatusOr<ReflectionClient::PreparedCall> ReflectionClient::Prepare(
    const std::string& method_name, const std::string& request_json) {
  absl::StatusOr<const google::protobuf::MethodDescriptor*> found =
      UnaryMethod(method_name);
  if (!found.ok()) return found.status();
  const google::protobuf::MethodDescriptor& method = **found;
  std::unique_ptr<google::protobuf::Message> request(
      factory_.GetPrototype(method.input_type())->New());
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      request_json, request.get(), JobJsonParseOptions());
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request is not a ", method.input_type()->full_name(),
                     " in JSON: ", std::string(parsed.message())));
  }
  PreparedCall call;
  call.method = &method;
  request->SerializeToString(&call.request);
  return call;
}

absl::StatusOr<std::string> ReflectionClient::Invoke(const PreparedCall& call) {
  const google::protobuf::MethodDescriptor& method = *call.method;
  grpc::Slice slice(call.request);
  absl::StatusOr<std::string> bytes =
      CallBytes(method, grpc::ByteBuffer(&slice, 1));
  if (!bytes.ok()) return bytes.status();
  std::unique_ptr<google::protobuf::Message> reply(
      factory_.GetPrototype(method.output_type())->New());
  if (!reply->ParseFromString(*bytes)) {
    return absl::DataLossError(
        absl::StrCat("the reply is not a ", method.output_type()->full_name()));
  }
  return PrettyJson(*reply);
}

absl::StatusOr<std::string> ReflectionClient::Call(
    const std::string& method_name, const std::string& request_json) {
  absl::StatusOr<PreparedCall> call = Prepare(method_name, request_json);
  if (!call.ok()) return call.status();
  return Invoke(*call);
}

std::string PrettyJson(const google::protobuf::Message& message,
                       google::protobuf::util::JsonPrintOptions options) {
  options.add_whitespace = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  // protobuf indents by one space a level, grpcurl by two. A string's
  // newlines are escaped, so a line starts with its indentation alone.
  std::string indented;
  indented.reserve(out.size() * 5 / 4);
  bool line_start = true;
  for (char c : out) {
    indented += c;
    if (line_start && c == ' ') {
      indented += ' ';
      continue;
    }
    line_start = c == '\n';
  }
  return indented;
}

}  // namespace ptoserve
