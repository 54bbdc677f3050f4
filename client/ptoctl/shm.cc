#include "client/ptoctl/shm.h"

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "client/ptoctl/print.h"
#include "client/ptoctl/tiles.h"
#include "client/shared_region.h"

namespace ptoserve {
namespace ptoctl {

namespace {

// The tile's elements as raw little-endian bytes, whichever way the flags
// gave them (data, values or fill).
absl::StatusOr<std::string> RequestBytes(const std::string& name,
                                         const v1::Tile& tile) {
  if (!tile.data().empty()) return tile.data();
  const size_t n = size_t{tile.rows()} * tile.cols();
  if (!tile.has_fill() && static_cast<size_t>(tile.values_size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--%s has %d values for %d elements (%ux%u)", name,
                        tile.values_size(), n, tile.rows(), tile.cols()));
  }
  const int width = ElementBytes(tile.dtype());
  std::string out(n * width, '\0');
  for (size_t i = 0; i < n; ++i) {
    // In range for the type (ParseValue checked): the low bytes of the
    // two's complement are the element.
    const int64_t v =
        static_cast<int64_t>(tile.has_fill() ? tile.fill() : tile.values(i));
    std::memcpy(&out[i * width], &v, width);
  }
  return out;
}

}  // namespace

int RunShared(v1::Job job, const Client& client) {
  std::vector<std::pair<std::string, std::string>> inputs;
  uint64_t total = 0;
  for (const auto& [name, tile] : job.tiles()) {
    absl::StatusOr<std::string> bytes = RequestBytes(name, tile);
    if (!bytes.ok()) return UsageError(bytes.status().message());
    total += bytes->size() + 64;
    inputs.push_back({name, std::move(*bytes)});
  }
  const v1::Tile& src0 = job.tiles().at("src0");
  const size_t dst_bytes =
      size_t{src0.rows()} * src0.cols() * ElementBytes(src0.dtype());
  total += dst_bytes + 64;
  absl::StatusOr<std::unique_ptr<SharedRegion>> region =
      SharedRegion::Create(client, total);
  if (!region.ok()) return Fail(region.status());
  for (const auto& [name, bytes] : inputs) {
    absl::Span<uint8_t> span = *(*region)->Allocate<uint8_t>(bytes.size());
    std::memcpy(span.data(), bytes.data(), bytes.size());
    v1::Tile& tile = (*job.mutable_tiles())[name];
    tile.clear_data();
    tile.clear_values();
    tile.clear_fill();
    *tile.mutable_shared() = *(*region)->SliceOf(span.data(), span.size());
  }
  absl::Span<uint8_t> dst = *(*region)->Allocate<uint8_t>(dst_bytes);
  (*job.mutable_output_regions())["dst"] =
      *(*region)->SliceOf(dst.data(), dst.size());
  absl::StatusOr<v1::JobResult> result = client.Execute(job);
  if (!result.ok()) return Fail(result.status());
  // dst came back as its slice: print it as the request path would.
  v1::Tile& out = (*result->mutable_tiles())["dst"];
  out.clear_shared();
  out.set_data(reinterpret_cast<const char*>(dst.data()), dst.size());
  return PrintResult(*result, {"dst"}, "dst");
}

}  // namespace ptoctl
}  // namespace ptoserve
