// ptobench: a load generator for ptoserve, in the spirit of Triton's
// perf_analyzer and ghz. It runs `--concurrency` workers against a server for
// `--duration` after `--warmup`, checks every result against a result
// computed here, and prints requests/s, tiles/s, latency percentiles and
// errors by code.
//
//   ptobench --server=127.0.0.1:50051 --mode=unary --concurrency=8
//            --shape=16x16 --dtype=int32 --opcode=tand --duration=10s
// (one command line)
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/wire.h"
#include "ptoserve/v1/service.grpc.pb.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "Server address.");
ABSL_FLAG(std::string, mode, "unary",
          "unary (Execute) or stream (ExecuteStream).");
ABSL_FLAG(int, concurrency, 1,
          "Workers, each with its own connection: unary calls in flight, or "
          "streams.");
ABSL_FLAG(int, stream_depth, 32,
          "stream mode: jobs each stream keeps in flight.");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(10), "Measured time.");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(2), "Unmeasured time first.");
ABSL_FLAG(std::string, dtype, "int32", "Element type: int8 ... uint32.");
ABSL_FLAG(std::string, shape, "16x16", "Tile shape ROWSxCOLS.");
ABSL_FLAG(std::string, opcode, "tand", "tand or txor.");
ABSL_FLAG(std::string, target, "host", "host, a2a3 or a5.");
ABSL_FLAG(bool, check, true,
          "Check every result against the expected tile (turn off for the "
          "echo baseline, which returns src0).");
ABSL_FLAG(std::string, format, "text",
          "text, or csv (a header line, unless --csv_header=false, and one "
          "line of figures).");
ABSL_FLAG(bool, csv_header, true, "csv: print the header line first.");
ABSL_FLAG(std::string, label, "", "csv: a label for the first column.");

namespace ptoserve {
namespace {

using v1::Job;
using v1::JobResult;

struct Workload {
  Job job;
  std::string expected;  // dst's data
};

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
  return w;
}

// "CODE: message" (the message cut at 120 bytes), how errors are counted.
std::string ErrorKey(absl::StatusCode code, absl::string_view message) {
  return absl::StrCat(absl::StatusCodeToString(code), ": ",
                      message.substr(0, 120));
}

// What one worker measured.
struct Tally {
  std::vector<int64_t> latency_ns;
  std::map<std::string, int64_t> errors;  // by code name
  int64_t done = 0;
};

class Bench {
 public:
  Bench(const Workload& workload, absl::Time measure_from, absl::Time end)
      : workload_(workload), measure_from_(measure_from), end_(end) {}

  // One result: record it if it arrived in the measured window.
  void Record(Tally* tally, absl::Time sent, absl::Time now,
              const grpc::Status& status, const JobResult& result) const {
    if (sent < measure_from_ || now > end_) return;
    std::string error;
    if (!status.ok()) {
      error = ErrorKey(static_cast<absl::StatusCode>(status.error_code()),
                       status.error_message());
    } else if (result.status().code() != 0) {
      error = ErrorKey(static_cast<absl::StatusCode>(result.status().code()),
                       result.status().message());
    } else if (absl::GetFlag(FLAGS_check)) {
      auto it = result.tiles().find("dst");
      if (it == result.tiles().end() ||
          it->second.data() != workload_.expected) {
        error = "wrong result";
      }
    }
    if (!error.empty()) {
      ++tally->errors[error];
      return;
    }
    ++tally->done;
    tally->latency_ns.push_back(absl::ToInt64Nanoseconds(now - sent));
  }

  void Unary(v1::TileCompute::Stub* stub, Tally* tally) const {
    // A server that is going away answers UNAVAILABLE at once: back off
    // (1 ms, doubling to 100 ms) rather than spin on it.
    absl::Duration backoff = absl::ZeroDuration();
    while (absl::Now() < end_) {
      grpc::ClientContext context;
      JobResult result;
      const absl::Time sent = absl::Now();
      grpc::Status status = stub->Execute(&context, workload_.job, &result);
      Record(tally, sent, absl::Now(), status, result);
      if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
        backoff = std::min(std::max(2 * backoff, absl::Milliseconds(1)),
                           absl::Milliseconds(100));
        absl::SleepFor(std::min(backoff, end_ - absl::Now()));
      } else {
        backoff = absl::ZeroDuration();
      }
    }
  }

  void Stream(v1::TileCompute::Stub* stub, Tally* tally) const {
    const int depth = std::max(1, absl::GetFlag(FLAGS_stream_depth));
    grpc::ClientContext context;
    auto stream = stub->ExecuteStream(&context);
    absl::Mutex mu;
    int in_flight = 0;
    std::vector<absl::Time> sent_at;  // by job id
    struct Window {
      int* in_flight;
      int depth;
    } window{&in_flight, depth};
    std::thread writer([&] {
      Job job = workload_.job;
      for (uint64_t seq = 0; absl::Now() < end_; ++seq) {
        {
          absl::MutexLock lock(&mu);
          mu.Await(absl::Condition(
              +[](Window* w) { return *w->in_flight < w->depth; }, &window));
          ++in_flight;
          sent_at.push_back(absl::Now());
        }
        job.set_id(absl::StrCat(seq));
        if (!stream->Write(job)) break;
      }
      stream->WritesDone();
    });
    JobResult result;
    while (stream->Read(&result)) {
      const absl::Time now = absl::Now();
      uint64_t seq = 0;
      (void)absl::SimpleAtoi(result.id(), &seq);
      absl::Time sent;
      {
        absl::MutexLock lock(&mu);
        --in_flight;
        sent = sent_at[seq];
      }
      Record(tally, sent, now, grpc::Status::OK, result);
    }
    writer.join();
    grpc::Status status = stream->Finish();
    if (!status.ok()) {
      ++tally->errors[absl::StrCat(
          "stream ",
          ErrorKey(static_cast<absl::StatusCode>(status.error_code()),
                   status.error_message()))];
    }
  }

 private:
  const Workload& workload_;
  const absl::Time measure_from_;
  const absl::Time end_;
};

int64_t Percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p * (sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

int Main() {
  absl::StatusOr<Workload> workload = MakeWorkload();
  if (!workload.ok()) {
    std::cerr << "ptobench: " << workload.status().message() << "\n";
    return 2;
  }
  const int concurrency = std::max(1, absl::GetFlag(FLAGS_concurrency));
  const bool stream = absl::GetFlag(FLAGS_mode) == "stream";
  std::vector<std::unique_ptr<v1::TileCompute::Stub>> stubs;
  for (int i = 0; i < concurrency; ++i) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(256 << 20);
    args.SetMaxSendMessageSize(256 << 20);
    args.SetInt("ptobench.worker", i);  // a connection of its own
    auto channel = grpc::CreateCustomChannel(
        absl::GetFlag(FLAGS_server), grpc::InsecureChannelCredentials(), args);
    if (!channel->WaitForConnected(std::chrono::system_clock::now() +
                                   std::chrono::seconds(5))) {
      std::cerr << "ptobench: cannot connect to " << absl::GetFlag(FLAGS_server)
                << "\n";
      return 1;
    }
    stubs.push_back(v1::TileCompute::NewStub(channel));
  }
  const absl::Time start = absl::Now();
  const absl::Time measure_from = start + absl::GetFlag(FLAGS_warmup);
  const absl::Time end = measure_from + absl::GetFlag(FLAGS_duration);
  Bench bench(*workload, measure_from, end);
  std::vector<Tally> tallies(concurrency);
  std::vector<std::thread> workers;
  for (int i = 0; i < concurrency; ++i) {
    workers.emplace_back([&, i] {
      if (stream) {
        bench.Stream(stubs[i].get(), &tallies[i]);
      } else {
        bench.Unary(stubs[i].get(), &tallies[i]);
      }
    });
  }
  for (auto& w : workers) w.join();

  Tally all;
  for (Tally& t : tallies) {
    all.done += t.done;
    all.latency_ns.insert(all.latency_ns.end(), t.latency_ns.begin(),
                          t.latency_ns.end());
    for (auto& [code, n] : t.errors) all.errors[code] += n;
  }
  std::sort(all.latency_ns.begin(), all.latency_ns.end());
  const double seconds = absl::ToDoubleSeconds(absl::GetFlag(FLAGS_duration));
  const double rate = all.done / seconds;
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
  if (absl::GetFlag(FLAGS_format) == "csv") {
    if (absl::GetFlag(FLAGS_csv_header)) {
      std::cout << "label,mode,concurrency,opcode,shape,dtype,requests_per_s,"
                   "tiles_per_s,"
                   "p50_us,p90_us,p99_us,max_us,errors\n";
    }
    std::cout << absl::StrFormat(
        "%s,%s,%d,%s,%s,%s,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%d\n",
        absl::GetFlag(FLAGS_label), absl::GetFlag(FLAGS_mode), concurrency,
        absl::GetFlag(FLAGS_opcode), absl::GetFlag(FLAGS_shape),
        absl::GetFlag(FLAGS_dtype), rate, rate, us(0.5), us(0.9), us(0.99),
        us(1.0), errors);
  } else {
    std::cout << absl::StrFormat(
        "%s %s %s %s on %s, concurrency %d%s, %.1f s measured\n"
        "requests/s %.1f  tiles/s %.1f\n"
        "latency us: p50 %.1f  p90 %.1f  p99 %.1f  max %.1f\n"
        "errors: %s\n",
        absl::GetFlag(FLAGS_mode), absl::GetFlag(FLAGS_opcode),
        absl::GetFlag(FLAGS_shape), absl::GetFlag(FLAGS_dtype),
        absl::GetFlag(FLAGS_target), concurrency,
        stream ? absl::StrCat(", depth ", absl::GetFlag(FLAGS_stream_depth))
               : "",
        seconds, rate, rate, us(0.5), us(0.9), us(0.99), us(1.0),
        errors == 0 ? "none" : absl::StrCat(errors, " (", error_text, ")"));
  }
  return errors == 0 ? 0 : 1;
}

}  // namespace
}  // namespace ptoserve

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Load generator for ptoserve; see --help.");
  absl::ParseCommandLine(argc, argv);
  return ptoserve::Main();
}
