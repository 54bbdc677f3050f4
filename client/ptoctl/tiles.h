// Tiles on ptoctl's command line: element types, shapes, targets and
// elements parsed from the flags and --tile, and a result's elements read.
#ifndef PTOSERVE_CLIENT_PTOCTL_TILES_H_
#define PTOSERVE_CLIENT_PTOCTL_TILES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {
namespace ptoctl {

// ROWSxCOLS, the value of --`flag`, as {rows, cols}.
absl::StatusOr<std::pair<uint32_t, uint32_t>> ParseShape(
    const std::string& flag, const std::string& text);

// "int16" as DTYPE_INT16; for --dtype, and the types of --tile. A
// refusal starts with `where` ("--dtype=", "--tile b=i16:8x8: ").
absl::StatusOr<v1::DType> ParseDType(const std::string& name,
                                     absl::string_view where = "--dtype=");

// --target: "host" as TARGET_HOST; "" as TARGET_UNSPECIFIED, the server's.
absl::StatusOr<v1::Target> ParseTarget(const std::string& name);

// Bytes per element of `dtype` (4 for a value that names no type, so
// that a corrupt reply still prints).
int ElementBytes(v1::DType dtype);

// Fills `tile`'s elements from a flag value: one value becomes `fill`,
// several become `values`, and @FILE becomes raw `data`. The server checks
// counts and ranges. REQUIRES: tile's dtype is set.
absl::Status SetElements(const std::string& flag, const std::string& text,
                         v1::Tile* tile);

// Parses --tile NAME=DTYPE:RxC[:valid=RxC][:V] into job.tiles[NAME], where
// V is as for --src0; without V the tile starts zero-filled.
absl::Status AddTileSpec(const std::string& spec, v1::Job* job);

// The tile's elements as integers, whichever encoding it came back in.
absl::StatusOr<std::vector<int64_t>> Elements(const v1::Tile& tile);

// The raw little-endian bytes of `tile`, whichever encoding it came in.
absl::StatusOr<std::string> RawBytes(const v1::Tile& tile);

}  // namespace ptoctl
}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_PTOCTL_TILES_H_
