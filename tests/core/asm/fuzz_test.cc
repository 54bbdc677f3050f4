// A bounded, deterministic fuzz of the parser: mutated seed programs and
// random bytes must never crash or hang it, whatever parses must print and
// parse back to the same program, and lowering it onto a small request and
// preparing the job must not crash either.
#include <random>
#include <string>
#include <vector>

#include "core/asm/lower.h"
#include "core/asm/parser.h"
#include "core/asm/printer.h"
#include "gtest/gtest.h"
#include "tests/core/asm/seed_programs.h"
#include "tests/core/test_util.h"

namespace ptoserve {
namespace pasm {
namespace {

constexpr int kMutations = 20000;
constexpr int kRandomInputs = 2000;

// Fragments that make mutants likely to get deep into the grammar.
const std::vector<std::string>& Dictionary() {
  static const auto* kFragments = new std::vector<std::string>{
      "%",
      "%a",
      "%dst",
      "=",
      ",",
      ":",
      "(",
      ")",
      "<",
      ">",
      "->",
      "?",
      "...",
      "!pto.tile",
      "!pto.tile_buf",
      "<...>",
      "tand",
      "txor",
      "pto.tand",
      "pto.txor",
      "pto.tassign",
      "@tile(0x1000)",
      "@tile",
      "ins(",
      "outs(",
      "loc=vec",
      "dtype=i16",
      "dtype=uint32",
      "rows=16",
      "cols=0x10",
      "v_row=?",
      "v_col=16",
      "blayout=row_major",
      "slayout=none_box",
      "fractal=512",
      "pad=0",
      "99999999999999999999",
      "0x",
      "#",
      "//",
      "\n",
      "\r\n",
      " ",
      "\t",
      "\xff",
      std::string(1, '\0'),
  };
  return *kFragments;
}

std::vector<std::string> Corpus() {
  std::vector<std::string> corpus;
  for (const test::SeedProgram& seed : test::kSeedPrograms) {
    corpus.push_back(seed.text);
  }
  corpus.push_back(
      "pto.tassign %src0, @tile(0x1000)\n"
      "pto.txor ins(%src0, %src1, %t : !pto.tile_buf<loc=vec, dtype=i16, "
      "rows=16, cols=16, v_row=16, v_col=?, blayout=row_major, "
      "slayout=none_box, fractal=512, pad=0>, !pto.tile_buf<...>, "
      "!pto.tile<dtype=int16>) outs(%dst : !pto.tile_buf<...>)  # c\n");
  return corpus;
}

class Mutator {
 public:
  explicit Mutator(uint32_t seed) : rng_(seed) {}

  std::string Mutate(std::string text, const std::vector<std::string>& corpus) {
    const int steps = 1 + Below(4);
    for (int i = 0; i < steps; ++i) {
      const size_t at = Below(text.size() + 1);
      switch (Below(6)) {
        case 0:  // insert a random byte
          text.insert(at, 1, static_cast<char>(Below(256)));
          break;
        case 1:  // delete a range
          text.erase(at, Below(8));
          break;
        case 2: {  // insert a dictionary fragment
          const std::vector<std::string>& dictionary = Dictionary();
          text.insert(at, dictionary[Below(dictionary.size())]);
          break;
        }
        case 3: {  // duplicate a range
          text.insert(at, text.substr(at, Below(16)));
          break;
        }
        case 4: {  // splice in part of another program
          const std::string& other = corpus[Below(corpus.size())];
          const size_t from = Below(other.size() + 1);
          text.insert(at, other.substr(from, Below(40)));
          break;
        }
        default:  // overwrite a byte
          if (!text.empty()) {
            text[Below(text.size())] = static_cast<char>(Below(128));
          }
          break;
      }
    }
    return text;
  }

  std::string Random() {
    std::string text(Below(200), '\0');
    for (char& c : text) c = static_cast<char>(Below(256));
    return text;
  }

 private:
  size_t Below(size_t n) { return n == 0 ? 0 : rng_() % n; }
  std::mt19937 rng_;
};

class ParserFuzzTest : public ::testing::Test {
 protected:
  ParserFuzzTest() : request_(Target::kA2A3) {
    request_.AddTile("src0", test::Desc(DType::kInt16, 16, 16));
    request_.AddTile("src1", test::Desc(DType::kInt16, 16, 16));
  }

  // Parses `text`; if it parses, printing it must give text that parses to
  // an equal program and prints the same again, and lowering it and
  // preparing the job must either work or fail with a message.
  void Check(const std::string& text) {
    absl::StatusOr<Program> program = Parse(text);
    if (!program.ok()) {
      EXPECT_FALSE(program.status().message().empty());
      return;
    }
    ++parsed_;
    const std::string printed = Print(*program);
    absl::StatusOr<Program> reparsed = Parse(printed);
    ASSERT_TRUE(reparsed.ok()) << reparsed.status() << "\ninput:\n"
                               << text << "\nprinted:\n"
                               << printed;
    EXPECT_TRUE(*reparsed == *program) << "input:\n" << text;
    EXPECT_EQ(Print(*reparsed), printed);

    absl::StatusOr<JobSpec> lowered = Lower(*program, request_.spec(), engine_);
    if (!lowered.ok()) {
      EXPECT_FALSE(lowered.status().message().empty());
      return;
    }
    const absl::Status prepared = engine_.Prepare(*lowered).status();
    EXPECT_FALSE(!prepared.ok() &&
                 Locate(*program, prepared).message().empty());
  }

  int parsed_ = 0;

 private:
  test::JobBuilder request_;
  // Small tiles only: mutants may ask for large ones.
  Engine engine_{EngineOptions{.limits = {.max_tile_bytes = 1 << 16}}};
};

TEST_F(ParserFuzzTest, MutatedSeedProgramsNeverCrashAndRoundTrip) {
  const std::vector<std::string> corpus = Corpus();
  Mutator mutator(20240601);
  for (int i = 0; i < kMutations && !HasFailure(); ++i) {
    Check(mutator.Mutate(corpus[i % corpus.size()], corpus));
  }
  // The mutants reach both outcomes, so the test exercises both paths.
  EXPECT_GT(parsed_, kMutations / 100);
  EXPECT_LT(parsed_, kMutations);
}

TEST_F(ParserFuzzTest, RandomBytesNeverCrash) {
  Mutator mutator(7);
  for (int i = 0; i < kRandomInputs && !HasFailure(); ++i) {
    Check(mutator.Random());
  }
}

}  // namespace
}  // namespace pasm
}  // namespace ptoserve
