#include "bench/measure.h"

#include <algorithm>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/stream_mode.h"
#include "bench/unary_mode.h"

namespace ptoserve {
namespace ptobench {

int64_t Point::errors() const {
  int64_t errors = 0;
  for (const auto& [error, n] : tally.errors) errors += n;
  return errors;
}

Point Measure(const Settings& settings, Workload& workload,
              std::vector<std::unique_ptr<grpc::GenericStub>>* stubs,
              const std::string& authorization, int concurrency, double rate) {
  const bool stream = settings.mode != "unary";
  const int threads =
      std::max(1, std::min(settings.threads, rate > 0 ? 1 << 20 : concurrency));
  const absl::Time start = absl::Now();
  Run run;
  run.workload = &workload;
  run.stubs = stubs;
  run.measure_from = start + settings.warmup;
  run.end = run.measure_from + settings.duration;
  run.check = settings.check;
  run.stream_depth = std::max(1, settings.stream_depth);
  run.batch = settings.mode == "batch" ? std::max(1, settings.batch) : 0;
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
        UnaryMode(&driver).UnaryAtRate(channels, rate / threads,
                                       start + absl::Seconds(1) * t / rate);
      } else if (stream) {
        StreamMode(&driver).Streams(channels, indices);
      } else {
        UnaryMode(&driver).Unary(channels, indices);
      }
    });
  }
  for (auto& w : workers) w.join();

  Point point;
  point.concurrency = concurrency;
  point.rate = rate;
  point.threads = threads;
  point.connections = static_cast<int>(stubs->size());
  point.stream_depth = run.stream_depth;
  point.stream = stream;
  point.batch = run.batch;
  point.shm = workload.shm();
  Tally& all = point.tally;
  for (Tally& t : tallies) {
    all.done += t.done;
    all.messages += t.messages;
    all.max_in_flight += t.max_in_flight;
    all.latency_ns.insert(all.latency_ns.end(), t.latency_ns.begin(),
                          t.latency_ns.end());
    for (auto& [code, n] : t.errors) all.errors[code] += n;
  }
  std::sort(all.latency_ns.begin(), all.latency_ns.end());
  return point;
}

}  // namespace ptobench
}  // namespace ptoserve
