#include "server/metrics/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <type_traits>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"

namespace ptoserve {

namespace {

// The shortest text that reads back as `value`, written as Prometheus's Go
// client writes it ("10", "0.0001", "2.5e-06", "+Inf"), since a bucket's
// `le` is compared as text.
std::string FormatNumber(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Whole numbers in full: the general format would write 10 as "1e+01".
  if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  char buf[32];
  const std::to_chars_result r =
      std::to_chars(buf, buf + sizeof buf, value, std::chars_format::general);
  return std::string(buf, r.ptr);
}

// Label values may hold any UTF-8; these three need escaping.
void AppendEscaped(absl::string_view text, bool is_label_value,
                   std::string* out) {
  for (char c : text) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '"' && is_label_value) {
      out->append("\\\"");
    } else {
      out->push_back(c);
    }
  }
}

// `{a="x",b="y"}`, plus `le` for a histogram bucket; nothing when empty.
void AppendLabels(absl::Span<const std::string> names,
                  absl::Span<const std::string> values, const std::string* le,
                  std::string* out) {
  if (names.empty() && le == nullptr) return;
  out->push_back('{');
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out->push_back(',');
    absl::StrAppend(out, names[i], "=\"");
    AppendEscaped(values[i], /*is_label_value=*/true, out);
    out->push_back('"');
  }
  if (le != nullptr) {
    absl::StrAppend(out, names.empty() ? "" : ",", "le=\"", *le, "\"");
  }
  out->push_back('}');
}

void AppendHeader(absl::string_view name, absl::string_view help,
                  absl::string_view type, std::string* out) {
  absl::StrAppend(out, "# HELP ", name, " ");
  AppendEscaped(help, /*is_label_value=*/false, out);
  absl::StrAppend(out, "\n# TYPE ", name, " ", type, "\n");
}

void AppendSamples(absl::string_view name, absl::Span<const std::string> names,
                   absl::Span<const std::string> values, double unit,
                   const Counter& counter, std::string* out) {
  out->append(name.data(), name.size());
  AppendLabels(names, values, nullptr, out);
  if (unit == 1) {
    absl::StrAppend(out, " ", counter.value(), "\n");
  } else {
    // Divided by a whole number where the unit is a fraction (1e-9: by
    // 1e9), so that 250 ns shows as 2.5e-07, not 2.5000000000000004e-07.
    const double value = static_cast<double>(counter.value());
    absl::StrAppend(
        out, " ",
        FormatNumber(unit < 1 ? value / std::round(1 / unit) : value * unit),
        "\n");
  }
}

void AppendSamples(absl::string_view name, absl::Span<const std::string> names,
                   absl::Span<const std::string> values,
                   absl::Span<const double> bounds, const Histogram& histogram,
                   std::string* out) {
  const Histogram::Snapshot snapshot = histogram.Read();
  for (size_t i = 0; i < snapshot.cumulative.size(); ++i) {
    const std::string le = i < bounds.size() ? FormatNumber(bounds[i]) : "+Inf";
    absl::StrAppend(out, name, "_bucket");
    AppendLabels(names, values, &le, out);
    absl::StrAppend(out, " ", snapshot.cumulative[i], "\n");
  }
  absl::StrAppend(out, name, "_sum");
  AppendLabels(names, values, nullptr, out);
  absl::StrAppend(out, " ", FormatNumber(snapshot.sum), "\n");
  absl::StrAppend(out, name, "_count");
  AppendLabels(names, values, nullptr, out);
  absl::StrAppend(out, " ", snapshot.cumulative.back(), "\n");
}

// A gauge read at scrape time.
// A gauge or counter with one series, read at scrape time.
class CallbackMetric final : public metrics_internal::Metric {
 public:
  CallbackMetric(std::string name, std::string help, const char* type,
                 std::vector<std::pair<std::string, std::string>> labels,
                 std::function<double()> read)
      : name_(std::move(name)),
        help_(std::move(help)),
        type_(type),
        read_(std::move(read)) {
    for (auto& [label, value] : labels) {
      label_names_.push_back(std::move(label));
      label_values_.push_back(std::move(value));
    }
  }

  void Render(std::string* out) const override {
    AppendHeader(name_, help_, type_, out);
    out->append(name_);
    AppendLabels(label_names_, label_values_, nullptr, out);
    absl::StrAppend(out, " ", FormatNumber(read_()), "\n");
  }

 private:
  const std::string name_;
  const std::string help_;
  const char* const type_;
  std::vector<std::string> label_names_;
  std::vector<std::string> label_values_;
  const std::function<double()> read_;
};

}  // namespace

Histogram::Histogram(absl::Span<const double> bounds)
    : bounds_(bounds), buckets_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (size_t i = 0; i <= bounds.size(); ++i) buckets_[i] = 0;
}

void Histogram::Observe(double value) {
  // The first bound >= value: buckets count values up to and including it.
  const size_t bucket =
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  // No fetch_add for double before C++20.
  double sum = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(sum, sum + value,
                                     std::memory_order_relaxed)) {
  }
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot snapshot;
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += buckets_[i].load(std::memory_order_relaxed);
    snapshot.cumulative.push_back(total);
  }
  snapshot.sum = sum_.load(std::memory_order_relaxed);
  return snapshot;
}

template <typename Series>
Series& Family<Series>::With(LabelValues values) {
  // On the stack for short values: With runs for every job.
  absl::InlinedVector<char, 96> key;
  for (absl::string_view v : values) {
    const uint32_t size = static_cast<uint32_t>(v.size());
    const char* size_bytes = reinterpret_cast<const char*>(&size);
    key.insert(key.end(), size_bytes, size_bytes + sizeof size);
    key.insert(key.end(), v.begin(), v.end());
  }
  const absl::string_view key_view(key.data(), key.size());
  MutexLock lock(&mu_);
  auto it = series_.find(key_view);
  if (it == series_.end()) {
    Entry entry;
    for (absl::string_view v : values) entry.values.emplace_back(v);
    if constexpr (std::is_same_v<Series, Histogram>) {
      entry.series = std::make_unique<Histogram>(bounds_);
    } else {
      entry.series = std::make_unique<Series>();
    }
    it = series_.emplace(std::string(key_view), std::move(entry)).first;
  }
  return *it->second.series;
}

template <typename Series>
void Family<Series>::Render(std::string* out) const {
  AppendHeader(name_, help_,
               std::is_same_v<Series, Histogram> ? "histogram" : "counter",
               out);
  MutexLock lock(&mu_);
  std::vector<const Entry*> sorted;
  for (const auto& [key, entry] : series_) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
    return a->values < b->values;
  });
  for (const Entry* entry : sorted) {
    if constexpr (std::is_same_v<Series, Histogram>) {
      AppendSamples(name_, label_names_, entry->values, bounds_, *entry->series,
                    out);
    } else {
      AppendSamples(name_, label_names_, entry->values, unit_, *entry->series,
                    out);
    }
  }
}

template class Family<Counter>;
template class Family<Histogram>;

CounterFamily* MetricsRegistry::AddCounter(std::string name, std::string help,
                                           std::vector<std::string> label_names,
                                           double unit) {
  auto family = std::make_unique<CounterFamily>(
      std::move(name), std::move(help), std::move(label_names),
      std::vector<double>{}, unit);
  CounterFamily* raw = family.get();
  MutexLock lock(&mu_);
  metrics_.push_back(std::move(family));
  return raw;
}

HistogramFamily* MetricsRegistry::AddHistogram(
    std::string name, std::string help, std::vector<std::string> label_names,
    std::vector<double> bounds) {
  auto family = std::make_unique<HistogramFamily>(
      std::move(name), std::move(help), std::move(label_names),
      std::move(bounds));
  HistogramFamily* raw = family.get();
  MutexLock lock(&mu_);
  metrics_.push_back(std::move(family));
  return raw;
}

void MetricsRegistry::AddGauge(
    std::string name, std::string help,
    std::vector<std::pair<std::string, std::string>> labels,
    std::function<double()> read) {
  auto gauge = std::make_unique<CallbackMetric>(
      std::move(name), std::move(help), "gauge", std::move(labels),
      std::move(read));
  MutexLock lock(&mu_);
  metrics_.push_back(std::move(gauge));
}

void MetricsRegistry::AddCallbackCounter(std::string name, std::string help,
                                         std::function<double()> read) {
  auto counter = std::make_unique<CallbackMetric>(
      std::move(name), std::move(help), "counter",
      std::vector<std::pair<std::string, std::string>>{}, std::move(read));
  MutexLock lock(&mu_);
  metrics_.push_back(std::move(counter));
}

std::string MetricsRegistry::Render() const {
  std::string out;
  MutexLock lock(&mu_);
  for (const auto& metric : metrics_) metric->Render(&out);
  return out;
}

}  // namespace ptoserve
