#include "bench/report.h"

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/json_quote.h"
#include "core/quote.h"

namespace ptoserve {
namespace ptobench {

namespace {

// The element at fraction `p` of `sorted`, the nearest rank; 0 for none.
int64_t Percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p * (sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

// What every format prints of a point.
struct Figures {
  double seconds;         // measured
  double requests_per_s;  // messages answered (a batch counts once)
  double tiles_per_s;     // jobs answered right
  double p50_us, p90_us, p99_us, max_us;
  int64_t errors;
};

// `point`'s figures over the measured settings.duration.
Figures FiguresOf(const Settings& settings, const Point& point) {
  const Tally& all = point.tally;
  const auto us = [&](double p) {
    return Percentile(all.latency_ns, p) / 1000.0;
  };
  Figures f;
  f.seconds = absl::ToDoubleSeconds(settings.duration);
  f.requests_per_s = all.messages / f.seconds;
  f.tiles_per_s = all.done / f.seconds;
  f.p50_us = us(0.5);
  f.p90_us = us(0.9);
  f.p99_us = us(0.99);
  f.max_us = us(1.0);
  f.errors = point.errors();
  return f;
}

// At a rate there is no fixed concurrency: csv says 0, json gives the rate.
int ShownConcurrency(const Point& point) {
  return point.rate > 0 ? 0 : point.concurrency;
}

// One line of the columns PrintCsvHeader names.
void PrintCsv(const Settings& settings, const Point& point, const Figures& f) {
  std::cout << absl::StrFormat(
      "%s,%s,%d,%s,%s,%s,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%d\n", settings.label,
      settings.mode, ShownConcurrency(point), settings.opcode, settings.shape,
      settings.dtype, f.requests_per_s, f.tiles_per_s, f.p50_us, f.p90_us,
      f.p99_us, f.max_us, f.errors);
}

// One object on one line: the figures, what was measured, and the errors
// by kind.
void PrintJson(const Settings& settings, const Point& point, const Figures& f) {
  std::string by_error;
  for (auto& [error, n] : point.tally.errors) {
    absl::StrAppend(&by_error, by_error.empty() ? "" : ",", JsonQuote(error),
                    ":", n);
  }
  std::cout << absl::StrFormat(
      "{\"label\":%s,\"mode\":%s,\"concurrency\":%d,\"rate\":%.1f,"
      "\"threads\":%d,\"connections\":%d,\"stream_depth\":%d,\"batch\":%d,"
      "\"shm\":%s,\"opcode\":%s,\"shape\":%s,\"dtype\":%s,\"target\":%s,"
      "\"seconds\":%.3f,\"requests_per_s\":%.1f,\"tiles_per_s\":%.1f,"
      "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,"
      "\"max_in_flight\":%d,\"errors\":%d,\"errors_by_kind\":{%s}}\n",
      JsonQuote(settings.label), JsonQuote(settings.mode),
      ShownConcurrency(point), point.rate, point.threads, point.connections,
      point.stream ? point.stream_depth : 0, point.batch,
      point.shm ? "true" : "false", JsonQuote(settings.opcode),
      JsonQuote(settings.shape), JsonQuote(settings.dtype),
      JsonQuote(settings.target), f.seconds, f.requests_per_s, f.tiles_per_s,
      f.p50_us, f.p90_us, f.p99_us, f.max_us, point.tally.max_in_flight,
      f.errors, by_error);
}

// Four lines: what was measured, throughput, latency, errors.
void PrintText(const Settings& settings, const Point& point, const Figures& f) {
  std::string error_text;
  for (auto& [error, n] : point.tally.errors) {
    absl::StrAppend(&error_text, error_text.empty() ? "" : "; ", n, " x ",
                    error);
  }
  std::cout << absl::StrFormat(
      "%s%s %s %s %s on %s, %s%s, %d thread%s, %d connection%s, %.1f s "
      "measured\n"
      "requests/s %.1f  tiles/s %.1f\n"
      "latency us: p50 %.1f  p90 %.1f  p99 %.1f  max %.1f\n"
      "errors: %s\n",
      settings.mode, point.shm ? " shm" : "", settings.opcode, settings.shape,
      settings.dtype, settings.target,
      point.rate > 0 ? absl::StrFormat("rate %.1f/s", point.rate)
                     : absl::StrCat("concurrency ", point.concurrency),
      point.stream ? absl::StrCat(", depth ", point.stream_depth) : "",
      point.threads, point.threads == 1 ? "" : "s", point.connections,
      point.connections == 1 ? "" : "s", f.seconds, f.requests_per_s,
      f.tiles_per_s, f.p50_us, f.p90_us, f.p99_us, f.max_us,
      f.errors == 0 ? "none" : absl::StrCat(f.errors, " (", error_text, ")"));
}

}  // namespace

void PrintCsvHeader() {
  std::cout << "label,mode,concurrency,opcode,shape,dtype,requests_per_s,"
               "tiles_per_s,p50_us,p90_us,p99_us,max_us,errors\n";
}

void Report(const Settings& settings, const Point& point) {
  const Figures figures = FiguresOf(settings, point);
  if (settings.format == "csv") {
    PrintCsv(settings, point, figures);
  } else if (settings.format == "json") {
    PrintJson(settings, point, figures);
  } else {
    PrintText(settings, point, figures);
  }
  std::cout.flush();
}

}  // namespace ptobench
}  // namespace ptoserve
