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
//
// The files: workload.h (the job and its units), driver.h (a thread's
// completion queue and tally), unary_mode.h, stream_mode.h (stream and
// batch), shm_mode.h, measure.h (a point on all threads), report.h (text,
// csv, json); client/options.h reads the connection flags.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/measure.h"
#include "bench/report.h"
#include "bench/settings.h"
#include "bench/shm_mode.h"
#include "bench/workload.h"
#include "client/client.h"
#include "client/options.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "Server address.");
ABSL_FLAG(std::string, mode, "unary",
          "unary (Execute), stream (ExecuteStream) or batch (ExecuteBatches: "
          "--batch jobs per message).");
ABSL_FLAG(
    std::string, wire, "job",
    "job: ptoserve.v1's Job (ptoserve, the plain servers); flat: the "
    "simplest message a TAND needs (bench/flat/flat.proto, "
    "bench/flat_server: Tand, or TandStream, which answers a message at a "
    "time, in order), unary or stream mode; oip: the Open Inference "
    "Protocol's ModelInfer on model --opcode, inputs src0 and src1 as raw "
    "contents (ptoserve), unary mode.");
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
namespace ptobench {
namespace {

// The flags that Settings holds.
Settings SettingsFromFlags() {
  Settings s;
  s.mode = absl::GetFlag(FLAGS_mode);
  s.wire = absl::GetFlag(FLAGS_wire);
  s.threads = absl::GetFlag(FLAGS_threads);
  s.stream_depth = absl::GetFlag(FLAGS_stream_depth);
  s.batch = absl::GetFlag(FLAGS_batch);
  s.duration = absl::GetFlag(FLAGS_duration);
  s.warmup = absl::GetFlag(FLAGS_warmup);
  s.dtype = absl::GetFlag(FLAGS_dtype);
  s.shape = absl::GetFlag(FLAGS_shape);
  s.opcode = absl::GetFlag(FLAGS_opcode);
  s.target = absl::GetFlag(FLAGS_target);
  s.check = absl::GetFlag(FLAGS_check);
  s.shm_check_every = absl::GetFlag(FLAGS_shm_check_every);
  s.format = absl::GetFlag(FLAGS_format);
  s.label = absl::GetFlag(FLAGS_label);
  return s;
}

// --connections channels to the server, each a connection of its own, or
// UNAVAILABLE for one that does not connect within the connect timeout.
absl::StatusOr<std::vector<std::unique_ptr<grpc::GenericStub>>> OpenChannels(
    const ConnectionOptions& connection, int connections) {
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  for (int i = 0; i < connections; ++i) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(256 << 20);
    args.SetMaxSendMessageSize(256 << 20);
    args.SetInt("ptobench.connection", i);  // a connection of its own
    const ClientOptions& options = connection.client;
    if (!options.tls_server_name.empty()) {
      args.SetSslTargetNameOverride(options.tls_server_name);
    }
    auto channel = grpc::CreateCustomChannel(connection.server,
                                             ChannelCredentials(options), args);
    if (!channel->WaitForConnected(
            absl::ToChronoTime(absl::Now() + options.connect_timeout))) {
      return absl::UnavailableError(
          absl::StrCat("cannot connect to ", connection.server));
    }
    stubs.push_back(std::make_unique<grpc::GenericStub>(channel));
  }
  return stubs;
}

// What no flag's type checks: the names of modes and formats, and the flags
// that go together or not. Empty if all is well.
std::string UsageError(const Settings& settings, double rate) {
  const std::string& mode = settings.mode;
  const std::string& format = settings.format;
  if (mode != "unary" && mode != "stream" && mode != "batch") {
    return "--mode is unary, stream or batch";
  }
  if (format != "text" && format != "csv" && format != "json") {
    return "--format is text, csv or json";
  }
  if (settings.wire != "job" && settings.wire != "flat" &&
      settings.wire != "oip") {
    return "--wire is job, flat or oip";
  }
  if (settings.wire == "oip" && (mode != "unary" || absl::GetFlag(FLAGS_shm))) {
    return "--wire=oip sends a ModelInfer call each (--mode=unary, no --shm)";
  }
  if (settings.wire == "flat" &&
      (mode == "batch" || settings.opcode != "tand" ||
       absl::GetFlag(FLAGS_shm))) {
    return "--wire=flat sends TANDs in the request, a call or a stream "
           "message each (--mode=unary or stream, --opcode=tand, no --shm)";
  }
  if (rate < 0 || (rate > 0 && mode != "unary")) {
    return "--rate is a positive rate of unary calls";
  }
  if (absl::GetFlag(FLAGS_shm) && rate > 0) {
    return "--shm is for closed loops (--concurrency or --sweep), not --rate";
  }
  return "";
}

// The concurrencies to measure: --sweep's, else --concurrency alone.
absl::StatusOr<std::vector<int>> Points(double rate) {
  if (absl::GetFlag(FLAGS_sweep).empty()) {
    return std::vector<int>{std::max(1, absl::GetFlag(FLAGS_concurrency))};
  }
  std::vector<int> points;
  for (absl::string_view v :
       absl::StrSplit(absl::GetFlag(FLAGS_sweep), ',', absl::SkipEmpty())) {
    int c = 0;
    if (!absl::SimpleAtoi(v, &c) || c < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad --sweep value \"", v, "\""));
    }
    points.push_back(c);
  }
  if (rate > 0 || points.empty()) {
    return absl::InvalidArgumentError(
        "--sweep takes concurrencies, without --rate");
  }
  return points;
}

int Main() {
  const Settings settings = SettingsFromFlags();
  absl::StatusOr<Workload> workload = MakeWorkload(settings);
  if (!workload.ok()) {
    std::cerr << "ptobench: " << workload.status().message() << "\n";
    return 2;
  }
  const double rate = absl::GetFlag(FLAGS_rate);
  if (const std::string error = UsageError(settings, rate); !error.empty()) {
    std::cerr << "ptobench: " << error << "\n";
    return 2;
  }
  absl::StatusOr<std::vector<int>> points_or = Points(rate);
  if (!points_or.ok()) {
    std::cerr << "ptobench: " << points_or.status().message() << "\n";
    return 2;
  }
  const std::vector<int>& points = *points_or;
  absl::StatusOr<ConnectionOptions> connection = ConnectionOptionsFromFlags();
  if (!connection.ok()) {
    std::cerr << "ptobench: " << connection.status().message() << "\n";
    return 2;
  }
  const std::string& token = connection->client.token;
  const std::string authorization =
      token.empty() ? "" : absl::StrCat("Bearer ", token);
  if (absl::GetFlag(FLAGS_shm)) {
    // Enough units for the largest point: one per unary call, or per
    // message each stream keeps in flight.
    absl::Status attached = UseSharedMemory(
        settings, *std::max_element(points.begin(), points.end()), *connection,
        &*workload);
    if (!attached.ok()) {
      std::cerr << "ptobench: " << attached.message() << "\n";
      return 1;
    }
  }
  auto stubs =
      OpenChannels(*connection, std::max(1, absl::GetFlag(FLAGS_connections)));
  if (!stubs.ok()) {
    std::cerr << "ptobench: " << stubs.status().message() << "\n";
    return 1;
  }
  if (settings.format == "csv" && absl::GetFlag(FLAGS_csv_header)) {
    PrintCsvHeader();
  }
  int64_t errors = 0;
  bool measured = true;
  for (int c : points) {
    const Point point =
        Measure(settings, *workload, &*stubs, authorization, c, rate);
    Report(settings, point);
    errors += point.errors();
    if (!point.measured()) {
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
}  // namespace ptobench
}  // namespace ptoserve

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Load generator for ptoserve; see --help.");
  absl::ParseCommandLine(argc, argv);
  return ptoserve::ptobench::Main();
}
