#include "client/ptoctl/server_commands.h"

#include <iostream>
#include <memory>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/ptoctl/connect.h"
#include "client/ptoctl/flags.h"
#include "client/ptoctl/print.h"

namespace ptoserve {
namespace ptoctl {

namespace {

// Connects, asks with `call`, and prints the answer: as proto3 JSON with
// --json, else as `print` writes it. Returns the exit status.
template <typename Answer>
int Ask(absl::FunctionRef<absl::StatusOr<Answer>(const Client&)> call,
        absl::FunctionRef<void(const Answer&)> print) {
  int code = 0;
  std::unique_ptr<Client> client = Connect(&code);
  if (client == nullptr) return code;
  absl::StatusOr<Answer> answer = call(*client);
  if (!answer.ok()) return Fail(answer.status());
  if (JsonOutput()) {
    std::cout << ToJson(*answer, true);
  } else {
    print(*answer);
  }
  return 0;
}

// The version and default target, each target with what it runs, the
// limits, and whether shared memory is on.
void PrintCapabilities(const v1::Capabilities& caps) {
  std::cout << "ptoserve " << caps.server_version() << ", default target "
            << TargetText(caps.default_target()) << "\n";
  for (const v1::TargetInfo& t : caps.targets()) {
    std::cout << absl::StrFormat(
        "%-5s %s: unified buffer %u bytes (%s), rows multiple of %u bytes\n",
        TargetText(t.target()), t.description(), t.buffer_bytes(),
        t.auto_mode_in_buffer() ? "every job" : "manual mode only",
        t.row_alignment_bytes());
    for (const v1::OpcodeSupport& op : t.opcodes()) {
      std::vector<std::string> dtypes;
      for (int d : op.dtypes()) {
        dtypes.push_back(DTypeText(static_cast<v1::DType>(d)));
      }
      std::cout << absl::StrFormat(
          "      %s [%s]%s: %s\n", OpcodeText(op.opcode()),
          absl::StrJoin(dtypes, " "), op.tmp_required() ? ", tmp required" : "",
          op.algorithm());
    }
  }
  const v1::Limits& l = caps.limits();
  std::cout << absl::StrFormat(
      "limits: tile %u bytes, %u tiles and %u instructions per job, message %u "
      "bytes\n",
      l.max_tile_bytes(), l.max_tiles_per_job(), l.max_instructions_per_job(),
      l.max_message_bytes());
  const v1::SharedMemoryInfo& shm = caps.shared_memory();
  std::cout << (shm.enabled()
                    ? absl::StrFormat("shared memory: on, keys %s..., at most "
                                      "%u regions\n",
                                      shm.key_prefix(), shm.max_regions())
                    : std::string("shared memory: off\n"));
}

// A region's age to the second, as "0s", "42s" or "1h2m3s".
std::string Age(absl::Duration age) {
  age = absl::Trunc(age, absl::Seconds(1));
  return age <= absl::ZeroDuration() ? "0s" : absl::FormatDuration(age);
}

// A line per region: where it lies, its jobs, who registered it, its age
// and its lease.
void PrintRegions(const v1::ListResponse& list) {
  if (list.regions().empty()) std::cout << "no regions\n";
  const absl::Time now = absl::Now();
  for (const v1::Region& r : list.regions()) {
    const absl::Time registered =
        absl::FromUnixSeconds(r.registered_at().seconds()) +
        absl::Nanoseconds(r.registered_at().nanos());
    const char* lease = r.outlives_connection() ? "outlives its connection"
                        : r.connection_closed() ? "its connection closed, going"
                                                : "leased to its connection";
    std::cout << absl::StrFormat(
        "%s: %s offset %u, %u bytes; %u jobs in flight, %u in all; user %u, "
        "registered %s ago, %s\n",
        r.name(), r.key(), r.offset(), r.size(), r.jobs_in_flight(),
        r.jobs_total(), r.registered_by_uid(), Age(now - registered), lease);
  }
}

// What unregister took away, and how many jobs still use it.
void PrintUnregistered(const v1::Region& region) {
  std::cout << absl::StrFormat(
      "unregistered %s (%s offset %u, %u bytes); %u jobs still use it\n",
      region.name(), region.key(), region.offset(), region.size(),
      region.jobs_in_flight());
}

}  // namespace

int Capabilities() {
  return Ask<v1::Capabilities>(
      [](const Client& client) { return client.GetCapabilities(); },
      PrintCapabilities);
}

int Health() {
  int code = 0;
  std::unique_ptr<Client> client = Connect(&code);
  if (client == nullptr) return code;
  absl::StatusOr<std::string> status =
      client->Health(absl::GetFlag(FLAGS_service));
  if (!status.ok()) return Fail(status.status());
  if (JsonOutput()) {
    std::cout << "{\n  \"status\": \"" << *status << "\"\n}\n";
  } else {
    std::cout << *status << "\n";
  }
  return *status == "SERVING" ? 0 : 1;
}

int Regions() {
  return Ask<v1::ListResponse>(
      [](const Client& client) { return client.ListRegions(); }, PrintRegions);
}

int Unregister(const std::string& name) {
  return Ask<v1::Region>(
      [&name](const Client& client) { return client.UnregisterRegion(name); },
      PrintUnregistered);
}

}  // namespace ptoctl
}  // namespace ptoserve
