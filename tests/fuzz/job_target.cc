// RunJob (fuzz_targets.h): a serialized Job through the wire checks,
// decode, validation, admission, execution and encoding.
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/asm/ast.h"
#include "core/asm/lexer.h"
#include "core/backends/backend.h"
#include "core/quote.h"
#include "core/status_macros.h"
#include "proto/codec.h"
#include "proto/wire_scan.h"
#include "ptoserve/v1/job.pb.h"
#include "server/exec/memory_budget.h"
#include "server/jobs/admission.h"
#include "server/jobs/decode.h"
#include "server/shm/shared_memory.h"
#include "tests/core/reference.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/server/small_job_checks.h"

// The heap meter needs AddressSanitizer's allocator and its hooks
// (sanitizer/allocator_interface.h, which clang has and gcc lacks); without
// them (the gcc builds of corpus_test) RunJob skips the amplification check.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PTOSERVE_FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PTOSERVE_FUZZ_ASAN 1
#endif
#if defined(PTOSERVE_FUZZ_ASAN) && defined(__has_include)
#if __has_include(<sanitizer/allocator_interface.h>)
#define PTOSERVE_FUZZ_HEAP_METER 1
#endif
#endif
#ifdef PTOSERVE_FUZZ_HEAP_METER
#include <pthread.h>
#include <sanitizer/allocator_interface.h>

#include <atomic>
#endif

namespace ptoserve {
namespace fuzz {

namespace {

// The server's admission (TileComputeService::Queue, through
// server/admission.h), with limits sized for the fuzzer's engine: 4 MiB a
// job, 4 MiB a message.
constexpr uint64_t kMaxJobBytes = uint64_t{4} << 20;
constexpr uint64_t kMaxMessageBytes = uint64_t{4} << 20;

// What admission knows of a request, as far as the server's path got.
struct Admitted {
  uint64_t request_bytes = 0;
  // What admission counts (server/admission.h): once decoded, the request
  // and the bookkeeping; once Prepare has asked, everything.
  Footprint footprint;
  // What Prepare asked admission about, if it did.
  std::optional<JobCost> cost;
  bool admitted = false;  // and admission said yes
  // What the request holds on the wire (CountOnWire), each count capped at
  // what CheckJobWire may let through; instructions lowered from assembly
  // count too, once decoded.
  uint64_t tiles = 0;
  uint64_t instructions = 0;
  uint64_t waits = 0;
  // What parsing its assembly holds at once (ShapeOf).
  uint64_t line_bytes = 0;
  uint64_t statements = 0;

  // The bytes admission reserves for the job, with the tile and result
  // terms only if it admitted the job: a refused job never gets its tiles
  // made.
  uint64_t Bytes() const {
    if (admitted) return footprint.total();
    return std::max(request_bytes, footprint.request) + footprint.bookkeeping;
  }
};

// The amplification bound (docs/FUZZING.md): at no moment of the server's
// path may the heap hold more, over what it held before the input, than
//
//   kRequestFactor x request bytes + Admitted::Bytes()
//     + what admission does not count, each term capped by a limit:
//       kTileBytes x tiles + kInstructionBytes x instructions
//       + kWaitBytes x waits + kStatementBytes x assembly statements
//       + kTokenBytes x the longest lexed line of assembly
//     + kSlackBytes.
//
// Admitted::Bytes() already counts the request once, and tiles and results
// as many times as the engine and the reply hold them. The request term is
// for the names it carries, which the server copies: into the spec, tile
// slots and event ids, the result and its bytes. The others are costs
// admission leaves out, measured (tests/fuzz runs with
// $PTOSERVE_FUZZ_HEAP_LOG, docs/FUZZING.md) and rounded up:
//   a tile: its map node and v1::Tile, its TileInput, slot and description,
//     and its entry in the result (about 600 bytes);
//   an instruction: its event record and trace as the engine keeps them and
//     as the result holds them (about 2.4 KiB; admission counts 2.5 KiB
//     once the job is decoded, server/admission.cc);
//   a waited-on event, before admission: the parsed job's string and the
//     spec's (about 80 bytes; admission's 4 x (32 + length) comes later);
//   a statement of assembly: pasm::Statement in a vector that doubles (3
//     of them at a reallocation);
//   a byte of the longest line: at most one pasm::Token, likewise.
// Names, assembly text and tile elements are in the request term.
constexpr uint64_t kRequestFactor = 3;
constexpr uint64_t kTileBytes = 768;
constexpr uint64_t kInstructionBytes = 2048;
constexpr uint64_t kWaitBytes = 80;
constexpr uint64_t kStatementBytes = 3 * sizeof(pasm::Statement);
constexpr uint64_t kTokenBytes = 3 * sizeof(pasm::Token);
constexpr uint64_t kSlackBytes = uint64_t{8} << 10;

uint64_t Bound(const Admitted& a) {
  return kRequestFactor * a.request_bytes + a.Bytes() + kTileBytes * a.tiles +
         kInstructionBytes * a.instructions + kWaitBytes * a.waits +
         kStatementBytes * a.statements + kTokenBytes * a.line_bytes +
         kSlackBytes;
}

#ifdef PTOSERVE_FUZZ_HEAP_METER
// The allocator's hooks see every allocation and free of the process; while
// a HeapMeter is on, those of the thread that made it move its count, so
// that the meter holds the true high-water mark, not samples.
struct HeapCount {
  std::atomic<bool> on{false};
  pthread_t owner{};
  bool paused = false;  // counted, but no new peak
  int64_t level = 0;
  int64_t peak = 0;
  const char* step = "";
  const char* peak_step = "";
};
HeapCount g_heap;

bool Counting() {
  return g_heap.on.load(std::memory_order_acquire) &&
         pthread_equal(pthread_self(), g_heap.owner);
}

void OnMalloc(const volatile void* ptr, size_t size) {
  if (!Counting()) return;
  g_heap.level += static_cast<int64_t>(size);
  if (!g_heap.paused && g_heap.level > g_heap.peak) {
    g_heap.peak = g_heap.level;
    g_heap.peak_step = g_heap.step;
  }
}

void OnFree(const volatile void* ptr) {
  if (ptr == nullptr || !Counting() || !__sanitizer_get_ownership(ptr)) return;
  g_heap.level -= static_cast<int64_t>(__sanitizer_get_allocated_size(ptr));
}

// Before main: the hooks may only be installed while the process has one
// thread.
const bool kHooksInstalled =
    __sanitizer_install_malloc_and_free_hooks(&OnMalloc, &OnFree) != 0;
#endif

// Heap bytes in use by the thread that made the meter, relative to where
// they stood then, and their high-water mark; the step of the server's path
// that was running when it was reached. Zero everywhere without
// AddressSanitizer.
class HeapMeter {
 public:
  HeapMeter() {
#ifdef PTOSERVE_FUZZ_HEAP_METER
    g_heap.owner = pthread_self();
    g_heap.level = g_heap.peak = 0;
    g_heap.paused = false;
    g_heap.step = g_heap.peak_step = "wire";
    g_heap.on.store(kHooksInstalled, std::memory_order_release);
#endif
  }
  ~HeapMeter() {
#ifdef PTOSERVE_FUZZ_HEAP_METER
    g_heap.on.store(false, std::memory_order_release);
#endif
  }
  HeapMeter(const HeapMeter&) = delete;
  HeapMeter& operator=(const HeapMeter&) = delete;

  // The step that ran so far ends with the heap at Level(); `next` starts.
  void Step(const char* next) {
    if (samples_ < kMaxSamples) sampled_[samples_++] = {Current(), Level()};
#ifdef PTOSERVE_FUZZ_HEAP_METER
    g_heap.step = next;
#endif
  }

  // What the fuzzer's own checks allocate is not the server's: it moves
  // the count (and is freed before Resume) but sets no peak.
  void Pause() { SetPaused(true); }
  void Resume() { SetPaused(false); }

  int64_t Peak() const {
#ifdef PTOSERVE_FUZZ_HEAP_METER
    return g_heap.peak;
#else
    return 0;
#endif
  }

  absl::Status CheckBound(const Admitted& a) const {
    const int64_t peak = Peak();
    if (peak <= 0 || static_cast<uint64_t>(peak) <= Bound(a)) {
      return absl::OkStatus();
    }
    return absl::InternalError(absl::StrFormat(
        "memory amplification: the heap grew by %d bytes (in %s) for a "
        "request of %u bytes, which admission counted as %u bytes (bookkeeping "
        "%u, tiles %d, result %d, %s); with %u tiles, %u instructions, %u "
        "waits, %u assembly statements and a %u-byte line, the bound is %u",
        peak, PeakStep(), a.request_bytes, a.Bytes(), a.footprint.bookkeeping,
        a.cost ? static_cast<int64_t>(a.cost->tile_bytes) : -1,
        a.cost ? static_cast<int64_t>(a.footprint.result) : -1,
        a.admitted ? "admitted" : "not admitted", a.tiles, a.instructions,
        a.waits, a.statements, a.line_bytes, Bound(a)));
  }

  // One line for the measurement that chose the bound (docs/FUZZING.md):
  // the input's FNV-1a hash (to find it again), request bytes, tiles,
  // instructions, waits, assembly statements, longest line, bookkeeping,
  // tile bytes and result bytes (-1 if admission never saw them), 1 if
  // admitted, Admitted::Bytes(), peak, Bound(), the step the peak was in,
  // then each step's end as step=bytes.
  void Log(FILE* out, absl::string_view input, const Admitted& a) const {
    uint64_t hash = 0xcbf29ce484222325;
    for (unsigned char c : input) hash = (hash ^ c) * 0x100000001b3;
    std::fprintf(out,
                 "%016" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64
                 " %d %" PRIu64 " %" PRId64 " %" PRIu64 " %s",
                 hash, a.request_bytes, a.tiles, a.instructions, a.waits,
                 a.statements, a.line_bytes, a.footprint.bookkeeping,
                 a.cost ? static_cast<int64_t>(a.cost->tile_bytes) : -1,
                 a.cost ? static_cast<int64_t>(a.footprint.result) : -1,
                 a.admitted ? 1 : 0, a.Bytes(), Peak(), Bound(a), PeakStep());
    for (int k = 0; k < samples_; ++k) {
      std::fprintf(out, " %s=%" PRId64, sampled_[k].step, sampled_[k].bytes);
    }
    std::fputc('\n', out);
    std::fflush(out);
  }

 private:
  static int64_t Level() {
#ifdef PTOSERVE_FUZZ_HEAP_METER
    return g_heap.level;
#else
    return 0;
#endif
  }
  static const char* Current() {
#ifdef PTOSERVE_FUZZ_HEAP_METER
    return g_heap.step;
#else
    return "";
#endif
  }
  static const char* PeakStep() {
#ifdef PTOSERVE_FUZZ_HEAP_METER
    return g_heap.peak_step;
#else
    return "";
#endif
  }
  static void SetPaused(bool paused) {
#ifdef PTOSERVE_FUZZ_HEAP_METER
    g_heap.paused = paused;
#endif
  }

  static constexpr int kMaxSamples = 12;
  struct Sampled {
    const char* step;
    int64_t bytes;
  };
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
    for (const std::string* n :
         {&in.dst(), &in.src0(), &in.src1(), &in.tmp(), &in.record_event()}) {
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

// The tiles, instructions and waited-on events a serialized Job holds,
// read from the wire as far as it is well formed (the parser gets as far),
// each capped at what CheckJobWire must let through: the limits, and
// max_waits_per_instruction per instruction. What a request holds beyond
// them is the wire check's to refuse, not an allowance.
struct WireCounts {
  uint64_t tiles = 0;
  uint64_t instructions = 0;
  uint64_t waits = 0;
};
WireCounts CountOnWire(absl::string_view bytes, const EngineLimits& limits) {
  using google::protobuf::internal::WireFormatLite;
  WireCounts counts;
  google::protobuf::io::CodedInputStream in(
      reinterpret_cast<const uint8_t*>(bytes.data()),
      static_cast<int>(bytes.size()));
  for (uint32_t tag; (tag = in.ReadTag()) != 0;) {
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    if (WireFormatLite::GetTagWireType(tag) !=
            WireFormatLite::WIRETYPE_LENGTH_DELIMITED ||
        (field != 4 && field != 5)) {
      if (!WireFormatLite::SkipField(&in, tag)) break;
      continue;
    }
    uint32_t length = 0;
    if (!in.ReadVarint32(&length)) break;
    if (field == 4) {  // tiles
      ++counts.tiles;
      if (!in.Skip(static_cast<int>(length))) break;
      continue;
    }
    ++counts.instructions;  // instructions: count their wait_events (7)
    const auto limit = in.PushLimit(static_cast<int>(length));
    uint64_t waits = 0;
    bool ok = true;
    for (uint32_t t; ok && (t = in.ReadTag()) != 0;) {
      if (t == WireFormatLite::MakeTag(
                   7, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
        ++waits;
      }
      ok = WireFormatLite::SkipField(&in, t);
    }
    counts.waits += std::min<uint64_t>(waits, limits.max_waits_per_instruction);
    if (!ok || !in.ConsumedEntireMessage()) break;
    in.PopLimit(limit);
  }
  counts.tiles = std::min<uint64_t>(counts.tiles, limits.max_tiles_per_job);
  counts.instructions =
      std::min<uint64_t>(counts.instructions, limits.max_instructions_per_job);
  counts.waits = std::min<uint64_t>(
      counts.waits, counts.instructions * limits.max_waits_per_instruction);
  return counts;
}

// What parsing `assembly` (pasm::Parse, as DecodeJob calls it) holds at
// once: the longest line it lexes (with its '\n' if it has one, at most
// kMaxAssemblyLineBytes; the parser refuses a longer one unlexed, and
// stops there), whose tokens are in memory together, and an upper bound on
// the statements it keeps: each line that is neither blank nor a comment,
// up to one past `max_statements`.
struct AssemblyShape {
  uint64_t line_bytes = 0;
  uint64_t statements = 0;
};
AssemblyShape ShapeOf(absl::string_view assembly, size_t max_statements) {
  AssemblyShape shape;
  if (assembly.empty()) return shape;
  const std::vector<absl::string_view> lines = absl::StrSplit(assembly, '\n');
  for (size_t k = 0; k < lines.size(); ++k) {
    const absl::string_view line = lines[k];
    const uint64_t bytes = line.size() + (k + 1 < lines.size() ? 1 : 0);
    if (bytes > kMaxAssemblyLineBytes) break;
    shape.line_bytes = std::max(shape.line_bytes, bytes);
    const absl::string_view text = absl::StripLeadingAsciiWhitespace(line);
    if (!text.empty() && !absl::StartsWith(text, "#") &&
        !absl::StartsWith(text, "//") && shape.statements <= max_statements) {
      ++shape.statements;
    }
  }
  return shape;
}

// What CheckJobWire counted is what the parser made of the same bytes (the
// server decides from it where to decode a request): as many instructions
// and as much assembly, and at least as many tiles (a map keeps one entry
// of a key sent twice).
absl::Status CheckWireShape(const WireShape& shape, const v1::Job& job) {
  if (shape.instructions != static_cast<size_t>(job.instructions_size()) ||
      shape.assembly_bytes != job.assembly().size() ||
      shape.tiles < static_cast<size_t>(job.tiles_size())) {
    return absl::InternalError(absl::StrFormat(
        "CheckJobWire counted %u tiles, %u instructions and %u bytes of "
        "assembly; the parsed job has %u, %u and %u",
        shape.tiles, shape.instructions, shape.assembly_bytes, job.tiles_size(),
        job.instructions_size(), job.assembly().size()));
  }
  return absl::OkStatus();
}

// Every tile of a result holds exactly its elements, in one encoding.
absl::Status CheckResult(const v1::JobResult& result) {
  for (const auto& [name, tile] : result.tiles()) {
    if (tile.has_shared()) {
      // Written to shared memory: the shape and slice, no elements.
      if (!tile.data().empty() || tile.values_size() > 0) {
        return absl::InternalError(absl::StrFormat(
            "result tile \"%s\" went to shared memory but carries elements",
            name));
      }
      continue;
    }
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
    case DType::kInt8:
      StoreValues<int8_t>(values, &bytes);
      break;
    case DType::kUInt8:
      StoreValues<uint8_t>(values, &bytes);
      break;
    case DType::kInt16:
      StoreValues<int16_t>(values, &bytes);
      break;
    case DType::kUInt16:
      StoreValues<uint16_t>(values, &bytes);
      break;
    case DType::kInt32:
      StoreValues<int32_t>(values, &bytes);
      break;
    case DType::kUInt32:
      StoreValues<uint32_t>(values, &bytes);
      break;
    default:
      return std::nullopt;
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
      out->bytes[i * out->desc.row_bytes() + j] =
          static_cast<char>(test::ScalarOp(op, x, y));
    }
  }
}

// out = ~a over out's valid region, one byte at a time.
void ReferenceNot(const RefTile& a, RefTile* out) {
  const size_t row_bytes = out->desc.valid_row_bytes();
  for (uint32_t i = 0; i < out->desc.valid_rows; ++i) {
    for (size_t j = 0; j < row_bytes; ++j) {
      out->bytes[i * out->desc.row_bytes() + j] = static_cast<char>(
          ~static_cast<uint8_t>(a.bytes[i * a.desc.row_bytes() + j]));
    }
  }
}

// Whether two of a manual-mode job's tiles are bound to overlapping bytes
// of the buffer. The reference below keeps tiles by name, so it cannot say
// what such a job leaves (a tile at another's address reads and writes the
// other's bytes); unified_buffer_test's byte model checks those jobs, and
// here the engine's in-order and reordered runs must still agree.
bool TilesShareBytes(const JobSpec& spec) {
  if (spec.mode != Mode::kManual) return false;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end)
  for (const TileInput& in : spec.tiles) {
    if (!in.desc.address.has_value()) continue;
    const uint64_t begin = *in.desc.address;
    const uint64_t bytes = in.desc.bytes();
    const uint64_t end =
        bytes > UINT64_MAX - begin ? UINT64_MAX : begin + bytes;
    for (const auto& [b, e] : ranges) {
      if (begin < e && b < end) return true;
    }
    ranges.emplace_back(begin, end);
  }
  return false;
}

// What a job that Prepare accepted must leave in its tiles, computed
// naively from the spec in program order: tiles by name, a dst or tmp that
// names no tile allocated zero-filled like src0 (dst) or dst (tmp). Checks
// the outcome's integer tiles against it; others only by shape.
absl::Status CheckAgainstReference(const JobSpec& spec, const Engine& engine,
                                   const JobOutcome& outcome) {
  if (TilesShareBytes(spec)) return absl::OkStatus();
  const Target target = spec.target.value_or(engine.options().default_target);
  const bool txor_uses_tmp =
      engine.backends().Get(target).UsesTmp(Opcode::kTxor);
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
    RefTile* dst = like(in.dst, a);
    if (test::IsUnary(in.opcode)) {
      ReferenceNot(a, dst);
    } else {
      const RefTile b = tiles.at(in.src1);
      if (in.opcode == Opcode::kTxor && txor_uses_tmp) {
        ReferenceOp(BitwiseOp::kOr, a, b, like(in.tmp, *dst));
        dst = &tiles.at(in.dst);  // the map may have moved it
      }
      ReferenceOp(test::OpOf(in.opcode), a, b, dst);
    }
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
    if (out.name != outputs[k] ||
        out.tile.size_bytes() != expected.bytes.size()) {
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

// A tile sent as values that no instruction writes (and that is not placed
// in shared memory) comes back as the same numbers: exactly for integer types,
// rounded to float for float32 (whose values must be in its range, or the job
// is rejected).
absl::Status CheckUnwrittenValues(const v1::Job& job, const JobSpec& spec,
                                  const v1::JobResult& result) {
  absl::flat_hash_map<std::string, bool> written;
  for (const Instruction& in : spec.instructions) {
    written[in.dst] = true;
    written[in.tmp] = true;
  }
  for (const auto& [name, sent] : job.tiles()) {
    auto it = result.tiles().find(name);
    // An output placed in shared memory comes back as its slice; its bytes
    // are the placed outputs' check.
    if (sent.values_size() == 0 || written.contains(name) ||
        it == result.tiles().end() || job.output_regions().contains(name)) {
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

// The shared memory a fuzzed job may reference: one object of 64 KiB,
// registered as "r" (all of it) and "s" (16 KiB from byte 4096), so that
// slices can share bytes under two names. Its name is removed at once; the
// registry's mapping keeps it.
constexpr uint64_t kSharedBytes = 64 << 10;

struct FuzzShared {
  MemoryBudget budget{uint64_t{1} << 30};
  std::unique_ptr<SharedMemoryRegistry> registry;
  uint8_t* bytes = nullptr;  // the object, mapped here too
  std::string pattern;       // what it holds before each run
};

FuzzShared& Shared() {
  static FuzzShared* const shared = [] {
    auto* s = new FuzzShared;
    const std::string key = absl::StrCat("/ptoserve-fuzz-", getpid());
    SharedMemoryOptions options;
    options.enabled = true;
    options.key_prefix = "/ptoserve-fuzz";
    s->registry = std::make_unique<SharedMemoryRegistry>(options, &s->budget);
    const int fd = shm_open(key.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, kSharedBytes) != 0) abort();
    void* map =
        mmap(nullptr, kSharedBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) abort();
    s->bytes = static_cast<uint8_t*>(map);
    for (uint64_t i = 0; i < kSharedBytes; ++i) {
      s->pattern.push_back(static_cast<char>(i * 131 + 7 + (i >> 8)));
    }
    for (auto [name, offset, size] :
         {std::tuple{"r", uint64_t{0}, kSharedBytes},
          std::tuple{"s", uint64_t{4096}, uint64_t{16} << 10}}) {
      v1::RegisterRequest request;
      request.set_name(name);
      request.set_key(key);
      request.set_offset(offset);
      request.set_size(size);
      if (!s->registry->Register(request, getuid()).ok()) abort();
    }
    shm_unlink(key.c_str());
    return s;
  }();
  return *shared;
}

// The shared memory as it was before any job wrote to it.
void RestoreShared() {
  FuzzShared& s = Shared();
  std::memcpy(s.bytes, s.pattern.data(), kSharedBytes);
}

// Outputs written to shared memory, copied into tiles of their own: the
// next run writes the same bytes.
void OwnPlaced(JobOutcome* outcome) {
  for (OutputTile& out : outcome->outputs) {
    if (!out.placed) continue;
    const Tile& placed = out.tile;  // a read-only view
    Tile copy(placed.desc());
    std::memcpy(copy.data(), placed.data(), copy.size_bytes());
    out.tile = std::move(copy);
  }
}

}  // namespace

absl::Status RunJob(absl::string_view bytes) {
  // Made before the meter starts: the engine lives for the whole process.
  const Engine& engine = SmallEngine();
  const SharedMemoryRegistry* shared = Shared().registry.get();
  RestoreShared();
  // The small-job path reads what it covers as the path below does.
  if (std::string differs = SmallJobDiffers(bytes, engine.options().limits);
      !differs.empty()) {
    return absl::InternalError(
        absl::StrCat("the small-job path read the bytes otherwise: ", differs));
  }
  FILE* const heap_log = HeapLog();
  HeapMeter meter;
  Admitted admitted;
  admitted.request_bytes = bytes.size();
  // Every return but a finding goes through here: a job refused anywhere
  // must not have cost more memory than the bound either.
  auto done = [&](absl::Status finding) -> absl::Status {
    meter.Step("done");
    if (heap_log != nullptr) meter.Log(heap_log, bytes, admitted);
    if (!finding.ok()) return finding;
    return meter.CheckBound(admitted);
  };

  // The server's path (TileComputeService::Decode and Queue): the wire
  // checks on the bytes before they are parsed, ...
  google::protobuf::io::ArrayInputStream stream(bytes.data(),
                                                static_cast<int>(bytes.size()));
  const absl::StatusOr<WireShape> shape =
      CheckJobWire(&stream, bytes.size(), engine.options().limits);
  if (!shape.ok()) {
    if (shape.status().message().empty()) {
      return absl::InternalError(
          absl::StrCat("CheckJobWire refused the job without a message: ",
                       shape.status().ToString()));
    }
    return done(absl::OkStatus());
  }
  {
    const WireCounts counts = CountOnWire(bytes, engine.options().limits);
    admitted.tiles = counts.tiles;
    admitted.instructions = counts.instructions;
    admitted.waits = counts.waits;
  }
  meter.Step("parse");
  v1::Job job;
  if (!job.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return done(absl::OkStatus());
  }
  meter.Pause();
  if (absl::Status ok = CheckWithinWireLimits(job, engine.options().limits);
      !ok.ok()) {
    return ok;
  }
  if (absl::Status ok = CheckWireShape(*shape, job); !ok.ok()) return ok;
  const EngineLimits& limits = engine.options().limits;
  const AssemblyShape assembly =
      ShapeOf(job.assembly(),
              limits.max_instructions_per_job + limits.max_tiles_per_job);
  admitted.line_bytes = assembly.line_bytes;
  admitted.statements = assembly.statements;
  meter.Resume();
  // ... DecodeJob, ...
  meter.Step("decode");
  absl::StatusOr<DecodedJob> decoded = DecodeJob(job, engine, {shared});
  if (!decoded.ok()) return done(absl::OkStatus());

  // ... and Prepare, admitted by the job's cost as the server admits it.
  admitted.footprint = JobFootprint(bytes.size(), *decoded);
  admitted.instructions = std::max<uint64_t>(admitted.instructions,
                                             decoded->spec.instructions.size());
  const Admission admit = [&](const JobCost& c) -> absl::Status {
    if (admitted.cost.has_value()) {
      return absl::InternalError("Prepare asked for admission twice");
    }
    admitted.cost = c;
    if (ResultBytes(c, decoded->encodings) > kMaxMessageBytes) {
      return absl::ResourceExhaustedError("the result would be over a message");
    }
    const Footprint f = JobFootprint(bytes.size(), *decoded, c);
    if (f.total() > kMaxJobBytes) {
      return absl::ResourceExhaustedError("the job would hold too much");
    }
    admitted.footprint = f;
    admitted.admitted = true;
    return absl::OkStatus();
  };
  meter.Step("prepare");
  absl::StatusOr<std::unique_ptr<PreparedJob>> in_order =
      engine.Prepare(decoded->spec, admit);
  if (!in_order.ok()) {
    // The server puts the assembly's line:column in front of engine errors.
    decoded->Locate(in_order.status()).IgnoreError();
    return done(absl::OkStatus());
  }
  if (!admitted.admitted) {
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
  meter.Step("run");
  RunInOrder(engine, &job_a);
  meter.Step("finish");
  JobOutcome expected = engine.Finish(&job_a);

  // The fuzzer's own checks, in a scope of their own and paused: what
  // they allocate is not the server's, and is gone when they end.
  meter.Step("checks");
  meter.Pause();
  {
    OwnPlaced(&expected);
    RestoreShared();
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
    JobOutcome actual = engine.Finish(reordered->get());
    OwnPlaced(&actual);
    // The reference reads inputs in shared memory as they were.
    RestoreShared();
    if (absl::Status ok =
            CheckAgainstReference(decoded->spec, engine, expected);
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
  meter.Resume();

  // The reply as the gRPC door writes it, straight from the outcome, and
  // as a message, which the other doors build. The written bytes are kept
  // as their digest: what the checks hold must be freed before Resume.
  meter.Pause();
  size_t written_digest = 0;
  {
    const std::string written =
        WrittenResult(job.id(), expected, decoded->encodings);
    written_digest = std::hash<std::string>()(written);
  }
  meter.Resume();
  meter.Step("result");
  v1::JobResult result;
  result.set_id(job.id());
  ToJobResult(std::move(expected), decoded->encodings, &result);
  meter.Step("serialize");
  std::string wire;
  if (!result.SerializeToString(&wire)) {
    return absl::InternalError("the JobResult does not serialize");
  }
  meter.Step("verify");
  meter.Pause();
  if (absl::Status ok = CheckResult(result); !ok.ok()) return ok;
  if (written_digest != std::hash<std::string>()(DeterministicBytes(result))) {
    return absl::InternalError(
        "ResultWriter wrote other bytes than the JobResult serializes to");
  }
  return done(CheckUnwrittenValues(job, decoded->spec, result));
}

}  // namespace fuzz
}  // namespace ptoserve
