// RunAssembly (fuzz_targets.h): assembly text through the parser, the
// printer and the lowering.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/asm/lower.h"
#include "core/asm/parser.h"
#include "core/asm/printer.h"
#include "tests/core/reference.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/server/small_job_checks.h"

namespace ptoserve {
namespace fuzz {

namespace {

using ::ptoserve::test::Desc;

// The request a program runs on: the tile names of the seeds and of
// docs/ASSEMBLY.md, zero-filled, with rows of 32 bytes or more so that every
// target accepts them.
JobSpec Request(Target target) {
  JobSpec spec;
  spec.target = target;
  auto add = [&](const char* name, const TileDesc& desc) {
    TileInput in;
    in.name = name;
    in.desc = desc;
    spec.tiles.push_back(std::move(in));
  };
  add("src0", Desc(DType::kInt16, 16, 16));
  add("src1", Desc(DType::kInt16, 16, 16));
  add("arg0", Desc(DType::kInt16, 16, 16));
  add("arg1", Desc(DType::kInt16, 16, 32, 16, 16));
  add("a", Desc(DType::kInt32, 4, 8, 4, 7));
  add("b", Desc(DType::kInt32, 4, 16, 4, 7));
  add("u", Desc(DType::kUInt8, 2, 64));
  return spec;
}

std::string Quoted(absl::string_view text, absl::string_view printed) {
  return absl::StrCat("\ninput:\n", text, "\nprinted:\n", printed);
}

}  // namespace

absl::Status RunAssembly(absl::string_view text) {
  absl::StatusOr<pasm::Program> program = pasm::Parse(text);
  if (!program.ok()) {
    if (program.status().message().empty()) {
      return absl::InternalError("Parse failed without a message");
    }
    return absl::OkStatus();
  }
  const std::string printed = pasm::Print(*program);
  absl::StatusOr<pasm::Program> reparsed = pasm::Parse(printed);
  if (!reparsed.ok()) {
    return absl::InternalError(absl::StrCat(
        "the printed program does not parse: ", reparsed.status().ToString(),
        Quoted(text, printed)));
  }
  if (*reparsed != *program) {
    return absl::InternalError(
        absl::StrCat("the printed program parses to a different program",
                     Quoted(text, printed)));
  }
  if (const std::string again = pasm::Print(*reparsed); again != printed) {
    return absl::InternalError(
        absl::StrCat("printing the printed program changes it",
                     Quoted(text, printed), "\nprinted again:\n", again));
  }

  const Engine& engine = SmallEngine();
  for (Target target : {Target::kHost, Target::kA2A3, Target::kA5}) {
    absl::StatusOr<JobSpec> lowered =
        pasm::Lower(*program, Request(target), engine);
    if (!lowered.ok()) {
      if (lowered.status().message().empty()) {
        return absl::InternalError("Lower failed without a message");
      }
      continue;
    }
    // The canonical form means what the text means.
    absl::StatusOr<JobSpec> lowered_printed =
        pasm::Lower(*reparsed, Request(target), engine);
    if (!lowered_printed.ok()) {
      return absl::InternalError(absl::StrCat(
          "the program lowers on ", TargetName(target),
          " but the printed one does not: ",
          lowered_printed.status().ToString(), Quoted(text, printed)));
    }
    if (absl::Status same = SameJobSpec(*lowered, *lowered_printed);
        !same.ok()) {
      return absl::InternalError(absl::StrCat(
          "the printed program lowers to a different job on ",
          TargetName(target), ": ", same.message(), Quoted(text, printed)));
    }
    absl::StatusOr<std::unique_ptr<PreparedJob>> job = engine.Prepare(*lowered);
    if (!job.ok()) {
      if (pasm::Locate(*program, job.status()).message().empty()) {
        return absl::InternalError("Prepare failed without a message");
      }
      continue;
    }
    RunInOrder(engine, job->get());
    engine.Finish(job->get());
  }
  return absl::OkStatus();
}

}  // namespace fuzz
}  // namespace ptoserve
