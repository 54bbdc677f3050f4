#include "tests/integration/metrics_scrape.h"

#include <gtest/gtest.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace ptoserve {

HttpResponse HttpGet(const std::string& url, const std::string& path) {
  const std::string host_port = url.substr(7, url.find('/', 7) - 7);
  const size_t colon = host_port.rfind(':');
  const std::string host = host_port.substr(0, colon);
  HttpResponse response;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), host_port.substr(colon + 1).c_str(), &hints,
                  &found) != 0) {
    ADD_FAILURE() << "GET " << url << path << ": cannot resolve " << host;
    return response;
  }
  const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  // Every read and write ends by itself.
  const timeval bound{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
  const bool connected =
      fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0;
  freeaddrinfo(found);
  if (!connected) {
    ADD_FAILURE() << "GET " << url << path << ": cannot connect";
    if (fd >= 0) close(fd);
    return response;
  }
  // HTTP/1.0: the answer ends when the server closes the connection.
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", host_port, "\r\n\r\n");
  std::string answer;
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) answer.append(buf, n);
  }
  close(fd);
  const size_t head_end = answer.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    ADD_FAILURE() << "GET " << url << path << ": no answer";
    return response;
  }
  std::vector<absl::string_view> head =
      absl::StrSplit(absl::string_view(answer).substr(0, head_end), "\r\n");
  // "HTTP/1.1 200 OK"
  std::vector<absl::string_view> status = absl::StrSplit(head[0], ' ');
  if (status.size() < 2 || !absl::SimpleAtoi(status[1], &response.status)) {
    ADD_FAILURE() << "GET " << url << path << ": " << head[0];
  }
  for (size_t i = 1; i < head.size(); ++i) {
    const size_t sep = head[i].find(':');
    if (sep != absl::string_view::npos &&
        absl::EqualsIgnoreCase(head[i].substr(0, sep), "Content-Type")) {
      response.content_type =
          std::string(absl::StripAsciiWhitespace(head[i].substr(sep + 1)));
    }
  }
  response.body = answer.substr(head_end + 4);
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
