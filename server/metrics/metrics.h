// A small metrics registry: counters, gauges and histograms with labels,
// rendered in the Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/).
//
// Recording is lock-free (relaxed atomics). Finding the series of a set of
// label values takes its family's lock and a hash lookup (about 50 ns), so a
// hot path looks a series up once per event, not once per increment.
//
// Names follow `<subsystem>_<what>_<unit>` as Triton's and Prometheus's own
// do: `ptoserve_queue_time_seconds`, counters end in `_total`.
#ifndef PTOSERVE_SERVER_METRICS_METRICS_H_
#define PTOSERVE_SERVER_METRICS_METRICS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/mutex.h"

namespace ptoserve {

// A count that only goes up.
class Counter {
 public:
  void Increment(uint64_t n = 1) {
    value_.fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Observations counted by bucket, and their sum.
class Histogram {
 public:
  // `bounds`: the buckets' upper bounds (inclusive), ascending; a +Inf
  // bucket follows them. The bounds must outlive the histogram.
  explicit Histogram(absl::Span<const double> bounds);

  void Observe(double value);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (the count)
    double sum = 0;
  };
  // The buckets and the sum are read one after the other, not at one
  // instant: a scrape racing an Observe may count it and miss its value in
  // the sum. Rates over many observations do not notice.
  Snapshot Read() const;

 private:
  const absl::Span<const double> bounds_;
  // Not cumulative: Observe touches one bucket, Read adds them up.
  const std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<double> sum_{0};
};

// Label values of one series, in the order of its family's label names.
using LabelValues = std::initializer_list<absl::string_view>;

namespace metrics_internal {

// What the registry holds: a metric that writes its own exposition.
class Metric {
 public:
  virtual ~Metric() = default;
  // Appends `# HELP`, `# TYPE` and one line per sample.
  virtual void Render(std::string* out) const = 0;
};

}  // namespace metrics_internal

// A metric (name, help, label names) and its series, one per combination
// of label values. Series are made at first use and live as long as the
// family, so a reference to one may be kept.
template <typename Series>
class Family final : public metrics_internal::Metric {
 public:
  // `bounds`: histograms only, see MetricsRegistry::AddHistogram; `unit`:
  // counters only, see MetricsRegistry::AddCounter.
  Family(std::string name, std::string help,
         std::vector<std::string> label_names, std::vector<double> bounds = {},
         double unit = 1)
      : name_(std::move(name)),
        help_(std::move(help)),
        label_names_(std::move(label_names)),
        bounds_(std::move(bounds)),
        unit_(unit) {}

  // REQUIRES: one value per label name.
  Series& With(LabelValues values) ABSL_LOCKS_EXCLUDED(mu_);

  // Series in label-value order, so that the text is stable.
  void Render(std::string* out) const override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    std::vector<std::string> values;
    std::unique_ptr<Series> series;
  };

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;
  const double unit_;
  mutable absl::Mutex mu_;
  // Keyed by the label values, each prefixed with its length (so that no
  // two lists share a key).
  absl::flat_hash_map<std::string, Entry> series_ ABSL_GUARDED_BY(mu_);
};

// The two kinds of family (defined in metrics.cc for these two only).
using CounterFamily = Family<Counter>;
using HistogramFamily = Family<Histogram>;

// The metrics of one process, and their text exposition.
class MetricsRegistry {
 public:
  // Each adds a metric named `name` (unique in the registry, matching
  // [a-zA-Z_:][a-zA-Z0-9_:]*) with `help` (one line) and `label_names`.
  // The family lives as long as the registry. A counter counts in steps
  // of `unit` of what its name says: with 1e-9, a ..._seconds_total
  // counter is incremented by nanoseconds and shows seconds.
  CounterFamily* AddCounter(std::string name, std::string help,
                            std::vector<std::string> label_names,
                            double unit = 1) ABSL_LOCKS_EXCLUDED(mu_);
  // `bounds`: the buckets' upper bounds, ascending; +Inf is implied.
  HistogramFamily* AddHistogram(std::string name, std::string help,
                                std::vector<std::string> label_names,
                                std::vector<double> bounds)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A gauge with one series, labelled `labels` (name, value pairs), whose
  // value is whatever `read` returns at scrape time. `read` runs on the
  // scraping thread.
  void AddGauge(std::string name, std::string help,
                std::vector<std::pair<std::string, std::string>> labels,
                std::function<double()> read) ABSL_LOCKS_EXCLUDED(mu_);

  // A counter with one series whose value `read` returns at scrape time,
  // for counts kept elsewhere (the kernel's CPU time of the process).
  void AddCallbackCounter(std::string name, std::string help,
                          std::function<double()> read)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The text exposition of every metric, in the order they were added.
  std::string Render() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<metrics_internal::Metric>> metrics_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_METRICS_METRICS_H_
