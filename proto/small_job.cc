#include "proto/small_job.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/ops.h"
#include "core/quote.h"
#include "proto/wire_reader.h"

namespace ptoserve {

namespace {

// A name as the small path takes it: ASCII (so valid UTF-8, as protobuf
// requires of a string) and no longer than the wire scan allows.
bool Name(WireReader* in, int wire, std::string* out) {
  absl::string_view name;
  if (!in->BytesField(wire, &name) || name.size() > kMaxNameBytes ||
      !WireAscii(name)) {
    return false;
  }
  out->assign(name.data(), name.size());
  return true;
}

// An int32 enum field read as protobuf does (the varint cut to 32 bits),
// and whether it is in [low, high].
bool EnumIn(WireReader* in, int wire, int low, int high, int* value) {
  uint64_t v = 0;
  if (!in->VarintField(wire, &v)) return false;
  *value = static_cast<int32_t>(v);
  return *value >= low && *value <= high;
}

bool Uint32(WireReader* in, int wire, uint32_t* value) {
  uint64_t v = 0;
  if (!in->VarintField(wire, &v)) return false;
  *value = static_cast<uint32_t>(v);
  return true;
}

// A Tile whose elements come as data or not at all.
bool ReadTile(absl::string_view bytes, TileInput* tile) {
  WireReader in(bytes);
  int dtype = 0;
  while (!in.done()) {
    uint32_t field = 0;
    int wire = 0;
    int value = 0;
    if (!in.Tag(&field, &wire)) return false;
    switch (field) {
      case 1:
        if (!EnumIn(&in, wire, 1, 9, &dtype)) return false;
        tile->desc.dtype = static_cast<DType>(dtype - 1);
        break;
      case 2:
        if (!Uint32(&in, wire, &tile->desc.rows)) return false;
        break;
      case 3:
        if (!Uint32(&in, wire, &tile->desc.cols)) return false;
        break;
      case 4:
        if (!Uint32(&in, wire, &tile->desc.valid_rows)) return false;
        break;
      case 5:
        if (!Uint32(&in, wire, &tile->desc.valid_cols)) return false;
        break;
      case 6:
        if (!EnumIn(&in, wire, 0, 1, &value)) return false;
        tile->desc.layout = static_cast<Layout>(value);
        break;
      case 7:
        if (!EnumIn(&in, wire, 0, 6, &value)) return false;
        tile->desc.location = static_cast<Location>(value);
        break;
      case 8: {
        uint64_t address = 0;
        if (!in.VarintField(wire, &address)) return false;
        tile->desc.address = address;
        break;
      }
      case 9:
        if (!in.BytesField(wire, &tile->data)) return false;
        break;
      default:  // values, fill, shared, or a field the schema lacks
        return false;
    }
  }
  // An unset dtype is ToJobSpec's to refuse.
  if (dtype == 0) return false;
  tile->encoding = tile->data.empty() ? Encoding::kNone : Encoding::kData;
  return true;
}

// A `tiles` map entry: its key and value, each once.
bool ReadTileEntry(absl::string_view bytes, TileInput* tile) {
  WireReader in(bytes);
  bool named = false, valued = false;
  while (!in.done()) {
    uint32_t field = 0;
    int wire = 0;
    if (!in.Tag(&field, &wire)) return false;
    absl::string_view value;
    if (field == 1 && !named) {
      if (!Name(&in, wire, &tile->name)) return false;
      named = true;
    } else if (field == 2 && !valued) {
      if (!in.BytesField(wire, &value) || !ReadTile(value, tile)) return false;
      valued = true;
    } else {
      return false;
    }
  }
  return valued;  // a tile without a value has no dtype
}

bool ReadInstruction(absl::string_view bytes, size_t max_waits,
                     Instruction* instruction) {
  WireReader in(bytes);
  bool has_opcode = false;
  while (!in.done()) {
    uint32_t field = 0;
    int wire = 0;
    uint64_t value = 0;
    if (!in.Tag(&field, &wire)) return false;
    switch (field) {
      case 1: {
        if (!in.VarintField(wire, &value)) return false;
        const OpInfo* op = FindOpByWireValue(static_cast<int32_t>(value));
        if (op == nullptr) return false;
        instruction->opcode = op->opcode;
        has_opcode = true;
        break;
      }
      case 2:
        if (!Name(&in, wire, &instruction->dst)) return false;
        break;
      case 3:
        if (!Name(&in, wire, &instruction->src0)) return false;
        break;
      case 4:
        if (!Name(&in, wire, &instruction->src1)) return false;
        break;
      case 5:
        if (!Name(&in, wire, &instruction->tmp)) return false;
        break;
      case 6:
        if (!Name(&in, wire, &instruction->record_event)) return false;
        break;
      case 7:
        if (instruction->wait_events.size() == max_waits ||
            !Name(&in, wire, &instruction->wait_events.emplace_back())) {
          return false;
        }
        break;
      default:
        return false;
    }
  }
  return has_opcode;
}

bool ReadTimeout(absl::string_view bytes, JobHeader* header) {
  WireReader in(bytes);
  while (!in.done()) {
    uint32_t field = 0;
    int wire = 0;
    uint64_t value = 0;
    if (!in.Tag(&field, &wire) || !in.VarintField(wire, &value)) return false;
    if (field == 1) {
      header->timeout_seconds = static_cast<int64_t>(value);
    } else if (field == 2) {
      header->timeout_nanos = static_cast<int32_t>(value);
    } else {
      return false;
    }
  }
  header->has_timeout = true;
  return true;
}

// The caps of a small job within the server's own limits.
struct Caps {
  size_t tiles;
  size_t instructions;
  size_t waits;
};

// One field of the Job; false to decline it.
bool ReadJobField(WireReader* in, uint32_t field, int wire, const Caps& caps,
                  SmallJob* job) {
  JobSpec& spec = job->spec;
  int value = 0;
  uint64_t number = 0;
  absl::string_view nested;
  switch (field) {
    case 1:  // id
      if (!in->BytesField(wire, &nested) || nested.size() > kMaxNameBytes ||
          !WireAscii(nested)) {
        return false;
      }
      job->header.id = nested;
      return true;
    case 2:  // target
      if (!EnumIn(in, wire, 0, 3, &value)) return false;
      spec.target = value == 0
                        ? std::nullopt
                        : std::optional<Target>(static_cast<Target>(value - 1));
      return true;
    case 3:  // mode
      if (!EnumIn(in, wire, 0, 1, &value)) return false;
      spec.mode = static_cast<Mode>(value);
      return true;
    case 4:  // a tile
      return spec.tiles.size() < caps.tiles && in->BytesField(wire, &nested) &&
             ReadTileEntry(nested, &spec.tiles.emplace_back());
    case 5:  // an instruction
      return spec.instructions.size() < caps.instructions &&
             in->BytesField(wire, &nested) &&
             ReadInstruction(nested, caps.waits,
                             &spec.instructions.emplace_back());
    case 6:  // outputs
      return spec.outputs.size() < caps.tiles &&
             Name(in, wire, &spec.outputs.emplace_back());
    case 7:  // priority
      if (!in->VarintField(wire, &number)) return false;
      job->header.priority = static_cast<uint32_t>(number);
      return true;
    case 8:  // timeout: twice would merge the two
      return !job->header.has_timeout && in->BytesField(wire, &nested) &&
             ReadTimeout(nested, &job->header);
    case 9:  // assembly: only an empty one
      return in->BytesField(wire, &nested) && nested.empty();
    default:  // output_regions, or a field the schema lacks
      return false;
  }
}

// The tiles in name order, as ToJobSpec takes a map's; false when a name
// comes twice (the map's last entry to the parser: the generic path's).
bool SortTiles(std::vector<TileInput>* tiles) {
  const auto by_name = [](const TileInput& a, const TileInput& b) {
    return a.name < b.name;
  };
  if (!std::is_sorted(tiles->begin(), tiles->end(), by_name)) {
    std::sort(tiles->begin(), tiles->end(), by_name);
  }
  for (size_t i = 1; i < tiles->size(); ++i) {
    if ((*tiles)[i - 1].name == (*tiles)[i].name) return false;
  }
  return true;
}

}  // namespace

std::optional<SmallJob> ReadSmallJob(absl::string_view bytes,
                                     const EngineLimits& limits) {
  if (bytes.size() > kSmallJobBytes) return std::nullopt;
  const Caps caps{
      std::min(kSmallJobTiles, limits.max_tiles_per_job),
      std::min(kSmallJobInstructions, limits.max_instructions_per_job),
      limits.max_waits_per_instruction};
  SmallJob job;
  // Room for the tiles and instructions of most jobs in one allocation
  // each.
  job.spec.tiles.reserve(4);
  job.spec.instructions.reserve(2);
  WireReader in(bytes);
  while (!in.done()) {
    uint32_t field = 0;
    int wire = 0;
    if (!in.Tag(&field, &wire) || !ReadJobField(&in, field, wire, caps, &job)) {
      return std::nullopt;
    }
  }
  if (!SortTiles(&job.spec.tiles)) return std::nullopt;
  return job;
}

}  // namespace ptoserve
