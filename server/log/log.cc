#include "server/log/log.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/json_quote.h"
#include "common/setting_names.h"
#include "server/identity/socket_owner.h"

namespace ptoserve {

namespace {

absl::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

// `peer` as a reader knows it: "fd:N" (gRPC's name for a connection
// handed to it by descriptor) as the address at the descriptor's far end.
std::string Readable(absl::string_view peer) {
  int fd = -1;
  if (!absl::ConsumePrefix(&peer, "fd:") || !absl::SimpleAtoi(peer, &fd)) {
    return std::string(peer);
  }
  std::string name = PeerName(fd);
  return name.empty() ? absl::StrCat("fd:", fd) : name;
}

// Whose rate a call's line spends: its client as the shares know it, else
// its address without the port.
std::string RateKey(const CallLine& call, absl::string_view peer) {
  if (!call.client.empty()) return std::string(call.client);
  return std::string(peer.substr(0, peer.rfind(':')));
}

}  // namespace

Log& Log::Get() {
  static Log* log = new Log();
  return *log;
}

void Log::Configure(const LogOptions& options) {
  threshold_.store(static_cast<int>(options.level), std::memory_order_relaxed);
  json_.store(options.json, std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  rate_ = std::max(1.0, options.lines_per_second);
  rates_.clear();
}

std::string Log::JsonHead(LogLevel level, absl::string_view event) const {
  return absl::StrCat("{\"time\": \"",
                      absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(),
                                       absl::UTCTimeZone()),
                      "\", \"level\": \"", LevelName(level),
                      "\", \"event\": ", JsonQuote(event));
}

void Log::Say(LogLevel level, absl::string_view event, absl::string_view text) {
  if (!Enabled(level)) return;
  // gRPC's own lines below a warning are mostly a client's doing (a failed
  // handshake, a reset): they share one rate. The server's are all written.
  const absl::string_view who =
      event == "grpc" && level < LogLevel::kWarning ? "gRPC" : "";
  if (!json_.load(std::memory_order_relaxed)) {
    return Write(who, LineSafe(text));
  }
  Write(who, absl::StrCat(JsonHead(level, event),
                          ", \"message\": ", JsonQuote(text), "}"));
}

void Log::Called(const CallLine& call) {
  const LogLevel level = LevelOf(call);
  if (!Enabled(level)) return;
  const double ms = absl::ToDoubleMilliseconds(call.took);
  const std::string peer = Readable(call.peer);
  // A warning (the server's own failure) is always written.
  const std::string who =
      level >= LogLevel::kWarning ? "" : RateKey(call, peer);
  if (json_.load(std::memory_order_relaxed)) {
    std::string line = absl::StrCat(JsonHead(level, "call"),
                                    ", \"door\": ", JsonQuote(call.door),
                                    ", \"method\": ", JsonQuote(call.method),
                                    ", \"peer\": ", JsonQuote(peer));
    if (!call.client.empty()) {
      absl::StrAppend(&line, ", \"client\": ", JsonQuote(call.client));
    }
    absl::StrAppend(&line, ", \"code\": ", JsonQuote(call.code),
                    absl::StrFormat(", \"duration_ms\": %.3f", ms),
                    ", \"bytes_in\": ", call.bytes_in,
                    ", \"bytes_out\": ", call.bytes_out);
    if (!call.message.empty()) {
      absl::StrAppend(&line, ", \"message\": ", JsonQuote(call.message));
    }
    return Write(who, line + "}");
  }
  std::string line =
      absl::StrCat("ptoserve: ", call.door, " ", LineSafe(call.method),
                   " from ", LineSafe(peer));
  if (!call.client.empty()) {
    absl::StrAppend(&line, " (", LineSafe(call.client), ")");
  }
  absl::StrAppend(&line, ": ", LineSafe(call.code),
                  absl::StrFormat(" in %.3f ms, ", ms), call.bytes_in,
                  " bytes in, ", call.bytes_out, " out");
  if (!call.message.empty()) {
    absl::StrAppend(&line, ": ", LineSafe(call.message));
  }
  Write(who, line);
}

Log::Rate& Log::RateOf(absl::string_view who, absl::Time now) {
  auto it = rates_.find(who);
  if (it == rates_.end()) {
    if (rates_.size() >= kMaxRates) {
      // Forget the clients that have said nothing for a second (their
      // bucket is full again) and have no drops to tell.
      for (auto i = rates_.begin(); i != rates_.end();) {
        auto at = i++;
        if (at->second.unsaid == 0 &&
            now - at->second.refilled >= absl::Seconds(1)) {
          rates_.erase(at);
        }
      }
    }
    if (rates_.size() >= kMaxRates) who = "other clients";
    it = rates_.try_emplace(who, Rate{rate_, now, 0}).first;
  }
  Rate& rate = it->second;
  rate.tokens = std::min(
      rate_, rate.tokens + absl::ToDoubleSeconds(now - rate.refilled) * rate_);
  rate.refilled = now;
  return rate;
}

void Log::Write(absl::string_view who, const std::string& line) {
  absl::MutexLock lock(&mu_);
  if (who.empty()) {
    std::cout << line << std::endl;
    return;
  }
  Rate& rate = RateOf(who, absl::Now());
  if (rate.tokens < 1) {
    ++rate.unsaid;
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  rate.tokens -= 1;
  if (rate.unsaid > 0) {
    const std::string note = absl::StrCat(
        rate.unsaid, " log lines dropped: more than ",
        SettingName(Setting::kLogRate), "=", rate_, " a second from ", who);
    if (json_.load(std::memory_order_relaxed)) {
      std::cout << JsonHead(LogLevel::kWarning, "dropped")
                << ", \"dropped\": " << rate.unsaid
                << ", \"message\": " << JsonQuote(note) << "}\n";
    } else {
      std::cout << "ptoserve: " << LineSafe(note) << "\n";
    }
    rate.unsaid = 0;
  }
  std::cout << line << std::endl;
}

}  // namespace ptoserve
