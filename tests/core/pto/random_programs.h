// Random programs of TAND and TXOR over five tiles, for comparing the C++
// built-in API with the service: drawn (Draw), run through the API
// (RunOnApi), and their tiles as a job carries them (LoadedBytes). Built
// with the target's define, as the API is: the header is the tests'.
//
// A program, in manual mode, binds every tile or most by TASSIGN to random
// 32-byte addresses in one small window, so that tiles overlap and
// operands alias; in auto mode it binds none. Some programs break a rule:
// a valid shape that differs, a misaligned address, tmp given as dst,
// operands that overlap where the target forbids it.
#ifndef PTOSERVE_TESTS_CORE_PTO_RANDOM_PROGRAMS_H_
#define PTOSERVE_TESTS_CORE_PTO_RANDOM_PROGRAMS_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <pto/pto-inst.hpp>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/core/pto/refusals.h"

namespace ptoserve {
namespace random_programs {

using pto::BLayout;
using pto::DYNAMIC;
using pto::TileType;

constexpr int kRows = 4;
constexpr int kTiles = 5;
constexpr const char* kNames[kTiles] = {"a", "b", "c", "d", "e"};

inline Target ThisTarget() { return static_cast<Target>(pto::kTarget); }

struct ProgramStep {
  Opcode opcode;
  int dst, src0, src1, tmp;
};

// A program, drawn at random.
struct Program {
  bool manual = false;
  int valid_rows = 0, valid_cols = 0;
  // Per tile: its address (manual mode, if bound), its valid shape, and
  // its elements if loaded (then no other loaded tile overlaps it).
  std::optional<uint64_t> address[kTiles];
  int rows[kTiles], cols[kTiles];
  std::vector<uint8_t> data[kTiles];
  std::vector<ProgramStep> steps;
};

template <typename T>
Program Draw(std::mt19937& rng) {
  constexpr int kCols = 64 / sizeof(T);  // 64-byte rows: any target's
  constexpr uint64_t kTileBytes = kRows * kCols * sizeof(T);
  auto chance = [&](int percent) {
    return static_cast<int>(rng() % 100) < percent;
  };
  Program p;
  p.manual = chance(70);
  p.valid_rows = 1 + rng() % kRows;
  p.valid_cols = 1 + rng() % kCols;
  for (int t = 0; t < kTiles; ++t) {
    p.rows[t] = p.valid_rows;
    p.cols[t] = p.valid_cols;
    if (chance(3)) p.rows[t] = 1 + rng() % kRows;  // may differ: refused
    if (p.manual && !chance(10)) {
      // 32-byte steps over a window of four tiles: overlaps are common.
      uint64_t at = 32 * (rng() % (4 * kTileBytes / 32));
      if (chance(2)) at += 16;  // misaligned: refused
      p.address[t] = at;
    }
  }
  // Loaded tiles, each clear of those loaded before it.
  for (int t = 0; t < kTiles; ++t) {
    if (!chance(60)) continue;
    bool clear = true;
    for (int u = 0; u < t && clear; ++u) {
      if (p.data[u].empty() || !p.address[t] || !p.address[u]) continue;
      clear = *p.address[t] + kTileBytes <= *p.address[u] ||
              *p.address[u] + kTileBytes <= *p.address[t];
    }
    if (!clear) continue;
    p.data[t].resize(kTileBytes);
    for (uint8_t& b : p.data[t]) b = static_cast<uint8_t>(rng());
  }
  const int n = 1 + rng() % 6;
  for (int i = 0; i < n; ++i) {
    ProgramStep s;
    s.opcode = chance(50) ? Opcode::kTand : Opcode::kTxor;
    s.dst = rng() % kTiles;
    s.src0 = rng() % kTiles;
    s.src1 = rng() % kTiles;
    // Mostly a tile of its own; else dst or a source: refused on a2a3.
    do {
      s.tmp = rng() % kTiles;
    } while (!chance(10) &&
             (s.tmp == s.dst || s.tmp == s.src0 || s.tmp == s.src1));
    p.steps.push_back(s);
  }
  return p;
}

// What the API did: the first refusal, or every tile's bytes and, where it
// lives in the unified buffer, its address.
struct Result {
  std::string refusal;
  std::vector<std::string> tiles;
  std::optional<uint64_t> address[kTiles];
};

// Whether the API, which places an unbound tile at its first use, places
// the program's tiles in the order the service's auto mode does, which
// knows the whole program: loaded tiles first, in order, then each tile at
// the instruction that first writes it. They agree when every tile is
// loaded or first used as a dst, one new tile per instruction, and no
// instruction uses a tmp (a2a3's TXOR places its tmp beside its dst).
inline bool PlacedInTheServicesOrder(const Program& p) {
  if (p.manual) return false;
  bool seen[kTiles] = {};
  for (int t = 0; t < kTiles; ++t) seen[t] = !p.data[t].empty();
  for (const ProgramStep& s : p.steps) {
    if (pto::Rules::kTxorUsesTmp && s.opcode == Opcode::kTxor) return false;
    if (!seen[s.src0] || !seen[s.src1]) return false;
    seen[s.dst] = true;
  }
  for (int t = 0; t < kTiles; ++t) {
    if (!seen[t]) return false;
  }
  return true;
}

template <typename T>
Result RunOnApi(const Program& p) {
  constexpr int kCols = 64 / sizeof(T);
  using TileT = pto::Tile<TileType::Vec, T, kRows, kCols, BLayout::RowMajor,
                          DYNAMIC, DYNAMIC>;
  using Global = pto::GlobalTensor<T, pto::Shape<1, 1, 1, DYNAMIC, DYNAMIC>,
                                   pto::Stride<1, 1, 1, DYNAMIC, 1>>;
  Result result;
  pto::ResetKernel();
  std::vector<TileT> tiles(kTiles);
  result.refusal = refusals::RefusalOf([&] {
    for (int t = 0; t < kTiles; ++t) {
      tiles[t].SetName(kNames[t]);
      tiles[t].SetValidShape(p.rows[t], p.cols[t]);
      if (p.address[t]) pto::TASSIGN(tiles[t], *p.address[t]);
    }
    for (int t = 0; t < kTiles; ++t) {
      if (p.data[t].empty()) continue;
      // The valid region from global memory, the padding as TLOAD leaves
      // it; the job carries the tile's bytes as they are then.
      std::vector<T> global(kRows * kCols);
      std::memcpy(global.data(), p.data[t].data(), p.data[t].size());
      Global g(global.data(),
               pto::Shape<1, 1, 1, DYNAMIC, DYNAMIC>(p.rows[t], p.cols[t]),
               pto::Stride<1, 1, 1, DYNAMIC, 1>(kCols));
      pto::TLOAD(tiles[t], g);
    }
    for (const ProgramStep& s : p.steps) {
      if (s.opcode == Opcode::kTand) {
        pto::TAND(tiles[s.dst], tiles[s.src0], tiles[s.src1]);
      } else {
        pto::TXOR(tiles[s.dst], tiles[s.src0], tiles[s.src1], tiles[s.tmp]);
      }
    }
  });
  if (result.refusal.empty()) {
    for (int t = 0; t < kTiles; ++t) {
      const TileT& tile = tiles[t];
      result.tiles.emplace_back(reinterpret_cast<const char*>(tile.data()),
                                sizeof(T) * TileT::Numel);
      if (tile.IsBound() || tile.IsPlaced()) {
        result.address[t] = tile.GetAddress();
        // Its elements are the buffer's bytes there.
        EXPECT_EQ(
            reinterpret_cast<const uint8_t*>(tile.data()),
            ptoserve::builtin::UnifiedBuffer(ThisTarget()) + tile.GetAddress());
      }
    }
  }
  return result;
}

// The tiles the API loaded, as a job carries them: its bytes after TLOAD.
template <typename T>
std::vector<std::string> LoadedBytes(const Program& p) {
  constexpr int kCols = 64 / sizeof(T);
  std::vector<std::string> bytes(kTiles);
  for (int t = 0; t < kTiles; ++t) {
    if (p.data[t].empty()) continue;
    std::string& b = bytes[t];
    b.assign(kRows * kCols * sizeof(T), '\0');
    for (int r = 0; r < p.rows[t]; ++r) {
      const size_t at = (static_cast<size_t>(r) * kCols) * sizeof(T);
      std::memcpy(&b[at], &p.data[t][at], p.cols[t] * sizeof(T));
    }
  }
  return bytes;
}

// The program in a line, for a failure's message.
inline std::string Describe(const Program& p) {
  std::string s = absl::StrCat(p.manual ? "manual" : "auto", " mode, valid ",
                               p.valid_rows, "x", p.valid_cols, "; tiles:");
  for (int t = 0; t < kTiles; ++t) {
    absl::StrAppend(&s, " ", kNames[t], " ", p.rows[t], "x", p.cols[t]);
    if (p.address[t]) absl::StrAppend(&s, "@", *p.address[t]);
    if (!p.data[t].empty()) absl::StrAppend(&s, " loaded");
  }
  absl::StrAppend(&s, "; program:");
  for (const ProgramStep& st : p.steps) {
    absl::StrAppend(&s, " ", st.opcode == Opcode::kTand ? "TAND" : "TXOR", "(",
                    kNames[st.dst], ",", kNames[st.src0], ",", kNames[st.src1]);
    if (st.opcode == Opcode::kTxor) absl::StrAppend(&s, ",", kNames[st.tmp]);
    absl::StrAppend(&s, ")");
  }
  return s;
}

// Whether `api`, what the API did with `p`, and `service`, what the
// service did with its job, agree: the same refusal in the same words, or
// every tile's bytes equal, padding included. A failure says which part
// differs, and the program.
inline ::testing::AssertionResult SameOutcome(const Result& api,
                                              const Result& service,
                                              const Program& p) {
  if (api.refusal != service.refusal) {
    return ::testing::AssertionFailure()
           << "the API refused with \"" << api.refusal
           << "\", the service with \"" << service.refusal
           << "\": " << Describe(p);
  }
  for (size_t t = 0; t < api.tiles.size(); ++t) {
    if (t >= service.tiles.size() || api.tiles[t] != service.tiles[t]) {
      return ::testing::AssertionFailure()
             << "tile " << kNames[t] << "'s bytes differ: " << Describe(p);
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace random_programs
}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_CORE_PTO_RANDOM_PROGRAMS_H_
