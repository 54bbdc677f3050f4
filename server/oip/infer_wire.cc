#include "server/oip/infer_wire.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "core/quote.h"
#include "proto/codec.h"
#include "proto/wire.h"
#include "proto/wire_reader.h"
#include "proto/words.h"

namespace ptoserve {

namespace {

// The field numbers of inference.ModelInferRequest and its parts.
enum RequestField : uint32_t {
  kFieldModelName = 1,
  kFieldModelVersion = 2,
  kFieldId = 3,
  kFieldParameters = 4,
  kFieldInputs = 5,
  kFieldOutputs = 6,
  kFieldRawInputContents = 7,
};

// The most inputs and outputs a covered request has: an instruction
// model's src0 and src1, dst and tmp.
constexpr size_t kMostTensors = 2;

// One input as its message says it.
struct Input {
  absl::string_view name, datatype;
  uint64_t shape[2] = {0, 0};
  int dims = 0;
};

// A string field that may come once: ASCII, at most kMaxNameBytes.
bool Once(WireReader* in, int wire, bool* seen, absl::string_view* out) {
  if (*seen || !in->BytesField(wire, out) || out->size() > kMaxNameBytes ||
      !WireAscii(*out)) {
    return false;
  }
  *seen = true;
  return true;
}

// One size of a shape; a third is not a tile's.
bool ShapeSize(uint64_t size, Input* input) {
  if (input->dims == 2) return false;
  input->shape[input->dims++] = size;
  return true;
}

// `shape`, packed as proto3 writes it or an element at a time.
bool ReadShape(WireReader* in, int wire, Input* input) {
  uint64_t size = 0;
  if (wire == kWireVarint) return in->Varint(&size) && ShapeSize(size, input);
  absl::string_view packed;
  if (!in->BytesField(wire, &packed)) return false;
  WireReader sizes(packed);
  while (!sizes.done()) {
    if (!sizes.Varint(&size) || !ShapeSize(size, input)) return false;
  }
  return true;
}

// An InferInputTensor without parameters or contents.
bool ReadInput(absl::string_view bytes, Input* input) {
  WireReader in(bytes);
  bool named = false, typed = false;
  while (!in.done()) {
    uint32_t field = 0;
    int wire = 0;
    if (!in.Tag(&field, &wire)) return false;
    bool read = false;
    switch (field) {
      case 1:
        read = Once(&in, wire, &named, &input->name);
        break;
      case 2:
        read = Once(&in, wire, &typed, &input->datatype);
        break;
      case 3:
        read = ReadShape(&in, wire, input);
        break;
      default:  // parameters, contents, or a field the schema lacks
        break;
    }
    if (!read) return false;
  }
  return true;
}

// A message of which only string field `number` is set, at most once:
// that string, if set. An InferRequestedOutputTensor's name (it has no
// parameters); an InferParameter's string_param (its oneof's one field).
bool OnlyString(absl::string_view bytes, uint32_t number, bool* set,
                absl::string_view* text) {
  WireReader in(bytes);
  while (!in.done()) {
    uint32_t field = 0;
    int wire = 0;
    if (!in.Tag(&field, &wire) || field != number ||
        !Once(&in, wire, set, text)) {
      return false;
    }
  }
  return true;
}

// A `parameters` map entry: the target, a string; any other parameter is
// the generic path's.
bool ReadParameter(absl::string_view bytes, bool* has_target,
                   absl::string_view* target) {
  WireReader in(bytes);
  bool keyed = false, valued = false;
  absl::string_view key, value;
  while (!in.done()) {
    uint32_t field = 0;
    int wire = 0;
    if (!in.Tag(&field, &wire)) return false;
    if (field == 1) {
      if (!Once(&in, wire, &keyed, &key)) return false;
    } else if (field != 2 || valued || !in.BytesField(wire, &value)) {
      return false;
    } else {
      valued = true;
    }
  }
  // A map's key given twice is its last entry's to the parser.
  bool set = false;
  if (key != "target" || !valued || *has_target ||
      !OnlyString(value, 3, &set, target) || !set) {
    return false;
  }
  *has_target = true;
  return true;
}

// The request's fields as they came, before they are checked against the
// model.
struct Request {
  absl::string_view model, version, id, target;
  bool has_model = false, has_version = false, has_id = false,
       has_target = false;
  absl::InlinedVector<Input, kMostTensors> inputs;
  absl::InlinedVector<absl::string_view, kMostTensors> outputs;
  absl::InlinedVector<absl::string_view, kMostTensors> raw;
};

bool ReadRequestField(WireReader* in, uint32_t field, int wire, Request* r) {
  absl::string_view nested;
  switch (field) {
    case kFieldModelName:
      return Once(in, wire, &r->has_model, &r->model);
    case kFieldModelVersion:
      return Once(in, wire, &r->has_version, &r->version);
    case kFieldId:
      return Once(in, wire, &r->has_id, &r->id);
    case kFieldInputs:
      return r->inputs.size() < kMostTensors && in->BytesField(wire, &nested) &&
             ReadInput(nested, &r->inputs.emplace_back());
    case kFieldOutputs: {
      bool named = false;  // a nameless output is "", not one of the model's
      return r->outputs.size() < kMostTensors &&
             in->BytesField(wire, &nested) &&
             OnlyString(nested, 1, &named, &r->outputs.emplace_back());
    }
    case kFieldRawInputContents:
      return r->raw.size() < kMostTensors &&
             in->BytesField(wire, &r->raw.emplace_back());
    case kFieldParameters:
      return in->BytesField(wire, &nested) &&
             ReadParameter(nested, &r->has_target, &r->target);
    default:  // a field the schema lacks
      return false;
  }
}

// The target the request names (as ReadParameters reads it: one of the
// server's, in any case), or the server's default; false for a name that
// is not one of the server's.
bool ReadTarget(const ModelCatalog& catalog, const Request& r,
                v1::Target* target, JobSpec* spec) {
  *target = catalog.default_target();
  if (!r.has_target) return true;
  const std::string lower = absl::AsciiStrToLower(r.target);
  for (const v1::Target known : catalog.targets()) {
    if (TargetText(known) != lower) continue;
    absl::StatusOr<Target> engine = FromProto(known);
    if (!engine.ok()) return false;
    *target = known;
    spec->target = *engine;
    return true;
  }
  return false;
}

// Input `input` as its model's tile, when the generic path would take it
// as it is: a datatype the model accepts, a shape of two sizes, each at
// least 1, and `raw` exactly the tensor's bytes.
bool InputTile(const InferModel& model, const Input& input,
               absl::string_view raw, TileInput* tile) {
  if (std::find(model.datatypes.begin(), model.datatypes.end(),
                input.datatype) == model.datatypes.end() ||
      input.dims != 2) {
    return false;
  }
  // Each size at most the bytes (so the product below cannot wrap: a
  // 2^31 x 2^31 INT32 tensor's bytes would be 0).
  for (const uint64_t size : input.shape) {
    if (size < 1 || size > raw.size()) return false;
  }
  const v1::DType dtype = DTypeOfDatatype(input.datatype);
  if (input.shape[0] * input.shape[1] * WireElementBytes(dtype) != raw.size()) {
    return false;
  }
  tile->name.assign(input.name.data(), input.name.size());
  tile->desc.dtype = static_cast<DType>(dtype - 1);  // as proto/wire.h
  tile->desc.rows = static_cast<uint32_t>(input.shape[0]);
  tile->desc.cols = static_cast<uint32_t>(input.shape[1]);
  tile->encoding = Encoding::kData;
  tile->data = raw;
  return true;
}

// The model's tiles from the request's inputs, in name order as ToJobSpec
// takes a map's: src0, then src1 where the model reads one.
bool ReadTiles(const InferModel& model, const Request& r, JobSpec* spec) {
  const size_t sources = model.op->sources == 2 ? 2 : 1;
  if (r.inputs.size() != sources || r.raw.size() != sources) return false;
  for (size_t i = 0; i < sources; ++i) {
    const bool first = r.inputs[i].name == "src0";
    if (!first && !(sources == 2 && r.inputs[i].name == "src1")) return false;
    if (sources == 2 && r.inputs[0].name == r.inputs[1].name) return false;
    // Appended in name order: src0 first, whichever came first.
    TileInput& tile =
        *spec->tiles.emplace(first ? spec->tiles.begin() : spec->tiles.end());
    if (!InputTile(model, r.inputs[i], r.raw[i], &tile)) return false;
  }
  return true;
}

// The outputs asked for (dst when none), as ReadOutputs takes them.
bool ReadOutputs(const InferModel& model, const Request& r, bool takes_tmp,
                 JobSpec* spec, InferEnvelope* envelope) {
  for (const absl::string_view name : r.outputs) {
    if (name != "dst" && !(name == "tmp" && takes_tmp)) return false;
    if (std::find(envelope->outputs.begin(), envelope->outputs.end(), name) !=
        envelope->outputs.end()) {
      return false;
    }
    envelope->outputs.emplace_back(name);
  }
  if (envelope->outputs.empty()) envelope->outputs.emplace_back("dst");
  envelope->binary.assign(envelope->outputs.size(), false);
  spec->outputs.assign(envelope->outputs.begin(), envelope->outputs.end());
  return true;
}

}  // namespace

std::optional<SmallInfer> ReadSmallInfer(absl::string_view bytes,
                                         const ModelCatalog& catalog,
                                         const EngineLimits& limits) {
  if (bytes.size() > kSmallJobBytes) return std::nullopt;
  Request r;
  WireReader in(bytes);
  while (!in.done()) {
    uint32_t field = 0;
    int wire = 0;
    if (!in.Tag(&field, &wire) || !ReadRequestField(&in, field, wire, &r)) {
      return std::nullopt;
    }
  }
  // What the scan would refuse for the server's limits.
  const size_t most = limits.max_tiles_per_job;
  if (r.inputs.size() > most || r.outputs.size() > most ||
      r.raw.size() > most) {
    return std::nullopt;
  }
  absl::StatusOr<const InferModel*> found = catalog.Find(r.model, r.version);
  if (!found.ok() || (*found)->op == nullptr) return std::nullopt;
  const InferModel& model = **found;
  SmallInfer small;
  JobSpec& spec = small.job.spec;
  v1::Target target;
  if (!ReadTarget(catalog, r, &target, &spec)) return std::nullopt;
  const bool takes_tmp =
      std::find(model.tmp_targets.begin(), model.tmp_targets.end(), target) !=
      model.tmp_targets.end();
  spec.tiles.reserve(2);
  if (!ReadTiles(model, r, &spec) ||
      !ReadOutputs(model, r, takes_tmp, &spec, &small.envelope)) {
    return std::nullopt;
  }
  Instruction& instruction = spec.instructions.emplace_back();
  instruction.opcode = model.op->opcode;
  instruction.dst = "dst";
  instruction.src0 = "src0";
  if (model.op->sources == 2) instruction.src1 = "src1";
  if (takes_tmp) instruction.tmp = "tmp";
  small.job.header.id = r.id;
  small.envelope.model.assign(r.model.data(), r.model.size());
  small.envelope.id.assign(r.id.data(), r.id.size());
  return small;
}

InferResponseWriter::InferResponseWriter(const InferEnvelope& envelope,
                                         const JobOutcome& outcome, Form form)
    : envelope_(envelope),
      outcome_(outcome),
      form_(form),
      target_(TargetName(outcome.target)) {
  // As InferResponseOf: the outputs asked for that the result has, in
  // their order; or every tile of the result, by name.
  const auto find = [this](absl::string_view name) -> const OutputTile* {
    for (const OutputTile& tile : outcome_.outputs) {
      if (tile.name == name) return &tile;
    }
    return nullptr;
  };
  if (!envelope_.outputs.empty()) {
    for (const std::string& name : envelope_.outputs) {
      if (const OutputTile* tile = find(name)) outputs_.push_back(tile);
    }
  } else {
    for (const OutputTile& tile : outcome_.outputs) {
      if (find(tile.name) == &tile) outputs_.push_back(&tile);  // once a name
    }
    std::sort(outputs_.begin(), outputs_.end(),
              [](const OutputTile* a, const OutputTile* b) {
                return a->name < b->name;
              });
  }
  // The events' text is EventText's, the words of every door. A line is
  // about 90 bytes, and most events have one micro-op: one allocation.
  events_.reserve(256 * outcome_.events.size());
  for (const Event& e : outcome_.events) AppendEventText(e, &events_);
  WireOut<true> sized(&sizes_);
  Message(sized);
  size_ = sized.count();
}

void InferResponseWriter::Write(uint8_t* out) const {
  WireOut<false> written(out, sizes_);
  Message(written);
}

template <typename Out>
void InferResponseWriter::Message(Out& out) const {
  if (form_ == Form::kResponse) return Response(out);
  // ModelStreamInferResponse: no error_message, the response as field 2.
  out.Message(2, [this](auto& response) { this->Response(response); });
}

template <typename Out>
void InferResponseWriter::Response(Out& out) const {
  out.String(1, envelope_.model);
  out.String(2, kModelVersion);
  out.String(3, envelope_.id);
  // The parameters map in key order; a oneof's string is written even
  // when empty.
  const std::pair<absl::string_view, absl::string_view> parameters[] = {
      {"events", events_}, {"target", target_}};
  for (const auto& [key, text] : parameters) {
    out.Message(4, [key = key, text = text](auto& entry) {
      entry.Element(1, key);
      entry.Message(2, [text](auto& value) { value.Element(3, text); });
    });
  }
  for (const OutputTile* tile : outputs_) {
    const TileDesc& d = tile->tile.desc();
    out.Message(5, [tile, &d](auto& o) {
      o.String(1, tile->name);
      o.String(2, DatatypeOf(ToProto(d.dtype)));
      o.Message(3, [&d](auto& shape) {  // packed
        shape.Varint(d.rows);
        shape.Varint(d.cols);
      });
    });
  }
  for (const OutputTile* tile : outputs_) {
    out.Element(
        6, absl::string_view(reinterpret_cast<const char*>(tile->tile.data()),
                             tile->tile.size_bytes()));
  }
}

}  // namespace ptoserve
