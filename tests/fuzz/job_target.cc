// RunJob (fuzz_targets.h): a serialized Job through the wire checks,
// decode, validation, admission, execution and encoding.
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/backends/backend.h"
#include "core/quote.h"
#include "core/status_macros.h"
#include "ptoserve/v1/job.pb.h"
#include "server/codec.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/fuzz_util.h"

// The heap meter needs AddressSanitizer's allocator; without it (the gcc
// build of corpus_test) RunJob skips the amplification check.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PTOSERVE_FUZZ_HEAP_METER 1
#endif
#endif
#if !defined(PTOSERVE_FUZZ_HEAP_METER) && defined(__SANITIZE_ADDRESS__)
#define PTOSERVE_FUZZ_HEAP_METER 1
#endif
#ifdef PTOSERVE_FUZZ_HEAP_METER
#include <sanitizer/allocator_interface.h>
#endif

namespace ptoserve {
namespace fuzz {

namespace {

// The server's admission (TileComputeService::Queue) with limits sized for
// the fuzzer's engine: a job may hold its request, the tiles the engine
// makes, its result twice (built and serialized) and 512 bytes an
// instruction for its event (service.cc's kEventBytes), 4 MiB in all.
constexpr uint64_t kEventBytes = 512;
constexpr uint64_t kMaxJobBytes = uint64_t{4} << 20;
constexpr uint64_t kMaxMessageBytes = uint64_t{4} << 20;

// The amplification bound (docs/FUZZING.md): at no checkpoint of the
// server's path may the heap hold more, over what it held before the
// input, than
//   kInputFactor * request bytes
//     + kCostFactor * (JobCost::tile_bytes + JobCost::result_bytes)
//     + kSlackBytes.
// The cost is zero for a job refused before admission.
constexpr uint64_t kInputFactor = 4;
constexpr uint64_t kCostFactor = 3;
constexpr uint64_t kSlackBytes = uint64_t{256} << 10;

// Heap bytes in use, sampled at checkpoints, relative to where they stood
// when the meter was made. Zero everywhere without AddressSanitizer.
class HeapMeter {
 public:
  HeapMeter() : start_(Allocated()) {}

  void Sample(const char* checkpoint) {
    const int64_t now = Allocated() - start_;
    if (samples_ < kMaxSamples) sampled_[samples_++] = {checkpoint, now};
    if (now > peak_) {
      peak_ = now;
      peak_at_ = checkpoint;
    }
  }

  static uint64_t Bound(size_t input, const std::optional<JobCost>& cost) {
    const uint64_t declared =
        cost.has_value() ? cost->tile_bytes + cost->result_bytes : 0;
    return kInputFactor * input + kCostFactor * declared + kSlackBytes;
  }

  absl::Status CheckBound(size_t input,
                          const std::optional<JobCost>& cost) const {
    if (peak_ <= 0 || static_cast<uint64_t>(peak_) <= Bound(input, cost)) {
      return absl::OkStatus();
    }
    return absl::InternalError(absl::StrFormat(
        "memory amplification: the heap grew by %d bytes (after %s) for a "
        "request of %u bytes declaring %u tile bytes and %u result bytes; "
        "the bound is %u (%u x request + %u x declared + %u)",
        peak_, peak_at_, input, cost ? cost->tile_bytes : 0,
        cost ? cost->result_bytes : 0, Bound(input, cost), kInputFactor,
        kCostFactor, kSlackBytes));
  }

  // One line for the measurement that chose the bound: request bytes,
  // tile bytes, result bytes (both -1 if never admitted), peak, where, then
  // every sample as checkpoint=bytes.
  void Log(FILE* out, size_t input, const std::optional<JobCost>& cost) const {
    std::fprintf(out, "%zu %" PRId64 " %" PRId64 " %" PRId64 " %s", input,
                 cost ? static_cast<int64_t>(cost->tile_bytes) : -1,
                 cost ? static_cast<int64_t>(cost->result_bytes) : -1, peak_,
                 peak_at_);
    for (int k = 0; k < samples_; ++k) {
      std::fprintf(out, " %s=%" PRId64, sampled_[k].checkpoint,
                   sampled_[k].bytes);
    }
    std::fputc('\n', out);
    std::fflush(out);
  }

 private:
  static int64_t Allocated() {
#ifdef PTOSERVE_FUZZ_HEAP_METER
    return static_cast<int64_t>(__sanitizer_get_current_allocated_bytes());
#else
    return 0;
#endif
  }

  static constexpr int kMaxSamples = 8;
  struct Sampled {
    const char* checkpoint;
    int64_t bytes;
  };

  int64_t start_;
  int64_t peak_ = 0;
  const char* peak_at_ = "start";
  Sampled sampled_[kMaxSamples] = {};
  int samples_ = 0;
};

// Where $PTOSERVE_FUZZ_HEAP_LOG names, opened for appending once; null if
// it is unset. Each input adds a HeapMeter::Log line.
FILE* HeapLog() {
  static FILE* const kLog = [] {
    const char* path = std::getenv("PTOSERVE_FUZZ_HEAP_LOG");
    return path != nullptr && *path != '\0' ? std::fopen(path, "a") : nullptr;
  }();
  return kLog;
}

// What CheckJobWire let through must parse to a job within the limits it
// checks: no more tiles, instructions, outputs or waits an instruction,
// no longer names or assembly.
absl::Status CheckWithinWireLimits(const v1::Job& job,
                                   const EngineLimits& limits) {
  auto over = [](absl::string_view what, size_t n, size_t limit) {
    return absl::InternalError(absl::StrFormat(
        "CheckJobWire passed a job with %s %u, over the limit of %u", what, n,
        limit));
  };
  auto name = [&](absl::string_view what,
                  const std::string& n) -> absl::Status {
    if (n.size() <= kMaxNameBytes) return absl::OkStatus();
    return over(absl::StrCat(what, " of bytes"), n.size(), kMaxNameBytes);
  };
  if (static_cast<size_t>(job.tiles_size()) > limits.max_tiles_per_job) {
    return over("tiles", job.tiles_size(), limits.max_tiles_per_job);
  }
  if (static_cast<size_t>(job.instructions_size()) >
      limits.max_instructions_per_job) {
    return over("instructions", job.instructions_size(),
                limits.max_instructions_per_job);
  }
  if (static_cast<size_t>(job.outputs_size()) > limits.max_tiles_per_job) {
    return over("outputs", job.outputs_size(), limits.max_tiles_per_job);
  }
  if (job.assembly().size() > limits.max_assembly_bytes) {
    return over("assembly bytes", job.assembly().size(),
                limits.max_assembly_bytes);
  }
  for (const auto& [key, tile] : job.tiles()) {
    PTO_RETURN_IF_ERROR(name("a tile name", key));
  }
  for (const v1::Instruction& in : job.instructions()) {
    if (static_cast<size_t>(in.wait_events_size()) >
        limits.max_waits_per_instruction) {
      return over("an instruction's waits", in.wait_events_size(),
                  limits.max_waits_per_instruction);
    }
    for (const std::string* n : {&in.dst(), &in.src0(), &in.src1(), &in.tmp(),
                                 &in.record_event()}) {
      PTO_RETURN_IF_ERROR(name("an operand or event name", *n));
    }
    for (const std::string& n : in.wait_events()) {
      PTO_RETURN_IF_ERROR(name("a waited-on event name", n));
    }
  }
  for (const std::string& n : job.outputs()) {
    PTO_RETURN_IF_ERROR(name("an outputs name", n));
  }
  return absl::OkStatus();
}

// Every tile of a result holds exactly its elements, in one encoding.
absl::Status CheckResult(const v1::JobResult& result) {
  for (const auto& [name, tile] : result.tiles()) {
    const uint64_t elements = uint64_t{tile.rows()} * tile.cols();
    const bool ok =
        elements > 0 && WireElementBytes(tile.dtype()) > 0 &&
        (tile.values_size() > 0
             ? tile.data().empty() &&
                   static_cast<uint64_t>(tile.values_size()) == elements
             : tile.data().size() == elements * WireElementBytes(tile.dtype()));
    if (!ok) {
      return absl::InternalError(absl::StrFormat(
          "result tile \"%s\" is %ux%u %s but has %u data bytes and %u values",
          name, tile.rows(), tile.cols(), v1::DType_Name(tile.dtype()),
          tile.data().size(), tile.values_size()));
    }
  }
  return absl::OkStatus();
}

// A tile of the reference: its shape and its elements.
struct RefTile {
  TileDesc desc;  // valid extents resolved
  std::string bytes;
};

template <typename T>
void StoreValues(absl::Span<const double> values, std::string* bytes) {
  for (size_t k = 0; k < values.size(); ++k) {
    const T v = static_cast<T>(values[k]);
    std::memcpy(bytes->data() + k * sizeof(T), &v, sizeof(T));
  }
}

// The elements a declared integer tile starts with; nullopt for other
// element types, whose values the reference does not convert.
std::optional<std::string> InitialBytes(const TileInput& in,
                                        const TileDesc& desc) {
  if (in.encoding == Encoding::kData) return std::string(in.data);
  std::string bytes(desc.bytes(), '\0');
  if (in.encoding == Encoding::kNone) return bytes;
  const std::vector<double> filled(
      in.encoding == Encoding::kFill ? desc.elements() : 0, in.fill);
  const absl::Span<const double> values =
      in.encoding == Encoding::kFill ? absl::MakeConstSpan(filled) : in.values;
  switch (desc.dtype) {
    case DType::kInt8: StoreValues<int8_t>(values, &bytes); break;
    case DType::kUInt8: StoreValues<uint8_t>(values, &bytes); break;
    case DType::kInt16: StoreValues<int16_t>(values, &bytes); break;
    case DType::kUInt16: StoreValues<uint16_t>(values, &bytes); break;
    case DType::kInt32: StoreValues<int32_t>(values, &bytes); break;
    case DType::kUInt32: StoreValues<uint32_t>(values, &bytes); break;
    default: return std::nullopt;
  }
  return bytes;
}

// out = a op b over out's valid region, one byte at a time: the bitwise
// operations act on each bit alone, whatever the element type.
void ReferenceOp(BitwiseOp op, const RefTile& a, const RefTile& b,
                 RefTile* out) {
  const size_t row_bytes = out->desc.valid_row_bytes();
  for (uint32_t i = 0; i < out->desc.valid_rows; ++i) {
    for (size_t j = 0; j < row_bytes; ++j) {
      const uint8_t x = a.bytes[i * a.desc.row_bytes() + j];
      const uint8_t y = b.bytes[i * b.desc.row_bytes() + j];
      out->bytes[i * out->desc.row_bytes() + j] = static_cast<char>(
          op == BitwiseOp::kAnd ? x & y : op == BitwiseOp::kOr ? x | y : x ^ y);
    }
  }
}

// What a job that Prepare accepted must leave in its tiles, computed
// naively from the spec in program order: tiles by name, a dst or tmp that
// names no tile allocated zero-filled like src0 (dst) or dst (tmp). Checks
// the outcome's integer tiles against it; others only by shape.
absl::Status CheckAgainstReference(const JobSpec& spec, const Engine& engine,
                                   const JobOutcome& outcome) {
  const Target target = spec.target.value_or(engine.options().default_target);
  const bool txor_uses_tmp = engine.backends().Get(target).UsesTmp(Opcode::kTxor);
  absl::flat_hash_map<std::string, RefTile> tiles;
  absl::flat_hash_map<std::string, bool> comparable;
  for (const TileInput& in : spec.tiles) {
    RefTile t;
    t.desc = in.desc;
    if (t.desc.valid_rows == 0) t.desc.valid_rows = t.desc.rows;
    if (t.desc.valid_cols == 0) t.desc.valid_cols = t.desc.cols;
    std::optional<std::string> bytes = InitialBytes(in, t.desc);
    comparable[in.name] = bytes.has_value();
    t.bytes = bytes.value_or(std::string(t.desc.bytes(), '\0'));
    tiles[in.name] = std::move(t);
  }
  auto like = [&](const std::string& name, const RefTile& shape) {
    if (!tiles.contains(name)) {
      RefTile t;
      t.desc.dtype = shape.desc.dtype;
      t.desc.rows = shape.desc.rows;
      t.desc.cols = shape.desc.cols;
      t.desc.valid_rows = shape.desc.valid_rows;
      t.desc.valid_cols = shape.desc.valid_cols;
      t.bytes.assign(t.desc.bytes(), '\0');
      tiles[name] = std::move(t);
      comparable[name] = true;
    }
    return &tiles[name];
  };
  std::vector<std::string> dsts;
  for (const Instruction& in : spec.instructions) {
    // Copies: dst may be a source (in place).
    const RefTile a = tiles.at(in.src0);
    const RefTile b = tiles.at(in.src1);
    RefTile* dst = like(in.dst, a);
    if (in.opcode == Opcode::kTxor && txor_uses_tmp) {
      ReferenceOp(BitwiseOp::kOr, a, b, like(in.tmp, *dst));
      dst = &tiles.at(in.dst);  // the map may have moved it
    }
    ReferenceOp(in.opcode == Opcode::kTand ? BitwiseOp::kAnd : BitwiseOp::kXor,
                a, b, dst);
    if (std::find(dsts.begin(), dsts.end(), in.dst) == dsts.end()) {
      dsts.push_back(in.dst);
    }
  }
  // Each output once, in the order first asked for.
  std::vector<std::string> outputs;
  for (const std::string& name : spec.outputs.empty() ? dsts : spec.outputs) {
    if (std::find(outputs.begin(), outputs.end(), name) == outputs.end()) {
      outputs.push_back(name);
    }
  }
  if (outputs.size() != outcome.outputs.size()) {
    return absl::InternalError(absl::StrFormat(
        "%u outputs, expected %u", outcome.outputs.size(), outputs.size()));
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    const OutputTile& out = outcome.outputs[k];
    const RefTile& expected = tiles.at(outputs[k]);
    if (out.name != outputs[k] || out.tile.size_bytes() != expected.bytes.size()) {
      return absl::InternalError(absl::StrFormat(
          "output %u is \"%s\" of %u bytes, expected \"%s\" of %u bytes", k,
          out.name, out.tile.size_bytes(), outputs[k], expected.bytes.size()));
    }
    if (!comparable.at(outputs[k])) continue;
    for (size_t j = 0; j < expected.bytes.size(); ++j) {
      if (out.tile.data()[j] != static_cast<uint8_t>(expected.bytes[j])) {
        const size_t row_bytes = expected.desc.row_bytes();
        return absl::InternalError(absl::StrFormat(
            "output \"%s\" (%s) differs from the reference at row %u, byte "
            "%u of the row: 0x%02x, expected 0x%02x",
            out.name, expected.desc.ToString(), j / row_bytes, j % row_bytes,
            out.tile.data()[j], static_cast<uint8_t>(expected.bytes[j])));
      }
    }
  }
  return absl::OkStatus();
}

// A tile sent as values that no instruction writes comes back as the same
// numbers: exactly for integer types, rounded to float for float32 (whose
// values must be in its range, or the job is rejected).
absl::Status CheckUnwrittenValues(const v1::Job& job, const JobSpec& spec,
                                  const v1::JobResult& result) {
  absl::flat_hash_map<std::string, bool> written;
  for (const Instruction& in : spec.instructions) {
    written[in.dst] = true;
    written[in.tmp] = true;
  }
  for (const auto& [name, sent] : job.tiles()) {
    auto it = result.tiles().find(name);
    if (sent.values_size() == 0 || written.contains(name) ||
        it == result.tiles().end()) {
      continue;
    }
    const v1::Tile& back = it->second;
    if (back.values_size() != sent.values_size()) {
      return absl::InternalError(absl::StrFormat(
          "tile \"%s\" was sent as %u values and came back as %u", name,
          sent.values_size(), back.values_size()));
    }
    const bool is_float = sent.dtype() == v1::DTYPE_FLOAT32;
    for (int k = 0; k < sent.values_size(); ++k) {
      const double v = sent.values(k);
      const double got = back.values(k);
      if (is_float && std::isfinite(v) && std::fabs(v) > FLT_MAX) {
        return absl::InternalError(absl::StrFormat(
            "tile \"%s\": float32 values[%d] = %g is out of the float32 range "
            "but the job was accepted (it came back as %g)",
            name, k, v, got));
      }
      const double expected = is_float ? static_cast<float>(v) : v;
      if (got != expected && !(std::isnan(got) && std::isnan(expected))) {
        return absl::InternalError(absl::StrFormat(
            "tile \"%s\": values[%d] = %.17g came back as %.17g", name, k, v,
            got));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunJob(absl::string_view bytes) {
  // Made before the meter starts: the engine lives for the whole process.
  const Engine& engine = SmallEngine();
  FILE* const heap_log = HeapLog();
  HeapMeter meter;
  std::optional<JobCost> cost;
  // Every return after the wire check goes through here: a job refused
  // anywhere must not have cost more memory than the bound either.
  auto done = [&](absl::Status finding) -> absl::Status {
    if (heap_log != nullptr) meter.Log(heap_log, bytes.size(), cost);
    if (!finding.ok()) return finding;
    return meter.CheckBound(bytes.size(), cost);
  };

  // The server's path (TileComputeService::Decode and Queue): the wire
  // checks on the bytes before they are parsed, ...
  {
    google::protobuf::io::ArrayInputStream stream(
        bytes.data(), static_cast<int>(bytes.size()));
    const absl::Status checked =
        CheckJobWire(&stream, bytes.size(), engine.options().limits);
    if (!checked.ok()) {
      if (checked.message().empty()) {
        return absl::InternalError(absl::StrCat(
            "CheckJobWire refused the job without a message: ",
            checked.ToString()));
      }
      return done(absl::OkStatus());
    }
  }
  v1::Job job;
  if (!job.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return done(absl::OkStatus());
  }
  meter.Sample("parse");
  if (absl::Status ok = CheckWithinWireLimits(job, engine.options().limits);
      !ok.ok()) {
    return ok;
  }
  // ... DecodeJob, ...
  absl::StatusOr<DecodedJob> decoded = DecodeJob(job, engine);
  meter.Sample("decode");
  if (!decoded.ok()) return done(absl::OkStatus());

  // ... and Prepare, admitted by the job's cost as the server admits it.
  const uint64_t events = decoded->spec.instructions.size() * kEventBytes;
  const Admission admit = [&](const JobCost& c) -> absl::Status {
    if (cost.has_value()) {
      return absl::InternalError("Prepare asked for admission twice");
    }
    cost = c;
    if (c.result_bytes > kMaxMessageBytes) {
      return absl::ResourceExhaustedError("the result would be over a message");
    }
    if (bytes.size() + c.tile_bytes + 2 * c.result_bytes + events >
        kMaxJobBytes) {
      return absl::ResourceExhaustedError("the job would hold too much");
    }
    return absl::OkStatus();
  };
  absl::StatusOr<std::unique_ptr<PreparedJob>> in_order =
      engine.Prepare(decoded->spec, admit);
  meter.Sample("prepare");
  if (!in_order.ok()) {
    // The server puts the assembly's line:column in front of engine errors.
    decoded->Locate(in_order.status()).IgnoreError();
    return done(absl::OkStatus());
  }
  if (!cost.has_value()) {
    return absl::InternalError(
        "Prepare accepted the job without asking for admission");
  }
  PreparedJob& job_a = **in_order;
  for (uint32_t i = 0; i < job_a.num_instructions(); ++i) {
    for (uint32_t p : job_a.predecessors(i)) {
      if (p >= i) {
        return absl::InternalError(absl::StrFormat(
            "instruction %u has predecessor %u, which is not earlier", i, p));
      }
    }
  }
  RunInOrder(engine, &job_a);
  meter.Sample("run");
  JobOutcome expected = engine.Finish(&job_a);
  meter.Sample("finish");

  // The fuzzer's own checks, in a scope of their own: what they hold is
  // gone before the next sample, which measures only the server's path.
  {
    absl::StatusOr<std::unique_ptr<PreparedJob>> reordered =
        engine.Prepare(decoded->spec);
    if (!reordered.ok()) {
      return absl::InternalError(
          absl::StrCat("the job prepared once, then failed: ",
                       reordered.status().ToString()));
    }
    if (absl::Status ran = RunReordered(engine, reordered->get()); !ran.ok()) {
      return ran;
    }
    const JobOutcome actual = engine.Finish(reordered->get());
    if (absl::Status ok = CheckAgainstReference(decoded->spec, engine, expected);
        !ok.ok()) {
      return absl::InternalError(absl::StrCat(
          "the outcome differs from the reference: ", ok.message()));
    }
    if (absl::Status same = SameOutcome(expected, actual); !same.ok()) {
      return absl::InternalError(absl::StrCat(
          "running in another order the dependencies allow changed the "
          "outcome: ",
          same.message()));
    }
  }

  v1::JobResult result;
  ToJobResult(std::move(expected), &result);
  meter.Sample("result");
  std::string wire;
  if (!result.SerializeToString(&wire)) {
    return absl::InternalError("the JobResult does not serialize");
  }
  meter.Sample("serialize");
  if (absl::Status ok = CheckResult(result); !ok.ok()) return ok;
  return done(CheckUnwrittenValues(job, decoded->spec, result));
}

}  // namespace fuzz
}  // namespace ptoserve
