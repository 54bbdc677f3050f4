#include "tests/integration/random_jobs.h"

#include "absl/strings/str_cat.h"
#include "proto/wire.h"

namespace ptoserve {

namespace {

constexpr v1::DType kDTypes[] = {v1::DTYPE_INT8,  v1::DTYPE_UINT8,
                                 v1::DTYPE_INT16, v1::DTYPE_UINT16,
                                 v1::DTYPE_INT32, v1::DTYPE_UINT32};
constexpr v1::Target kTargets[] = {v1::TARGET_HOST, v1::TARGET_A2A3,
                                   v1::TARGET_A5};

uint32_t Uniform(std::mt19937* rng, uint32_t lo, uint32_t hi) {
  return std::uniform_int_distribution<uint32_t>(lo, hi)(*rng);
}

std::string RandomBytes(std::mt19937* rng, size_t n) {
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>((*rng)() & 0xff);
  return out;
}

v1::Tile& AddTile(v1::Job* job, const std::string& name, v1::DType dtype,
                  uint32_t rows, uint32_t cols, uint32_t valid_rows,
                  uint32_t valid_cols) {
  v1::Tile& tile = (*job->mutable_tiles())[name];
  tile.set_dtype(dtype);
  tile.set_rows(rows);
  tile.set_cols(cols);
  tile.set_valid_rows(valid_rows);
  tile.set_valid_cols(valid_cols);
  return tile;
}

void AddInstruction(v1::Job* job, v1::Opcode opcode, const std::string& dst,
                    const std::string& src0, const std::string& src1) {
  v1::Instruction* inst = job->add_instructions();
  inst->set_opcode(opcode);
  inst->set_dst(dst);
  inst->set_src0(src0);
  inst->set_src1(src1);
  if (opcode == v1::OPCODE_TXOR) inst->set_tmp(dst + ".t");
}

// A tile's bytes with a row stride: row i starts at i * row_bytes.
struct Bytes {
  const std::string& data;
  uint32_t row_bytes;
  char at(uint32_t row, uint32_t byte) const {
    return data[row * row_bytes + byte];
  }
};

// dst (allocated: zeros, shaped rows x row_bytes) = src0 op src1 over the
// valid region of valid_rows x valid_bytes.
std::string Reference(v1::Opcode opcode, const Bytes& src0, const Bytes& src1,
                      uint32_t rows, uint32_t row_bytes, uint32_t valid_rows,
                      uint32_t valid_bytes) {
  std::string out(size_t{rows} * row_bytes, '\0');
  for (uint32_t i = 0; i < valid_rows; ++i) {
    for (uint32_t j = 0; j < valid_bytes; ++j) {
      const char x = src0.at(i, j), y = src1.at(i, j);
      out[i * row_bytes + j] =
          static_cast<char>(opcode == v1::OPCODE_TAND ? x & y : x ^ y);
    }
  }
  return out;
}

v1::Opcode RandomOpcode(std::mt19937* rng) {
  return Uniform(rng, 0, 1) ? v1::OPCODE_TXOR : v1::OPCODE_TAND;
}

}  // namespace

ExpectedJob RandomValidJob(std::mt19937* rng, uint32_t max_rows) {
  ExpectedJob out;
  v1::Job& job = out.job;
  const v1::DType dtype = kDTypes[Uniform(rng, 0, 5)];
  const uint32_t size = static_cast<uint32_t>(WireElementBytes(dtype));
  job.set_target(kTargets[Uniform(rng, 0, 2)]);
  // Rows of 32-byte multiples suit every target; b may be wider than a.
  const uint32_t rows = Uniform(rng, 1, max_rows);
  const uint32_t cols = Uniform(rng, 1, 2) * 32 / size;
  const uint32_t b_cols = cols + Uniform(rng, 0, 2) * 32 / size;
  const uint32_t valid_rows = Uniform(rng, 1, rows);
  const uint32_t valid_cols = Uniform(rng, 1, cols);
  v1::Tile& a = AddTile(&job, "a", dtype, rows, cols, valid_rows, valid_cols);
  a.set_data(RandomBytes(rng, size_t{rows} * cols * size));
  v1::Tile& b = AddTile(&job, "b", dtype, rows, b_cols, valid_rows, valid_cols);
  b.set_data(RandomBytes(rng, size_t{rows} * b_cols * size));
  const Bytes a_bytes{job.tiles().at("a").data(), cols * size};
  const Bytes b_bytes{job.tiles().at("b").data(), b_cols * size};
  const v1::Opcode first = RandomOpcode(rng);
  AddInstruction(&job, first, "c", "a", "b");
  out.outputs["c"] = Reference(first, a_bytes, b_bytes, rows, cols * size,
                               valid_rows, valid_cols * size);
  if (Uniform(rng, 0, 1)) {
    // d is allocated like its src0, c: a's shape and valid region.
    const v1::Opcode second = RandomOpcode(rng);
    AddInstruction(&job, second, "d", "c", "a");
    out.outputs["d"] =
        Reference(second, Bytes{out.outputs["c"], cols * size}, a_bytes, rows,
                  cols * size, valid_rows, valid_cols * size);
  }
  return out;
}

v1::Job RandomInvalidJob(std::mt19937* rng) {
  ExpectedJob valid = RandomValidJob(rng, 4);
  v1::Job& job = valid.job;
  v1::Tile& a = (*job.mutable_tiles())["a"];
  switch (Uniform(rng, 0, 8)) {
    case 0:
      job.mutable_instructions(0)->set_src1("missing");
      break;
    case 1:
      a.set_data(a.data() + "x");
      break;
    case 2:
      a.set_valid_rows(a.rows() + 1);
      break;
    case 3:
      job.set_target(v1::TARGET_A2A3);
      job.mutable_instructions(0)->set_opcode(v1::OPCODE_TXOR);
      job.mutable_instructions(0)->clear_tmp();
      break;
    case 4:
      job.clear_instructions();
      break;
    case 5:
      job.mutable_instructions(0)->set_opcode(v1::OPCODE_UNSPECIFIED);
      break;
    case 6:
      a.set_dtype(v1::DTYPE_FLOAT32);
      break;
    case 7:
      job.mutable_instructions(0)->add_wait_events("never");
      break;
    default:
      job.mutable_timeout()->set_seconds(-1);
      break;
  }
  return job;
}

std::string CheckResult(const ExpectedJob& expected,
                        const v1::JobResult& result) {
  if (result.status().code() != 0) {
    return absl::StrCat("status ", result.status().code(), ": ",
                        result.status().message());
  }
  if (static_cast<size_t>(result.tiles_size()) != expected.outputs.size()) {
    return absl::StrCat(result.tiles_size(), " output tiles, expected ",
                        expected.outputs.size());
  }
  for (const auto& [name, bytes] : expected.outputs) {
    auto it = result.tiles().find(name);
    if (it == result.tiles().end()) {
      return absl::StrCat("no output \"", name, "\"");
    }
    if (it->second.data() != bytes) {
      return absl::StrCat("output \"", name, "\" differs from the reference");
    }
  }
  if (result.events_size() != expected.job.instructions_size()) {
    return absl::StrCat(result.events_size(), " events, expected ",
                        expected.job.instructions_size());
  }
  return "";
}

}  // namespace ptoserve
