#include "server/oip/infer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/quote.h"
#include "proto/json_errors.h"
#include "proto/wire.h"
#include "proto/words.h"
#include "server/intake/json_scan.h"
#include "server/oip/infer_wire.h"
#include "server/oip/parameters.h"

namespace ptoserve {

namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;
using Parameters =
    google::protobuf::Map<std::string, inference::InferParameter>;

// Packs `values` into `dtype`'s little-endian bytes, each checked to fit.
template <typename Value>
absl::Status PackValues(const google::protobuf::RepeatedField<Value>& values,
                        v1::DType dtype, absl::string_view input,
                        std::string* out) {
  const size_t size = WireElementBytes(dtype);
  int64_t low = 0, high = 0;
  switch (dtype) {
    case v1::DTYPE_INT8:
      low = INT8_MIN;
      high = INT8_MAX;
      break;
    case v1::DTYPE_UINT8:
      high = UINT8_MAX;
      break;
    case v1::DTYPE_INT16:
      low = INT16_MIN;
      high = INT16_MAX;
      break;
    case v1::DTYPE_UINT16:
      high = UINT16_MAX;
      break;
    case v1::DTYPE_INT32:
      low = INT32_MIN;
      high = INT32_MAX;
      break;
    default:
      high = UINT32_MAX;
      break;
  }
  out->resize(values.size() * size);
  for (int i = 0; i < values.size(); ++i) {
    const int64_t v = static_cast<int64_t>(values.Get(i));
    if (v < low || v > high) {
      return absl::InvalidArgumentError(
          absl::StrFormat("input %s: element %d is %d, outside %s's %d to %d",
                          input, i, v, DatatypeOf(dtype), low, high));
    }
    const uint64_t bits = static_cast<uint64_t>(v);
    for (size_t b = 0; b < size; ++b) {
      (*out)[i * size + b] = static_cast<char>(bits >> (8 * b));
    }
  }
  return absl::OkStatus();
}

// One input as a tile: its datatype, shape and elements checked.
absl::Status TileOfInput(const InferModel& model,
                         const inference::ModelInferRequest& request, int index,
                         v1::Tile* tile) {
  const auto& input = request.inputs(index);
  const std::string& name = input.name();
  const v1::DType dtype = DTypeOfDatatype(input.datatype());
  if (std::find(model.datatypes.begin(), model.datatypes.end(),
                input.datatype()) == model.datatypes.end()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("input %s: datatype %s is not one model %s accepts: %s",
                        name, ShortQuote(input.datatype()), model.name,
                        absl::StrJoin(model.datatypes, ", ")));
  }
  if (input.shape_size() != 2 || input.shape(0) < 1 || input.shape(1) < 1 ||
      input.shape(0) > std::numeric_limits<uint32_t>::max() ||
      input.shape(1) > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "input %s: shape [%s] is not [rows, cols] (two sizes, each at least "
        "1)",
        name, absl::StrJoin(input.shape(), ", ")));
  }
  for (const auto& [key, p] : input.parameters()) {
    if (key == "shared_memory_region") {
      return absl::UnimplementedError(kSharedMemoryRefusal);
    }
    if (key != "binary_data_size") {
      return absl::InvalidArgumentError(absl::StrFormat(
          "input %s: parameter %s is not one an input takes (binary_data_size "
          "over HTTP)",
          name, ShortQuote(key, 100)));
    }
  }
  tile->set_dtype(dtype);
  tile->set_rows(static_cast<uint32_t>(input.shape(0)));
  tile->set_cols(static_cast<uint32_t>(input.shape(1)));
  const uint64_t elements = uint64_t(tile->rows()) * tile->cols();
  const uint64_t bytes = elements * WireElementBytes(dtype);
  std::string* data = tile->mutable_data();
  if (request.raw_input_contents_size() > 0) {
    if (input.has_contents()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "input %s has contents although the request's elements are in "
          "raw_input_contents (one or the other, for every input)",
          name));
    }
    const std::string& raw = request.raw_input_contents(index);
    if (raw.size() != bytes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "input %s: %u bytes of raw contents where a %dx%d %s tensor has %u",
          name, raw.size(), input.shape(0), input.shape(1), input.datatype(),
          bytes));
    }
    *data = raw;
    return absl::OkStatus();
  }
  const bool is_signed = dtype == v1::DTYPE_INT8 || dtype == v1::DTYPE_INT16 ||
                         dtype == v1::DTYPE_INT32;
  const auto& c = input.contents();
  const size_t given =
      is_signed ? c.int_contents_size() : c.uint_contents_size();
  const size_t other =
      is_signed ? c.uint_contents_size() : c.int_contents_size();
  if (other > 0 || c.int64_contents_size() > 0 ||
      c.uint64_contents_size() > 0 || c.fp32_contents_size() > 0 ||
      c.fp64_contents_size() > 0 || c.bool_contents_size() > 0 ||
      c.bytes_contents_size() > 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "input %s: %s elements go in contents.%s, and only there", name,
        input.datatype(), is_signed ? "int_contents" : "uint_contents"));
  }
  if (given != elements) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "input %s: %u elements in contents.%s where a %dx%d tensor has %u",
        name, given, is_signed ? "int_contents" : "uint_contents",
        input.shape(0), input.shape(1), elements));
  }
  return is_signed ? PackValues(c.int_contents(), dtype, name, data)
                   : PackValues(c.uint_contents(), dtype, name, data);
}

// The outputs asked for, checked against the model's; the job's outputs.
absl::Status ReadOutputs(const InferModel& model,
                         const inference::ModelInferRequest& request,
                         v1::Target target, v1::Job* job,
                         InferEnvelope* envelope) {
  for (const auto& output : request.outputs()) {
    bool binary = envelope->all_binary;
    for (const auto& [key, p] : output.parameters()) {
      if (key == "binary_data") {
        absl::StatusOr<bool> b = BoolParameter("binary_data", p);
        if (!b.ok()) return b.status();
        binary = *b;
      } else if (key == "shared_memory_region") {
        return absl::UnimplementedError(kSharedMemoryRefusal);
      } else {
        return absl::InvalidArgumentError(absl::StrFormat(
            "output %s: parameter %s is not one an output takes (binary_data)",
            output.name(), ShortQuote(key, 100)));
      }
    }
    if (model.op != nullptr) {
      const bool takes_tmp =
          std::find(model.tmp_targets.begin(), model.tmp_targets.end(),
                    target) != model.tmp_targets.end();
      if (output.name() == "tmp" && !takes_tmp) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "output tmp: %s on %s has no tmp%s", OpcodeName(model.op->opcode),
            TargetText(target),
            model.tmp_targets.empty()
                ? ""
                : absl::StrCat(" (", TargetList(model.tmp_targets),
                               " takes one)")));
      }
      if (output.name() != "dst" && output.name() != "tmp") {
        return absl::InvalidArgumentError(
            absl::StrFormat("output %s is not one of model %s's: dst%s",
                            ShortQuote(output.name(), 100), model.name,
                            model.tmp_targets.empty() ? "" : ", tmp"));
      }
    }
    envelope->outputs.push_back(output.name());
    envelope->binary.push_back(binary);
  }
  if (model.op != nullptr && envelope->outputs.empty()) {
    envelope->outputs.push_back("dst");
    envelope->binary.push_back(envelope->all_binary);
  }
  if (!envelope->outputs.empty()) {
    job->clear_outputs();
    for (const std::string& name : envelope->outputs) job->add_outputs(name);
  }
  return absl::OkStatus();
}

// The job model's program: its JSON job or assembly parameter.
absl::Status ReadProgram(const RequestParameters& params, v1::Job* job) {
  if (params.has_job == params.has_assembly) {
    return absl::InvalidArgumentError(
        "model job runs the program in parameter job (a ptoserve.v1.Job in "
        "JSON) or parameter assembly (PTO assembly): one of them");
  }
  if (params.has_assembly) {
    job->set_assembly(params.assembly);
    return absl::OkStatus();
  }
  const v1::Target target = job->target();
  const google::protobuf::Duration timeout = job->timeout();
  const uint32_t priority = job->priority();
  const std::string id = job->id();
  if (absl::Status scanned =
          ScanJson(params.job_json, JsonBounds{8 + 4 * 1024 + 1024, 8});
      !scanned.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter job: ", scanned.message()));
  }
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(params.job_json.data(),
                                    params.job_json.size()),
      job, JobJsonParseOptions());
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(ReadableJsonError(
        "parameter job", params.job_json, std::string(parsed.message()),
        *v1::Job::descriptor()));
  }
  // The request's own parameters and id win over the program's.
  if (target != v1::TARGET_UNSPECIFIED) job->set_target(target);
  if (timeout.seconds() != 0 || timeout.nanos() != 0) {
    *job->mutable_timeout() = timeout;
  }
  if (priority != 0) job->set_priority(priority);
  if (!id.empty()) job->set_id(id);
  return absl::OkStatus();
}

// The instruction model's one instruction on src0 (and src1).
absl::Status ReadOperands(const InferModel& model, v1::Target target,
                          v1::Job* job) {
  const bool two = model.op->sources == 2;
  const char* const wanted = two ? "src0 and src1" : "src0";
  for (const char* operand : {"src0", "src1"}) {
    if (!two && std::string_view(operand) == "src1") break;
    if (job->tiles().count(operand) == 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("model %s reads inputs %s; %s is missing", model.name,
                          wanted, operand));
    }
  }
  v1::Instruction* inst = job->add_instructions();
  inst->set_opcode(static_cast<v1::Opcode>(model.op->wire_value));
  inst->set_dst("dst");
  inst->set_src0("src0");
  if (two) inst->set_src1("src1");
  if (std::find(model.tmp_targets.begin(), model.tmp_targets.end(), target) !=
      model.tmp_targets.end()) {
    inst->set_tmp("tmp");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status JobOfInferRequest(const ModelCatalog& catalog,
                               const inference::ModelInferRequest& request,
                               v1::Job* job, InferEnvelope* envelope) {
  envelope->id = request.id();
  envelope->model = request.model_name();
  absl::StatusOr<const InferModel*> found =
      catalog.Find(request.model_name(), request.model_version());
  if (!found.ok()) return found.status();
  const InferModel& model = **found;
  job->set_id(request.id());
  RequestParameters params;
  if (absl::Status read =
          ReadParameters(model, request, catalog, job, envelope, &params);
      !read.ok()) {
    return read;
  }
  if (model.op == nullptr) {
    if (absl::Status read = ReadProgram(params, job); !read.ok()) return read;
  }
  if (request.raw_input_contents_size() > 0 &&
      request.raw_input_contents_size() != request.inputs_size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "raw_input_contents has %d entries for %d inputs (one per input, in "
        "their order)",
        request.raw_input_contents_size(), request.inputs_size()));
  }
  for (int i = 0; i < request.inputs_size(); ++i) {
    const std::string& name = request.inputs(i).name();
    if (model.op != nullptr && name != "src0" &&
        !(name == "src1" && model.op->sources == 2)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "input %s is not one of model %s's: %s", ShortQuote(name, 100),
          model.name, model.op->sources == 2 ? "src0, src1" : "src0"));
    }
    if (model.op != nullptr && job->tiles().count(name) > 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("input %s is given twice", name));
    }
    v1::Tile& tile = (*job->mutable_tiles())[name];
    tile.Clear();
    if (absl::Status made = TileOfInput(model, request, i, &tile); !made.ok()) {
      return made;
    }
    tile.set_valid_rows(params.valid_rows);
    tile.set_valid_cols(params.valid_cols);
  }
  const v1::Target target = job->target() != v1::TARGET_UNSPECIFIED
                                ? job->target()
                                : catalog.default_target();
  if (model.op != nullptr) {
    if (absl::Status read = ReadOperands(model, target, job); !read.ok()) {
      return read;
    }
  }
  return ReadOutputs(model, request, target, job, envelope);
}

namespace {

// A result tile's elements as little-endian bytes (a `values` tile, from a
// job model's JSON, packed).
std::string TileBytes(const v1::Tile& tile) {
  if (tile.values_size() == 0) return tile.data();
  const size_t size = WireElementBytes(tile.dtype());
  std::string out(tile.values_size() * size, '\0');
  for (int i = 0; i < tile.values_size(); ++i) {
    const uint64_t bits =
        static_cast<uint64_t>(static_cast<int64_t>(tile.values(i)));
    for (size_t b = 0; b < size; ++b) out[i * size + b] = char(bits >> (8 * b));
  }
  return out;
}

}  // namespace

void InferResponseOf(const v1::JobResult& result, const InferEnvelope& envelope,
                     inference::ModelInferResponse* response) {
  response->set_model_name(envelope.model);
  response->set_model_version(kModelVersion);
  response->set_id(envelope.id);
  auto& parameters = *response->mutable_parameters();
  parameters["target"].set_string_param(TargetText(result.target()));
  std::string events;
  for (const v1::EventRecord& e : result.events()) events += EventText(e);
  parameters["events"].set_string_param(std::move(events));
  std::vector<std::string> names(envelope.outputs.begin(),
                                 envelope.outputs.end());
  if (names.empty()) {
    for (const auto& [name, tile] : result.tiles()) names.push_back(name);
    std::sort(names.begin(), names.end());
  }
  for (const std::string& name : names) {
    const auto found = result.tiles().find(name);
    if (found == result.tiles().end()) continue;
    const v1::Tile& tile = found->second;
    auto* out = response->add_outputs();
    out->set_name(name);
    out->set_datatype(DatatypeOf(tile.dtype()));
    out->add_shape(tile.rows());
    out->add_shape(tile.cols());
    response->add_raw_output_contents(TileBytes(tile));
  }
}

absl::StatusOr<WireShape> GrpcInferProtocol::Scan(
    const RequestBody& body, const EngineLimits& limits) const {
  absl::StatusOr<WireShape> shape;
  absl::Status read =
      body.Read([&](google::protobuf::io::ZeroCopyInputStream* in) {
        shape = ScanInferRequest(in, body.size(), limits);
      });
  if (!read.ok()) return read;
  return shape;
}

absl::Status GrpcInferProtocol::Parse(const RequestBody& body,
                                      absl::string_view what,
                                      v1::Job* job) const {
  inference::ModelInferRequest request;
  bool parsed = false;
  absl::Status read =
      body.Read([&](google::protobuf::io::ZeroCopyInputStream* in) {
        parsed = request.ParseFromZeroCopyStream(in);
      });
  if (!read.ok() || !parsed) {
    return absl::InvalidArgumentError(absl::StrCat(
        what,
        " is not an inference.ModelInferRequest: its protobuf encoding "
        "is truncated or corrupt"));
  }
  return JobOfInferRequest(*catalog_, request, job, &envelope_);
}

std::optional<SmallJob> GrpcInferProtocol::ReadSmall(
    absl::string_view bytes, const EngineLimits& limits) const {
  std::optional<SmallInfer> small = ReadSmallInfer(bytes, *catalog_, limits);
  if (!small) return std::nullopt;
  envelope_ = std::move(small->envelope);
  read_small_ = true;
  return std::move(small->job);
}

}  // namespace ptoserve
