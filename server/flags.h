// ptoserve's command line: every flag of the server (defined in
// server/flags.cc, the file --help lists), checked together, and read into
// the options the server is started with.
#ifndef PTOSERVE_SERVER_FLAGS_H_
#define PTOSERVE_SERVER_FLAGS_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "server/log/log.h"
#include "server/server.h"

namespace ptoserve {

// The file that defines the flags: --help lists the flags it defines.
inline constexpr char kFlagsFile[] = "server/flags.cc";

// What no flag's own type checks: names that must be one of a set, flags
// that must agree, durations. Any of it stops the server with exit status
// 2 before anything starts.
std::vector<std::string> FlagErrors();

// What the flags describe, once FlagErrors has nothing to say: the server
// (each flag into its one field), its log, and its shutdown.
ServerOptions OptionsFromFlags();
// From here on, messages and metric help name each setting by its flag
// ("--memory_budget_mb") instead of its option field (common/setting_names.h).
void NameSettingsByFlags();
LogOptions LogOptionsFromFlags();
// Server::ServeUntilSignalled's times.
struct ShutdownTimes {
  absl::Duration grace = absl::Seconds(10);            // --shutdown_grace
  absl::Duration lame_duck = absl::Milliseconds(250);  // --lame_duck
  absl::Duration delay = absl::ZeroDuration();         // --shutdown_delay
};
ShutdownTimes ShutdownFromFlags();

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_FLAGS_H_
