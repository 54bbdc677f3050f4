#include "tests/integration/metrics_scrape.h"

#include <civetweb.h>
#include <gtest/gtest.h>
#include <strings.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace ptoserve {

HttpResponse HttpGet(const std::string& url, const std::string& path) {
  const std::string host_port = url.substr(7, url.find('/', 7) - 7);
  const size_t colon = host_port.rfind(':');
  const std::string host = host_port.substr(0, colon);
  int port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(host_port.substr(colon + 1), &port)) << url;
  char error[256] = "";
  mg_connection* connection = mg_download(
      host.c_str(), port, 0, error, sizeof error,
      "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path.c_str(), host_port.c_str());
  HttpResponse response;
  if (connection == nullptr) {
    ADD_FAILURE() << "GET " << url << path << ": " << error;
    return response;
  }
  const mg_response_info* info = mg_get_response_info(connection);
  response.status = info->status_code;
  for (int i = 0; i < info->num_headers; ++i) {
    if (strcasecmp(info->http_headers[i].name, "Content-Type") == 0) {
      response.content_type = info->http_headers[i].value;
    }
  }
  char buf[4096];
  int n;
  while ((n = mg_read(connection, buf, sizeof buf)) > 0) {
    response.body.append(buf, n);
  }
  mg_close_connection(connection);
  return response;
}

std::map<std::string, double> Scrape(const std::string& metrics_url) {
  const HttpResponse r = HttpGet(metrics_url, "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  std::map<std::string, double> samples;
  for (absl::string_view line :
       absl::StrSplit(r.body, '\n', absl::SkipEmpty())) {
    if (line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    double value = 0;
    EXPECT_TRUE(absl::SimpleAtod(line.substr(space + 1), &value)) << line;
    samples[std::string(line.substr(0, space))] = value;
  }
  return samples;
}

double Value(const std::map<std::string, double>& samples,
             const std::string& series) {
  auto it = samples.find(series);
  return it == samples.end() ? 0.0 : it->second;
}

double Delta(const std::map<std::string, double>& before,
             const std::map<std::string, double>& after,
             const std::string& series) {
  return Value(after, series) - Value(before, series);
}

double Sum(const std::map<std::string, double>& samples,
           const std::string& name) {
  double total = 0;
  for (const auto& [series, value] : samples) {
    if (series == name || absl::StartsWith(series, name + "{")) total += value;
  }
  return total;
}

double Sum(const std::map<std::string, double>& samples,
           const std::string& name, const std::string& label) {
  double total = 0;
  for (const auto& [series, value] : samples) {
    if (!absl::StartsWith(series, name + "{")) continue;
    const absl::string_view labels =
        absl::string_view(series).substr(name.size());
    // Whole labels only: `code="OK"` must not match `xcode="OK"`.
    if (absl::StrContains(labels, "{" + label + ",") ||
        absl::StrContains(labels, "," + label + ",") ||
        absl::StrContains(labels, "," + label + "}") ||
        absl::StrContains(labels, "{" + label + "}")) {
      total += value;
    }
  }
  return total;
}

std::map<std::string, double> ScrapeUntil(
    const std::string& metrics_url,
    const std::function<bool(const std::map<std::string, double>&)>& done,
    absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  for (;;) {
    std::map<std::string, double> samples = Scrape(metrics_url);
    if (done(samples) || absl::Now() >= end) return samples;
    absl::SleepFor(absl::Milliseconds(10));
  }
}

}  // namespace ptoserve
