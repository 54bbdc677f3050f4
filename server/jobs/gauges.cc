#include "server/jobs/gauges.h"

#include "absl/strings/str_cat.h"
#include "common/setting_names.h"

namespace ptoserve {

void AddMemoryBudgetGauges(const MemoryBudget* budget,
                           MetricsRegistry* registry) {
  registry->AddGauge(
      "ptoserve_memory_budget_bytes",
      absl::StrCat("The memory jobs in flight may hold together (",
                   SettingName(Setting::kMemoryBudget), ")."),
      {}, [budget] { return static_cast<double>(budget->limit()); });
  registry->AddGauge(
      "ptoserve_memory_held_bytes",
      "The memory jobs in flight hold now, as admission counts it.", {},
      [budget] { return static_cast<double>(budget->held()); });
  registry->AddGauge(
      "ptoserve_memory_client_limit_bytes",
      absl::StrCat("The most of the budget one client may hold (",
                   SettingName(Setting::kClientMemory), ")."),
      {}, [budget] { return static_cast<double>(budget->client_limit()); });
  registry->AddGauge(
      "ptoserve_memory_clients",
      "Clients (bearer tokens, or else connections) with calls holding "
      "memory.",
      {}, [budget] { return static_cast<double>(budget->clients()); });
  registry->AddGauge(
      "ptoserve_memory_client_held_max_bytes",
      "What the client holding the most holds now.", {},
      [budget] { return static_cast<double>(budget->largest_share_held()); });
  registry->AddCallbackCounter(
      "ptoserve_memory_refused_budget_total",
      "Jobs and requests refused because the whole budget was full.",
      [budget] { return static_cast<double>(budget->refused_full()); });
  registry->AddCallbackCounter(
      "ptoserve_memory_refused_client_total",
      "Jobs and requests refused because their client's share was full.",
      [budget] { return static_cast<double>(budget->refused_share()); });
}

void AddSchedulerGauges(const Scheduler* scheduler, MetricsRegistry* registry) {
  registry->AddGauge(
      "ptoserve_queue_depth",
      absl::StrCat("Instructions admitted and not yet run (at most ",
                   SettingName(Setting::kQueueCapacity), ")."),
      {}, [scheduler] { return static_cast<double>(scheduler->queued()); });
  registry->AddGauge(
      "ptoserve_jobs_in_flight", "Jobs admitted and not yet answered.", {},
      [scheduler] { return static_cast<double>(scheduler->jobs_in_flight()); });
  registry->AddGauge(
      "ptoserve_scheduler_clients",
      "Clients with jobs in the scheduler, who share its workers fairly.", {},
      [scheduler] { return static_cast<double>(scheduler->active_clients()); });
  registry->AddGauge(
      "ptoserve_scheduler_largest_lead_seconds",
      "How much more worker time the client furthest ahead has used than "
      "the client served last: its work waits behind the others' that long.",
      {},
      [scheduler] { return absl::ToDoubleSeconds(scheduler->largest_lead()); });
}

void AddSharedMemoryGauges(const SharedMemoryRegistry* shared,
                           MetricsRegistry* registry) {
  registry->AddGauge(
      "ptoserve_shared_memory_regions",
      absl::StrCat("Shared-memory regions registered now (at most ",
                   SettingName(Setting::kMaxSharedRegions), ")."),
      {}, [shared] { return static_cast<double>(shared->regions()); });
  registry->AddCallbackCounter(
      "ptoserve_shared_memory_leases_expired_total",
      absl::StrCat("Shared-memory regions unregistered because the "
                   "connection that registered them closed ",
                   SettingName(Setting::kSharedRegionGrace), " before."),
      [shared] { return static_cast<double>(shared->leases_expired()); });
  registry->AddGauge(
      "ptoserve_shared_memory_mapped_bytes",
      "Bytes of shared memory mapped: regions registered, and unregistered "
      "ones that jobs still use. They count against the memory budget.",
      {}, [shared] { return static_cast<double>(shared->mapped_bytes()); });
}

}  // namespace ptoserve
