#include "server/intake/intake.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <memory>
#include <new>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/full_for_now.h"
#include "core/status_macros.h"
#include "proto/json_errors.h"
#include "proto/small_job.h"
#include "proto/wire.h"
#include "server/intake/json_scan.h"

namespace ptoserve {

namespace {

// A protobuf request at most this large, with at most this many
// instructions and this much assembly, is parsed (and may be run, see
// kRunHereBytes in dispatcher.cc) on the thread that received it: a few
// microseconds to a millisecond. Others are parsed on the decoders.
constexpr uint64_t kLightRequestBytes = 1 << 20;
constexpr size_t kLightInstructions = 64;
constexpr size_t kLightAssemblyBytes = 16 << 10;
// JSON parses at some tens of MB/s: a light body is one that takes well
// under a millisecond.
constexpr uint64_t kLightJsonBytes = 16 << 10;
// A job whose declared tiles are at most this large has them made on the
// thread that parsed it; making more (a small request may declare 16 MiB
// `fill` tiles) is work for the decoders.
constexpr uint64_t kLightTileBytes = 1 << 20;

// Parsing JSON into a Job holds the body, protobuf's binary form of it and
// the message: a number of two text bytes ("1,") becomes an 8-byte double
// twice over, and the parser's buffers grow by doubling. A 16 MiB body of
// such numbers peaked at 18.4 bytes per body byte; 20 are held against the
// caller's share while it parses (ScanJson bounds the objects, whose
// messages would cost more).
constexpr uint64_t kJsonParseFactor = 20;
// A job's JSON nests 4 deep (job, tiles, a tile, its values).
constexpr size_t kMaxJsonDepth = 8;

absl::string_view MessageName(const google::protobuf::Message& message) {
  return message.GetDescriptor()->full_name();
}

// The bytes of the tiles `job` declares, as the engine would make them.
uint64_t DeclaredTileBytes(const v1::Job& job) {
  uint64_t bytes = 0;
  for (const auto& [name, tile] : job.tiles()) {
    const uint64_t elements = uint64_t{tile.rows()} * tile.cols();
    bytes += elements * std::max<size_t>(1, WireElementBytes(tile.dtype()));
  }
  return bytes;
}

uint64_t DeclaredTileBytes(const JobSpec& spec) {
  uint64_t bytes = 0;
  for (const TileInput& tile : spec.tiles) bytes += tile.desc.bytes();
  return bytes;
}

}  // namespace

Intake::Intake(Dispatcher* dispatcher, ServiceMetrics* metrics,
               MemoryBudget* budget, TaskPool* decoders)
    : dispatcher_(dispatcher),
      metrics_(metrics),
      budget_(budget),
      decoders_(decoders) {}

void Intake::CountRefused(absl::StatusCode code) const {
  metrics_->JobAnswered(JobRecord("unknown"), code);
}

template <typename Shape>
absl::StatusOr<Shape> Intake::Named(absl::StatusOr<Shape> scanned,
                                    const RequestBody& body,
                                    absl::string_view what) const {
  if (scanned.ok()) return scanned;
  CountRefused(scanned.status().code());
  // "the request (N bytes) is not a ptoserve.v1.Job: ...", or
  // "the request (N bytes): job has more than 1024 tiles, the limit".
  const absl::string_view message = scanned.status().message();
  return absl::Status(
      scanned.status().code(),
      absl::StrFormat("%s (%u bytes)%s %s", what, body.size(),
                      absl::StartsWith(message, "is not ") ? "" : ":",
                      message));
}

absl::StatusOr<WireShape> Intake::Scan(const RequestBody& body,
                                       absl::string_view what,
                                       const JobProtocol* protocol) const {
  const EngineLimits& limits = dispatcher_->job_limits();
  if (protocol != nullptr) {
    absl::StatusOr<WireShape> shape = protocol->Scan(body, limits);
    // "is not a ...", of no subject: the request's, as ptoserve.v1's.
    if (!shape.ok() && absl::StartsWith(shape.status().message(), "is not ")) {
      return Named(std::move(shape), body, what);
    }
    if (!shape.ok()) CountRefused(shape.status().code());
    return shape;
  }
  if (body.format() == BodyFormat::kJson) {
    // The job, its two maps, and per tile its own object and a slice's.
    const JsonBounds bounds{
        8 + 4 * limits.max_tiles_per_job + limits.max_instructions_per_job,
        kMaxJsonDepth};
    if (absl::Status scanned = ScanJson(body.text(), bounds); !scanned.ok()) {
      CountRefused(scanned.code());
      return scanned;
    }
    return WireShape{};
  }
  // What the parse would cost, checked first: 4M repeated wait_events
  // (16 MB on the wire) would take 160 MB as protobuf strings.
  absl::StatusOr<WireShape> shape;
  absl::Status read =
      body.Read([&](google::protobuf::io::ZeroCopyInputStream* in) {
        shape = CheckJobWire(in, body.size(), limits);
      });
  if (!read.ok()) shape = read;
  return Named(std::move(shape), body, what);
}

absl::StatusOr<BatchShape> Intake::ScanBatch(const RequestBody& body,
                                             absl::string_view what) const {
  absl::StatusOr<BatchShape> shape;
  absl::Status read =
      body.Read([&](google::protobuf::io::ZeroCopyInputStream* in) {
        shape = CheckJobBatchWire(in, body.size(), dispatcher_->job_limits(),
                                  dispatcher_->limits().max_jobs_per_batch);
      });
  if (!read.ok()) shape = read;
  return Named(std::move(shape), body, what);
}

bool Intake::Light(const WireShape& shape, const RequestBody& body) {
  if (body.format() != BodyFormat::kProtobuf) {
    return body.size() <= kLightJsonBytes &&
           shape.instructions <= kLightInstructions;
  }
  return body.size() <= kLightRequestBytes &&
         shape.instructions <= kLightInstructions &&
         shape.assembly_bytes <= kLightAssemblyBytes &&
         shape.json_bytes <= kLightJsonBytes;
}

bool Intake::LightTiles(const google::protobuf::Message& message) {
  // Told apart by descriptor, a pointer comparison each: this runs for
  // every light request, where a dynamic_cast walks the type's RTTI.
  uint64_t bytes = 0;
  const google::protobuf::Descriptor* type = message.GetDescriptor();
  if (type == v1::Job::descriptor()) {
    bytes = DeclaredTileBytes(static_cast<const v1::Job&>(message));
  } else if (type == v1::JobBatch::descriptor()) {
    const auto& batch = static_cast<const v1::JobBatch&>(message);
    for (const v1::Job& job : batch.jobs()) bytes += DeclaredTileBytes(job);
  }
  return bytes <= kLightTileBytes;
}

absl::Status Intake::Parse(const RequestBody& body, const CallInfo& call,
                           absl::string_view what,
                           google::protobuf::Message* message) const {
  const auto out_of_memory = [&] {
    CountRefused(absl::StatusCode::kResourceExhausted);
    return FullForNowError(absl::StrFormat(
        "%s (%u bytes): the server ran out of memory decoding it", what,
        body.size()));
  };
  if (body.format() == BodyFormat::kJson) {
    absl::StatusOr<MemoryBudget::Hold> parsing =
        budget_->Reserve(body.size() * kJsonParseFactor, call.share);
    if (!parsing.ok()) {
      CountRefused(parsing.status().code());
      return parsing.status();
    }
    const google::protobuf::util::JsonParseOptions options =
        JobJsonParseOptions();
    std::string why;
    try {
      const auto parsed = google::protobuf::util::JsonStringToMessage(
          google::protobuf::StringPiece(body.text().data(), body.text().size()),
          message, options);
      if (parsed.ok()) return absl::OkStatus();
      why = std::string(parsed.message());
    } catch (const std::bad_alloc&) {
      return out_of_memory();
    }
    CountRefused(absl::StatusCode::kInvalidArgument);
    return absl::InvalidArgumentError(
        ReadableJsonError(what, body.text(), why, *message->GetDescriptor()));
  }
  // Parsed straight from the door's buffers. Not through gRPC's
  // Deserialize: on a parse failure that builds protobuf's
  // InitializationErrorString, which walks the half-parsed message (its
  // `tiles` map included) only to say nothing useful about a proto3
  // message, and crashed on corrupt input in the ThreadSanitizer build.
  bool parsed = false;
  try {
    absl::Status read =
        body.Read([&](google::protobuf::io::ZeroCopyInputStream* in) {
          parsed = message->ParseFromZeroCopyStream(in);
        });
    parsed = parsed && read.ok();
  } catch (const std::bad_alloc&) {
    return out_of_memory();
  }
  if (parsed) return absl::OkStatus();
  CountRefused(absl::StatusCode::kInvalidArgument);
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s (%u bytes) is not a %s: its protobuf encoding is truncated or "
      "corrupt",
      what, body.size(), MessageName(*message)));
}

absl::Status Intake::Offload(const CallInfo& call, uint64_t bytes,
                             absl::string_view what,
                             std::function<void(absl::Status)> task) const {
  // The bytes wait in the door's buffers, and count against the client's
  // share meanwhile.
  absl::StatusOr<MemoryBudget::Hold> reserved =
      budget_->Reserve(bytes, call.share);
  if (!reserved.ok()) {
    CountRefused(absl::StatusCode::kResourceExhausted);
    return reserved.status();
  }
  auto hold = std::make_shared<MemoryBudget::Hold>(*std::move(reserved));
  const TaskPool::Posted posted = decoders_->Post(
      [this, hold, &call, task = std::move(task)] {
        absl::Status go =
            StillWanted(call, call.deadline, "before its request was decoded");
        if (!go.ok()) CountRefused(go.code());
        task(std::move(go));
        hold->Release();
      },
      call.share.get(), bytes);
  absl::Status refused;
  switch (posted) {
    case TaskPool::Posted::kQueued:
      return absl::OkStatus();
    case TaskPool::Posted::kStopping:
      // The decoders stop first when the server shuts down: a request they
      // refuse then is refused for that, as every other one is.
      refused = absl::UnavailableError(
          absl::StrCat(what, ": the server is shutting down"));
      break;
    case TaskPool::Posted::kClientFull:
      refused = FullForNowError(absl::StrFormat(
          "%s: this client has %d large requests waiting to be decoded, the "
          "most one client may; retry once they are",
          what, kDecodesPerClient));
      break;
    case TaskPool::Posted::kFull:
      refused = FullForNowError(
          absl::StrCat(what,
                       ": the server is busy decoding other large "
                       "requests; retry later"));
      break;
  }
  CountRefused(refused.code());
  return refused;
}

void Intake::Execute(ExecuteRequest request) const {
  if (ExecutedSmall(&request)) return;
  if (request.job == nullptr) request.job = request.new_job();
  absl::StatusOr<WireShape> shape =
      Scan(*request.body, request.what, request.protocol);
  if (!shape.ok()) {
    request.done(shape.status(), MemoryBudget::Hold());
    return;
  }
  const DecodeRequest decode{request.body, request.what, request.call,
                             request.job,  *shape,       request.protocol};
  Decode(decode, [this, request = std::move(request)](Decoded decoded) mutable {
    if (!decoded.status.ok()) {
      request.done(decoded.status, MemoryBudget::Hold());
      return;
    }
    Dispatch(std::move(request), decoded);
  });
}

std::optional<SmallJob> Intake::ReadSmall(RequestBody& body,
                                          const JobProtocol* protocol) const {
  if (body.format() != BodyFormat::kProtobuf || body.size() > kSmallJobBytes) {
    return std::nullopt;
  }
  const EngineLimits& limits = dispatcher_->job_limits();
  if (protocol != nullptr) {
    // Its tiles come whole within the request: light to make.
    static_assert(kSmallJobBytes <= kLightTileBytes);
    return protocol->ReadSmall(body.Gather(), limits);
  }
  std::optional<SmallJob> small = ReadSmallJob(body.Gather(), limits);
  // Tiles heavy to make (declared, not sent) are the decoders' work, as a
  // parsed job's are.
  if (small && DeclaredTileBytes(small->spec) > kLightTileBytes) {
    return std::nullopt;
  }
  return small;
}

bool Intake::ExecutedSmall(ExecuteRequest* request) const {
  RequestBody& body = *request->body;
  std::optional<SmallJob> small = ReadSmall(body, request->protocol);
  if (!small) return false;
  // The body stays: the job reads its tiles' bytes in place.
  Decoded decoded;
  decoded.request_bytes = body.size();
  JobRequest job;
  job.small = &*small;
  const bool protocols = request->protocol != nullptr;
  PrepareDispatch(std::move(*request), decoded, &job);
  // A protocol answers its small jobs from their outcomes.
  if (protocols) job.reply_form = JobReply::Form::kOutcome;
  dispatcher_->Dispatch(std::move(job));
  return true;
}

Decoded Intake::ParseNow(const DecodeRequest& request) const {
  RequestBody& body = *request.body;
  Decoded decoded;
  if (request.protocol == nullptr) {
    decoded.status = Parse(body, *request.call, request.what, request.message);
  } else if (auto* job = dynamic_cast<v1::Job*>(request.message)) {
    // What of it is JSON costs what a JSON job's parse does, held against
    // the caller's share while it is parsed.
    absl::StatusOr<MemoryBudget::Hold> parsing = budget_->Reserve(
        request.shape.json_bytes * kJsonParseFactor, request.call->share);
    decoded.status = parsing.ok()
                         ? request.protocol->Parse(body, request.what, job)
                         : parsing.status();
    if (!decoded.status.ok()) CountRefused(decoded.status.code());
  } else {
    decoded.status = absl::InternalError(absl::StrCat(
        request.what, ": a protocol's request is parsed into a Job, not a ",
        MessageName(*request.message)));
    CountRefused(decoded.status.code());
  }
  if (!decoded.status.ok()) return decoded;
  // Text is larger than its message: the message counts.
  decoded.request_bytes = body.format() != BodyFormat::kProtobuf
                              ? request.message->ByteSizeLong()
                              : body.size();
  body.Discard();
  return decoded;
}

void Intake::Dispatch(ExecuteRequest request, const Decoded& decoded) const {
  JobRequest job;
  job.job = request.job;
  PrepareDispatch(std::move(request), decoded, &job);
  dispatcher_->Dispatch(std::move(job));
}

void Intake::PrepareDispatch(ExecuteRequest request, const Decoded& decoded,
                             JobRequest* job) {
  job->request_bytes = decoded.request_bytes;
  job->call = request.call;
  // A small job runs to completion on the door's thread when the scheduler
  // is idle: no hand-off.
  job->run_here = decoded.here;
  job->result = request.result;
  job->reply_form = request.reply_form;
  job->done = std::move(request.done);
  job->answer_refusals = true;
}

}  // namespace ptoserve
