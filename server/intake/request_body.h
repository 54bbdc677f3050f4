// A request's bytes as a front door holds them, for the request pipeline
// (server/intake/intake.h): a protobuf message in gRPC's buffers, or a JSON
// body the HTTP/JSON API took in pieces (IncomingBody).
#ifndef PTOSERVE_SERVER_INTAKE_REQUEST_BODY_H_
#define PTOSERVE_SERVER_INTAKE_REQUEST_BODY_H_

#include <google/protobuf/io/zero_copy_stream.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/exec/memory_budget.h"

namespace ptoserve {

// How a request's bytes encode its message.
enum class BodyFormat {
  kProtobuf,  // binary, as gRPC carries it
  kJson,      // proto3 JSON, as the HTTP/JSON API takes it
  kText,      // another protocol's text, its JobProtocol parses it
};

class RequestBody {
 public:
  virtual ~RequestBody() = default;

  virtual BodyFormat format() const = 0;
  // Its length in bytes.
  virtual uint64_t size() const = 0;
  // How much of it is already held against its client's share of the
  // memory budget (IncomingBody holds its bytes as they arrive); the
  // pipeline holds the rest while the body waits to be decoded.
  virtual uint64_t held() const { return 0; }
  // Calls `read` with a stream over its bytes from the start, and returns
  // whether the stream could be read (INTERNAL if the door's buffer could
  // not be). kProtobuf.
  virtual absl::Status Read(
      absl::FunctionRef<void(google::protobuf::io::ZeroCopyInputStream*)> read)
      const = 0;
  // Its bytes in one piece. kJson, kText.
  virtual absl::string_view text() const = 0;
  // Its bytes in one piece, for a reader that keeps views of them (the
  // small-job path): a door that holds them in pieces gathers them into
  // one first. They stay until Discard.
  virtual absl::string_view Gather() { return text(); }
  // Frees its bytes (and what they hold) once they are decoded.
  virtual void Discard() = 0;
};

// A body that arrives in pieces (an HTTP request's): each piece is held
// against its client's share of the memory budget as it arrives, reserved
// a step ahead (64 KiB at first, doubling up to 1 MiB), never all that the
// body's sender declares at once: a body that trickles holds what it has
// sent, not what it promises. Not thread-safe: the door that reads it
// appends, then hands it to the pipeline.
class IncomingBody final : public RequestBody {
 public:
  // `budget` must outlive the body; `share` is its client's; at most
  // `limit` bytes are taken.
  IncomingBody(BodyFormat format, MemoryBudget* budget,
               std::shared_ptr<MemoryBudget::Share> share, uint64_t limit);

  // The body's sender declares `bytes` (HTTP's Content-Length): its first
  // step (at most kStep of it) is reserved now, so that a body the share
  // has no room for is refused before it is read, and no more: a declared
  // length costs nothing until its bytes come. RESOURCE_EXHAUSTED as
  // Append's.
  absl::Status Expect(uint64_t bytes, absl::string_view limit_flag);
  // Appends `piece`, or returns why not (nothing kept): RESOURCE_EXHAUSTED
  // when the body would pass its limit (naming it and `limit_flag`, e.g.
  // "--max_message_mb") or its client's share is full.
  absl::Status Append(absl::string_view piece, absl::string_view limit_flag);

  BodyFormat format() const override { return format_; }
  uint64_t size() const override { return bytes_.size(); }
  uint64_t held() const override { return reserved_; }
  absl::Status Read(
      absl::FunctionRef<void(google::protobuf::io::ZeroCopyInputStream*)> read)
      const override;
  absl::string_view text() const override { return bytes_; }
  void Discard() override;

  // The first step of a reservation, and the most it grows by at once
  // (beyond what a piece needs).
  static constexpr uint64_t kStep = 64 << 10;
  static constexpr uint64_t kMaxStep = 1 << 20;

 private:
  const BodyFormat format_;
  MemoryBudget* const budget_;
  const std::shared_ptr<MemoryBudget::Share> share_;
  const uint64_t limit_;
  // Reserves room for `need` bytes in all, a step ahead.
  absl::Status Reserve(uint64_t need, absl::string_view limit_flag);

  std::string bytes_;
  std::vector<MemoryBudget::Hold> holds_;
  uint64_t reserved_ = 0;  // what holds_ hold together
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_INTAKE_REQUEST_BODY_H_
