// ptoserve's flags against ServerOptions{}: every default is written twice
// (the flag's, the field's), and this fails when the two differ, so that
// an embedded server and the program start alike. The few that differ on
// purpose are named, with why.
#include "server/flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>

#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "common/setting_names.h"

namespace ptoserve {
namespace {

// The program's messages name its flags: every setting a message names is
// named by a flag that exists, each by its own.
TEST(FlagsTest, MessagesNameSettingsByTheirFlags) {
  ResetSettingNames();
  EXPECT_EQ(SettingName(Setting::kMemoryBudget), "limits.memory_budget_bytes");
  NameSettingsByFlags();
  std::set<std::string> names;
  for (int i = 0; i < static_cast<int>(Setting::kCount); ++i) {
    const std::string name(SettingName(static_cast<Setting>(i)));
    SCOPED_TRACE(name);
    ASSERT_TRUE(absl::StartsWith(name, "--"));
    EXPECT_NE(absl::FindCommandLineFlag(name.substr(2)), nullptr);
    EXPECT_TRUE(names.insert(name).second) << "named twice";
  }
  EXPECT_EQ(SettingName(Setting::kMemoryBudget), "--memory_budget_mb");
  ResetSettingNames();
}

TEST(FlagsTest, EveryDefaultIsItsFieldsDefault) {
  ASSERT_THAT(FlagErrors(), ::testing::IsEmpty());
  const ServerOptions flags = OptionsFromFlags();
  const ServerOptions fields;
#define PTOSERVE_SAME(field) EXPECT_EQ(flags.field, fields.field) << #field
  PTOSERVE_SAME(grpc.address);
  PTOSERVE_SAME(grpc.handshake_timeout);
  PTOSERVE_SAME(grpc.max_connection_idle);
  PTOSERVE_SAME(grpc.http2_window_bytes);
  PTOSERVE_SAME(grpc.max_connections_per_client);
  PTOSERVE_SAME(grpc.max_connections);
  PTOSERVE_SAME(http.threads);
  PTOSERVE_SAME(http.max_connections);
  PTOSERVE_SAME(http.max_connections_per_client);
  PTOSERVE_SAME(http.idle_timeout);
  PTOSERVE_SAME(http.head_timeout);
  PTOSERVE_SAME(http.min_body_rate);
  PTOSERVE_SAME(http.allowed_hosts);
  PTOSERVE_SAME(engine.default_target);
  PTOSERVE_SAME(engine.host_buffer_bytes);
  PTOSERVE_SAME(engine.limits.max_tile_bytes);
  PTOSERVE_SAME(engine.limits.max_tiles_per_job);
  PTOSERVE_SAME(engine.limits.max_instructions_per_job);
  PTOSERVE_SAME(engine.limits.max_waits_per_instruction);
  PTOSERVE_SAME(engine.limits.max_assembly_bytes);
  PTOSERVE_SAME(scheduling.max_batch_size);
  PTOSERVE_SAME(scheduling.max_batch_bytes);
  PTOSERVE_SAME(scheduling.max_queue_delay);
  PTOSERVE_SAME(scheduling.queue_capacity);
  PTOSERVE_SAME(scheduling.priority_levels);
  PTOSERVE_SAME(scheduling.priority_aging);
  PTOSERVE_SAME(limits.max_message_bytes);
  PTOSERVE_SAME(limits.max_json_bytes);
  PTOSERVE_SAME(limits.max_job_bytes);
  PTOSERVE_SAME(limits.memory_budget_bytes);
  PTOSERVE_SAME(limits.client_memory_bytes);
  PTOSERVE_SAME(limits.transport_memory_bytes);
  PTOSERVE_SAME(limits.max_job_time);
  PTOSERVE_SAME(limits.stream_window);
  PTOSERVE_SAME(limits.max_jobs_per_batch);
  PTOSERVE_SAME(limits.stall_timeout);
  PTOSERVE_SAME(shared_memory.enabled);
  PTOSERVE_SAME(shared_memory.key_prefix);
  PTOSERVE_SAME(shared_memory.max_regions);
  PTOSERVE_SAME(shared_memory.max_regions_per_user);
  PTOSERVE_SAME(shared_memory.lease_grace);
  PTOSERVE_SAME(tls.cert);
  PTOSERVE_SAME(tls.key);
  PTOSERVE_SAME(tls.client_ca);
  PTOSERVE_SAME(auth_token_file);
  PTOSERVE_SAME(trusted_proxies);
  PTOSERVE_SAME(tls_client_names);
  PTOSERVE_SAME(reflection);
  PTOSERVE_SAME(scheduling.workers);
#undef PTOSERVE_SAME
  // On purpose: the program serves HTTP and /metrics on loopback, where a
  // server embedded in a test or another program opens no port it did not
  // ask for.
  EXPECT_EQ(flags.http.address, "127.0.0.1:8000");
  EXPECT_EQ(flags.metrics.address, "127.0.0.1:9464");
  EXPECT_EQ(fields.http.address, "");
  EXPECT_EQ(fields.metrics.address, "");
  // --workers=0 and the field's 0 both mean one per core.
  EXPECT_EQ(
      flags.scheduling.WorkerThreads(),
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(FlagsTest, TheLogAndShutdownDefaultsAreTheirFields) {
  const LogOptions log = LogOptionsFromFlags();
  const LogOptions fields;
  EXPECT_EQ(log.level, fields.level);
  EXPECT_EQ(log.json, fields.json);
  EXPECT_EQ(log.lines_per_second, fields.lines_per_second);
  const ShutdownTimes shutdown = ShutdownFromFlags();
  const ShutdownTimes times;
  EXPECT_EQ(shutdown.grace, times.grace);
  EXPECT_EQ(shutdown.lame_duck, times.lame_duck);
  EXPECT_EQ(shutdown.delay, times.delay);
}

}  // namespace
}  // namespace ptoserve
