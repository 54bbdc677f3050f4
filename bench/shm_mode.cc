#include "bench/shm_mode.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/status_macros.h"

namespace ptoserve {
namespace ptobench {

namespace {

// --shm: replaces the workload's one unit with `units` units of
// `jobs_per_unit` jobs each, their tiles in one region registered with the
// server through `client`: every job its own src0 and src1 (the same
// elements as the bytes path sends) and dst, each 64-byte aligned.
// `check_every` is --shm_check_every.
absl::Status AttachShm(Workload* w, std::unique_ptr<Client> client, int units,
                       int jobs_per_unit, int check_every) {
  const v1::Tile& src0 = w->job.tiles().at("src0");
  const size_t bytes = src0.data().size();
  const size_t stride = (bytes + 63) / 64 * 64;
  const uint64_t total = uint64_t{3} * stride * units * jobs_per_unit;
  absl::StatusOr<std::unique_ptr<SharedRegion>> region =
      SharedRegion::Create(*client, total);
  if (!region.ok()) {
    return absl::Status(region.status().code(),
                        absl::StrCat("--shm: a region of ", total,
                                     " bytes: ", region.status().message()));
  }
  // The server maps the object by its name at registration and keeps it
  // open: the name can go now, so that nothing is left in /dev/shm however
  // this process ends.
  shm_unlink((*region)->key().c_str());
  const std::string& a = src0.data();
  const std::string& b = w->job.tiles().at("src1").data();
  v1::Job base = w->job;  // the job without its elements
  for (const char* name : {"src0", "src1"}) {
    (*base.mutable_tiles())[name].clear_data();
  }
  std::vector<Unit> made(units);
  for (Unit& unit : made) {
    std::string rest;
    for (int j = 0; j < jobs_per_unit; ++j) {
      v1::Job job = base;
      ShmJob& shm = unit.shm.emplace_back();
      for (auto [name, data] : {std::pair{"src0", &a}, std::pair{"src1", &b}}) {
        absl::Span<uint8_t> at = *(*region)->Allocate<uint8_t>(bytes);
        std::memcpy(at.data(), data->data(), bytes);
        v1::Tile& tile = (*job.mutable_tiles())[name];
        tile.clear_data();
        *tile.mutable_shared() = *(*region)->SliceOf(at.data(), bytes);
      }
      shm.dst = (*(*region)->Allocate<uint8_t>(bytes)).data();
      const v1::RegionSlice dst = *(*region)->SliceOf(shm.dst, bytes);
      shm.dst_offset = dst.offset();
      (*job.mutable_output_regions())["dst"] = dst;
      const std::string job_bytes = job.SerializeAsString();
      if (j == 0) {
        grpc::Slice slice(job_bytes);
        unit.request = grpc::ByteBuffer(&slice, 1);
      } else {
        absl::StrAppend(&rest, JobsFieldHeader(job_bytes.size()), job_bytes);
      }
    }
    unit.batch_rest = grpc::Slice(rest);
  }
  w->units = std::move(made);
  int every = check_every;
  if (every <= 0) {
    every = static_cast<int>(
        std::clamp<size_t>(bytes / (16 << 10), size_t{1}, size_t{64}));
  }
  w->shm_check_every = every;
  w->client = std::move(client);
  w->region = *std::move(region);
  return absl::OkStatus();
}

}  // namespace

absl::Status UseSharedMemory(const Settings& settings, int most,
                             const ConnectionOptions& connection,
                             Workload* workload) {
  const int batch = std::max(1, settings.batch);
  const int depth = std::max(1, settings.stream_depth);
  const int per_stream =
      settings.mode == "unary"
          ? 1
          : MessagesPerStream(depth, settings.mode == "batch" ? batch : 0);
  ClientOptions options = connection.client;
  options.max_message_bytes = 256 << 20;
  PTO_ASSIGN_OR_RETURN(std::unique_ptr<Client> client,
                       Client::Connect(connection.server, options));
  PTO_RETURN_IF_ERROR(AttachShm(workload, std::move(client), most * per_stream,
                                settings.mode == "batch" ? batch : 1,
                                settings.shm_check_every));
  workload->units_per_stream = per_stream;
  return absl::OkStatus();
}

void ArmChecks(const Workload& workload, Unit* unit) {
  for (ShmJob& job : unit->shm) {
    job.checking = job.uses++ % workload.shm_check_every == 0;
    if (job.checking) {
      std::memcpy(job.dst, workload.poison.data(), workload.poison.size());
    }
  }
}

std::string CheckSharedDst(const Workload& workload, const v1::Tile& dst,
                           const Unit* unit, size_t k) {
  if (unit == nullptr || k >= unit->shm.size()) return "wrong result";
  const ShmJob& job = unit->shm[k];
  if (!dst.data().empty() || dst.shared().region() != workload.region->name() ||
      dst.shared().offset() != job.dst_offset ||
      dst.shared().size() != workload.expected.size()) {
    return "wrong result: dst not the job's shared slice";
  }
  if (job.checking && std::memcmp(job.dst, workload.expected.data(),
                                  workload.expected.size()) != 0) {
    return "wrong result";
  }
  return "";
}

}  // namespace ptobench
}  // namespace ptoserve
