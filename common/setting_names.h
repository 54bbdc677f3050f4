// How the server's messages and metric help name a setting that a user can
// change: by the option's field where the server is embedded
// ("limits.memory_budget_bytes", ServerOptions in server/server.h), by its
// flag where the program named them ("--memory_budget_mb", server/flags.cc,
// the one file that knows the flags). A message says which setting to
// change in the words of whoever started the server.
#ifndef PTOSERVE_COMMON_SETTING_NAMES_H_
#define PTOSERVE_COMMON_SETTING_NAMES_H_

#include <utility>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace ptoserve {

// Each setting a message or a metric's help names. Its default name is in
// setting_names.cc.
enum class Setting {
  kAuthTokenFile,
  kClientMemory,
  kHttpAddress,
  kHttpAllowedHosts,
  kHttpHeadTimeout,
  kHttpMinBodyRate,
  kLogRate,
  kMaxJobBytes,
  kMaxJsonBytes,
  kMaxMessageBytes,
  kMaxSharedRegions,
  kMaxSharedRegionsPerUser,
  kMemoryBudget,
  kMetricsAddress,
  kQueueCapacity,
  kSharedMemory,
  kSharedMemoryPrefix,
  kSharedRegionGrace,
  kStallTimeout,
  kTlsCert,
  kTlsClientCa,
  kTlsClientNames,
  kTlsKey,
  kTrustedProxies,
  kCount,  // not a setting: how many there are
};

// The name of `setting` in messages: what NameSettings last gave it, else
// its option field's path. Safe from any thread.
absl::string_view SettingName(Setting setting);

// Names settings as a program's flags do; the others keep their names.
// Called once at the program's start, before any server (server/flags.cc);
// the names must outlive every server (string literals).
void NameSettings(absl::Span<const std::pair<Setting, const char*>> names);

// Every setting back to its option field's name (for tests).
void ResetSettingNames();

}  // namespace ptoserve

#endif  // PTOSERVE_COMMON_SETTING_NAMES_H_
