// What the server says, on standard output, a line at a time: its start-up
// and shutdown, and one line for each call it answers, on every door (a
// gRPC method, an HTTP route): who called (peer and client), the code, how
// long it took, the bytes each way, and an error's message. Text, or one
// JSON object a line (--log_format=json); at --log_level and above: a call
// answered OK is `debug`, one answered with an error `info` (`warning` for
// the server's own failures: INTERNAL, UNKNOWN, DATA_LOSS). Every text a
// client gave (a method, a name in an error) is escaped where it is
// written: one line a record, valid UTF-8, and in JSON valid JSON.
// Each client's calls (the client as the shares know it, else its address)
// get at most --log_rate lines a second: one client's flood of bad
// requests does not become a flood of writes, nor silence another's. The
// server's own lines (start-up, shutdown) and warnings are never dropped;
// gRPC's own lines share one rate. The lines past it are counted
// (ptoserve_log_lines_dropped_total), and how many of a client's were
// dropped is said once its rate allows a line again.
#ifndef PTOSERVE_SERVER_LOG_LOG_H_
#define PTOSERVE_SERVER_LOG_LOG_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace ptoserve {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

struct LogOptions {
  LogLevel level = LogLevel::kInfo;  // --log_level
  bool json = false;                 // --log_format=json
  double lines_per_second = 100;     // --log_rate, per client; the burst
};

// One call answered, as its door tells it.
struct CallLine {
  absl::string_view door;    // "grpc" or "http"
  absl::string_view method;  // "/ptoserve.v1.TileCompute/Execute", "/v1/health"
  // "ipv4:127.0.0.1:40112"; gRPC's "fd:N" (a connection the server's own
  // listener accepted) is written as the descriptor's far end.
  absl::string_view peer;
  absl::string_view client;  // "user 1000", "token 2"; empty: none named
  // gRPC's status code name, or the HTTP status as digits.
  absl::string_view code;
  bool ok = true;
  bool server_fault = false;  // the server's own failure, not the caller's
  absl::string_view message;  // an error's
  absl::Duration took;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

class Log {
 public:
  // The process's log; its options are main's (defaults otherwise).
  static Log& Get();

  void Configure(const LogOptions& options) ABSL_LOCKS_EXCLUDED(mu_);

  // Whether a line of `level` would be written (before the rate): cheap,
  // for a caller to skip making a line.
  bool Enabled(LogLevel level) const {
    return static_cast<int>(level) >=
           threshold_.load(std::memory_order_relaxed);
  }
  // The level a call's line is written at.
  static LogLevel LevelOf(const CallLine& call) {
    return call.ok             ? LogLevel::kDebug
           : call.server_fault ? LogLevel::kWarning
                               : LogLevel::kInfo;
  }

  // A line of the server's own: `event` names it in JSON ("start",
  // "stop"); in text it is `text` alone, as the docs show it.
  void Say(LogLevel level, absl::string_view event, absl::string_view text)
      ABSL_LOCKS_EXCLUDED(mu_);
  // One call answered.
  void Called(const CallLine& call) ABSL_LOCKS_EXCLUDED(mu_);

  // Lines not written because the rate was spent, so far.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

  // Clients with a rate of their own at most; past it, new ones share one.
  static constexpr size_t kMaxRates = 1024;

 private:
  // One client's lines: a token bucket of --log_rate.
  struct Rate {
    double tokens = 0;
    absl::Time refilled = absl::InfinitePast();
    uint64_t unsaid = 0;  // dropped since its last line
  };

  Log() = default;
  // Writes `line` (and, first, how many of `who`'s were dropped) if `who`'s
  // rate allows; `who` empty: always.
  void Write(absl::string_view who, const std::string& line)
      ABSL_LOCKS_EXCLUDED(mu_);
  // `who`'s rate, made or refilled to `now`.
  Rate& RateOf(absl::string_view who, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The JSON fields every line starts with.
  std::string JsonHead(LogLevel level, absl::string_view event) const;

  std::atomic<int> threshold_{static_cast<int>(LogLevel::kInfo)};
  std::atomic<bool> json_{false};
  std::atomic<uint64_t> dropped_{0};
  absl::Mutex mu_;
  double rate_ ABSL_GUARDED_BY(mu_) = 100;
  absl::flat_hash_map<std::string, Rate> rates_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_LOG_LOG_H_
