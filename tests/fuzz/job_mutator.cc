#include "tests/fuzz/job_mutator.h"

#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/fuzz/fuzz_util.h"

namespace ptoserve {
namespace fuzz {

namespace {

// Elements a mutant may hold, beyond which it would only be rejected for
// size: the fuzzer's inputs are a few KiB.
constexpr size_t kMaxElementBytes = 8192;

// A mutant's element size; a dtype that names none is sized as 4 bytes.
size_t ElementBytesOf(int dtype) {
  const size_t bytes = WireElementBytes(dtype);
  return bytes > 0 ? bytes : 4;
}

class Mutator {
 public:
  Mutator(std::mt19937* rng, v1::Job* job) : rng_(*rng), job_(*job) {}

  void Run() {
    switch (Below(17)) {
      case 0: job_.set_target(static_cast<v1::Target>(Below(5))); break;
      case 1:
        job_.set_mode(job_.mode() == v1::MODE_AUTO ? v1::MODE_MANUAL
                                                   : v1::MODE_AUTO);
        break;
      case 2: Reshape(); break;
      case 3:
        if (v1::Tile* t = AnyTile()) {
          t->set_dtype(static_cast<v1::DType>(Below(10)));
          FitElements(t);
        }
        break;
      case 4: Reencode(); break;
      case 5: ChangeElement(); break;
      case 6:
        if (v1::Tile* t = AnyTile()) {
          if (Below(4) == 0) {
            t->clear_address();
          } else {
            t->set_address(Below(8) * 0x1000 + Below(3) * 32 + Below(2) * Below(32));
          }
        }
        break;
      case 7:
        if (v1::Tile* t = AnyTile()) {
          if (Below(2) == 0) {
            t->set_layout(static_cast<v1::Layout>(Below(3)));
          } else {
            t->set_location(static_cast<v1::Location>(Below(8)));
          }
        }
        break;
      case 8: AddTile(); break;
      case 9:
        if (!job_.tiles().empty()) job_.mutable_tiles()->erase(TileName());
        break;
      case 10: SetOperand(); break;
      case 11:
        if (v1::Instruction* in = AnyInstruction()) {
          in->set_opcode(static_cast<v1::Opcode>(Below(4)));
        }
        break;
      case 12: AddInstruction(); break;
      case 13: RemoveInstruction(); break;
      case 14: SetEvents(); break;
      case 15:
        if (Below(3) == 0) {
          job_.clear_outputs();
        } else {
          job_.add_outputs(Name());
        }
        break;
      default:
        if (job_.instructions_size() > 1) {
          job_.mutable_instructions()->SwapElements(
              Below(job_.instructions_size()), Below(job_.instructions_size()));
        }
        break;
    }
  }

 private:
  uint32_t Below(uint32_t n) { return n == 0 ? 0 : rng_() % n; }

  // A tile extent: small, or one of the edges of the rules (row alignment,
  // buffer and limits).
  uint32_t Extent() {
    static constexpr uint32_t kEdges[] = {0,  1,  2,   3,   7,    8,     15,
                                          16, 17, 31,  32,  33,   63,    64,
                                          65, 96, 128, 256, 4096, 65536, 0xffffffff};
    if (Below(2) == 0) return kEdges[Below(sizeof(kEdges) / sizeof(kEdges[0]))];
    return 1 + Below(40);
  }

  // A name: of a tile, of an instruction's dst, or a new one.
  std::string Name() {
    std::vector<std::string> names = {"a", "b", "c", "t", "dst", "x.tmp", ""};
    for (const auto& [name, tile] : job_.tiles()) names.push_back(name);
    for (const v1::Instruction& in : job_.instructions()) names.push_back(in.dst());
    return names[Below(names.size())];
  }

  std::string TileName() {
    auto it = job_.tiles().begin();
    std::advance(it, Below(job_.tiles_size()));
    return it->first;
  }

  v1::Tile* AnyTile() {
    if (job_.tiles().empty()) return nullptr;
    return &(*job_.mutable_tiles())[TileName()];
  }

  v1::Instruction* AnyInstruction() {
    if (job_.instructions_size() == 0) return nullptr;
    return job_.mutable_instructions(Below(job_.instructions_size()));
  }

  // Makes the elements (if any were sent) as many as the shape holds, unless
  // that is more than a mutant should carry.
  void FitElements(v1::Tile* t) {
    const uint64_t elements = uint64_t{t->rows()} * t->cols();
    const uint64_t bytes = elements * ElementBytesOf(t->dtype());
    if (bytes > kMaxElementBytes) return;
    if (!t->data().empty()) {
      std::string* data = t->mutable_data();
      const size_t old = data->size();
      data->resize(bytes);
      for (size_t k = old; k < data->size(); ++k) (*data)[k] = static_cast<char>(rng_());
    } else if (t->values_size() > 0) {
      while (static_cast<uint64_t>(t->values_size()) > elements) t->mutable_values()->RemoveLast();
      while (static_cast<uint64_t>(t->values_size()) < elements) t->add_values(Below(100));
    }
  }

  void Reshape() {
    v1::Tile* t = AnyTile();
    if (t == nullptr) return;
    switch (Below(5)) {
      case 0: t->set_rows(Extent()); break;
      case 1: t->set_cols(Extent()); break;
      case 2: t->set_valid_rows(Extent()); break;
      case 3: t->set_valid_cols(Extent()); break;
      default:  // rows of 32-byte multiples, as a2a3 and a5 need
        t->set_cols(32 * (1 + Below(3)) / ElementBytesOf(t->dtype()));
        t->set_valid_cols(Below(t->cols() + 1));
        break;
    }
    FitElements(t);
  }

  void Reencode() {
    v1::Tile* t = AnyTile();
    if (t == nullptr) return;
    const bool to_data = t->data().empty();
    t->clear_data();
    t->clear_values();
    if (Below(3) == 0) return;  // no elements: zero-filled
    if (to_data) {
      t->set_data(std::string(1, '\0'));
    } else {
      t->add_values(0);
    }
    FitElements(t);
  }

  void ChangeElement() {
    v1::Tile* t = AnyTile();
    if (t == nullptr) return;
    if (!t->data().empty()) {
      (*t->mutable_data())[Below(t->data().size())] = static_cast<char>(rng_());
    } else if (t->values_size() > 0) {
      static const double kValues[] = {
          -1, 127, 128, 255, 256, -129, 32768, 65535, 65536, 2147483647.0,
          2147483648.0, 4294967295.0, -2147483649.0, 0.5, -0.0, 1e300, -1e300,
          std::numeric_limits<double>::infinity(),
          std::numeric_limits<double>::quiet_NaN(),
          std::numeric_limits<double>::denorm_min()};
      t->set_values(Below(t->values_size()),
                    kValues[Below(sizeof(kValues) / sizeof(kValues[0]))]);
    }
  }

  void AddTile() {
    v1::Tile tile;
    if (v1::Tile* like = AnyTile()) {
      tile = *like;
    } else {
      tile.set_dtype(v1::DTYPE_INT8);
      tile.set_rows(1);
      tile.set_cols(32);
    }
    (*job_.mutable_tiles())[Name() + (Below(2) ? "" : absl::StrCat(Below(4)))] = tile;
  }

  void SetOperand() {
    v1::Instruction* in = AnyInstruction();
    if (in == nullptr) return;
    switch (Below(4)) {
      case 0: in->set_dst(Name()); break;
      case 1: in->set_src0(Name()); break;
      case 2: in->set_src1(Name()); break;
      default: in->set_tmp(Name()); break;
    }
  }

  void AddInstruction() {
    v1::Instruction in;
    if (v1::Instruction* like = AnyInstruction()) {
      in = *like;
      in.clear_record_event();
      in.set_dst(Name());
    } else {
      in.set_opcode(v1::OPCODE_TAND);
      in.set_dst(Name());
      in.set_src0(Name());
      in.set_src1(Name());
    }
    *job_.add_instructions() = in;
    if (Below(2) == 0) {
      // Somewhere other than the end.
      auto* list = job_.mutable_instructions();
      for (int k = list->size() - 1; k > 0 && Below(2) == 0; --k) {
        list->SwapElements(k, k - 1);
      }
    }
  }

  void RemoveInstruction() {
    if (job_.instructions_size() == 0) return;
    auto* list = job_.mutable_instructions();
    list->SwapElements(Below(list->size()), list->size() - 1);
    list->RemoveLast();
  }

  // Record an event or wait on one, usually one an earlier instruction
  // records.
  void SetEvents() {
    const int n = job_.instructions_size();
    if (n == 0) return;
    const int i = Below(n);
    v1::Instruction* in = job_.mutable_instructions(i);
    if (Below(3) == 0) {
      in->set_record_event(Below(4) == 0 ? "" : absl::StrCat("ev", Below(4)));
      return;
    }
    if (Below(4) == 0) {
      in->clear_wait_events();
      return;
    }
    const int j = Below(n);
    const v1::Instruction& other = job_.instructions(j);
    in->add_wait_events(other.record_event().empty() ? absl::StrCat("e", j)
                                                     : other.record_event());
  }

  std::mt19937& rng_;
  v1::Job& job_;
};

}  // namespace

void MutateJob(std::mt19937* rng, v1::Job* job) { Mutator(rng, job).Run(); }

}  // namespace fuzz
}  // namespace ptoserve
