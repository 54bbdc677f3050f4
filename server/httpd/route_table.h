// An HTTP endpoint's routes as one table: each a method and a path pattern
// whose segments in braces ("/v2/models/{model}/infer") match any one
// non-empty segment and are handed to its handler by name. The same table
// answers which route a request is, what a path that is no route should
// have been (the 404's list), and which methods a path takes (the 405's
// Allow). Metrics and logs name a route by its pattern, never by the path
// a client sent: their labels stay few whatever clients send.
#ifndef PTOSERVE_SERVER_HTTPD_ROUTE_TABLE_H_
#define PTOSERVE_SERVER_HTTPD_ROUTE_TABLE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"

namespace ptoserve {

// One row: `id` is the endpoint's own name for it (an enum's value).
struct HttpRoute {
  int id;
  const char* method;   // "GET" (which takes HEAD too), "POST"
  const char* pattern;  // "/v1/health", "/v2/models/{model}/ready"
  // Whether a 404's list names it (a variant of a listed route, or a path
  // answered only to say it is not served, need not be).
  bool listed = true;
};

// The parameters a pattern's braces matched, by name, views into the path.
using RouteParams =
    absl::InlinedVector<std::pair<absl::string_view, absl::string_view>, 2>;

// What a request is, by its method and path.
struct RouteMatch {
  // The route: the first row whose pattern matches the path and whose
  // method is the request's. Null when none is: then `allow` lists the
  // methods of the rows whose pattern matches ("GET, POST"; empty: the path
  // is no route's, 404; else 405).
  const HttpRoute* route = nullptr;
  // The first row whose pattern matches, whatever its method (Named's
  // answer, found in the same pass): what names the request in metrics and
  // logs. Null: the path is no route's.
  const HttpRoute* named = nullptr;
  std::string allow;
  RouteParams params;
  // The parameter named `name`, or "".
  absl::string_view param(absl::string_view name) const;
};

class RouteTable {
 public:
  explicit RouteTable(std::vector<HttpRoute> routes);

  RouteMatch Find(absl::string_view method, absl::string_view path) const;
  // The row whose pattern matches `path`, whatever its method (the first),
  // or null: what names a request in metrics and logs.
  const HttpRoute* Named(absl::string_view path) const;
  // Every listed route, "GET /, POST /v1/jobs:execute, ...", for a 404's
  // message.
  std::string Listing() const;

 private:
  static bool Matches(absl::string_view pattern, absl::string_view path,
                      RouteParams* params);

  const std::vector<HttpRoute> routes_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_HTTPD_ROUTE_TABLE_H_
