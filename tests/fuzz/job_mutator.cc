#include "tests/fuzz/job_mutator.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/ops.h"
#include "tests/fuzz/fuzz_util.h"

namespace ptoserve {
namespace fuzz {

namespace {

// Elements a mutant may hold, beyond which it would only be rejected for
// size: the fuzzer's inputs are a few KiB.
constexpr size_t kMaxElementBytes = 8192;

// Numbers for an element or a fill: the integer types' edges, and values
// no integer type holds.
constexpr double kValues[] = {-1,
                              127,
                              128,
                              255,
                              256,
                              -129,
                              32768,
                              65535,
                              65536,
                              2147483647.0,
                              2147483648.0,
                              4294967295.0,
                              -2147483649.0,
                              0.5,
                              -0.0,
                              1e300,
                              -1e300,
                              std::numeric_limits<double>::infinity(),
                              std::numeric_limits<double>::quiet_NaN(),
                              std::numeric_limits<double>::denorm_min()};

// Extents that make a tile's size overflow unless it is computed wide
// enough: 2^31 x 2^31 int32 tiles once came to 0 bytes.
constexpr uint32_t kHugeExtents[] = {
    46341,      65536,      65537,      0x01000000, 0x10000000, 0x40000000,
    0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff};

// Lengths of names around the server's limit (kMaxNameBytes, 256) and far
// over it.
constexpr size_t kNameLengths[] = {255, 256, 257, 300, 1024, 65536};

// Counts around the fuzzer's limits (64 tiles, 64 instructions, 64 waits an
// instruction) and over them.
constexpr int kCounts[] = {2, 8, 48, 63, 64, 65, 100, 1000};

// A mutant's element size; a dtype that names none is sized as 4 bytes.
size_t ElementBytesOf(int dtype) {
  const size_t bytes = WireElementBytes(dtype);
  return bytes > 0 ? bytes : 4;
}

class Mutator {
 public:
  Mutator(std::mt19937* rng, v1::Job* job) : rng_(*rng), job_(*job) {}

  void Run() {
    // One mutant in five is hostile: sizes, counts and lengths at and past
    // the server's limits. The rest stay valid enough to run.
    if (Below(5) == 0) {
      Hostile();
      return;
    }
    switch (Below(20)) {
      case 0:
        job_.set_target(static_cast<v1::Target>(Below(5)));
        break;
      case 1:
        job_.set_mode(job_.mode() == v1::MODE_AUTO ? v1::MODE_MANUAL
                                                   : v1::MODE_AUTO);
        break;
      case 2:
        Reshape();
        break;
      case 3:
        if (v1::Tile* t = AnyTile()) {
          t->set_dtype(static_cast<v1::DType>(Below(10)));
          FitElements(t);
        }
        break;
      case 4:
        Reencode();
        break;
      case 5:
        ChangeElement();
        break;
      case 6:
        if (v1::Tile* t = AnyTile()) {
          if (Below(4) == 0) {
            t->clear_address();
          } else {
            t->set_address(Below(8) * 0x1000 + Below(3) * 32 +
                           Below(2) * Below(32));
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
      case 8:
        AddTile();
        break;
      case 9:
        if (!job_.tiles().empty()) job_.mutable_tiles()->erase(TileName());
        break;
      case 10:
        SetOperand();
        break;
      case 11:
        if (v1::Instruction* in = AnyInstruction()) {
          // Every opcode, unset, and one past the last.
          in->set_opcode(static_cast<v1::Opcode>(Below(std::size(kOps) + 2)));
        }
        break;
      case 12:
        AddInstruction();
        break;
      case 13:
        RemoveInstruction();
        break;
      case 14:
        SetEvents();
        break;
      case 15:
        if (Below(3) == 0) {
          job_.clear_outputs();
        } else {
          job_.add_outputs(Name());
        }
        break;
      case 16:
        EditAssembly();
        break;
      case 17:
        Share();
        break;
      case 18:
        PlaceOutput();
        break;
      default:
        if (job_.instructions_size() > 1) {
          job_.mutable_instructions()->SwapElements(
              Below(job_.instructions_size()), Below(job_.instructions_size()));
        }
        break;
    }
  }

  void Hostile() {
    switch (Below(7)) {
      case 0:
        HugeShape();
        break;
      case 1:
        DeclareMany();
        break;
      case 2:
        RepeatOutputs();
        break;
      case 3:
        ManyWaits();
        break;
      case 4:
        LongName();
        break;
      case 5:
        HostileAssembly();
        break;
      default: {  // a fill beside data or values, or out of range
        v1::Tile* t = AnyTile();
        if (t == nullptr) break;
        t->set_fill(kValues[Below(std::size(kValues))]);
        break;
      }
    }
  }

 private:
  uint32_t Below(uint32_t n) { return n == 0 ? 0 : rng_() % n; }

  // A tile extent: small, or one of the edges of the rules (row alignment,
  // buffer and limits).
  uint32_t Extent() {
    static constexpr uint32_t kEdges[] = {
        0,  1,  2,  3,  7,  8,   15,  16,   17,    31,        32,
        33, 63, 64, 65, 96, 128, 256, 4096, 65536, 0xffffffff};
    if (Below(2) == 0) return kEdges[Below(sizeof(kEdges) / sizeof(kEdges[0]))];
    return 1 + Below(40);
  }

  // A name: of a tile, of an instruction's dst, or a new one.
  std::string Name() {
    std::vector<std::string> names = {"a", "b", "c", "t", "dst", "x.tmp", ""};
    for (std::string& name : TileNames()) names.push_back(std::move(name));
    for (const v1::Instruction& in : job_.instructions()) {
      names.push_back(in.dst());
    }
    return names[Below(names.size())];
  }

  std::string TileName() {
    std::vector<std::string> names = TileNames();
    return std::move(names[Below(names.size())]);
  }

  // Sorted: a protobuf map's order is seeded per process, and a mutant
  // must depend on the random numbers alone, so that a seed replays it.
  std::vector<std::string> TileNames() const {
    std::vector<std::string> names;
    names.reserve(job_.tiles_size());
    for (const auto& [name, tile] : job_.tiles()) names.push_back(name);
    std::sort(names.begin(), names.end());
    return names;
  }

  // A slice of the shared memory the job target registers (job_target.cc:
  // "r", 64 KiB, and "s", 16 KiB of the same object from byte 4096) for
  // `bytes` bytes: mostly in range and exact, sometimes not, sometimes
  // hostile numbers or an unknown region.
  v1::RegionSlice Slice(uint64_t bytes) {
    v1::RegionSlice slice;
    slice.set_region(Below(6) == 0 ? "s" : Below(20) == 0 ? "nope" : "r");
    uint64_t offset = Below(16) * 4096 + (Below(4) == 0 ? Below(64) : 0);
    uint64_t size = bytes;
    switch (Below(12)) {
      case 0:
        offset = ~uint64_t{0} - Below(4096);
        break;
      case 1:
        size = bytes + Below(3) - 1;
        break;
      case 2:
        size = ~uint64_t{0} - Below(2);
        break;
      default:
        break;
    }
    slice.set_offset(offset);
    slice.set_size(size);
    return slice;
  }

  uint64_t TileBytes(const v1::Tile& t) {
    return uint64_t{t.rows()} * t.cols() * ElementBytesOf(t.dtype());
  }

  // A tile's elements in shared memory instead of the request.
  void Share() {
    v1::Tile* t = AnyTile();
    if (t == nullptr) return;
    t->clear_data();
    t->clear_values();
    t->clear_fill();
    *t->mutable_shared() = Slice(TileBytes(*t));
  }

  // An output (or any name) written to shared memory.
  void PlaceOutput() {
    if (Below(4) == 0) {
      job_.clear_output_regions();
      return;
    }
    std::string name;
    uint64_t bytes = 1024;
    if (v1::Instruction* in = AnyInstruction(); in != nullptr && Below(4)) {
      name = in->dst();
      auto src0 = job_.tiles().find(in->src0());
      if (src0 != job_.tiles().end()) bytes = TileBytes(src0->second);
    } else if (!job_.tiles().empty()) {
      name = TileName();
    } else {
      name = Name();
    }
    if (auto it = job_.tiles().find(name); it != job_.tiles().end()) {
      bytes = TileBytes(it->second);
    }
    (*job_.mutable_output_regions())[name] = Slice(bytes);
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
    if (elements > kMaxElementBytes) return;  // (and no overflow below)
    const uint64_t bytes = elements * ElementBytesOf(t->dtype());
    if (bytes > kMaxElementBytes) return;
    if (!t->data().empty()) {
      std::string* data = t->mutable_data();
      const size_t old = data->size();
      data->resize(bytes);
      for (size_t k = old; k < data->size(); ++k) {
        (*data)[k] = static_cast<char>(rng_());
      }
    } else if (t->values_size() > 0) {
      while (static_cast<uint64_t>(t->values_size()) > elements) {
        t->mutable_values()->RemoveLast();
      }
      while (static_cast<uint64_t>(t->values_size()) < elements) {
        t->add_values(Below(100));
      }
    }
  }

  void Reshape() {
    v1::Tile* t = AnyTile();
    if (t == nullptr) return;
    switch (Below(5)) {
      case 0:
        t->set_rows(Extent());
        break;
      case 1:
        t->set_cols(Extent());
        break;
      case 2:
        t->set_valid_rows(Extent());
        break;
      case 3:
        t->set_valid_cols(Extent());
        break;
      default:  // rows of 32-byte multiples, as a2a3 and a5 need
        t->set_cols(32 * (1 + Below(3)) / ElementBytesOf(t->dtype()));
        t->set_valid_cols(Below(t->cols() + 1));
        break;
    }
    FitElements(t);
  }

  // A fill value: mostly one every integer type holds.
  double Fill() {
    return Below(4) == 0 ? kValues[Below(std::size(kValues))]
                         : static_cast<double>(Below(128));
  }

  void Reencode() {
    v1::Tile* t = AnyTile();
    if (t == nullptr) return;
    const bool to_data = t->data().empty();
    t->clear_data();
    t->clear_values();
    t->clear_fill();
    switch (Below(4)) {
      case 0:
        return;  // no elements: zero-filled
      case 1:
        t->set_fill(Fill());
        return;
      default:
        break;
    }
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
    if (t->has_fill()) {
      t->set_fill(Fill());
    } else if (!t->data().empty()) {
      (*t->mutable_data())[Below(t->data().size())] = static_cast<char>(rng_());
    } else if (t->values_size() > 0) {
      t->set_values(Below(t->values_size()),
                    kValues[Below(std::size(kValues))]);
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
    (*job_.mutable_tiles())[Name() + (Below(2) ? "" : absl::StrCat(Below(4)))] =
        tile;
  }

  void SetOperand() {
    v1::Instruction* in = AnyInstruction();
    if (in == nullptr) return;
    switch (Below(4)) {
      case 0:
        in->set_dst(Name());
        break;
      case 1:
        in->set_src0(Name());
        break;
      case 2:
        in->set_src1(Name());
        break;
      default:
        in->set_tmp(Name());
        break;
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

  // --- Hostile mutations: one thing at or past a limit. ---

  // Rows, columns or both near 2^31 or 2^32, whose product times the
  // element size overflows 32 or 64 bits; the elements go (they could not
  // be sent), or stay as they were, or become a fill.
  void HugeShape() {
    v1::Tile* t = AnyTile();
    if (t == nullptr) return;
    const uint32_t huge = kHugeExtents[Below(std::size(kHugeExtents))];
    switch (Below(4)) {
      case 0:
        t->set_rows(huge);
        break;
      case 1:
        t->set_cols(huge);
        break;
      case 2:
        t->set_rows(huge);
        t->set_cols(Below(2) == 0
                        ? huge
                        : kHugeExtents[Below(std::size(kHugeExtents))]);
        break;
      default:  // a small valid region of a huge tile
        t->set_rows(huge);
        t->set_cols(huge);
        t->set_valid_rows(1);
        t->set_valid_cols(64);
        break;
    }
    switch (Below(3)) {
      case 0:
        break;
      case 1:
        t->set_fill(Fill());
        [[fallthrough]];
      default:
        t->clear_data();
        t->clear_values();
        break;
    }
  }

  // Many tiles of one shape declared without elements (or as a fill): a
  // few bytes each on the wire, the tile limit's worth of memory to make.
  void DeclareMany() {
    static constexpr struct {
      v1::DType dtype;
      uint32_t rows, cols;
    } kShapes[] = {
        {v1::DTYPE_INT32, 2048, 2048},  // 16 MiB
        {v1::DTYPE_INT32, 128, 128},    // 64 KiB: the fuzzer's tile limit
        {v1::DTYPE_UINT8, 256, 256},   {v1::DTYPE_INT16, 64, 256},
        {v1::DTYPE_INT32, 1, 16384},
    };
    const auto& shape = kShapes[Below(std::size(kShapes))];
    v1::Tile tile;
    tile.set_dtype(shape.dtype);
    tile.set_rows(shape.rows);
    tile.set_cols(shape.cols);
    if (Below(2) == 0) tile.set_fill(Fill());
    const int n = kCounts[Below(std::size(kCounts))];
    const std::string prefix = Below(2) == 0 ? "big" : Name();
    for (int k = 0; k < n; ++k) {
      (*job_.mutable_tiles())[absl::StrCat(prefix, k)] = tile;
    }
    // Some of them used, so that they are returned too.
    if (v1::Instruction* in = AnyInstruction();
        in != nullptr && Below(2) == 0) {
      in->set_src0(absl::StrCat(prefix, 0));
      in->set_src1(absl::StrCat(prefix, Below(n)));
      if (Below(2) == 0) in->set_dst(absl::StrCat(prefix, Below(n)));
    }
  }

  // One name listed many times in outputs: returned once.
  void RepeatOutputs() {
    const std::string name = job_.outputs_size() > 0 && Below(2) == 0
                                 ? job_.outputs(Below(job_.outputs_size()))
                                 : Name();
    if (Below(2) == 0) job_.clear_outputs();
    const int n = kCounts[Below(std::size(kCounts))];
    for (int k = 0; k < n; ++k) job_.add_outputs(name);
  }

  // An instruction waiting on many events: the earlier instructions'
  // (each many times over), or one name over and over.
  void ManyWaits() {
    const int count = job_.instructions_size();
    if (count == 0) return;
    const int i = Below(count);
    v1::Instruction* in = job_.mutable_instructions(i);
    in->clear_wait_events();
    const int n = kCounts[Below(std::size(kCounts))];
    const bool one = i == 0 || Below(3) == 0;
    for (int k = 0; k < n; ++k) {
      const int j = one ? 0 : k % i;
      const v1::Instruction& other = job_.instructions(j);
      in->add_wait_events(other.record_event().empty() ? absl::StrCat("e", j)
                                                       : other.record_event());
    }
  }

  // A name of kNameLengths bytes: a tile renamed everywhere it is used (a
  // job that stays valid at 256 bytes), or one operand, event or output.
  void LongName() {
    const size_t length = kNameLengths[Below(std::size(kNameLengths))];
    auto lengthen = [&](const std::string& name) {
      std::string out = name;
      out.resize(std::max(length, name.size()), 'n');
      return out;
    };
    switch (Below(6)) {
      case 0:
      case 1: {
        if (job_.tiles().empty()) return;
        const std::string old = TileName();
        const std::string renamed = lengthen(old.empty() ? "t" : old);
        v1::Tile tile = job_.tiles().at(old);
        job_.mutable_tiles()->erase(old);
        (*job_.mutable_tiles())[renamed] = tile;
        for (v1::Instruction& in : *job_.mutable_instructions()) {
          for (std::string* operand : {in.mutable_dst(), in.mutable_src0(),
                                       in.mutable_src1(), in.mutable_tmp()}) {
            if (*operand == old) *operand = renamed;
          }
        }
        for (std::string& output : *job_.mutable_outputs()) {
          if (output == old) output = renamed;
        }
        if (!job_.assembly().empty() && !old.empty()) {
          job_.set_assembly(RenameInAssembly(job_.assembly(), old, renamed));
        }
        return;
      }
      case 2:
        if (v1::Instruction* in = AnyInstruction()) {
          std::string* operands[] = {in->mutable_dst(), in->mutable_src0(),
                                     in->mutable_src1(), in->mutable_tmp()};
          std::string* operand = operands[Below(4)];
          *operand = lengthen(*operand);
        }
        return;
      case 3:  // an event recorded under a long name and waited on by name
        if (v1::Instruction* in = AnyInstruction()) {
          in->set_record_event(
              lengthen(in->record_event().empty() ? "ev" : in->record_event()));
          v1::Instruction* waiter = AnyInstruction();
          if (waiter != in) waiter->add_wait_events(in->record_event());
        }
        return;
      case 4:
        if (v1::Instruction* in = AnyInstruction()) {
          in->add_wait_events(lengthen("e0"));
        }
        return;
      default:
        job_.add_outputs(lengthen(Name()));
        return;
    }
  }

  // Assembly that is huge, has a line over the 4 KiB line limit or more
  // lines than the statement limit; an instruction list becomes assembly
  // first.
  void HostileAssembly() {
    if (job_.assembly().empty()) ToAssembly();
    std::vector<std::string> lines = absl::StrSplit(job_.assembly(), '\n');
    static constexpr size_t kLineLengths[] = {4095, 4096, 4097, 8192, 65536};
    static constexpr char kFillers[] = {'(', ' ', 'a', '#', ','};
    std::string& line = lines[Below(lines.size())];
    switch (Below(5)) {
      case 0:  // one long line: the 64 KiB of '(' an attacker sent
        line = std::string(kLineLengths[Below(std::size(kLineLengths))],
                           kFillers[Below(std::size(kFillers))]);
        break;
      case 1:  // a statement with a long run in it
        line.insert(Below(line.size() + 1),
                    std::string(kLineLengths[Below(std::size(kLineLengths))],
                                kFillers[Below(std::size(kFillers))]));
        break;
      case 2: {  // one statement many times: past the statement limit
        const std::string copy = line;
        const int n = kCounts[Below(std::size(kCounts))];
        lines.insert(lines.begin() + Below(lines.size() + 1), n, copy);
        break;
      }
      case 3: {  // many lines that are not statements
        static constexpr const char* kEmpty[] = {"", "# c", "  ", "\r", "//"};
        const int n = kCounts[Below(std::size(kCounts))] * (1 + Below(16));
        lines.insert(lines.begin() + Below(lines.size() + 1), n,
                     kEmpty[Below(std::size(kEmpty))]);
        break;
      }
      default: {  // the whole text over and over
        const std::string text = job_.assembly();
        std::string big = text;
        const size_t target = size_t{1024} << Below(7);  // 1 KiB to 64 KiB
        while (!text.empty() && big.size() < target) {
          absl::StrAppend(&big, "\n", text);
        }
        job_.set_assembly(big);
        return;
      }
    }
    job_.set_assembly(absl::StrJoin(lines, "\n"));
  }

  // --- Assembly ---

  // `text` with every %old operand named %renamed.
  static std::string RenameInAssembly(const std::string& text,
                                      const std::string& old,
                                      const std::string& renamed) {
    auto name_char = [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '$' ||
             c == '-';
    };
    const std::string from = "%" + old;
    std::string out;
    size_t at = 0;
    for (size_t k; (k = text.find(from, at)) != std::string::npos;) {
      const size_t end = k + from.size();
      out.append(text, at, k - at);
      if (end < text.size() && name_char(text[end])) {
        out += from;  // a longer name that starts the same
      } else {
        absl::StrAppend(&out, "%", renamed);
      }
      at = end;
    }
    out.append(text, at, std::string::npos);
    return out;
  }

  // The instruction list as DPS statements (docs/ASSEMBLY.md): the same
  // operands, without the events.
  void ToAssembly() {
    std::string text;
    for (const v1::Instruction& in : job_.instructions()) {
      const bool tmp = !in.tmp().empty();
      const OpInfo* op = FindOpByWireValue(in.opcode());
      absl::StrAppend(&text, "pto.", op != nullptr ? op->mnemonic : "tand",
                      " ins(%", in.src0(), ", %", in.src1(), tmp ? ", %" : "",
                      in.tmp(), " : !pto.tile_buf<...>, !pto.tile_buf<...>",
                      tmp ? ", !pto.tile_buf<...>" : "", ") outs(%", in.dst(),
                      " : !pto.tile_buf<...>)\n");
    }
    job_.clear_instructions();
    job_.set_assembly(text);
  }

  // A small change to the assembly: a statement repeated, dropped or moved,
  // an operand renamed; sometimes an instruction list becomes assembly.
  void EditAssembly() {
    if (job_.assembly().empty()) {
      if (job_.instructions_size() > 0 && Below(4) == 0) ToAssembly();
      return;
    }
    std::vector<std::string> lines = absl::StrSplit(job_.assembly(), '\n');
    const size_t i = Below(lines.size());
    const size_t j = Below(lines.size());
    switch (Below(4)) {
      case 0:
        lines.insert(lines.begin() + j, lines[i]);
        break;
      case 1:
        lines.erase(lines.begin() + i);
        break;
      case 2:
        std::swap(lines[i], lines[j]);
        break;
      default: {
        if (job_.tiles().empty()) return;
        job_.set_assembly(
            RenameInAssembly(job_.assembly(), TileName(), Name()));
        return;
      }
    }
    job_.set_assembly(absl::StrJoin(lines, "\n"));
  }

  std::mt19937& rng_;
  v1::Job& job_;
};

}  // namespace

void MutateJob(std::mt19937* rng, v1::Job* job) { Mutator(rng, job).Run(); }

}  // namespace fuzz
}  // namespace ptoserve
