// Report: one point's figures as --format asks, text for a reader or a line
// of csv or json for a script, and the csv header.
#ifndef PTOSERVE_BENCH_REPORT_H_
#define PTOSERVE_BENCH_REPORT_H_

#include "bench/measure.h"
#include "bench/settings.h"

namespace ptoserve {
namespace ptobench {

// The csv header line, naming the columns Report's csv line fills.
void PrintCsvHeader();

// Prints `point`'s requests/s, tiles/s, latency percentiles and errors,
// with what was measured, on stdout, and flushes it.
void Report(const Settings& settings, const Point& point);

}  // namespace ptobench
}  // namespace ptoserve

#endif  // PTOSERVE_BENCH_REPORT_H_
