// ptobench: a load generator for ptoserve, in the spirit of Triton's
// perf_analyzer and ghz. It keeps `--concurrency` calls (or streams) in
// flight against a server, or sends `--rate` requests a second, for
// `--duration` after `--warmup`, checks every result against a result
// computed here, and prints requests/s, tiles/s, latency percentiles and
// errors by code.
//
//   ptobench --server=127.0.0.1:50051 --mode=unary --concurrency=8
//            --shape=16x16 --dtype=int32 --opcode=tand --duration=10s
// (one command line)
//
// The engine is asynchronous so that the generator is not what limits the
// figures: `--threads` threads (one by default) each own a gRPC completion
// queue and drive their share of the calls from it. Completion queues rather
// than the callback API because with them the threads that do the client's
// work are exactly the ones asked for (the callback API runs reactions on
// gRPC's own thread pool, whose size a generator cannot set), which is what
// "more generator threads do not raise the figure" has to vary. Calls go
// through a generic stub: the Job is serialized once and every call sends
// the same bytes (a stream's jobs append only their id), as ghz does.
//
// --shm sends the tiles through shared memory instead (Tile.shared,
// Job.output_regions): one region, registered with the server, holds for
// every message that can be in flight its own src0, src1 and dst (a batch
// message one set per job), so that no two jobs in flight ever write the
// same bytes; each message's job is still serialized once, and sent again
// whenever that message's slot is free. --check then compares the dst the
// server wrote into the region, on a sample of answers for large tiles
// (--shm_check_every).
//
// Exit status: 0 every point measured without an error; 1 some call or job
// failed (or a result was wrong); 2 a usage error; 3 no error, but some
// point saw no answer at all within its window (a figure of 0 would not be
// a measurement).
#include <grpcpp/alarm.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/shared_region.h"
#include "proto/wire.h"
#include "ptoserve/v1/service.grpc.pb.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "Server address.");
ABSL_FLAG(std::string, mode, "unary",
          "unary (Execute), stream (ExecuteStream) or batch (ExecuteBatches: "
          "--batch jobs per message).");
ABSL_FLAG(int, concurrency, 1,
          "Unary calls in flight, or streams (closed loop: a call starts when "
          "one finishes).");
ABSL_FLAG(std::string, sweep, "",
          "Comma-separated concurrencies (1,2,4,...): one measurement and one "
          "result line for each, in place of --concurrency.");
ABSL_FLAG(double, rate, 0,
          "unary mode: send this many requests a second whatever the "
          "completions (open loop; latency counts from the time each request "
          "was due). 0: closed loop at --concurrency.");
ABSL_FLAG(int, threads, 1,
          "Generator threads, each with a completion queue and its share of "
          "the calls.");
ABSL_FLAG(int, connections, 1,
          "Channels (distinct connections) the calls are spread over.");
ABSL_FLAG(int, stream_depth, 32,
          "stream and batch modes: jobs each stream keeps in flight (batch: "
          "in messages of --batch jobs, at least one message).");
ABSL_FLAG(int, batch, 32, "batch mode: jobs per message.");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(10), "Measured time.");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(2), "Unmeasured time first.");
ABSL_FLAG(std::string, dtype, "int32", "Element type: int8 ... uint32.");
ABSL_FLAG(std::string, shape, "16x16", "Tile shape ROWSxCOLS.");
ABSL_FLAG(std::string, opcode, "tand", "tand or txor.");
ABSL_FLAG(std::string, target, "host", "host, a2a3 or a5.");
ABSL_FLAG(bool, check, true,
          "Check every result against the expected tile (turn off for the "
          "echo baseline, which returns src0).");
ABSL_FLAG(bool, shm, false,
          "Send src0 and src1 as slices of a shared-memory region and have "
          "the server write dst into it (Tile.shared, Job.output_regions), "
          "each message in flight with tiles of its own. Unary, stream and "
          "batch modes; not with --rate. The server must be on this host.");
ABSL_FLAG(int, shm_check_every, 0,
          "--shm with --check: compare the dst the server wrote with the "
          "expected tile on one answer in N for each slot (its first always; "
          "the dst is overwritten before such a job is sent, so a stale one "
          "cannot pass). 0: every answer for tiles up to 16 KiB, else one in "
          "min(64, tile bytes / 16 KiB).");
ABSL_FLAG(std::string, format, "text",
          "text; csv (a header line, unless --csv_header=false, and one line "
          "of figures per result); or json (one object per line per result).");
ABSL_FLAG(bool, csv_header, true, "csv: print the header line first.");
ABSL_FLAG(std::string, label, "", "csv and json: a label for the result.");
ABSL_FLAG(bool, tls, false,
          "Connect with TLS (implied by the other --tls_ flags).");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM file of the CA to verify the server with (default: the "
          "system's roots).");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM file of a client certificate, for mutual TLS (with --tls_key).");
ABSL_FLAG(std::string, tls_key, "", "PEM file of --tls_cert's private key.");
ABSL_FLAG(std::string, tls_server_name, "",
          "The name the server's certificate must carry, if not the host's.");
ABSL_FLAG(std::string, token, "",
          "Bearer token sent with every call (\"authorization: Bearer ...\").");
ABSL_FLAG(std::string, token_file, "",
          "File whose first line that is neither blank nor a # comment is the "
          "bearer token.");

namespace ptoserve {
namespace {

using v1::Job;
using v1::JobResult;

constexpr char kExecute[] = "/ptoserve.v1.TileCompute/Execute";
constexpr char kExecuteStream[] = "/ptoserve.v1.TileCompute/ExecuteStream";
constexpr char kExecuteBatches[] = "/ptoserve.v1.TileCompute/ExecuteBatches";

// --shm: one job's dst in the shared-memory region.
struct ShmJob {
  uint8_t* dst = nullptr;   // where the server writes it
  uint64_t dst_offset = 0;  // the same, from the region's start
  uint64_t uses = 0;        // times sent
  bool checking = false;    // the job in flight is to be compared
};

// What one message sends: a unary call's or a stream's job, or a batch.
// Without --shm every call sends the one unit; with it each message that
// can be in flight has its own, whose tiles no other unit's overlap.
struct Unit {
  grpc::ByteBuffer request;  // the (first) job, serialized
  // Batch mode: JobBatch field 1 holding the unit's other jobs (--batch - 1
  // of them): all of a batch but its first job, which carries the
  // message's id.
  grpc::Slice batch_rest;
  std::vector<ShmJob> shm;  // --shm: one per job, in the message's order
};

struct Workload {
  Job job;
  std::string expected;  // dst's data
  std::string poison;    // --shm: ~expected, written over a dst to check
  // Without --shm: one unit, sent by every call. With it: unit i is unary
  // call i's, or units [s * per_stream, (s + 1) * per_stream) are stream
  // s's.
  std::vector<Unit> units;
  int units_per_stream = 1;
  int shm_check_every = 1;
  // --shm: the connection that registered the region (it must outlive the
  // region, which unregisters through it), and the region.
  std::unique_ptr<Client> client;
  std::unique_ptr<SharedRegion> region;

  bool shm() const { return region != nullptr; }
};

// A JobBatch's field 1 (jobs) header for a job of `size` bytes.
std::string JobsFieldHeader(size_t size) {
  std::string header(1, '\x0a');  // field 1, length-delimited
  for (; size >= 0x80; size >>= 7) {
    header += static_cast<char>((size & 0x7f) | 0x80);
  }
  header += static_cast<char>(size);
  return header;
}

absl::StatusOr<Workload> MakeWorkload() {
  Workload w;
  v1::DType dtype;
  if (!v1::DType_Parse(
          "DTYPE_" + absl::AsciiStrToUpper(absl::GetFlag(FLAGS_dtype)),
          &dtype)) {
    return absl::InvalidArgumentError("bad --dtype");
  }
  v1::Target target;
  if (!v1::Target_Parse(
          "TARGET_" + absl::AsciiStrToUpper(absl::GetFlag(FLAGS_target)),
          &target)) {
    return absl::InvalidArgumentError("bad --target");
  }
  const bool is_xor = absl::GetFlag(FLAGS_opcode) == "txor";
  std::vector<std::string> dims =
      absl::StrSplit(absl::GetFlag(FLAGS_shape), 'x');
  uint32_t rows = 0, cols = 0;
  if (dims.size() != 2 || !absl::SimpleAtoi(dims[0], &rows) ||
      !absl::SimpleAtoi(dims[1], &cols)) {
    return absl::InvalidArgumentError("bad --shape");
  }
  const size_t bytes = size_t{rows} * cols * WireElementBytes(dtype);
  std::mt19937 rng(42);
  std::string a(bytes, '\0'), b(bytes, '\0');
  for (char& c : a) c = static_cast<char>(rng());
  for (char& c : b) c = static_cast<char>(rng());
  w.expected.resize(bytes);
  for (size_t i = 0; i < bytes; ++i) {
    w.expected[i] = is_xor ? (a[i] ^ b[i]) : (a[i] & b[i]);
  }
  w.poison.resize(bytes);
  for (size_t i = 0; i < bytes; ++i) w.poison[i] = ~w.expected[i];
  w.job.set_target(target);
  for (auto [name, data] : {std::pair{"src0", &a}, std::pair{"src1", &b}}) {
    v1::Tile& t = (*w.job.mutable_tiles())[name];
    t.set_dtype(dtype);
    t.set_rows(rows);
    t.set_cols(cols);
    t.set_data(*data);
  }
  v1::Instruction* inst = w.job.add_instructions();
  inst->set_opcode(is_xor ? v1::OPCODE_TXOR : v1::OPCODE_TAND);
  inst->set_dst("dst");
  inst->set_src0("src0");
  inst->set_src1("src1");
  if (is_xor) inst->set_tmp("tmp");
  const std::string job_bytes = w.job.SerializeAsString();
  grpc::Slice slice(job_bytes);
  Unit& unit = w.units.emplace_back();
  unit.request = grpc::ByteBuffer(&slice, 1);
  // Only batch mode sends the rest of a batch: at 4096x4096 (128 MiB jobs)
  // the default --batch's rest alone would be 4 GB.
  std::string rest;
  for (int i = 1;
       i < absl::GetFlag(FLAGS_batch) && absl::GetFlag(FLAGS_mode) == "batch";
       ++i) {
    absl::StrAppend(&rest, JobsFieldHeader(job_bytes.size()), job_bytes);
  }
  unit.batch_rest = grpc::Slice(rest);
  return w;
}

// --shm: replaces the workload's one unit with `units` units of
// `jobs_per_unit` jobs each, their tiles in one region registered with the
// server through `client`: every job its own src0 and src1 (the same
// elements as the bytes path sends) and dst, each 64-byte aligned.
absl::Status AttachShm(Workload* w, std::unique_ptr<Client> client, int units,
                       int jobs_per_unit) {
  const v1::Tile& src0 = w->job.tiles().at("src0");
  const size_t bytes = src0.data().size();
  const size_t stride = (bytes + 63) / 64 * 64;
  const uint64_t total = uint64_t{3} * stride * units * jobs_per_unit;
  absl::StatusOr<std::unique_ptr<SharedRegion>> region =
      SharedRegion::Create(*client, total);
  if (!region.ok()) {
    return absl::Status(region.status().code(),
                        absl::StrCat("--shm: a region of ", total,
                                     " bytes: ", region.status().message()));
  }
  // The server maps the object by its name at registration and keeps it
  // open: the name can go now, so that nothing is left in /dev/shm however
  // this process ends.
  shm_unlink((*region)->key().c_str());
  const std::string& a = src0.data();
  const std::string& b = w->job.tiles().at("src1").data();
  Job base = w->job;  // the job without its elements
  for (const char* name : {"src0", "src1"}) {
    (*base.mutable_tiles())[name].clear_data();
  }
  std::vector<Unit> made(units);
  for (Unit& unit : made) {
    std::string rest;
    for (int j = 0; j < jobs_per_unit; ++j) {
      Job job = base;
      ShmJob& shm = unit.shm.emplace_back();
      for (auto [name, data] : {std::pair{"src0", &a}, std::pair{"src1", &b}}) {
        absl::Span<uint8_t> at = *(*region)->Allocate<uint8_t>(bytes);
        std::memcpy(at.data(), data->data(), bytes);
        v1::Tile& tile = (*job.mutable_tiles())[name];
        tile.clear_data();
        *tile.mutable_shared() = *(*region)->SliceOf(at.data(), bytes);
      }
      shm.dst = (*(*region)->Allocate<uint8_t>(bytes)).data();
      const v1::RegionSlice dst = *(*region)->SliceOf(shm.dst, bytes);
      shm.dst_offset = dst.offset();
      (*job.mutable_output_regions())["dst"] = dst;
      const std::string job_bytes = job.SerializeAsString();
      if (j == 0) {
        grpc::Slice slice(job_bytes);
        unit.request = grpc::ByteBuffer(&slice, 1);
      } else {
        absl::StrAppend(&rest, JobsFieldHeader(job_bytes.size()), job_bytes);
      }
    }
    unit.batch_rest = grpc::Slice(rest);
  }
  w->units = std::move(made);
  int every = absl::GetFlag(FLAGS_shm_check_every);
  if (every <= 0) {
    every = static_cast<int>(
        std::clamp<size_t>(bytes / (16 << 10), size_t{1}, size_t{64}));
  }
  w->shm_check_every = every;
  w->client = std::move(client);
  w->region = *std::move(region);
  return absl::OkStatus();
}

// `base` followed by a Job holding only `id`: protobuf merges concatenated
// messages, so this is the job with that id, without serializing it again.
grpc::ByteBuffer WithId(const grpc::ByteBuffer& base, uint64_t id) {
  Job only_id;
  only_id.set_id(absl::StrCat(id));
  std::vector<grpc::Slice> slices;
  (void)base.Dump(&slices);
  slices.emplace_back(only_id.SerializeAsString());
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// A JobBatch of the unit's --batch jobs, the first carrying `id`: the
// job's bytes and the rest of the batch are shared, not copied.
grpc::ByteBuffer BatchWithId(const Unit& w, uint64_t id) {
  Job only_id;
  only_id.set_id(absl::StrCat(id));
  const std::string id_bytes = only_id.SerializeAsString();
  std::vector<grpc::Slice> job;  // Dump replaces what the vector holds
  (void)w.request.Dump(&job);
  std::vector<grpc::Slice> slices;
  slices.emplace_back(JobsFieldHeader(w.request.Length() + id_bytes.size()));
  slices.insert(slices.end(), job.begin(), job.end());
  slices.emplace_back(id_bytes);
  slices.push_back(w.batch_rest);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// "CODE: message" (the message cut at 120 bytes), how errors are counted.
std::string ErrorKey(absl::StatusCode code, absl::string_view message) {
  return absl::StrCat(absl::StatusCodeToString(code), ": ",
                      message.substr(0, 120));
}

// What one thread measured.
struct Tally {
  std::vector<int64_t> latency_ns;
  std::map<std::string, int64_t> errors;  // by "CODE: message"
  int64_t done = 0;                       // jobs answered right
  int64_t messages = 0;                   // answers (a batch's counts once)
  int64_t max_in_flight = 0;
};

// A server that is going away answers UNAVAILABLE at once: a call slot (or
// stream) that saw it waits 1 ms, doubling to 100 ms, before it tries
// again, rather than spin on it.
absl::Duration NextBackoff(absl::Duration backoff) {
  return std::min(std::max(2 * backoff, absl::Milliseconds(1)),
                  absl::Milliseconds(100));
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
  return text.str();
}

// The "authorization" metadata's value for every call, or "" for none.
absl::StatusOr<std::string> Authorization() {
  std::string token = absl::GetFlag(FLAGS_token);
  const std::string file = absl::GetFlag(FLAGS_token_file);
  if (!token.empty() && !file.empty()) {
    return absl::InvalidArgumentError("give --token or --token_file, not both");
  }
  if (!file.empty()) {
    absl::StatusOr<std::string> text = ReadFile(file);
    if (!text.ok()) return text.status();
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (!line.empty() && line[0] != '#') {
        token = std::string(line);
        break;
      }
    }
    if (token.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token_file=", file, " holds no token"));
    }
  }
  return token.empty() ? "" : absl::StrCat("Bearer ", token);
}

// Plaintext, or TLS as the --tls flags say; sets the name the server's
// certificate must carry in `args`.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(
    grpc::ChannelArguments* args) {
  const std::string server_name = absl::GetFlag(FLAGS_tls_server_name);
  if (!absl::GetFlag(FLAGS_tls) && absl::GetFlag(FLAGS_tls_ca).empty() &&
      absl::GetFlag(FLAGS_tls_cert).empty() &&
      absl::GetFlag(FLAGS_tls_key).empty() && server_name.empty()) {
    return grpc::InsecureChannelCredentials();
  }
  if (absl::GetFlag(FLAGS_tls_cert).empty() !=
      absl::GetFlag(FLAGS_tls_key).empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  grpc::SslCredentialsOptions ssl;
  for (auto [flag, pem] : {std::pair{&FLAGS_tls_ca, &ssl.pem_root_certs},
                           std::pair{&FLAGS_tls_cert, &ssl.pem_cert_chain},
                           std::pair{&FLAGS_tls_key, &ssl.pem_private_key}}) {
    if (absl::GetFlag(*flag).empty()) continue;
    absl::StatusOr<std::string> text = ReadFile(absl::GetFlag(*flag));
    if (!text.ok()) return text.status();
    *pem = *std::move(text);
  }
  if (!server_name.empty()) args->SetSslTargetNameOverride(server_name);
  return grpc::SslCredentials(ssl);
}

// --shm: a connection to the server for the SharedMemory service, with the
// same TLS and token as the calls.
absl::StatusOr<std::unique_ptr<Client>> ShmClient(
    const std::string& authorization) {
  ClientOptions options;
  options.tls = absl::GetFlag(FLAGS_tls) ||
                !absl::GetFlag(FLAGS_tls_ca).empty() ||
                !absl::GetFlag(FLAGS_tls_cert).empty() ||
                !absl::GetFlag(FLAGS_tls_key).empty() ||
                !absl::GetFlag(FLAGS_tls_server_name).empty();
  for (auto [flag, pem] : {std::pair{&FLAGS_tls_ca, &options.tls_ca_pem},
                           std::pair{&FLAGS_tls_cert, &options.tls_cert_pem},
                           std::pair{&FLAGS_tls_key, &options.tls_key_pem}}) {
    if (absl::GetFlag(*flag).empty()) continue;
    absl::StatusOr<std::string> text = ReadFile(absl::GetFlag(*flag));
    if (!text.ok()) return text.status();
    *pem = *std::move(text);
  }
  options.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  options.token = std::string(absl::StripPrefix(authorization, "Bearer "));
  options.max_message_bytes = 256 << 20;
  return Client::Connect(absl::GetFlag(FLAGS_server), options);
}

// One measurement's window and what every thread shares.
struct Run {
  Workload* workload;  // --shm: its units' ShmJobs change as jobs go out
  std::vector<std::unique_ptr<grpc::GenericStub>>* stubs;
  absl::Time measure_from;
  absl::Time end;
  bool check;
  int stream_depth;
  int batch;  // jobs per message in batch mode; 0: not batch mode
  std::string authorization;  // "" for none
};

// One generator thread: its completion queue and the calls it drives. Every
// completion-queue tag is an Event; calls and streams are owned here.
class Driver {
 public:
  Driver(const Run& run, Tally* tally) : run_(run), tally_(tally) {}

  // Closed loop: one unary call in flight on each of `channels` (a channel
  // index may repeat) until the end; the call on channels[k] is call
  // indices[k] of the measurement (it sends that unit with --shm).
  void Unary(const std::vector<int>& channels,
             const std::vector<int>& indices) {
    for (size_t k = 0; k < channels.size(); ++k) {
      calls_.push_back(std::make_unique<Call>(channels[k]));
      calls_.back()->unit = UnitOf(indices[k], 0);
      StartCall(calls_.back().get(), absl::Now());
    }
    Loop(absl::InfiniteFuture());
  }

  // Open loop: `rate` calls a second, spread over `channels`, each due
  // 1/rate after the one before, from `first` until the end. A second
  // thread starts the calls when they are due (a sleep is precise to
  // microseconds; a completion queue's deadline only to milliseconds) and
  // this one takes their results.
  void UnaryAtRate(const std::vector<int>& channels, double rate,
                   absl::Time first) {
    rate_channels_ = channels;
    interval_ = absl::Seconds(1) / rate;
    pacing_.store(true);
    std::thread pacer([this, first] {
      size_t sent = 0;
      for (absl::Time due = first; due < run_.end; due += interval_) {
        const absl::Duration wait = due - absl::Now();
        if (wait > absl::ZeroDuration()) absl::SleepFor(wait);
        Call* call;
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (free_.empty()) {
            calls_.push_back(std::make_unique<Call>(0));
            call = calls_.back().get();
            call->unit = UnitOf(0, 0);  // never with --shm
          } else {
            call = free_.back();
            free_.pop_back();
          }
        }
        // The channels in turn, whichever call object carries it.
        call->channel = rate_channels_[sent++ % rate_channels_.size()];
        StartCall(call, due);
      }
      pacing_.store(false);
    });
    Loop(absl::InfiniteFuture());
    pacer.join();
  }

  // One stream on each of `channels`, each keeping up to stream_depth jobs
  // in flight; a stream that ends early is started again. The stream on
  // channels[k] is stream indices[k] of the measurement.
  void Streams(const std::vector<int>& channels,
               const std::vector<int>& indices) {
    for (size_t k = 0; k < channels.size(); ++k) {
      streams_.push_back(std::make_unique<Stream>(channels[k]));
      Stream* s = streams_.back().get();
      if (run_.workload->shm()) {
        for (int u = 0; u < run_.workload->units_per_stream; ++u) {
          s->units.push_back(UnitOf(indices[k], u));
        }
      }
      StartStream(s);
    }
    Loop(absl::InfiniteFuture());
  }

 private:
  struct Event {
    enum Kind {
      kCallDone,
      kCallRetry,
      kStarted,
      kWritten,
      kRead,
      kFinished,
      kStreamRetry
    };
    Kind kind;
    void* owner;
  };

  struct Call {
    explicit Call(int ch) : channel(ch) {
      done = {Event::kCallDone, this};
      retry = {Event::kCallRetry, this};
    }
    int channel;
    Unit* unit = nullptr;  // what it sends
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>> reader;
    grpc::ByteBuffer response;
    grpc::Status status;
    grpc::Alarm alarm;
    absl::Time sent;  // or, at a rate, when it was due
    absl::Duration backoff;
    bool busy = false;
    Event done, retry;
  };

  struct Stream {
    explicit Stream(int ch) : channel(ch) {
      started = {Event::kStarted, this};
      written = {Event::kWritten, this};
      read = {Event::kRead, this};
      finished = {Event::kFinished, this};
      retry = {Event::kStreamRetry, this};
    }
    int channel;
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> rw;
    grpc::ByteBuffer response;
    grpc::Status status;
    grpc::Alarm alarm;
    absl::Duration backoff;
    struct Sent {
      absl::Time at;
      Unit* unit;
    };
    absl::flat_hash_map<uint64_t, Sent> sent_at;  // by job (message) id
    // --shm: the stream's units, and those not in flight.
    std::vector<Unit*> units, free_units;
    uint64_t next_id = 0;
    bool writing = false;
    bool writes_done = false;
    bool live = false;  // started, not finished
    Event started, written, read, finished, retry;
  };

  // The unit of call or stream `index`, the `k`th of a stream's (--shm),
  // or the one every call sends.
  Unit* UnitOf(int index, int k) {
    Workload& w = *run_.workload;
    if (!w.shm()) return &w.units[0];
    return &w.units.at(static_cast<size_t>(index) * w.units_per_stream + k);
  }

  // --shm: before `unit` goes out, picks the jobs whose answers will be
  // compared (each job's first, then one in shm_check_every) and
  // overwrites their dst with bytes that differ from the expected ones in
  // every position, so that only the server's write makes them right.
  void Arm(Unit* unit) {
    if (!run_.check) return;
    const Workload& w = *run_.workload;
    for (ShmJob& job : unit->shm) {
      job.checking = job.uses++ % w.shm_check_every == 0;
      if (job.checking) {
        std::memcpy(job.dst, w.poison.data(), w.poison.size());
      }
    }
  }

  // Parses `response` into result_ (if the call succeeded) and returns
  // what is wrong with the result, or "" if nothing is.
  std::string Check(const grpc::Status& status, grpc::ByteBuffer* response,
                    const Unit* unit) {
    if (!status.ok()) {
      return ErrorKey(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
    }
    if (!grpc::SerializationTraits<JobResult>::Deserialize(response, &result_)
             .ok()) {
      return "unparseable result";
    }
    return CheckResult(result_, unit, 0);
  }

  // What is wrong with the result of `unit`'s job `k` (unit null: a
  // result that names no message), or "".
  std::string CheckResult(const JobResult& result, const Unit* unit,
                          size_t k) const {
    if (result.status().code() != 0) {
      return ErrorKey(static_cast<absl::StatusCode>(result.status().code()),
                      result.status().message());
    }
    if (!run_.check) return "";
    const Workload& w = *run_.workload;
    auto it = result.tiles().find("dst");
    if (it == result.tiles().end()) return "wrong result";
    if (!w.shm()) {
      return it->second.data() == w.expected ? "" : "wrong result";
    }
    // --shm: the result names the job's dst slice and carries no elements;
    // the elements are in the region.
    const v1::Tile& dst = it->second;
    if (unit == nullptr || k >= unit->shm.size()) return "wrong result";
    const ShmJob& job = unit->shm[k];
    if (!dst.data().empty() || dst.shared().region() != w.region->name() ||
        dst.shared().offset() != job.dst_offset ||
        dst.shared().size() != w.expected.size()) {
      return "wrong result: dst not the job's shared slice";
    }
    if (job.checking &&
        std::memcmp(job.dst, w.expected.data(), w.expected.size()) != 0) {
      return "wrong result";
    }
    return "";
  }

  // Counts one result if it was sent in the measured window and arrived
  // before its end.
  // Returns whether it counted it as right. `whole_message`: the result
  // was its message's only one, so a right one counts the message too.
  bool Record(absl::Time sent, absl::Time now, const std::string& error,
              bool whole_message = true) {
    if (sent < run_.measure_from || now > run_.end) return false;
    if (!error.empty()) {
      ++tally_->errors[error];
      return false;
    }
    ++tally_->done;
    if (whole_message) ++tally_->messages;
    tally_->latency_ns.push_back(absl::ToInt64Nanoseconds(now - sent));
    return true;
  }

  grpc::GenericStub* Stub(int channel) { return (*run_.stubs)[channel].get(); }

  void StartCall(Call* call, absl::Time sent) {
    call->context = std::make_unique<grpc::ClientContext>();
    if (!run_.authorization.empty()) {
      call->context->AddMetadata("authorization", run_.authorization);
    }
    call->sent = sent;
    call->busy = true;
    tally_->max_in_flight =
        std::max(tally_->max_in_flight, in_flight_.fetch_add(1) + 1);
    if (run_.workload->shm()) Arm(call->unit);
    call->reader = Stub(call->channel)
                       ->PrepareUnaryCall(call->context.get(), kExecute,
                                          call->unit->request, &cq_);
    call->reader->StartCall();
    call->reader->Finish(&call->response, &call->status, &call->done);
  }

  void OnCallDone(Call* call) {
    const absl::Time now = absl::Now();
    --in_flight_;
    call->busy = false;
    Record(call->sent, now, Check(call->status, &call->response, call->unit));
    call->response.Clear();
    if (interval_ != absl::ZeroDuration()) {  // at a rate: free again
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(call);
      return;
    }
    if (now >= run_.end) return;
    if (call->status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      call->backoff = NextBackoff(call->backoff);
      call->alarm.Set(&cq_, absl::ToChronoTime(now + call->backoff),
                      &call->retry);
      ++pending_alarms_;
      return;
    }
    call->backoff = absl::ZeroDuration();
    StartCall(call, now);
  }

  void StartStream(Stream* s) {
    s->context = std::make_unique<grpc::ClientContext>();
    if (!run_.authorization.empty()) {
      s->context->AddMetadata("authorization", run_.authorization);
    }
    s->rw = Stub(s->channel)
                ->PrepareCall(s->context.get(),
                              run_.batch > 0 ? kExecuteBatches : kExecuteStream,
                              &cq_);
    s->sent_at.clear();
    s->free_units = s->units;
    s->writing = false;
    s->writes_done = false;
    s->live = true;
    ++live_streams_;
    s->rw->StartCall(&s->started);
  }

  // Writes the next job if the window and the stream allow, or half-closes
  // once the time is up.
  void MaybeWrite(Stream* s, absl::Time now) {
    if (s->writing || s->writes_done) return;
    if (now >= run_.end) {
      s->writes_done = true;
      s->writing = true;
      s->rw->WritesDone(&s->written);
      return;
    }
    const int messages = run_.batch > 0
                             ? std::max(1, run_.stream_depth / run_.batch)
                             : run_.stream_depth;
    if (static_cast<int>(s->sent_at.size()) >= messages) return;
    Unit* unit = UnitOf(0, 0);
    if (run_.workload->shm()) {
      if (s->free_units.empty()) return;  // not while messages fit
      unit = s->free_units.back();
      s->free_units.pop_back();
      Arm(unit);
    }
    const uint64_t id = s->next_id++;
    s->sent_at[id] = {now, unit};
    s->writing = true;
    s->rw->Write(
        run_.batch > 0 ? BatchWithId(*unit, id) : WithId(unit->request, id),
        &s->written);
  }

  // --shm: `unit`'s answer is in; it may go out again.
  void Release(Stream* s, Unit* unit) {
    if (run_.workload->shm()) s->free_units.push_back(unit);
  }

  void OnStreamEvent(const Event& e, bool ok) {
    Stream* s = static_cast<Stream*>(e.owner);
    const absl::Time now = absl::Now();
    switch (e.kind) {
      case Event::kStarted:
        if (!ok) {
          s->rw->Finish(&s->status, &s->finished);
          return;
        }
        s->rw->Read(&s->response, &s->read);
        MaybeWrite(s, now);
        return;
      case Event::kWritten:
        s->writing = false;
        if (ok) MaybeWrite(s, now);
        return;
      case Event::kRead: {
        if (!ok) {  // the server closed the stream: its status follows
          s->rw->Finish(&s->status, &s->finished);
          return;
        }
        if (run_.batch > 0) {
          OnBatchAnswer(s, now);
        } else {
          const bool parsed = grpc::SerializationTraits<JobResult>::Deserialize(
                                  &s->response, &result_)
                                  .ok();
          uint64_t id = 0;
          auto it = s->sent_at.end();
          if (parsed && absl::SimpleAtoi(result_.id(), &id)) {
            it = s->sent_at.find(id);
          }
          if (it == s->sent_at.end()) {
            if (now <= run_.end) {
              ++tally_->errors[parsed ? "result with an unknown id"
                                      : "unparseable result"];
            }
          } else {
            Record(it->second.at, now,
                   CheckResult(result_, it->second.unit, 0));
            Release(s, it->second.unit);
            s->sent_at.erase(it);
          }
        }
        s->backoff = absl::ZeroDuration();
        s->response.Clear();
        s->rw->Read(&s->response, &s->read);
        MaybeWrite(s, now);
        return;
      }
      case Event::kFinished:
        s->live = false;
        --live_streams_;
        if (!s->status.ok() && now <= run_.end) {
          ++tally_->errors[absl::StrCat(
              "stream ",
              ErrorKey(static_cast<absl::StatusCode>(s->status.error_code()),
                       s->status.error_message()))];
        }
        if (now < run_.end) {
          // It ended early (refused, or the server going away): start
          // another after a backoff that a result received resets.
          s->backoff = NextBackoff(s->backoff);
          s->alarm.Set(&cq_, absl::ToChronoTime(now + s->backoff), &s->retry);
          ++pending_alarms_;
        }
        return;
      default:
        return;
    }
  }

  // A JobResultBatch read on `s`: its first result's id names the message;
  // every result is checked and counted.
  void OnBatchAnswer(Stream* s, absl::Time now) {
    const bool parsed =
        grpc::SerializationTraits<v1::JobResultBatch>::Deserialize(
            &s->response, &batch_result_)
            .ok();
    uint64_t id = 0;
    auto it = s->sent_at.end();
    if (parsed && batch_result_.results_size() > 0 &&
        absl::SimpleAtoi(batch_result_.results(0).id(), &id)) {
      it = s->sent_at.find(id);
    }
    if (it == s->sent_at.end()) {
      if (now <= run_.end) {
        ++tally_->errors[!parsed ? "unparseable answer"
                         : batch_result_.results_size() == 1
                             ? CheckResult(batch_result_.results(0), nullptr, 0)
                             : "answer with an unknown id"];
      }
      return;
    }
    const absl::Time sent = it->second.at;
    Unit* unit = it->second.unit;
    s->sent_at.erase(it);
    Release(s, unit);
    if (batch_result_.results_size() != run_.batch) {
      Record(sent, now,
             absl::StrCat("answer with ", batch_result_.results_size(),
                          " results for ", run_.batch, " jobs"));
      return;
    }
    bool all_right = true;
    for (int i = 0; i < batch_result_.results_size(); ++i) {
      all_right &=
          Record(sent, now, CheckResult(batch_result_.results(i), unit, i),
                 /*whole_message=*/false);
    }
    if (all_right) ++tally_->messages;
  }

  void Loop(absl::Time wake) {
    absl::Time cancel_at = run_.end + absl::Seconds(2);
    bool cancelled = false;
    for (;;) {
      if (in_flight_.load() == 0 && live_streams_ == 0 &&
          pending_alarms_ == 0 && !pacing_.load()) {
        break;
      }
      // At a rate, calls start on the pacing thread: look at the time and
      // the count now and then.
      if (pacing_.load() || interval_ != absl::ZeroDuration()) {
        wake = std::min(absl::Now() + absl::Milliseconds(10), cancel_at);
      }
      absl::Time deadline =
          std::min(wake, cancelled ? absl::InfiniteFuture() : cancel_at);
      void* tag;
      bool ok;
      grpc::CompletionQueue::NextStatus st;
      if (deadline == absl::InfiniteFuture()) {
        st = cq_.Next(&tag, &ok) ? grpc::CompletionQueue::GOT_EVENT
                                 : grpc::CompletionQueue::SHUTDOWN;
      } else {
        st = cq_.AsyncNext(&tag, &ok, absl::ToChronoTime(deadline));
      }
      if (st == grpc::CompletionQueue::SHUTDOWN) break;
      const absl::Time now = absl::Now();
      if (st == grpc::CompletionQueue::GOT_EVENT) {
        const Event& e = *static_cast<Event*>(tag);
        switch (e.kind) {
          case Event::kCallDone:
            OnCallDone(static_cast<Call*>(e.owner));
            break;
          case Event::kCallRetry:
            --pending_alarms_;
            if (now < run_.end) StartCall(static_cast<Call*>(e.owner), now);
            break;
          case Event::kStreamRetry:
            --pending_alarms_;
            if (now < run_.end) StartStream(static_cast<Stream*>(e.owner));
            break;
          default:
            OnStreamEvent(e, ok);
        }
      }
      if (!cancelled && now >= cancel_at) {
        // Whatever is still out after the grace is not measured: cut it.
        cancelled = true;
        std::lock_guard<std::mutex> lock(mu_);
        for (auto& c : calls_) {
          if (c->busy) c->context->TryCancel();
        }
        for (auto& s : streams_) {
          if (s->live) s->context->TryCancel();
        }
      }
    }
    cq_.Shutdown();
    void* tag;
    bool ok;
    while (cq_.Next(&tag, &ok)) {
    }
  }

  const Run& run_;
  Tally* tally_;
  grpc::CompletionQueue cq_;
  JobResult result_;                 // parse target, reused
  v1::JobResultBatch batch_result_;  // batch mode's parse target
  std::vector<std::unique_ptr<Call>> calls_;
  std::mutex mu_;  // at a rate: calls_ and free_
  std::vector<Call*> free_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<int> rate_channels_;
  absl::Duration interval_ = absl::ZeroDuration();
  std::atomic<bool> pacing_{false};
  std::atomic<int64_t> in_flight_{0};
  int live_streams_ = 0;
  int pending_alarms_ = 0;
};

int64_t Percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p * (sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Measures one point (`concurrency` calls or streams, or `rate` requests a
// second) and prints its result.
struct Point {
  int64_t errors = 0;
  bool measured = false;  // a result, right or wrong, came in the window
};
Point Measure(Workload& workload,
              std::vector<std::unique_ptr<grpc::GenericStub>>* stubs,
              const std::string& authorization, int concurrency, double rate) {
  const bool stream = absl::GetFlag(FLAGS_mode) != "unary";
  const int threads = std::max(1, std::min(absl::GetFlag(FLAGS_threads),
                                           rate > 0 ? 1 << 20 : concurrency));
  const absl::Time start = absl::Now();
  Run run;
  run.workload = &workload;
  run.stubs = stubs;
  run.measure_from = start + absl::GetFlag(FLAGS_warmup);
  run.end = run.measure_from + absl::GetFlag(FLAGS_duration);
  run.check = absl::GetFlag(FLAGS_check);
  run.stream_depth = std::max(1, absl::GetFlag(FLAGS_stream_depth));
  run.batch = absl::GetFlag(FLAGS_mode) == "batch"
                  ? std::max(1, absl::GetFlag(FLAGS_batch))
                  : 0;
  run.authorization = authorization;
  std::vector<Tally> tallies(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    // Call (or stream) i belongs to thread i % threads and goes over channel
    // i % connections.
    std::vector<int> channels, indices;
    if (rate > 0) {
      for (size_t c = t; c < stubs->size(); c += threads) channels.push_back(c);
      if (channels.empty()) channels.push_back(t % stubs->size());
    } else {
      for (int i = t; i < concurrency; i += threads) {
        channels.push_back(i % stubs->size());
        indices.push_back(i);
      }
    }
    workers.emplace_back([&, t, channels, indices] {
      Driver driver(run, &tallies[t]);
      if (rate > 0) {
        // Thread t's calls are due at start + (t + k * threads) / rate.
        driver.UnaryAtRate(channels, rate / threads,
                           start + absl::Seconds(1) * t / rate);
      } else if (stream) {
        driver.Streams(channels, indices);
      } else {
        driver.Unary(channels, indices);
      }
    });
  }
  for (auto& w : workers) w.join();

  Tally all;
  for (Tally& t : tallies) {
    all.done += t.done;
    all.messages += t.messages;
    all.max_in_flight += t.max_in_flight;
    all.latency_ns.insert(all.latency_ns.end(), t.latency_ns.begin(),
                          t.latency_ns.end());
    for (auto& [code, n] : t.errors) all.errors[code] += n;
  }
  std::sort(all.latency_ns.begin(), all.latency_ns.end());
  const double seconds = absl::ToDoubleSeconds(absl::GetFlag(FLAGS_duration));
  const double per_s = all.done / seconds;  // jobs (tiles)
  const double requests_per_s = all.messages / seconds;
  int64_t errors = 0;
  std::string error_text;
  for (auto& [error, n] : all.errors) {
    errors += n;
    absl::StrAppend(&error_text, error_text.empty() ? "" : "; ", n, " x ",
                    error);
  }
  const auto us = [&](double p) {
    return Percentile(all.latency_ns, p) / 1000.0;
  };
  const std::string format = absl::GetFlag(FLAGS_format);
  // At a rate there is no fixed concurrency: csv says 0, json gives the rate.
  const int shown_concurrency = rate > 0 ? 0 : concurrency;
  if (format == "csv") {
    std::cout << absl::StrFormat(
        "%s,%s,%d,%s,%s,%s,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%d\n",
        absl::GetFlag(FLAGS_label), absl::GetFlag(FLAGS_mode),
        shown_concurrency, absl::GetFlag(FLAGS_opcode),
        absl::GetFlag(FLAGS_shape), absl::GetFlag(FLAGS_dtype), requests_per_s,
        per_s, us(0.5), us(0.9), us(0.99), us(1.0), errors);
  } else if (format == "json") {
    std::string by_error;
    for (auto& [error, n] : all.errors) {
      absl::StrAppend(&by_error, by_error.empty() ? "" : ",", JsonString(error),
                      ":", n);
    }
    std::cout << absl::StrFormat(
        "{\"label\":%s,\"mode\":%s,\"concurrency\":%d,\"rate\":%.1f,"
        "\"threads\":%d,\"connections\":%d,\"stream_depth\":%d,\"batch\":%d,"
        "\"shm\":%s,\"opcode\":%s,\"shape\":%s,\"dtype\":%s,\"target\":%s,"
        "\"seconds\":%.3f,\"requests_per_s\":%.1f,\"tiles_per_s\":%.1f,"
        "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,"
        "\"max_in_flight\":%d,\"errors\":%d,\"errors_by_kind\":{%s}}\n",
        JsonString(absl::GetFlag(FLAGS_label)),
        JsonString(absl::GetFlag(FLAGS_mode)), shown_concurrency, rate, threads,
        static_cast<int>(stubs->size()), stream ? run.stream_depth : 0,
        run.batch, workload.shm() ? "true" : "false",
        JsonString(absl::GetFlag(FLAGS_opcode)),
        JsonString(absl::GetFlag(FLAGS_shape)),
        JsonString(absl::GetFlag(FLAGS_dtype)),
        JsonString(absl::GetFlag(FLAGS_target)), seconds, requests_per_s, per_s,
        us(0.5), us(0.9), us(0.99), us(1.0), all.max_in_flight, errors,
        by_error);
  } else {
    std::cout << absl::StrFormat(
        "%s%s %s %s %s on %s, %s%s, %d thread%s, %d connection%s, %.1f s "
        "measured\n"
        "requests/s %.1f  tiles/s %.1f\n"
        "latency us: p50 %.1f  p90 %.1f  p99 %.1f  max %.1f\n"
        "errors: %s\n",
        absl::GetFlag(FLAGS_mode), workload.shm() ? " shm" : "",
        absl::GetFlag(FLAGS_opcode), absl::GetFlag(FLAGS_shape),
        absl::GetFlag(FLAGS_dtype), absl::GetFlag(FLAGS_target),
        rate > 0 ? absl::StrFormat("rate %.1f/s", rate)
                 : absl::StrCat("concurrency ", concurrency),
        stream ? absl::StrCat(", depth ", run.stream_depth) : "", threads,
        threads == 1 ? "" : "s", static_cast<int>(stubs->size()),
        stubs->size() == 1 ? "" : "s", seconds, requests_per_s, per_s, us(0.5),
        us(0.9), us(0.99), us(1.0),
        errors == 0 ? "none" : absl::StrCat(errors, " (", error_text, ")"));
  }
  std::cout.flush();
  return {errors, all.done > 0 || errors > 0};
}

int Main() {
  absl::StatusOr<Workload> workload = MakeWorkload();
  if (!workload.ok()) {
    std::cerr << "ptobench: " << workload.status().message() << "\n";
    return 2;
  }
  const std::string mode = absl::GetFlag(FLAGS_mode);
  const std::string format = absl::GetFlag(FLAGS_format);
  const double rate = absl::GetFlag(FLAGS_rate);
  if (mode != "unary" && mode != "stream" && mode != "batch") {
    std::cerr << "ptobench: --mode is unary, stream or batch\n";
    return 2;
  }
  if (format != "text" && format != "csv" && format != "json") {
    std::cerr << "ptobench: --format is text, csv or json\n";
    return 2;
  }
  if (rate < 0 || (rate > 0 && mode != "unary")) {
    std::cerr << "ptobench: --rate is a positive rate of unary calls\n";
    return 2;
  }
  std::vector<int> points;
  if (absl::GetFlag(FLAGS_sweep).empty()) {
    points.push_back(std::max(1, absl::GetFlag(FLAGS_concurrency)));
  } else {
    for (absl::string_view v :
         absl::StrSplit(absl::GetFlag(FLAGS_sweep), ',', absl::SkipEmpty())) {
      int c = 0;
      if (!absl::SimpleAtoi(v, &c) || c < 1) {
        std::cerr << "ptobench: bad --sweep value \"" << v << "\"\n";
        return 2;
      }
      points.push_back(c);
    }
    if (rate > 0 || points.empty()) {
      std::cerr << "ptobench: --sweep takes concurrencies, without --rate\n";
      return 2;
    }
  }
  if (absl::GetFlag(FLAGS_shm) && rate > 0) {
    std::cerr << "ptobench: --shm is for closed loops (--concurrency or "
                 "--sweep), not --rate\n";
    return 2;
  }
  absl::StatusOr<std::string> authorization = Authorization();
  if (!authorization.ok()) {
    std::cerr << "ptobench: " << authorization.status().message() << "\n";
    return 2;
  }
  if (absl::GetFlag(FLAGS_shm)) {
    // Enough units for the largest point: one per unary call, or per
    // message each stream keeps in flight.
    const int streams_or_calls =
        *std::max_element(points.begin(), points.end());
    const int batch = std::max(1, absl::GetFlag(FLAGS_batch));
    const int depth = std::max(1, absl::GetFlag(FLAGS_stream_depth));
    const int per_stream = mode == "unary"   ? 1
                           : mode == "batch" ? std::max(1, depth / batch)
                                             : depth;
    absl::StatusOr<std::unique_ptr<Client>> client = ShmClient(*authorization);
    absl::Status attached = client.ok()
                                ? AttachShm(&*workload, *std::move(client),
                                            streams_or_calls * per_stream,
                                            mode == "batch" ? batch : 1)
                                : client.status();
    if (!attached.ok()) {
      std::cerr << "ptobench: " << attached.message() << "\n";
      return 1;
    }
    workload->units_per_stream = per_stream;
  }
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  for (int i = 0; i < std::max(1, absl::GetFlag(FLAGS_connections)); ++i) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(256 << 20);
    args.SetMaxSendMessageSize(256 << 20);
    args.SetInt("ptobench.connection", i);  // a connection of its own
    auto credentials = Credentials(&args);
    if (!credentials.ok()) {
      std::cerr << "ptobench: " << credentials.status().message() << "\n";
      return 2;
    }
    auto channel = grpc::CreateCustomChannel(absl::GetFlag(FLAGS_server),
                                             *credentials, args);
    if (!channel->WaitForConnected(std::chrono::system_clock::now() +
                                   std::chrono::seconds(5))) {
      std::cerr << "ptobench: cannot connect to " << absl::GetFlag(FLAGS_server)
                << "\n";
      return 1;
    }
    stubs.push_back(std::make_unique<grpc::GenericStub>(channel));
  }
  if (format == "csv" && absl::GetFlag(FLAGS_csv_header)) {
    std::cout << "label,mode,concurrency,opcode,shape,dtype,requests_per_s,"
                 "tiles_per_s,p50_us,p90_us,p99_us,max_us,errors\n";
  }
  int64_t errors = 0;
  bool measured = true;
  for (int c : points) {
    const Point point = Measure(*workload, &stubs, *authorization, c, rate);
    errors += point.errors;
    if (!point.measured) {
      measured = false;
      std::cerr << "ptobench: nothing was answered within the measured "
                << absl::FormatDuration(absl::GetFlag(FLAGS_duration))
                << (rate > 0 ? "" : absl::StrCat(" at concurrency ", c))
                << ", right or wrong; a longer --duration may see some\n";
    }
  }
  if (errors > 0) return 1;
  return measured ? 0 : 3;
}

}  // namespace
}  // namespace ptoserve

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Load generator for ptoserve; see --help.");
  absl::ParseCommandLine(argc, argv);
  return ptoserve::Main();
}
