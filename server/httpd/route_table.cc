#include "server/httpd/route_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ptoserve {

absl::string_view RouteMatch::param(absl::string_view name) const {
  for (const auto& [key, value] : params) {
    if (key == name) return value;
  }
  return {};
}

RouteTable::RouteTable(std::vector<HttpRoute> routes)
    : routes_(std::move(routes)) {}

bool RouteTable::Matches(absl::string_view pattern, absl::string_view path,
                         RouteParams* params) {
  params->clear();
  // Segment by segment: a literal one matches itself, "{name}" any
  // non-empty segment.
  while (!pattern.empty() || !path.empty()) {
    if (pattern.empty() || path.empty() || pattern[0] != '/' ||
        path[0] != '/') {
      return false;
    }
    pattern.remove_prefix(1);
    path.remove_prefix(1);
    const size_t pattern_end = std::min(pattern.find('/'), pattern.size());
    const size_t path_end = std::min(path.find('/'), path.size());
    const absl::string_view want = pattern.substr(0, pattern_end);
    const absl::string_view got = path.substr(0, path_end);
    if (want.size() > 2 && want.front() == '{' && want.back() == '}') {
      if (got.empty()) return false;
      params->emplace_back(want.substr(1, want.size() - 2), got);
    } else if (want != got) {
      return false;
    }
    pattern.remove_prefix(pattern_end);
    path.remove_prefix(path_end);
  }
  return true;
}

RouteMatch RouteTable::Find(absl::string_view method,
                            absl::string_view path) const {
  RouteMatch match;
  RouteParams params;
  std::vector<absl::string_view> allowed;
  for (const HttpRoute& route : routes_) {
    if (!Matches(route.pattern, path, &params)) continue;
    if (match.named == nullptr) match.named = &route;
    const absl::string_view takes = route.method;
    if (method == takes || (takes == "GET" && method == "HEAD")) {
      match.route = &route;
      match.params = std::move(params);
      match.allow.clear();
      return match;
    }
    allowed.push_back(takes);
  }
  match.allow = absl::StrJoin(allowed, ", ");
  return match;
}

const HttpRoute* RouteTable::Named(absl::string_view path) const {
  RouteParams params;
  for (const HttpRoute& route : routes_) {
    if (Matches(route.pattern, path, &params)) return &route;
  }
  return nullptr;
}

std::string RouteTable::Listing() const {
  std::string listing;
  for (const HttpRoute& route : routes_) {
    if (!route.listed) continue;
    absl::StrAppend(&listing, listing.empty() ? "" : ", ", route.method, " ",
                    route.pattern);
  }
  return listing;
}

}  // namespace ptoserve
