#include "proto/codec.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/setting_names.h"
#include "core/ops.h"
#include "core/status_macros.h"
#include "proto/words.h"

namespace ptoserve {

void SetDuration(absl::Duration d, google::protobuf::Duration* out) {
  const int64_t nanos = absl::ToInt64Nanoseconds(d);
  out->set_seconds(nanos / 1000000000);
  out->set_nanos(static_cast<int32_t>(nanos % 1000000000));
}

void SetTimestamp(absl::Time t, google::protobuf::Timestamp* out) {
  const int64_t nanos = absl::ToUnixNanos(t);
  out->set_seconds(nanos / 1000000000);
  out->set_nanos(static_cast<int32_t>(nanos % 1000000000));
}

google::protobuf::Duration ToDuration(absl::Duration d) {
  google::protobuf::Duration out;
  SetDuration(d, &out);
  return out;
}

google::protobuf::Timestamp ToTimestamp(absl::Time t) {
  google::protobuf::Timestamp out;
  SetTimestamp(t, &out);
  return out;
}

namespace {

absl::StatusOr<DType> FromProto(v1::DType dtype, absl::string_view tile) {
  switch (dtype) {
    case v1::DTYPE_INT8:
      return DType::kInt8;
    case v1::DTYPE_UINT8:
      return DType::kUInt8;
    case v1::DTYPE_INT16:
      return DType::kInt16;
    case v1::DTYPE_UINT16:
      return DType::kUInt16;
    case v1::DTYPE_INT32:
      return DType::kInt32;
    case v1::DTYPE_UINT32:
      return DType::kUInt32;
    case v1::DTYPE_FLOAT16:
      return DType::kFloat16;
    case v1::DTYPE_BFLOAT16:
      return DType::kBFloat16;
    case v1::DTYPE_FLOAT32:
      return DType::kFloat32;
    case v1::DTYPE_UNSPECIFIED:
      return absl::InvalidArgumentError(absl::StrFormat(
          "tile \"%s\": dtype is not set (DTYPE_INT8, DTYPE_UINT8, "
          "DTYPE_INT16, DTYPE_UINT16, DTYPE_INT32 or DTYPE_UINT32)",
          tile));
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("tile \"%s\": unknown dtype %d", tile, dtype));
}

absl::StatusOr<Layout> FromProto(v1::Layout layout, absl::string_view tile) {
  switch (layout) {
    case v1::LAYOUT_ROW_MAJOR:
      return Layout::kRowMajor;
    case v1::LAYOUT_COL_MAJOR:
      return Layout::kColMajor;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("tile \"%s\": unknown layout %d", tile, layout));
}

absl::StatusOr<Location> FromProto(v1::Location location,
                                   absl::string_view tile) {
  switch (location) {
    case v1::LOCATION_VEC:
      return Location::kVec;
    case v1::LOCATION_MAT:
      return Location::kMat;
    case v1::LOCATION_LEFT:
      return Location::kLeft;
    case v1::LOCATION_RIGHT:
      return Location::kRight;
    case v1::LOCATION_ACC:
      return Location::kAcc;
    case v1::LOCATION_BIAS:
      return Location::kBias;
    case v1::LOCATION_SCALING:
      return Location::kScaling;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("tile \"%s\": unknown location %d", tile, location));
}

// `shared`'s bytes for `slice`, or its error with the field named.
absl::StatusOr<absl::Span<uint8_t>> Resolved(SharedSlices* shared,
                                             const v1::RegionSlice& slice,
                                             absl::string_view tile,
                                             bool write) {
  absl::StatusOr<absl::Span<uint8_t>> bytes =
      shared->Resolve(slice, tile, write);
  if (bytes.ok()) return bytes;
  return absl::Status(bytes.status().code(),
                      absl::StrCat(SharedFieldName(tile, write), ": ",
                                   bytes.status().message()));
}

// The answer to a job that uses shared memory on a server without it.
absl::Status SharedMemoryOff(absl::string_view what) {
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s is in shared memory, which this server does not serve "
      "(%s; Capabilities.shared_memory.enabled)",
      what, SettingName(Setting::kSharedMemory)));
}

// "OPCODE_TAND or OPCODE_TXOR": every opcode's wire name.
std::string WireOpcodeList() {
  std::string list;
  for (size_t i = 0; i < std::size(kOps); ++i) {
    if (i > 0) absl::StrAppend(&list, i + 1 == std::size(kOps) ? " or " : ", ");
    absl::StrAppend(&list, "OPCODE_", kOps[i].name);
  }
  return list;
}

absl::StatusOr<Opcode> FromProto(v1::Opcode opcode, size_t index) {
  if (const OpInfo* op = FindOpByWireValue(opcode)) return op->opcode;
  if (opcode == v1::OPCODE_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "instruction %u: opcode is not set (%s)", index, WireOpcodeList()));
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("instruction %u: unknown opcode %d", index, opcode));
}

absl::StatusOr<TileInput> FromProto(const std::string& name,
                                    const v1::Tile& tile,
                                    SharedSlices* shared) {
  TileInput in;
  in.name = name;
  PTO_ASSIGN_OR_RETURN(in.desc.dtype, FromProto(tile.dtype(), name));
  PTO_ASSIGN_OR_RETURN(in.desc.layout, FromProto(tile.layout(), name));
  PTO_ASSIGN_OR_RETURN(in.desc.location, FromProto(tile.location(), name));
  in.desc.rows = tile.rows();
  in.desc.cols = tile.cols();
  in.desc.valid_rows = tile.valid_rows();
  in.desc.valid_cols = tile.valid_cols();
  if (tile.has_address()) in.desc.address = tile.address();
  const int encodings = !tile.data().empty() + (tile.values_size() > 0) +
                        tile.has_fill() + tile.has_shared();
  if (encodings > 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tile \"%s\": has more than one of data, values, fill and shared; "
        "send one of them",
        name));
  }
  if (tile.has_shared()) {
    if (shared == nullptr) return SharedMemoryOff(SharedFieldName(name, false));
    // Its size against the tile's, named as a slice (the engine would call
    // it data); a shape whose size overflows is the engine's to refuse.
    const unsigned __int128 expected =
        static_cast<unsigned __int128>(in.desc.rows) * in.desc.cols *
        ElementBytes(in.desc.dtype);
    if (tile.shared().size() != expected && expected <= UINT64_MAX) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: its slice is %u bytes; a %ux%u %s tile is %u",
                          SharedFieldName(name, false), tile.shared().size(),
                          in.desc.rows, in.desc.cols, DTypeName(in.desc.dtype),
                          static_cast<uint64_t>(expected)));
    }
    PTO_ASSIGN_OR_RETURN(absl::Span<uint8_t> bytes,
                         Resolved(shared, tile.shared(), name, false));
    in.encoding = Encoding::kData;
    in.data = absl::string_view(reinterpret_cast<const char*>(bytes.data()),
                                bytes.size());
  } else if (tile.has_fill()) {
    in.encoding = Encoding::kFill;
    in.fill = tile.fill();
  } else if (!tile.data().empty()) {
    in.encoding = Encoding::kData;
    in.data = tile.data();
  } else if (tile.values_size() > 0) {
    in.encoding = Encoding::kValues;
    in.values = absl::MakeConstSpan(tile.values().data(), tile.values_size());
  }
  return in;
}

void ToProto(OutputTile out, bool as_values, const v1::RegionSlice* placed,
             v1::Tile* tile) {
  const TileDesc& d = out.tile.desc();
  tile->set_dtype(ToProto(d.dtype));
  tile->set_rows(d.rows);
  tile->set_cols(d.cols);
  tile->set_valid_rows(d.valid_rows);
  tile->set_valid_cols(d.valid_cols);
  tile->set_layout(d.layout == Layout::kRowMajor ? v1::LAYOUT_ROW_MAJOR
                                                 : v1::LAYOUT_COL_MAJOR);
  tile->set_location(static_cast<v1::Location>(d.location));
  if (d.address.has_value()) tile->set_address(*d.address);
  if (placed != nullptr) {
    *tile->mutable_shared() = *placed;
  } else if (as_values) {
    auto* values = tile->mutable_values();
    values->Resize(static_cast<int>(d.elements()), 0.0);
    ToValues(out.tile, absl::MakeSpan(values->mutable_data(), d.elements()));
  } else {
    tile->set_data(std::move(out.tile).TakeBytes());
  }
}

}  // namespace

std::string SharedFieldName(absl::string_view tile, bool write) {
  return write ? absl::StrCat("output_regions[\"", tile, "\"]")
               : absl::StrCat("tile \"", tile, "\"");
}

v1::Target ToProto(Target target) {
  switch (target) {
    case Target::kHost:
      return v1::TARGET_HOST;
    case Target::kA2A3:
      return v1::TARGET_A2A3;
    case Target::kA5:
      return v1::TARGET_A5;
  }
  return v1::TARGET_UNSPECIFIED;
}

v1::DType ToProto(DType dtype) {
  // The wire enum lists the types in the engine's order, from 1.
  return static_cast<v1::DType>(static_cast<int>(dtype) + 1);
}

v1::Opcode ToProto(Opcode opcode) {
  return static_cast<v1::Opcode>(Op(opcode).wire_value);
}

absl::StatusOr<Target> FromProto(v1::Target target) {
  switch (target) {
    case v1::TARGET_HOST:
      return Target::kHost;
    case v1::TARGET_A2A3:
      return Target::kA2A3;
    case v1::TARGET_A5:
      return Target::kA5;
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown target %d (TARGET_HOST, TARGET_A2A3 or TARGET_A5)", target));
}

absl::StatusOr<JobSpec> ToJobSpec(const v1::Job& job, SharedSlices* shared) {
  JobSpec spec;
  if (job.target() != v1::TARGET_UNSPECIFIED) {
    PTO_ASSIGN_OR_RETURN(spec.target, FromProto(job.target()));
  }
  switch (job.mode()) {
    case v1::MODE_AUTO:
      spec.mode = Mode::kAuto;
      break;
    case v1::MODE_MANUAL:
      spec.mode = Mode::kManual;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrFormat(
          "unknown mode %d (MODE_AUTO or MODE_MANUAL)", job.mode()));
  }
  // A map's order is unspecified: the tiles are taken in name order, so
  // that errors are deterministic (sorted as pointers, which move cheaply).
  absl::InlinedVector<const google::protobuf::MapPair<std::string, v1::Tile>*,
                      8>
      entries;
  entries.reserve(job.tiles_size());
  for (const auto& entry : job.tiles()) entries.push_back(&entry);
  std::sort(entries.begin(), entries.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  spec.tiles.reserve(entries.size());
  for (const auto* entry : entries) {
    PTO_ASSIGN_OR_RETURN(TileInput in,
                         FromProto(entry->first, entry->second, shared));
    spec.tiles.push_back(std::move(in));
  }
  spec.instructions.reserve(job.instructions_size());
  for (int i = 0; i < job.instructions_size(); ++i) {
    const v1::Instruction& in = job.instructions(i);
    Instruction inst;
    PTO_ASSIGN_OR_RETURN(inst.opcode, FromProto(in.opcode(), i));
    inst.dst = in.dst();
    inst.src0 = in.src0();
    inst.src1 = in.src1();
    inst.tmp = in.tmp();
    inst.record_event = in.record_event();
    inst.wait_events.assign(in.wait_events().begin(), in.wait_events().end());
    spec.instructions.push_back(std::move(inst));
  }
  spec.outputs.assign(job.outputs().begin(), job.outputs().end());
  if (job.output_regions().empty()) return spec;
  spec.places.reserve(job.output_regions().size());
  for (const auto& [name, slice] : job.output_regions()) {
    if (shared == nullptr) return SharedMemoryOff(SharedFieldName(name, true));
    PTO_ASSIGN_OR_RETURN(absl::Span<uint8_t> bytes,
                         Resolved(shared, slice, name, true));
    spec.places.push_back({name, bytes});
  }
  std::sort(spec.places.begin(), spec.places.end(),
            [](const OutputPlace& a, const OutputPlace& b) {
              return a.name < b.name;
            });
  PTO_RETURN_IF_ERROR(shared->CheckOverlaps());
  return spec;
}

ResultEncodings::ResultEncodings(const JobSpec& spec,
                                 absl::FunctionRef<bool(Opcode)> uses_tmp) {
  // Only a tile sent as values makes others travel as values: without one,
  // every tile travels as data and there is nothing to look up.
  if (std::none_of(spec.tiles.begin(), spec.tiles.end(),
                   [](const TileInput& in) {
                     return in.encoding == Encoding::kValues;
                   })) {
    return;
  }
  for (const TileInput& in : spec.tiles) of_.try_emplace(in.name, in.encoding);
  for (const Instruction& inst : spec.instructions) {
    auto src0 = of_.find(inst.src0);
    const Encoding like = src0 == of_.end() ? Encoding::kNone : src0->second;
    Encoding& dst = of_.try_emplace(inst.dst, like).first->second;
    if (dst == Encoding::kNone) dst = like;
    if (uses_tmp(inst.opcode) && !inst.tmp.empty()) {
      const Encoding dst_encoding = dst;  // try_emplace may move `dst`
      of_.try_emplace(inst.tmp, dst_encoding);
    }
  }
}

bool ResultEncodings::AsValues(absl::string_view name) const {
  if (of_.empty()) return false;  // no tile came as values
  auto it = of_.find(name);
  return it != of_.end() && it->second == Encoding::kValues;
}

const v1::RegionSlice* ResultEncodings::Placed(absl::string_view name) const {
  if (placed_ == nullptr) return nullptr;
  auto it = placed_->find(std::string(name));
  return it == placed_->end() ? nullptr : &it->second;
}

uint64_t ResultBytes(const JobCost& cost, const ResultEncodings& encodings) {
  uint64_t bytes = 0;
  for (const JobCost::Output& out : cost.outputs) {
    if (encodings.Placed(out.name) != nullptr) continue;
    bytes += encodings.AsValues(out.name) ? out.elements * sizeof(double)
                                          : out.bytes;
  }
  return bytes;
}

void ToEventRecord(const Event& e, v1::EventRecord* r) {
  r->set_id(e.id);
  r->set_instruction_index(e.index);
  r->set_opcode(ToProto(e.opcode));
  r->set_target(ToProto(e.target));
  r->set_pipe(v1::PIPE_V);
  for (const std::string& w : e.waited_on) r->add_waited_on(w);
  // Set in place: a temporary and a copy each cost as much again.
  SetTimestamp(e.enqueue_time, r->mutable_enqueue_time());
  SetTimestamp(e.start_time, r->mutable_start_time());
  SetTimestamp(e.end_time, r->mutable_end_time());
  SetDuration(e.start_time - e.enqueue_time, r->mutable_queue_time());
  SetDuration(e.end_time - e.start_time, r->mutable_execution_time());
  r->set_batch_id(e.batch_id);
  r->set_batch_size(e.batch_size);
  for (const MicroOp& op : e.trace.ops) {
    v1::MicroOp* m = r->add_trace();
    m->set_op(op.op.data(), op.op.size());
    m->set_dst(op.dst.data(), op.dst.size());
    for (absl::string_view s : op.srcs) m->add_srcs(s.data(), s.size());
    // A tile holds at most 2^32 elements, so both fit in 32 bits.
    m->set_repeats(static_cast<uint32_t>(op.repeats));
    m->set_elements(static_cast<uint32_t>(op.elements));
  }
  for (const std::string& note : e.trace.notes) r->add_notes(note);
  for (const OperandPlacement& p : e.operands) {
    v1::OperandRange* range = r->add_operands();
    range->set_role(p.role.data(), p.role.size());
    range->set_tile(p.tile);
    range->set_begin(p.begin);
    range->set_end(p.end);
  }
}

void AppendEventText(const Event& e, std::string* out) {
  // As the record: timestamps in whole nanoseconds, counters in 32 bits.
  const auto between = [](absl::Time a, absl::Time b) {
    return absl::Nanoseconds(absl::ToUnixNanos(b) - absl::ToUnixNanos(a));
  };
  EventHead head;
  head.id = e.id;
  head.index = e.index;
  head.opcode = OpcodeName(e.opcode);
  head.target = TargetName(e.target);
  head.pipe = "PIPE_V";
  head.batch_id = e.batch_id;
  head.batch_size = e.batch_size;
  head.queued = between(e.enqueue_time, e.start_time);
  head.ran = between(e.start_time, e.end_time);
  absl::InlinedVector<absl::string_view, 4> waited_on(e.waited_on.begin(),
                                                      e.waited_on.end());
  AppendEventHead(head, waited_on, out);
  for (const MicroOp& op : e.trace.ops) {
    AppendMicroOpLine(op.op, op.dst, op.srcs, static_cast<uint32_t>(op.repeats),
                      static_cast<uint32_t>(op.elements), out);
  }
  for (const std::string& note : e.trace.notes) AppendNoteLine(note, out);
}

void ToJobResult(JobOutcome outcome, const ResultEncodings& encodings,
                 v1::JobResult* out) {
  out->set_target(ToProto(outcome.target));
  auto* tiles = out->mutable_tiles();
  for (OutputTile& tile : outcome.outputs) {
    v1::Tile* slot = &(*tiles)[tile.name];
    const bool as_values = encodings.AsValues(tile.name);
    const v1::RegionSlice* placed =
        tile.placed ? encodings.Placed(tile.name) : nullptr;
    ToProto(std::move(tile), as_values, placed, slot);
  }
  for (const Event& e : outcome.events) ToEventRecord(e, out->add_events());
}

}  // namespace ptoserve
