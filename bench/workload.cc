#include "bench/workload.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "flat/flat.pb.h"
#include "inference/grpc_service.pb.h"
#include "proto/wire.h"

namespace ptoserve {
namespace ptobench {

namespace {

grpc::ByteBuffer OneSlice(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

// --wire=oip's ModelInferRequest: model --opcode, src0 and src1 as raw
// contents.
grpc::ByteBuffer InferRequest(const Settings& settings, const std::string& a,
                              const std::string& b, uint32_t rows,
                              uint32_t cols) {
  inference::ModelInferRequest infer;
  infer.set_model_name(settings.opcode);
  for (auto [name, data] : {std::pair{"src0", &a}, std::pair{"src1", &b}}) {
    auto* input = infer.add_inputs();
    input->set_name(name);
    input->set_datatype(absl::AsciiStrToUpper(settings.dtype));
    input->add_shape(rows);
    input->add_shape(cols);
    infer.add_raw_input_contents(*data);
  }
  return OneSlice(infer.SerializeAsString());
}

// --wire=flat's FlatJob.
grpc::ByteBuffer FlatRequest(v1::DType dtype, const std::string& a,
                             const std::string& b, uint32_t rows,
                             uint32_t cols) {
  bench::FlatJob flat;
  flat.set_src0(a);
  flat.set_src1(b);
  flat.set_dtype(dtype);
  flat.set_rows(rows);
  flat.set_cols(cols);
  return OneSlice(flat.SerializeAsString());
}

}  // namespace

absl::StatusOr<Workload> MakeWorkload(const Settings& settings) {
  Workload w;
  v1::DType dtype;
  if (!v1::DType_Parse("DTYPE_" + absl::AsciiStrToUpper(settings.dtype),
                       &dtype)) {
    return absl::InvalidArgumentError("bad --dtype");
  }
  v1::Target target;
  if (!v1::Target_Parse("TARGET_" + absl::AsciiStrToUpper(settings.target),
                        &target)) {
    return absl::InvalidArgumentError("bad --target");
  }
  const bool is_xor = settings.opcode == "txor";
  std::vector<std::string> dims = absl::StrSplit(settings.shape, 'x');
  uint32_t rows = 0, cols = 0;
  if (dims.size() != 2 || !absl::SimpleAtoi(dims[0], &rows) ||
      !absl::SimpleAtoi(dims[1], &cols)) {
    return absl::InvalidArgumentError("bad --shape");
  }
  const size_t bytes = size_t{rows} * cols * WireElementBytes(dtype);
  std::mt19937 rng(42);
  std::string a(bytes, '\0'), b(bytes, '\0');
  for (char& c : a) c = static_cast<char>(rng());
  for (char& c : b) c = static_cast<char>(rng());
  w.expected.resize(bytes);
  for (size_t i = 0; i < bytes; ++i) {
    w.expected[i] = is_xor ? (a[i] ^ b[i]) : (a[i] & b[i]);
  }
  w.poison.resize(bytes);
  for (size_t i = 0; i < bytes; ++i) w.poison[i] = ~w.expected[i];
  w.job.set_target(target);
  for (auto [name, data] : {std::pair{"src0", &a}, std::pair{"src1", &b}}) {
    v1::Tile& t = (*w.job.mutable_tiles())[name];
    t.set_dtype(dtype);
    t.set_rows(rows);
    t.set_cols(cols);
    t.set_data(*data);
  }
  v1::Instruction* inst = w.job.add_instructions();
  inst->set_opcode(is_xor ? v1::OPCODE_TXOR : v1::OPCODE_TAND);
  inst->set_dst("dst");
  inst->set_src0("src0");
  inst->set_src1("src1");
  if (is_xor) inst->set_tmp("tmp");
  const std::string job_bytes = w.job.SerializeAsString();
  Unit& unit = w.units.emplace_back();
  if (settings.wire == "oip") {
    w.wire = Workload::Wire::kOip;
    unit.request = InferRequest(settings, a, b, rows, cols);
    return w;
  }
  if (settings.wire == "flat") {
    w.wire = Workload::Wire::kFlat;
    unit.request = FlatRequest(dtype, a, b, rows, cols);
    return w;
  }
  unit.request = OneSlice(job_bytes);
  // Only batch mode sends the rest of a batch: at 4096x4096 (128 MiB jobs)
  // the default --batch's rest alone would be 4 GB.
  std::string rest;
  for (int i = 1; i < settings.batch && settings.mode == "batch"; ++i) {
    absl::StrAppend(&rest, JobsFieldHeader(job_bytes.size()), job_bytes);
  }
  unit.batch_rest = grpc::Slice(rest);
  return w;
}

std::string JobsFieldHeader(size_t size) {
  std::string header(1, '\x0a');  // field 1, length-delimited
  for (; size >= 0x80; size >>= 7) {
    header += static_cast<char>((size & 0x7f) | 0x80);
  }
  header += static_cast<char>(size);
  return header;
}

int MessagesPerStream(int stream_depth, int batch) {
  return batch > 0 ? std::max(1, stream_depth / batch) : stream_depth;
}

}  // namespace ptobench
}  // namespace ptoserve
