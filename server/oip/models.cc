#include "server/oip/models.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/quote.h"
#include "core/version.h"
#include "proto/words.h"

namespace ptoserve {

namespace {

// The protocol's datatype of each element type that has one.
constexpr std::pair<v1::DType, absl::string_view> kDatatypes[] = {
    {v1::DTYPE_INT8, "INT8"},    {v1::DTYPE_UINT8, "UINT8"},
    {v1::DTYPE_INT16, "INT16"},  {v1::DTYPE_UINT16, "UINT16"},
    {v1::DTYPE_INT32, "INT32"},  {v1::DTYPE_UINT32, "UINT32"},
    {v1::DTYPE_FLOAT16, "FP16"}, {v1::DTYPE_BFLOAT16, "BF16"},
    {v1::DTYPE_FLOAT32, "FP32"},
};

}  // namespace

std::string DatatypeOf(v1::DType dtype) {
  for (const auto& [d, datatype] : kDatatypes) {
    if (d == dtype) return std::string(datatype);
  }
  return "";
}

v1::DType DTypeOfDatatype(absl::string_view datatype) {
  for (const auto& [d, name] : kDatatypes) {
    if (name == datatype) return d;
  }
  return v1::DTYPE_UNSPECIFIED;
}

ModelCatalog::ModelCatalog(const v1::Capabilities& capabilities)
    : default_target_(capabilities.default_target()) {
  InferModel job;
  job.name = kJobModel;
  for (const OpInfo& op : kOps) {
    InferModel model;
    model.name = std::string(op.mnemonic);
    model.op = &op;
    std::vector<int> dtypes;
    for (const v1::TargetInfo& target : capabilities.targets()) {
      for (const v1::OpcodeSupport& support : target.opcodes()) {
        if (support.opcode() != op.wire_value) continue;
        model.targets.push_back(target.target());
        if (support.tmp_required())
          model.tmp_targets.push_back(target.target());
        dtypes.insert(dtypes.end(), support.dtypes().begin(),
                      support.dtypes().end());
      }
    }
    if (model.targets.empty()) continue;  // no target runs it
    std::sort(dtypes.begin(), dtypes.end());
    dtypes.erase(std::unique(dtypes.begin(), dtypes.end()), dtypes.end());
    for (int d : dtypes) {
      const std::string datatype = DatatypeOf(static_cast<v1::DType>(d));
      if (!datatype.empty()) model.datatypes.push_back(datatype);
    }
    for (const std::string& d : model.datatypes) {
      if (std::find(job.datatypes.begin(), job.datatypes.end(), d) ==
          job.datatypes.end()) {
        job.datatypes.push_back(d);
      }
    }
    models_.push_back(std::move(model));
  }
  for (const v1::TargetInfo& target : capabilities.targets()) {
    targets_.push_back(target.target());
  }
  job.targets = targets_;
  models_.push_back(std::move(job));
  std::sort(
      models_.begin(), models_.end(),
      [](const InferModel& a, const InferModel& b) { return a.name < b.name; });
}

std::string ModelCatalog::Names() const {
  return absl::StrJoin(
      models_, ", ",
      [](std::string* out, const InferModel& m) { out->append(m.name); });
}

absl::StatusOr<const InferModel*> ModelCatalog::Find(
    absl::string_view name, absl::string_view version) const {
  for (const InferModel& model : models_) {
    if (model.name != name) continue;
    if (!version.empty() && version != kModelVersion) {
      return absl::NotFoundError(absl::StrFormat(
          "model %s has no version %s: its one version is \"%s\"",
          ShortQuote(name), ShortQuote(version), kModelVersion));
    }
    return &model;
  }
  return absl::NotFoundError(absl::StrFormat(
      "no model %s on this server; its models are %s (docs/INFERENCE.md)",
      ShortQuote(name, 100), Names()));
}

std::string TargetList(const std::vector<v1::Target>& targets,
                       absl::string_view separator) {
  return absl::StrJoin(targets, separator, [](std::string* s, v1::Target t) {
    s->append(TargetText(t));
  });
}

inference::RepositoryIndexResponse ModelCatalog::Index() const {
  inference::RepositoryIndexResponse index;
  for (const InferModel& model : models_) {
    auto* entry = index.add_models();
    entry->set_name(model.name);
    entry->set_version(kModelVersion);
    entry->set_state("READY");
  }
  return index;
}

inference::ServerMetadataResponse ServerMetadataOf() {
  inference::ServerMetadataResponse m;
  m.set_name("ptoserve");
  m.set_version(kVersion);
  m.add_extensions("binary_tensor_data");
  m.add_extensions("parameters");
  return m;
}

inference::ModelMetadataResponse ModelCatalog::Metadata(
    const InferModel& model) const {
  inference::ModelMetadataResponse out;
  out.set_name(model.name);
  out.add_versions(kModelVersion);
  out.set_platform("ptoserve");
  const auto tensor = [&](auto* list, const char* name) {
    auto* t = list->Add();
    t->set_name(name);
    // Any of the model's datatypes (properties["datatypes"]); both inputs
    // and the outputs share one. INT32 when a client must pick one.
    t->set_datatype(std::find(model.datatypes.begin(), model.datatypes.end(),
                              "INT32") != model.datatypes.end()
                        ? "INT32"
                    : model.datatypes.empty() ? ""
                                              : model.datatypes[0]);
    t->add_shape(-1);
    t->add_shape(-1);
  };
  auto& properties = *out.mutable_properties();
  properties["datatypes"] = absl::StrJoin(model.datatypes, ",");
  properties["targets"] = TargetList(model.targets, ",");
  properties["default_target"] = TargetText(default_target_);
  if (model.op == nullptr) {
    properties["parameters"] =
        "job (a ptoserve.v1.Job in JSON) or assembly (PTO assembly), "
        "target, timeout, priority";
    properties["inputs"] = "tiles by name, any of the datatypes";
    properties["outputs"] = "the job's outputs, or those asked for";
    return out;
  }
  properties["parameters"] =
      "target, valid_rows, valid_cols, timeout, priority";
  tensor(out.mutable_inputs(), "src0");
  if (model.op->sources == 2) tensor(out.mutable_inputs(), "src1");
  tensor(out.mutable_outputs(), "dst");
  if (!model.tmp_targets.empty()) {
    tensor(out.mutable_outputs(), "tmp");
    properties["tmp"] = absl::StrCat("on ", TargetList(model.tmp_targets, ","),
                                     ", when asked for");
  }
  return out;
}

}  // namespace ptoserve
