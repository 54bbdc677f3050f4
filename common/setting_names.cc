#include "common/setting_names.h"

#include <array>
#include <atomic>

namespace ptoserve {
namespace {

constexpr size_t kSettings = static_cast<size_t>(Setting::kCount);

// Each setting's option field in ServerOptions (or LogOptions), in the
// enum's order.
constexpr std::array<const char*, kSettings> kFieldNames = {
    "auth_token_file",
    "limits.client_memory_bytes",
    "http.address",
    "http.allowed_hosts",
    "http.head_timeout",
    "http.min_body_rate",
    "LogOptions.lines_per_second",
    "limits.max_job_bytes",
    "limits.max_json_bytes",
    "limits.max_message_bytes",
    "shared_memory.max_regions",
    "shared_memory.max_regions_per_user",
    "limits.memory_budget_bytes",
    "metrics.address",
    "scheduling.queue_capacity",
    "shared_memory.enabled",
    "shared_memory.key_prefix",
    "shared_memory.lease_grace",
    "limits.stall_timeout",
    "tls.cert",
    "tls.client_ca",
    "tls_client_names",
    "tls.key",
    "trusted_proxies",
};

// Read by every thread that writes a message; written at the program's
// start. Atomic so that a test naming them beside a running server is
// still defined.
std::array<std::atomic<const char*>, kSettings>& Names() {
  static auto* names = [] {
    auto* n = new std::array<std::atomic<const char*>, kSettings>;
    for (size_t i = 0; i < kSettings; ++i) (*n)[i].store(kFieldNames[i]);
    return n;
  }();
  return *names;
}

}  // namespace

absl::string_view SettingName(Setting setting) {
  const size_t i = static_cast<size_t>(setting);
  if (i >= kSettings) return "an unknown setting";
  return Names()[i].load(std::memory_order_acquire);
}

void NameSettings(absl::Span<const std::pair<Setting, const char*>> names) {
  for (const auto& [setting, name] : names) {
    const size_t i = static_cast<size_t>(setting);
    if (i < kSettings) Names()[i].store(name, std::memory_order_release);
  }
}

void ResetSettingNames() {
  for (size_t i = 0; i < kSettings; ++i) {
    Names()[i].store(kFieldNames[i], std::memory_order_release);
  }
}

}  // namespace ptoserve
