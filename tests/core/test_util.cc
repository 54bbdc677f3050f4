#include "tests/core/test_util.h"

namespace ptoserve {
namespace test {

JobBuilder::JobBuilder(Target target, Mode mode) {
  spec_.target = target;
  spec_.mode = mode;
}

void JobBuilder::AddTile(std::string name, const TileDesc& desc) {
  TileInput in;
  in.name = std::move(name);
  in.desc = desc;
  spec_.tiles.push_back(std::move(in));
}

void JobBuilder::AddData(std::string name, const TileDesc& desc,
                         std::string data) {
  AddTile(std::move(name), desc);
  data_.push_back(std::move(data));
  spec_.tiles.back().encoding = Encoding::kData;
  spec_.tiles.back().data = data_.back();
}

void JobBuilder::AddValues(std::string name, const TileDesc& desc,
                           std::vector<double> values) {
  AddTile(std::move(name), desc);
  values_.push_back(std::move(values));
  spec_.tiles.back().encoding = Encoding::kValues;
  spec_.tiles.back().values = values_.back();
}

void JobBuilder::AddFill(std::string name, const TileDesc& desc, double value) {
  AddTile(std::move(name), desc);
  spec_.tiles.back().encoding = Encoding::kFill;
  spec_.tiles.back().fill = value;
}

Instruction& JobBuilder::Add(Opcode opcode, std::string dst, std::string src0,
                             std::string src1, std::string tmp) {
  Instruction inst;
  inst.opcode = opcode;
  inst.dst = std::move(dst);
  inst.src0 = std::move(src0);
  inst.src1 = std::move(src1);
  inst.tmp = std::move(tmp);
  spec_.instructions.push_back(std::move(inst));
  return spec_.instructions.back();
}

const OutputTile* FindOutput(const JobOutcome& outcome,
                             absl::string_view name) {
  for (const OutputTile& out : outcome.outputs) {
    if (out.name == name) return &out;
  }
  ADD_FAILURE() << "the job has no output \"" << name << "\"";
  return nullptr;
}

}  // namespace test
}  // namespace ptoserve
