// Replays the fuzzers' checked-in inputs through the fuzz targets' bodies:
// the seed corpus (corpus/<fuzzer>/) and every crash reproducer a fuzzer
// found (regressions/<fuzzer>/), so that a fixed bug stays fixed. Also
// checks that the seeds are what make_seeds says they are: valid jobs and
// programs, which start the fuzzers on the paths that do work.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/asm/parser.h"
#include "gtest/gtest.h"
#include "proto/codec.h"
#include "ptoserve/v1/job.pb.h"
#include "server/jobs/decode.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/job_mutator.h"
#include "tests/server/small_job_checks.h"

namespace ptoserve {
namespace fuzz {

// For gtest's messages: the fuzzer's name rather than its bytes.
void PrintTo(const FuzzTarget& target, std::ostream* os) { *os << target.name; }

namespace {

namespace fs = std::filesystem;

// tests/fuzz/<kind> in the test's runfiles.
fs::path KindDir(const std::string& kind) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return fs::path(srcdir != nullptr ? srcdir : ".") / "ptoserve/tests/fuzz" /
         kind;
}

// The files under tests/fuzz/<kind>/<fuzzer>/ in the test's runfiles,
// sorted; none if the directory does not exist (git keeps no empty
// directory, so a fuzzer without reproducers has none).
std::vector<fs::path> Inputs(const std::string& kind,
                             const std::string& fuzzer) {
  const fs::path dir = KindDir(kind) / fuzzer;
  std::vector<fs::path> files;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

bool IsSeed(const fs::path& path) {
  return absl::StartsWith(path.filename().string(), "seed_");
}

class CorpusTest : public ::testing::TestWithParam<FuzzTarget> {
 protected:
  // Runs every input under tests/fuzz/<kind>/<this fuzzer>/; returns how
  // many there were.
  size_t Replay(const std::string& kind) {
    const std::vector<fs::path> files = Inputs(kind, GetParam().name);
    for (const fs::path& file : files) {
      // A crash ends the test binary: its log's last line names the input.
      std::fprintf(stderr, "replaying %s\n", file.string().c_str());
      const absl::Status finding = GetParam().run(Read(file));
      EXPECT_TRUE(finding.ok()) << file << ": " << finding;
    }
    return files.size();
  }
};

TEST_P(CorpusTest, SeedCorpusPasses) { EXPECT_GT(Replay("corpus"), 0u); }

// Where a fuzzer has a regressions folder it holds at least one input, and
// every one is replayed; the folder of all of them is where the test looks
// (were it moved, no reproducer would run and nothing would say so).
TEST_P(CorpusTest, CrashReproducersPass) {
  ASSERT_TRUE(fs::is_directory(KindDir("regressions")))
      << KindDir("regressions");
  const bool expected =
      fs::is_directory(KindDir("regressions") / GetParam().name);
  const size_t replayed = Replay("regressions");
  if (expected) {
    EXPECT_GT(replayed, 0u);
  }
  std::printf("%s: %zu reproducers replayed\n", GetParam().name, replayed);
}

// The fuzzers with reproducers today: a move of their folders, or of the
// files, must not go unnoticed.
TEST(CorpusTest, KnownReproducersArePresent) {
  EXPECT_GE(Inputs("regressions", "job_fuzzer").size(), 10u);
  EXPECT_GE(Inputs("regressions", "asm_fuzzer").size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Fuzzers, CorpusTest,
                         ::testing::ValuesIn(Targets().begin(),
                                             Targets().end()),
                         [](const ::testing::TestParamInfo<FuzzTarget>& info) {
                           return std::string(info.param.name);
                         });

TEST(SeedsTest, JobSeedsAreValidJobs) {
  size_t seeds = 0;
  for (const fs::path& file : Inputs("corpus", "job_fuzzer")) {
    if (!IsSeed(file)) continue;
    ++seeds;
    v1::Job job;
    ASSERT_TRUE(job.ParseFromString(Read(file))) << file;
    absl::StatusOr<DecodedJob> decoded = DecodeJob(job, SmallEngine());
    ASSERT_TRUE(decoded.ok()) << file << ": " << decoded.status();
    EXPECT_TRUE(SmallEngine().Execute(decoded->spec).ok()) << file;
  }
  EXPECT_GT(seeds, 0u);
}

// The most a mutant may hold here. job_fuzzer keeps a mutant only within
// libFuzzer's max_len (LLVMFuzzerCustomMutator); without a bound the steps
// compound (an assembly of 66 MiB a hundred steps into one seed), each step
// copies all of it, and the test ran past its minute on what the wire check
// refuses in its first bytes. 256 KiB holds every hostile shape the mutator
// makes: a 64 KiB line, a thousand statements, a thousand tiles.
constexpr size_t kMaxMutantBytes = size_t{256} << 10;

// job_fuzzer's mutator on the seeds, a few hundred steps each: every mutant
// serializes and runs without a finding. The same mutants in every run (the
// mutator draws only from the seeded generator); one over kMaxMutantBytes
// is dropped and the next step mutates the job before it. A finding's bytes
// are left in the test's outputs, to add to regressions/job_fuzzer/.
TEST(SeedsTest, MutatedJobSeedsRun) {
  std::mt19937 rng(20240607);
  for (const fs::path& file : Inputs("corpus", "job_fuzzer")) {
    std::string bytes = Read(file);
    v1::Job job;
    if (!job.ParseFromString(bytes)) continue;
    for (int i = 0; i < 300; ++i) {
      MutateJob(&rng, &job);
      std::string mutant = DeterministicBytes(job);
      if (mutant.size() > kMaxMutantBytes) {
        ASSERT_TRUE(job.ParseFromString(bytes));
        continue;
      }
      bytes = std::move(mutant);
      const absl::Status finding = RunJob(bytes);
      if (!finding.ok()) {
        const char* out = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
        const fs::path saved =
            fs::path(out != nullptr ? out : ".") /
            absl::StrCat(file.stem().string(), "-mutant-", i, ".pb");
        std::ofstream(saved, std::ios::binary) << bytes;
        FAIL() << file << " mutant " << i << " (saved as " << saved
               << "): " << finding;
      }
    }
  }
}

TEST(SeedsTest, AssemblySeedsParse) {
  size_t seeds = 0;
  for (const fs::path& file : Inputs("corpus", "asm_fuzzer")) {
    if (!IsSeed(file)) continue;
    ++seeds;
    EXPECT_TRUE(pasm::Parse(Read(file)).ok()) << file;
  }
  EXPECT_GT(seeds, 0u);
}

}  // namespace
}  // namespace fuzz
}  // namespace ptoserve
