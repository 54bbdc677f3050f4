// The ptoserve C++ SDK: a thin, typed layer over the generated gRPC stub.
//
//   auto client = ptoserve::Client::Connect("127.0.0.1:50051");
//   auto r = (*client)->Tand<int16_t>({.src0 = a, .src1 = b, .rows = 16, .cols
//   = 16});
//   // r->elements: the 16x16 result; r->events: one record per instruction.
#ifndef PTOSERVE_CLIENT_CLIENT_H_
#define PTOSERVE_CLIENT_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "ptoserve/v1/service.grpc.pb.h"

namespace ptoserve {

struct ClientOptions {
  // How long Connect waits for the server to accept a connection.
  absl::Duration connect_timeout = absl::Seconds(5);
  // Deadline of each call.
  absl::Duration call_timeout = absl::Seconds(30);
  // Largest message sent or received, in bytes.
  int max_message_bytes = 64 << 20;
  // TLS: verify the server against `tls_ca_pem` (empty: the system's
  // roots); for mutual TLS also present `tls_cert_pem`/`tls_key_pem`.
  // `tls_server_name` overrides the name the certificate must carry.
  bool tls = false;
  std::string tls_ca_pem, tls_cert_pem, tls_key_pem, tls_server_name;
  // Sent as "authorization: Bearer <token>" on every call when not empty.
  std::string token;
  // Sent with every call besides (name in lower case, value).
  std::vector<std::pair<std::string, std::string>> metadata;
};

// The gRPC target for `address`: "HOST:PORT", a comma-separated list of
// IP:PORT (balanced round robin: "10.0.0.1:50051,10.0.0.2:50051"), or any
// gRPC name such as "dns:///ptoserve.default.svc:50051".
std::string ChannelTarget(const std::string& address);

// Plaintext, or with options.tls TLS with its certificates: the
// credentials of Client::Connect's channel, for callers that make their own
// (tls_server_name goes in the channel's arguments).
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(
    const ClientOptions& options);

// The wire element type of T (int8_t ... uint32_t).
template <typename T>
constexpr v1::DType DTypeOf() {
  static_assert(std::is_integral_v<T> && sizeof(T) <= 4,
                "TAND/TXOR elements are 8-, 16- or 32-bit integers");
  if constexpr (sizeof(T) == 1) {
    return std::is_signed_v<T> ? v1::DTYPE_INT8 : v1::DTYPE_UINT8;
  } else if constexpr (sizeof(T) == 2) {
    return std::is_signed_v<T> ? v1::DTYPE_INT16 : v1::DTYPE_UINT16;
  } else {
    return std::is_signed_v<T> ? v1::DTYPE_INT32 : v1::DTYPE_UINT32;
  }
}

// The operands of one TAND or TXOR on rows x cols tiles of T.
template <typename T>
struct BinaryArgs {
  absl::Span<const T> src0;  // rows * cols elements, row-major
  absl::Span<const T> src1;  // rows * cols elements, row-major
  uint32_t rows = 0;
  uint32_t cols = 0;
  uint32_t valid_rows = 0;                     // 0: rows
  uint32_t valid_cols = 0;                     // 0: cols
  v1::Target target = v1::TARGET_UNSPECIFIED;  // unset: server default
};

// A result tile and the events of the job that produced it.
template <typename T>
struct TileResult {
  std::vector<T> elements;  // the whole dst tile, row-major
  uint32_t rows = 0;
  uint32_t cols = 0;
  uint32_t valid_rows = 0;
  uint32_t valid_cols = 0;
  v1::Target target = v1::TARGET_UNSPECIFIED;
  std::vector<v1::EventRecord> events;
};

// Packs `elements` as a tile's raw little-endian data.
template <typename T>
void SetTileData(absl::Span<const T> elements, v1::Tile* tile) {
  tile->set_dtype(DTypeOf<T>());
  tile->set_data(reinterpret_cast<const char*>(elements.data()),
                 elements.size() * sizeof(T));
}

// Reads a result tile's elements, whichever encoding it came back in.
// INVALID_ARGUMENT if the tile is not of type T or its size is wrong.
template <typename T>
absl::StatusOr<std::vector<T>> TileElements(const v1::Tile& tile);

class Client {
 public:
  // Connects to `address` (see ChannelTarget) and waits up to
  // options.connect_timeout for a connection. UNAVAILABLE, with gRPC's
  // reason, as soon as every address has failed once (connection refused,
  // TLS handshake failed, ...), or when the timeout passes.
  // Calls are balanced round robin over every address the name resolves
  // to, and Execute and GetCapabilities (idempotent) are retried on
  // UNAVAILABLE, so a server that goes away mid-call costs a retry, not
  // an error.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      const std::string& address, const ClientOptions& options = {});

  // Runs one job; the server's error code and message on failure.
  absl::StatusOr<v1::JobResult> Execute(const v1::Job& job) const;

  // Runs `jobs` over one ExecuteStream call. `on_result` sees each result as
  // it arrives (in the order jobs finish, each with its job's id and
  // status; a job's error does not end the stream). The call's deadline is
  // options.call_timeout for the whole stream. Returns the stream's status.
  absl::Status ExecuteStream(
      absl::Span<const v1::Job> jobs,
      const std::function<void(v1::JobResult)>& on_result) const;
  // Runs `batches` over one ExecuteBatches call. Each JobBatch is answered
  // by one JobResultBatch, its jobs' results in the batch's order;
  // `on_answer` sees each answer as its batch finishes (batches may finish
  // out of order: match them by their jobs' ids). A message the server
  // refuses as a whole is answered with one result, no id, the error in its
  // status. The call's deadline is options.call_timeout for the whole
  // stream. Returns the stream's status.
  absl::Status ExecuteBatches(
      absl::Span<const v1::JobBatch> batches,
      const std::function<void(v1::JobResultBatch)>& on_answer) const;
  absl::StatusOr<v1::Capabilities> GetCapabilities() const;

  // The SharedMemory service (service.proto): regions of shared-memory
  // objects that jobs reference instead of carrying tiles. SharedRegion
  // (client/shared_region.h) creates, registers and frees one.
  absl::StatusOr<v1::Region> RegisterRegion(
      const v1::RegisterRequest& request) const;
  absl::StatusOr<v1::Region> UnregisterRegion(const std::string& name) const;
  absl::StatusOr<v1::ListResponse> ListRegions() const;
  // The grpc.health.v1 status of `service` ("" is the whole server):
  // "SERVING", "NOT_SERVING", ...
  absl::StatusOr<std::string> Health(const std::string& service = "") const;

  // dst = src0 & src1 over the valid region.
  template <typename T>
  absl::StatusOr<TileResult<T>> Tand(const BinaryArgs<T>& args) const {
    return RunBinary(v1::OPCODE_TAND, args);
  }
  // dst = src0 ^ src1 over the valid region (tmp allocated by the server).
  template <typename T>
  absl::StatusOr<TileResult<T>> Txor(const BinaryArgs<T>& args) const {
    return RunBinary(v1::OPCODE_TXOR, args);
  }

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // Sets a call's deadline and credentials, as this client's own calls
  // have them (for calls made on channel() directly).
  void ConfigureContext(grpc::ClientContext* context) const;

 private:
  Client(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options);
  // Calls `method` of `stub` with `request`, its context configured;
  // gRPC's error as a Status.
  template <typename Stub, typename Request, typename Response>
  absl::StatusOr<Response> Call(
      Stub* stub,
      grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                   Response*),
      const Request& request) const;
  // Runs the stream that `open` starts: writes `requests` while
  // `on_response` sees each response as it arrives; the stream's status.
  template <typename Request, typename Response>
  absl::Status Exchange(
      std::unique_ptr<grpc::ClientReaderWriter<Request, Response>> (
          v1::TileCompute::Stub::*open)(grpc::ClientContext*),
      absl::Span<const Request> requests,
      const std::function<void(Response)>& on_response) const;

  template <typename T>
  absl::StatusOr<TileResult<T>> RunBinary(v1::Opcode opcode,
                                          const BinaryArgs<T>& args) const;

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::TileCompute::Stub> stub_;
  std::unique_ptr<v1::SharedMemory::Stub> shared_stub_;
  ClientOptions options_;
};

// The layout of a one-instruction job (see InstructionJob).
struct InstructionJobArgs {
  v1::Opcode opcode = v1::OPCODE_UNSPECIFIED;
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  uint32_t rows = 0;
  uint32_t cols = 0;
  uint32_t valid_rows = 0;                     // 0: rows
  uint32_t valid_cols = 0;                     // 0: cols
  v1::Target target = v1::TARGET_UNSPECIFIED;  // unset: server default
  bool src1 = true;       // false for a one-source instruction (TNOT)
  bool tmp = false;       // the instruction names tmp "tmp"
  bool tmp_tile = false;  // with tmp: the job sends that tile, else the
                          // server allocates it
};

// Builds the one-instruction job that Client::Tand/Txor and ptoctl send:
// `opcode` writes dst "dst", allocated by the server, from tile "src0" and,
// with args.src1, "src1". The source tiles (and "tmp" with args.tmp_tile)
// are rows x cols of args.dtype with the valid region set, and hold no
// elements yet: the caller fills each (SetTileData, fill, values).
v1::Job InstructionJob(const InstructionJobArgs& args);

// InstructionJob for a two-source `opcode` with `args`' elements; TXOR
// names a tmp, which the server allocates.
template <typename T>
v1::Job BinaryJob(v1::Opcode opcode, const BinaryArgs<T>& args) {
  InstructionJobArgs layout;
  layout.opcode = opcode;
  layout.dtype = DTypeOf<T>();
  layout.rows = args.rows;
  layout.cols = args.cols;
  layout.valid_rows = args.valid_rows;
  layout.valid_cols = args.valid_cols;
  layout.target = args.target;
  layout.tmp = opcode == v1::OPCODE_TXOR;
  v1::Job job = InstructionJob(layout);
  SetTileData(args.src0, &(*job.mutable_tiles())["src0"]);
  SetTileData(args.src1, &(*job.mutable_tiles())["src1"]);
  return job;
}

template <typename T>
absl::StatusOr<std::vector<T>> TileElements(const v1::Tile& tile) {
  if (tile.dtype() != DTypeOf<T>()) {
    return absl::InvalidArgumentError("result tile has another element type");
  }
  const size_t n = size_t{tile.rows()} * tile.cols();
  std::vector<T> out(n);
  if (tile.values_size() > 0) {
    if (static_cast<size_t>(tile.values_size()) != n) {
      return absl::InvalidArgumentError("result tile has a wrong value count");
    }
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(tile.values(i));
  } else {
    if (tile.data().size() != n * sizeof(T)) {
      return absl::InvalidArgumentError("result tile has a wrong data size");
    }
    std::memcpy(out.data(), tile.data().data(), tile.data().size());
  }
  return out;
}

template <typename T>
absl::StatusOr<TileResult<T>> Client::RunBinary(
    v1::Opcode opcode, const BinaryArgs<T>& args) const {
  const size_t n = size_t{args.rows} * args.cols;
  if (args.src0.size() != n || args.src1.size() != n) {
    return absl::InvalidArgumentError(
        "src0 and src1 must each hold rows * cols elements");
  }
  absl::StatusOr<v1::JobResult> result = Execute(BinaryJob(opcode, args));
  if (!result.ok()) return result.status();
  auto it = result->tiles().find("dst");
  if (it == result->tiles().end()) {
    return absl::InternalError("the server returned no dst tile");
  }
  const v1::Tile& dst = it->second;
  absl::StatusOr<std::vector<T>> elements = TileElements<T>(dst);
  if (!elements.ok()) return elements.status();
  TileResult<T> out;
  out.elements = std::move(*elements);
  out.rows = dst.rows();
  out.cols = dst.cols();
  out.valid_rows = dst.valid_rows();
  out.valid_cols = dst.valid_cols();
  out.target = result->target();
  out.events.assign(result->events().begin(), result->events().end());
  return out;
}

}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_CLIENT_H_
