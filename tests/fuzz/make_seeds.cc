// Writes the fuzzers' seed corpus, checked in under tests/fuzz/corpus/:
//   bazel run //tests/fuzz:make_seeds -- $PWD/tests/fuzz/corpus
// job_fuzzer: valid serialized Jobs covering each target, both element
// encodings, waits, outputs, manual mode and assembly; asm_fuzzer: the
// seeds' assembly and the forms docs/ASSEMBLY.md shows; diff_fuzzer: inputs
// that pick each element type and opcode. Each job is run first, and the
// tool fails if one does not execute: the seeds must be valid.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/codec.h"
#include "ptoserve/v1/job.pb.h"
#include "server/jobs/decode.h"
#include "tests/core/asm/seed_programs.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/server/small_job_checks.h"

namespace ptoserve {
namespace fuzz {
namespace {

namespace fs = std::filesystem;

v1::Tile MakeTile(v1::DType dtype, uint32_t rows, uint32_t cols,
                  uint32_t valid_rows = 0, uint32_t valid_cols = 0) {
  v1::Tile t;
  t.set_dtype(dtype);
  t.set_rows(rows);
  t.set_cols(cols);
  t.set_valid_rows(valid_rows);
  t.set_valid_cols(valid_cols);
  return t;
}

// Raw elements of a recognisable pattern.
v1::Tile WithData(v1::Tile t, uint8_t seed) {
  std::string data(size_t{t.rows()} * t.cols() * WireElementBytes(t.dtype()),
                   '\0');
  for (size_t k = 0; k < data.size(); ++k) {
    data[k] = static_cast<char>(k * 37 + seed);
  }
  t.set_data(data);
  return t;
}

// Small numbers, in range for every element type.
v1::Tile WithValues(v1::Tile t, int seed) {
  for (uint32_t k = 0; k < t.rows() * t.cols(); ++k) {
    t.add_values((k * 7 + seed) % 100);
  }
  return t;
}

v1::Instruction* Add(v1::Job* job, v1::Opcode opcode, const char* dst,
                     const char* src0, const char* src1, const char* tmp = "") {
  v1::Instruction* in = job->add_instructions();
  in->set_opcode(opcode);
  in->set_dst(dst);
  in->set_src0(src0);
  in->set_src1(src1);
  in->set_tmp(tmp);
  return in;
}

std::vector<std::pair<std::string, v1::Job>> Jobs() {
  std::vector<std::pair<std::string, v1::Job>> jobs;
  auto job = [&](const char* name, v1::Target target) {
    jobs.emplace_back(name, v1::Job());
    jobs.back().second.set_target(target);
    return &jobs.back().second;
  };
  auto tiles = [](v1::Job* j) { return j->mutable_tiles(); };
  {
    v1::Job* j = job("host_tand_int16", v1::TARGET_HOST);
    (*tiles(j))["a"] = WithData(MakeTile(v1::DTYPE_INT16, 16, 16), 1);
    (*tiles(j))["b"] = WithData(MakeTile(v1::DTYPE_INT16, 16, 16), 2);
    Add(j, v1::OPCODE_TAND, "c", "a", "b");
  }
  {
    v1::Job* j = job("a2a3_txor_int32_values", v1::TARGET_A2A3);
    (*tiles(j))["a"] = WithValues(MakeTile(v1::DTYPE_INT32, 4, 16, 4, 7), 1);
    (*tiles(j))["b"] = WithValues(MakeTile(v1::DTYPE_INT32, 5, 8, 4, 7), 2);
    (*tiles(j))["t"] = MakeTile(v1::DTYPE_INT32, 4, 8, 4, 7);
    Add(j, v1::OPCODE_TXOR, "c", "a", "b", "t");
  }
  {
    v1::Job* j = job("a5_events_outputs_uint8", v1::TARGET_A5);
    (*tiles(j))["a"] = WithData(MakeTile(v1::DTYPE_UINT8, 2, 64, 2, 32), 3);
    (*tiles(j))["b"] = WithData(MakeTile(v1::DTYPE_UINT8, 2, 32), 4);
    (*tiles(j))["spare"] = WithValues(MakeTile(v1::DTYPE_INT32, 1, 8), 5);
    (*tiles(j))["x"] = MakeTile(v1::DTYPE_UINT8, 3, 32, 2, 32);
    Add(j, v1::OPCODE_TAND, "x", "a", "b")->set_record_event("and");
    Add(j, v1::OPCODE_TXOR, "y", "x", "b", "t")->add_wait_events("and");
    j->add_outputs("y");
    j->add_outputs("x");
    j->add_outputs("a");
    j->add_outputs("y");
  }
  {
    v1::Job* j = job("a2a3_manual", v1::TARGET_A2A3);
    j->set_mode(v1::MODE_MANUAL);
    const char* names[] = {"a", "b", "c", "t"};
    for (int k = 0; k < 4; ++k) {
      v1::Tile t = WithData(MakeTile(v1::DTYPE_INT16, 16, 16), k);
      t.set_address(0x1000 * k);
      (*tiles(j))[names[k]] = t;
    }
    Add(j, v1::OPCODE_TXOR, "c", "a", "b", "t");
    Add(j, v1::OPCODE_TAND, "c", "c", "a");
  }
  {
    v1::Job* j = job("host_in_place_int8", v1::TARGET_HOST);
    (*tiles(j))["a"] = WithData(MakeTile(v1::DTYPE_INT8, 3, 40, 2, 33), 6);
    Add(j, v1::OPCODE_TAND, "a", "a", "a");
    Add(j, v1::OPCODE_TXOR, "d", "a", "a");
  }
  {
    v1::Job* j = job("host_batchable_uint32", v1::TARGET_HOST);
    const char* names[] = {"a", "b", "c", "d"};
    for (int k = 0; k < 4; ++k) {
      (*tiles(j))[names[k]] = WithData(MakeTile(v1::DTYPE_UINT32, 8, 8), k);
    }
    Add(j, v1::OPCODE_TAND, "ab", "a", "b");
    Add(j, v1::OPCODE_TAND, "cd", "c", "d");
    Add(j, v1::OPCODE_TAND, "ac", "a", "c");
    Add(j, v1::OPCODE_TAND, "bd", "b", "d");
    Add(j, v1::OPCODE_TXOR, "x", "ab", "cd");
    Add(j, v1::OPCODE_TXOR, "y", "ac", "bd");
    Add(j, v1::OPCODE_TAND, "a", "x", "y");
  }
  {
    v1::Job* j = job("default_target_values_int16", v1::TARGET_UNSPECIFIED);
    (*tiles(j))["a"] = WithValues(MakeTile(v1::DTYPE_INT16, 2, 16, 2, 5), 7);
    (*tiles(j))["b"] = WithValues(MakeTile(v1::DTYPE_INT16, 3, 32, 2, 5), 8);
    Add(j, v1::OPCODE_TXOR, "b", "a", "b");
  }
  {
    v1::Job* j = job("a5_shapes_int32", v1::TARGET_A5);
    (*tiles(j))["dst"] = WithData(MakeTile(v1::DTYPE_INT32, 4, 24, 3, 5), 9);
    (*tiles(j))["src0"] = WithData(MakeTile(v1::DTYPE_INT32, 3, 8, 3, 5), 10);
    (*tiles(j))["src1"] = WithData(MakeTile(v1::DTYPE_INT32, 5, 16, 3, 5), 11);
    Add(j, v1::OPCODE_TAND, "dst", "src0", "src1");
  }
  {
    v1::Job* j = job("a2a3_assembly", v1::TARGET_A2A3);
    (*tiles(j))["a"] = WithValues(MakeTile(v1::DTYPE_INT16, 1, 16), 1);
    (*tiles(j))["b"] = WithValues(MakeTile(v1::DTYPE_INT16, 1, 16), 3);
    j->set_assembly(
        "# c = a & b, then d = c ^ a (a2a3 needs a tmp: the SSA form has "
        "none)\n"
        "%c = tand %a, %b : !pto.tile<...>\n"
        "%d = pto.txor %c, %a : (!pto.tile<...>, !pto.tile<...>) -> "
        "!pto.tile<...>\n");
  }
  {
    v1::Job* j = job("a2a3_assembly_manual_dps", v1::TARGET_A2A3);
    (*tiles(j))["src0"] = WithData(MakeTile(v1::DTYPE_INT16, 16, 16), 12);
    (*tiles(j))["src1"] = WithData(MakeTile(v1::DTYPE_INT16, 16, 16), 13);
    j->set_assembly(
        "pto.tassign %src0, @tile(0x1000)\n"
        "pto.tassign %src1, @tile(0x2000)\n"
        "pto.tassign %t, @tile(0x3000)\n"
        "pto.tassign %dst, @tile(0x4000)\n"
        "pto.txor ins(%src0, %src1, %t : !pto.tile_buf<loc=vec, dtype=i16, "
        "rows=16, cols=16, v_row=16, v_col=?, blayout=row_major, "
        "slayout=none_box, fractal=512, pad=0>, !pto.tile_buf<...>, "
        "!pto.tile<dtype=int16>) outs(%dst : !pto.tile_buf<...>)  # c\n"
        "pto.tand ins(%dst, %src0 : !pto.tile<...>, !pto.tile<...>) "
        "outs(%dst : !pto.tile<...>)\n");
  }
  return jobs;
}

std::vector<std::pair<std::string, std::string>> Programs() {
  std::vector<std::pair<std::string, std::string>> programs;
  int k = 0;
  for (const test::SeedProgram& seed : test::kSeedPrograms) {
    programs.emplace_back(absl::StrCat("program_", k++), seed.text);
  }
  programs.emplace_back(
      "readme",
      "# c = a & b, then d = c ^ a (a2a3 needs a tmp: the SSA form has none)\n"
      "%c = tand %a, %b : !pto.tile<...>\n"
      "%d = pto.txor %c, %a : (!pto.tile<...>, !pto.tile<...>) -> "
      "!pto.tile<...>\n"
      "pto.txor ins(%c, %a, %t : !pto.tile_buf<...>, !pto.tile_buf<...>, "
      "!pto.tile_buf<...>) outs(%e : !pto.tile_buf<dtype=i16, v_row=?, "
      "v_col=?>)\n");
  programs.emplace_back(
      "typed_new_tile",
      "%d = pto.tand %a, %b : (!pto.tile<...>, !pto.tile<...>) -> "
      "!pto.tile<cols=32>\n"
      "%e = txor %src0, %src1 : !pto.tile_buf<loc=vec, dtype=si16, rows=16, "
      "cols=16, v_row=16, v_col=16>  // trailing\n");
  programs.emplace_back(
      "manual",
      "pto.tassign %src0, @tile(0x1000)\n"
      "pto.tassign %src1, @tile(0x2000)\n"
      "pto.txor ins(%src0, %src1, %t : !pto.tile_buf<loc=vec, dtype=i16, "
      "rows=16, cols=16, v_row=16, v_col=?, blayout=row_major, "
      "slayout=none_box, fractal=512, pad=0>, !pto.tile_buf<...>, "
      "!pto.tile<dtype=int16>) outs(%dst : !pto.tile_buf<...>)  # c\n"
      "pto.tand ins(%dst, %src0 : !pto.tile<...>, !pto.tile<...>) "
      "outs(%dst : !pto.tile<...>)\r\n"
      "%u2 = pto.tand %u, %u : (!pto.tile<dtype=ui8>, !pto.tile<...>) -> "
      "!pto.tile<...>\n");
  return programs;
}

// Inputs for RunDifferential: the first bytes choose the element type and
// the opcode, the rest shapes, aliasing and elements (see MakePlan).
std::vector<std::pair<std::string, std::string>> DifferentialInputs() {
  std::vector<std::pair<std::string, std::string>> inputs;
  uint32_t state = 12345;
  for (int dtype = 0; dtype < 6; ++dtype) {
    for (int opcode = 0; opcode < 2; ++opcode) {
      std::string bytes = {static_cast<char>(dtype), static_cast<char>(opcode)};
      for (int k = 0; k < 30; ++k) {
        state = state * 1103515245 + 12345;
        bytes.push_back(static_cast<char>(state >> 16));
      }
      inputs.emplace_back(absl::StrCat("dtype", dtype, "_op", opcode), bytes);
    }
  }
  return inputs;
}

bool Write(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  return static_cast<bool>(out);
}

int Main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds CORPUS_DIR\n");
    return 2;
  }
  const fs::path root = argv[1];
  for (const char* dir : {"job_fuzzer", "asm_fuzzer", "diff_fuzzer"}) {
    fs::create_directories(root / dir);
  }
  bool ok = true;
  for (const auto& [name, job] : Jobs()) {
    absl::StatusOr<DecodedJob> decoded = DecodeJob(job, SmallEngine());
    absl::Status status = decoded.status();
    if (decoded.ok()) status = SmallEngine().Execute(decoded->spec).status();
    if (!status.ok()) {
      std::fprintf(stderr, "job %s does not run: %s\n", name.c_str(),
                   status.ToString().c_str());
      ok = false;
      continue;
    }
    ok &= Write(root / "job_fuzzer" / ("seed_" + name + ".pb"),
                DeterministicBytes(job));
  }
  for (const auto& [name, text] : Programs()) {
    ok &= Write(root / "asm_fuzzer" / ("seed_" + name + ".pto"), text);
  }
  for (const auto& [name, bytes] : DifferentialInputs()) {
    ok &= Write(root / "diff_fuzzer" / ("seed_" + name + ".bin"), bytes);
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace fuzz
}  // namespace ptoserve

int main(int argc, char** argv) { return ptoserve::fuzz::Main(argc, argv); }
