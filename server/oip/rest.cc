#include "server/oip/rest.h"

#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/quote.h"
#include "inference/rest.pb.h"
#include "proto/json_errors.h"
#include "proto/wire.h"
#include "server/intake/json_scan.h"

namespace ptoserve {

namespace {

using google::protobuf::ListValue;
using google::protobuf::Value;

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

// A JSON parameter as the protocol's: a bool, an integer, a double or a
// string.
absl::Status ParameterOf(absl::string_view where, absl::string_view name,
                         const Value& v, inference::InferParameter* p) {
  switch (v.kind_case()) {
    case Value::kBoolValue:
      p->set_bool_param(v.bool_value());
      return absl::OkStatus();
    case Value::kStringValue:
      p->set_string_param(v.string_value());
      return absl::OkStatus();
    case Value::kNumberValue: {
      const double d = v.number_value();
      if (d == std::trunc(d) && std::fabs(d) < 9.2e18) {
        p->set_int64_param(static_cast<int64_t>(d));
      } else {
        p->set_double_param(d);
      }
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("%sparameter %s must be a bool, a number or a string",
                          where, ShortQuote(name, 100)));
  }
}

// The numbers of `list`, nested or flat, in order.
absl::Status Flatten(const ListValue& list, absl::string_view input, int depth,
                     std::vector<double>* out) {
  for (const Value& v : list.values()) {
    if (v.kind_case() == Value::kNumberValue) {
      out->push_back(v.number_value());
    } else if (v.kind_case() == Value::kListValue && depth < 4) {
      if (absl::Status s = Flatten(v.list_value(), input, depth + 1, out);
          !s.ok()) {
        return s;
      }
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "input %s: data holds something other than numbers (or rows of "
          "them)",
          input));
    }
  }
  return absl::OkStatus();
}

// JSON numbers as the protocol's typed contents of `datatype`.
absl::Status ContentsOf(
    const std::vector<double>& values,
    const inference::ModelInferRequest::InferInputTensor& input,
    inference::InferTensorContents* contents) {
  const bool is_signed = input.datatype() == "INT8" ||
                         input.datatype() == "INT16" ||
                         input.datatype() == "INT32";
  for (size_t i = 0; i < values.size(); ++i) {
    const double d = values[i];
    const bool fits = is_signed ? d >= INT32_MIN && d <= INT32_MAX
                                : d >= 0 && d <= UINT32_MAX;
    if (d != std::trunc(d) || !fits) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "input %s: element %u is %g, not an integer a %s tensor holds",
          input.name(), i, d, input.datatype()));
    }
    if (is_signed) {
      contents->add_int_contents(static_cast<int32_t>(d));
    } else {
      contents->add_uint_contents(static_cast<uint32_t>(d));
    }
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// The JSON's inputs into `request`: each one's data as typed contents, or
// its binary_data_size bytes of `*binary` (taken from its front) as raw
// contents. Says whether any was binary, and any JSON.
absl::Status ReadInputs(const inference::rest::InferRequest& rest,
                        absl::string_view* binary,
                        inference::ModelInferRequest* request, bool* any_binary,
                        bool* any_data) {
  for (const auto& in : rest.inputs()) {
    auto* input = request->add_inputs();
    input->set_name(in.name());
    input->set_datatype(in.datatype());
    for (int64_t d : in.shape()) input->add_shape(d);
    const auto size = in.parameters().find("binary_data_size");
    if (size == in.parameters().end()) {
      *any_data = true;
      std::vector<double> values;
      if (absl::Status s = Flatten(in.data(), in.name(), 0, &values); !s.ok()) {
        return s;
      }
      if (absl::Status s =
              ContentsOf(values, *input, input->mutable_contents());
          !s.ok()) {
        return s;
      }
      continue;
    }
    *any_binary = true;
    const double n = size->second.number_value();
    if (size->second.kind_case() != Value::kNumberValue || n < 0 ||
        n != std::trunc(n) || n > double(binary->size())) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "input %s: binary_data_size must be a byte count within the %u "
          "bytes after the JSON",
          in.name(), binary->size()));
    }
    request->add_raw_input_contents(std::string(binary->substr(0, size_t(n))));
    binary->remove_prefix(size_t(n));
  }
  if (!binary->empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%u bytes follow the JSON that no input's binary_data_size claims",
        binary->size()));
  }
  return absl::OkStatus();
}

// The gRPC form has raw contents for every input or for none: with some
// binary, the JSON inputs' elements become raw bytes too.
absl::Status AllRaw(inference::ModelInferRequest* request) {
  int raw = 0;
  auto binary_contents = std::move(*request->mutable_raw_input_contents());
  request->clear_raw_input_contents();
  for (int i = 0; i < request->inputs_size(); ++i) {
    auto* input = request->mutable_inputs(i);
    if (!input->has_contents()) {
      request->add_raw_input_contents(std::move(binary_contents[raw++]));
      continue;
    }
    const size_t width = WireElementBytes(DTypeOfDatatype(input->datatype()));
    if (width == 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("input %s: datatype %s is not one a tile has",
                          input->name(), ShortQuote(input->datatype())));
    }
    const auto& c = input->contents();
    std::string bytes;
    const int n = std::max(c.int_contents_size(), c.uint_contents_size());
    for (int e = 0; e < n; ++e) {
      const uint64_t v = c.int_contents_size() > 0
                             ? uint64_t(int64_t(c.int_contents(e)))
                             : uint64_t(c.uint_contents(e));
      for (size_t b = 0; b < width; ++b) bytes.push_back(char(v >> (8 * b)));
    }
    input->clear_contents();
    request->add_raw_input_contents(std::move(bytes));
  }
  return absl::OkStatus();
}

// The request's parameters and its outputs' into the gRPC form's.
absl::Status ReadParametersAndOutputs(const inference::rest::InferRequest& rest,
                                      inference::ModelInferRequest* request) {
  for (const auto& [name, v] : rest.parameters()) {
    if (absl::Status s =
            ParameterOf("", name, v, &(*request->mutable_parameters())[name]);
        !s.ok()) {
      return s;
    }
  }
  for (const auto& out : rest.outputs()) {
    auto* output = request->add_outputs();
    output->set_name(out.name());
    for (const auto& [name, v] : out.parameters()) {
      if (absl::Status s =
              ParameterOf(absl::StrCat("output ", out.name(), ": "), name, v,
                          &(*output->mutable_parameters())[name]);
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RestInferRequest(absl::string_view body, size_t json_bytes,
                              absl::string_view model,
                              absl::string_view version,
                              inference::ModelInferRequest* request) {
  const absl::string_view json = body.substr(0, json_bytes);
  inference::rest::InferRequest rest;
  google::protobuf::util::JsonParseOptions options;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &rest, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(ReadableJsonError(
        "the inference request", json, std::string(parsed.message()),
        *inference::rest::InferRequest::descriptor()));
  }
  request->set_model_name(std::string(model));
  request->set_model_version(std::string(version));
  request->set_id(rest.id());
  absl::string_view binary = body.substr(json.size());
  bool any_binary = false, any_data = false;
  if (absl::Status s =
          ReadInputs(rest, &binary, request, &any_binary, &any_data);
      !s.ok()) {
    return s;
  }
  if (any_binary && any_data) {
    if (absl::Status s = AllRaw(request); !s.ok()) return s;
  }
  return ReadParametersAndOutputs(rest, request);
}

std::string RestInferResponse(const inference::ModelInferResponse& response,
                              const InferEnvelope& envelope,
                              size_t* json_bytes) {
  inference::rest::InferResponse rest;
  rest.set_model_name(response.model_name());
  rest.set_model_version(response.model_version());
  rest.set_id(response.id());
  for (const auto& [name, p] : response.parameters()) {
    (*rest.mutable_parameters())[name].set_string_value(p.string_param());
  }
  std::string binary;
  for (int i = 0; i < response.outputs_size(); ++i) {
    const auto& out = response.outputs(i);
    const std::string& raw = response.raw_output_contents(i);
    auto* answer = rest.add_outputs();
    answer->set_name(out.name());
    answer->set_datatype(out.datatype());
    for (int64_t d : out.shape()) answer->add_shape(static_cast<uint32_t>(d));
    bool as_binary = envelope.all_binary;
    for (size_t o = 0; o < envelope.outputs.size(); ++o) {
      if (envelope.outputs[o] == out.name()) as_binary = envelope.binary[o];
    }
    if (as_binary) {
      (*answer->mutable_parameters())["binary_data_size"].set_number_value(
          double(raw.size()));
      binary += raw;
      continue;
    }
    const v1::DType dtype = DTypeOfDatatype(out.datatype());
    const size_t width = WireElementBytes(dtype);
    const bool is_signed = out.datatype()[0] == 'I';
    ListValue* data = answer->mutable_data();
    for (size_t at = 0; width > 0 && at + width <= raw.size(); at += width) {
      uint64_t bits = 0;
      for (size_t b = 0; b < width; ++b) {
        bits |= uint64_t(uint8_t(raw[at + b])) << (8 * b);
      }
      int64_t v = int64_t(bits);
      if (is_signed && width < 8 && (bits >> (8 * width - 1)) & 1) {
        v = int64_t(bits | (~uint64_t{0} << (8 * width)));
      }
      data->add_values()->set_number_value(double(v));
    }
  }
  std::string out = ToJson(rest);
  *json_bytes = out.size();
  return out + binary;
}

std::string RestServerMetadata(const inference::ServerMetadataResponse& m) {
  return ToJson(m);
}

std::string RestModelMetadata(const inference::ModelMetadataResponse& m) {
  inference::rest::ModelMetadata rest;
  rest.set_name(m.name());
  *rest.mutable_versions() = m.versions();
  rest.set_platform(m.platform());
  for (const auto& [list, from] :
       {std::pair{rest.mutable_inputs(), &m.inputs()},
        std::pair{rest.mutable_outputs(), &m.outputs()}}) {
    for (const auto& t : *from) {
      auto* tensor = list->Add();
      tensor->set_name(t.name());
      tensor->set_datatype(t.datatype());
      for (int64_t d : t.shape()) tensor->add_shape(static_cast<int32_t>(d));
    }
  }
  *rest.mutable_properties() = m.properties();
  return ToJson(rest);
}

std::string RestRepositoryIndex(const inference::RepositoryIndexResponse& r) {
  std::vector<std::string> models;
  for (const auto& model : r.models()) models.push_back(ToJson(model));
  return absl::StrCat("[", absl::StrJoin(models, ","), "]");
}

std::string RestError(absl::string_view message) {
  inference::rest::Error error;
  error.set_error(std::string(message));
  return ToJson(error);
}

absl::StatusOr<WireShape> RestInferProtocol::Scan(
    const RequestBody& body, const EngineLimits& limits) const {
  if (json_bytes_ > body.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Inference-Header-Content-Length is %u, over the body's %u bytes",
        json_bytes_, body.size()));
  }
  const size_t json = header_given_ ? json_bytes_ : body.size();
  // Per input its object, its parameters' and its data's rows; per output
  // its own and its parameters'.
  const JsonBounds bounds{8 + 4 * limits.max_tiles_per_job, 8};
  if (absl::Status s = ScanJson(body.text().substr(0, json), bounds); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the inference request: ", s.message()));
  }
  WireShape shape;
  shape.instructions = 1;
  shape.json_bytes = json;
  return shape;
}

absl::Status RestInferProtocol::Parse(const RequestBody& body,
                                      absl::string_view what,
                                      v1::Job* job) const {
  (void)what;
  inference::ModelInferRequest request;
  const size_t json = header_given_ ? json_bytes_ : body.size();
  if (absl::Status s =
          RestInferRequest(body.text(), json, model_, version_, &request);
      !s.ok()) {
    return s;
  }
  return JobOfInferRequest(*catalog_, request, job, &envelope_);
}

}  // namespace ptoserve
