// The metrics registry's text exposition, checked to the character.
#include "server/metrics/metrics.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace ptoserve {
namespace {

// A counter counted in nanoseconds shows seconds.
TEST(MetricsTest, ACounterWithAUnitShowsItsScaledValue) {
  MetricsRegistry registry;
  CounterFamily* time = registry.AddCounter("test_seconds_total",
                                            "Time by phase.", {"phase"}, 1e-9);
  time->With({"decode"}).Increment(1'500'000'000);
  time->With({"encode"}).Increment(250);
  EXPECT_EQ(registry.Render(),
            "# HELP test_seconds_total Time by phase.\n"
            "# TYPE test_seconds_total counter\n"
            "test_seconds_total{phase=\"decode\"} 1.5\n"
            "test_seconds_total{phase=\"encode\"} 2.5e-07\n");
}

TEST(MetricsTest, RendersCountersGaugesAndHistogramsExactly) {
  MetricsRegistry registry;
  CounterFamily* jobs = registry.AddCounter("test_jobs_total", "Jobs by code.",
                                            {"target", "code"});
  registry.AddGauge("test_queue_depth", "Queued instructions.", {},
                    [] { return 3.0; });
  HistogramFamily* latency = registry.AddHistogram(
      "test_latency_seconds", "Latency.", {"target"}, {0.001, 0.01, 1});
  registry.AddGauge("test_build_info", "Build.", {{"version", "1.2.3"}},
                    [] { return 1.0; });

  jobs->With({"host", "OK"}).Increment(2);
  jobs->With({"a2a3", "INVALID_ARGUMENT"}).Increment();
  jobs->With({"host", "OK"}).Increment();
  Histogram& host = latency->With({"host"});
  host.Observe(0.0005);
  host.Observe(0.001);  // a bucket counts values up to and including its bound
  host.Observe(0.25);
  host.Observe(3);

  EXPECT_EQ(registry.Render(),
            "# HELP test_jobs_total Jobs by code.\n"
            "# TYPE test_jobs_total counter\n"
            "test_jobs_total{target=\"a2a3\",code=\"INVALID_ARGUMENT\"} 1\n"
            "test_jobs_total{target=\"host\",code=\"OK\"} 3\n"
            "# HELP test_queue_depth Queued instructions.\n"
            "# TYPE test_queue_depth gauge\n"
            "test_queue_depth 3\n"
            "# HELP test_latency_seconds Latency.\n"
            "# TYPE test_latency_seconds histogram\n"
            "test_latency_seconds_bucket{target=\"host\",le=\"0.001\"} 2\n"
            "test_latency_seconds_bucket{target=\"host\",le=\"0.01\"} 2\n"
            "test_latency_seconds_bucket{target=\"host\",le=\"1\"} 3\n"
            "test_latency_seconds_bucket{target=\"host\",le=\"+Inf\"} 4\n"
            "test_latency_seconds_sum{target=\"host\"} 3.2515\n"
            "test_latency_seconds_count{target=\"host\"} 4\n"
            "# HELP test_build_info Build.\n"
            "# TYPE test_build_info gauge\n"
            "test_build_info{version=\"1.2.3\"} 1\n");
}

TEST(MetricsTest, UnlabelledHistogramAndFamilyWithoutSeries) {
  MetricsRegistry registry;
  registry.AddCounter("test_unused_total", "Never incremented.", {"code"});
  HistogramFamily* sizes =
      registry.AddHistogram("test_batch_size", "Sizes.", {}, {2.5e-06, 1});
  sizes->With({}).Observe(1);
  EXPECT_EQ(registry.Render(),
            "# HELP test_unused_total Never incremented.\n"
            "# TYPE test_unused_total counter\n"
            "# HELP test_batch_size Sizes.\n"
            "# TYPE test_batch_size histogram\n"
            "test_batch_size_bucket{le=\"2.5e-06\"} 0\n"
            "test_batch_size_bucket{le=\"1\"} 1\n"
            "test_batch_size_bucket{le=\"+Inf\"} 1\n"
            "test_batch_size_sum 1\n"
            "test_batch_size_count 1\n");
}

TEST(MetricsTest, EscapesLabelValuesAndHelp) {
  MetricsRegistry registry;
  CounterFamily* c =
      registry.AddCounter("test_total", "Back\\slash and\nnewline.", {"v"});
  c->With({"say \"hi\"\\\n"}).Increment();
  EXPECT_EQ(registry.Render(),
            "# HELP test_total Back\\\\slash and\\nnewline.\n"
            "# TYPE test_total counter\n"
            "test_total{v=\"say \\\"hi\\\"\\\\\\n\"} 1\n");
}

TEST(MetricsTest, ConcurrentRecordingLosesNothing) {
  MetricsRegistry registry;
  CounterFamily* counter = registry.AddCounter("test_total", "Count.", {"t"});
  HistogramFamily* histogram =
      registry.AddHistogram("test_seconds", "Seconds.", {}, {0.5});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        counter->With({"x"}).Increment();
        histogram->With({}).Observe(i % 2 == 0 ? 0.25 : 1.0);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter->With({"x"}).value(), 80000u);
  const Histogram::Snapshot s = histogram->With({}).Read();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{40000, 80000}));
  EXPECT_EQ(s.sum, 40000 * 0.25 + 40000 * 1.0);
}

}  // namespace
}  // namespace ptoserve
