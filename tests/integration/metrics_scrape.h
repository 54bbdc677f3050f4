// Reading a server's Prometheus endpoint from a test: GET over HTTP (with
// a plain socket), every sample of a scrape, and what changed between
// two.
#ifndef PTOSERVE_TESTS_INTEGRATION_METRICS_SCRAPE_H_
#define PTOSERVE_TESTS_INTEGRATION_METRICS_SCRAPE_H_

#include <functional>
#include <map>
#include <string>

#include "absl/time/time.h"

namespace ptoserve {

struct HttpResponse {
  int status = 0;  // 0: no answer (the test has failed already)
  std::string content_type;
  std::string body;
};

// GET `path` from the host and port of `url` ("http://IP:PORT/..."); a
// failure to connect fails the test.
HttpResponse HttpGet(const std::string& url, const std::string& path);

// Every sample of a scrape of `metrics_url`: `name{labels}` -> value. Fails
// the test if the endpoint does not answer 200 in the exposition format.
std::map<std::string, double> Scrape(const std::string& metrics_url);

// `series` in `samples` (0 when absent).
double Value(const std::map<std::string, double>& samples,
             const std::string& series);

// How much `series` grew from `before` to `after`.
double Delta(const std::map<std::string, double>& before,
             const std::map<std::string, double>& after,
             const std::string& series);

// The sum of every series of metric `name` (each label set) in `samples`.
double Sum(const std::map<std::string, double>& samples,
           const std::string& name);

// The same over the series whose labels include `label` (`code="OK"`).
double Sum(const std::map<std::string, double>& samples,
           const std::string& name, const std::string& label);

// Scrapes `metrics_url` every 10 ms until `done` holds for the samples or
// `timeout` passes; returns the last scrape. For waiting on the server's
// own account of what happened, rather than on a guess of how long it takes.
std::map<std::string, double> ScrapeUntil(
    const std::string& metrics_url,
    const std::function<bool(const std::map<std::string, double>&)>& done,
    absl::Duration timeout = absl::Seconds(10));

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_INTEGRATION_METRICS_SCRAPE_H_
