#include "client/ptoctl/job_commands.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/chrome_trace.h"
#include "client/client.h"
#include "client/ptoctl/connect.h"
#include "client/ptoctl/flags.h"
#include "client/ptoctl/jobs.h"
#include "client/ptoctl/print.h"
#include "client/ptoctl/shm.h"
#include "client/ptoctl/tiles.h"
#include "client/read_input.h"
#include "client/ub_map.h"
#include "core/asm/parser.h"
#include "core/asm/printer.h"

namespace ptoserve {
namespace ptoctl {

namespace {

// "tand, txor": the mnemonics of the instructions `pick` selects.
std::string Mnemonics(bool (*pick)(const OpInfo&)) {
  std::vector<absl::string_view> names;
  for (const OpInfo& op : kOps) {
    if (pick(op)) names.push_back(op.mnemonic);
  }
  return absl::StrJoin(names, ", ");
}

// The server's refusal of a program at a position ("1:15: %b is ..."),
// with the file's name before it as a compiler writes it.
absl::Status InFile(absl::string_view where, const v1::Job& job,
                    const absl::Status& status) {
  int line = 0, column = 0;
  const std::vector<absl::string_view> parts =
      absl::StrSplit(status.message(), absl::MaxSplits(':', 2));
  if (job.assembly().empty() || parts.size() < 3 ||
      !absl::SimpleAtoi(parts[0], &line) ||
      !absl::SimpleAtoi(parts[1], &column)) {
    return status;
  }
  return absl::Status(status.code(),
                      absl::StrCat(where, ":", status.message()));
}

}  // namespace

int OutIsForInstructionsAndRun() {
  return UsageError(absl::StrCat("--out is for ",
                                 Mnemonics([](const OpInfo&) { return true; }),
                                 " and run"));
}

int Instruction(const OpInfo& op) {
  absl::StatusOr<v1::DType> dtype = ParseDType(absl::GetFlag(FLAGS_dtype));
  if (!dtype.ok()) return UsageError(dtype.status().message());
  if (absl::GetFlag(FLAGS_shape).empty()) {
    return UsageError("--shape is required");
  }
  auto shape = ParseShape("shape", absl::GetFlag(FLAGS_shape));
  if (!shape.ok()) return UsageError(shape.status().message());
  std::pair<uint32_t, uint32_t> valid = {0, 0};
  if (!absl::GetFlag(FLAGS_valid).empty()) {
    auto parsed = ParseShape("valid", absl::GetFlag(FLAGS_valid));
    if (!parsed.ok()) return UsageError(parsed.status().message());
    valid = *parsed;
  }
  absl::StatusOr<v1::Target> target = ParseTarget(absl::GetFlag(FLAGS_target));
  if (!target.ok()) return UsageError(target.status().message());

  // Laid out as the SDK lays out its jobs; the elements come from the flags.
  InstructionJobArgs layout;
  layout.opcode = static_cast<v1::Opcode>(op.wire_value);
  layout.dtype = *dtype;
  layout.rows = shape->first;
  layout.cols = shape->second;
  layout.valid_rows = valid.first;
  layout.valid_cols = valid.second;
  layout.target = *target;
  layout.src1 = op.sources == 2;
  layout.tmp = op.accepts_tmp;
  std::vector<std::pair<std::string, std::string>> operands = {
      {"src0", absl::GetFlag(FLAGS_src0)}};
  if (op.sources == 2) {
    operands.push_back({"src1", absl::GetFlag(FLAGS_src1)});
  } else if (!absl::GetFlag(FLAGS_src1).empty()) {
    return UsageError(absl::StrCat("--src1 is not for ", op.mnemonic,
                                   ", which reads src0 only"));
  }
  if (!absl::GetFlag(FLAGS_tmp).empty()) {
    if (!op.accepts_tmp) {
      return UsageError(absl::StrCat(
          "--tmp is for ",
          Mnemonics([](const OpInfo& o) { return o.accepts_tmp; }), " only"));
    }
    operands.push_back({"tmp", absl::GetFlag(FLAGS_tmp)});
    layout.tmp_tile = true;
  }
  v1::Job job = InstructionJob(layout);
  for (const auto& [name, text] : operands) {
    v1::Tile& tile = (*job.mutable_tiles())[name];
    if (absl::Status status = SetElements(name, text, &tile); !status.ok()) {
      return UsageError(status.message());
    }
  }

  int code = 0;
  std::unique_ptr<Client> client = Connect(&code);
  if (client == nullptr) return code;
  if (absl::GetFlag(FLAGS_shm)) return RunShared(std::move(job), *client);
  absl::StatusOr<v1::JobResult> result = client->Execute(job);
  if (!result.ok()) return Fail(result.status());
  return PrintResult(*result, {"dst"}, "dst");
}

int RunJob(const std::string& path, const std::vector<std::string>& tiles,
           bool ub_map) {
  absl::StatusOr<std::string> text = ReadInput(path);
  if (!text.ok()) return InputError(text.status().message());
  absl::StatusOr<v1::Target> target = ParseTarget(absl::GetFlag(FLAGS_target));
  if (!target.ok()) return UsageError(target.status().message());
  const std::string where = InputName(path);
  v1::Job job;
  if (LooksLikeJson(path, *text)) {
    if (!tiles.empty()) {
      return UsageError("--tile is for assembly programs, not JSON jobs");
    }
    absl::StatusOr<v1::Job> parsed = ParseJsonJob(*text, where);
    if (!parsed.ok()) return InputError(parsed.status().message());
    job = std::move(*parsed);
  } else {
    // The program's syntax is checked here, where the file has a name;
    // what it means (tiles, targets) the server checks.
    if (absl::StatusOr<pasm::Program> program = pasm::Parse(*text);
        !program.ok()) {
      return InputError(absl::StrCat(where, ":", program.status().message()));
    }
    job.set_assembly(*text);
    for (const std::string& spec : tiles) {
      if (absl::Status added = AddTileSpec(spec, &job); !added.ok()) {
        return UsageError(added.message());
      }
    }
  }
  if (absl::Status s = ApplyTarget(*target, where, &job); !s.ok()) {
    return UsageError(s.message());
  }
  int code = 0;
  std::unique_ptr<Client> client = Connect(&code);
  if (client == nullptr) return code;
  absl::StatusOr<v1::JobResult> result = client->Execute(job);
  if (!result.ok()) return Fail(InFile(where, job, result.status()));
  if (const std::string trace = absl::GetFlag(FLAGS_trace); !trace.empty()) {
    if (absl::Status s = WriteFile("trace", trace, ChromeTrace(*result));
        !s.ok()) {
      return LocalError(s.message());
    }
  }
  std::vector<std::string> order(job.outputs().begin(), job.outputs().end());
  for (const auto& inst : job.instructions()) {
    if (std::find(order.begin(), order.end(), inst.dst()) == order.end()) {
      order.push_back(inst.dst());
    }
  }
  if (order.empty()) {  // assembly: the results, by name
    for (const auto& [name, tile] : result->tiles()) order.push_back(name);
    std::sort(order.begin(), order.end());
  }
  const int printed = PrintResult(*result, order);
  if (printed == 0 && ub_map) std::cout << UnifiedBufferMap(*result);
  return printed;
}

int Format(const std::string& path) {
  absl::StatusOr<std::string> text = ReadInput(path);
  if (!text.ok()) return InputError(text.status().message());
  absl::StatusOr<pasm::Program> program = pasm::Parse(*text);
  if (!program.ok()) {
    return InputError(
        absl::StrCat(InputName(path), ":", program.status().message()));
  }
  std::cout << pasm::Print(*program);
  return 0;
}

int StreamJobs(const std::string& path) {
  if (!absl::GetFlag(FLAGS_out).empty()) return OutIsForInstructionsAndRun();
  absl::StatusOr<std::string> text = ReadInput(path);
  if (!text.ok()) return InputError(text.status().message());
  absl::StatusOr<v1::Target> target = ParseTarget(absl::GetFlag(FLAGS_target));
  if (!target.ok()) return UsageError(target.status().message());
  const std::string where = InputName(path);
  std::vector<v1::Job> jobs;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    absl::StatusOr<v1::Job> job = ParseJsonJob(line, where, number);
    if (!job.ok()) return InputError(job.status().message());
    if (job->id().empty()) job->set_id(absl::StrCat(number));
    if (absl::Status s =
            ApplyTarget(*target, absl::StrCat(where, ":", number), &*job);
        !s.ok()) {
      return UsageError(s.message());
    }
    jobs.push_back(std::move(*job));
  }
  int code = 0;
  std::unique_ptr<Client> client = Connect(&code);
  if (client == nullptr) return code;
  int failed = 0;
  absl::Status status = client->ExecuteStream(jobs, [&](v1::JobResult result) {
    if (result.status().code() != v1::OK) ++failed;
    if (JsonOutput()) {
      std::cout << ToJson(result, false) << std::flush;
      return;
    }
    if (result.status().code() != v1::OK) {
      std::cout << "job " << result.id() << ": "
                << v1::Code_Name(result.status().code()) << ": "
                << result.status().message() << "\n";
      return;
    }
    std::cout << "job " << result.id() << ": OK\n";
    std::vector<std::string> names;
    for (const auto& [name, tile] : result.tiles()) names.push_back(name);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      PrintTile(name, result.tiles().at(name));
    }
  });
  if (!status.ok()) return Fail(status);
  return failed == 0 ? 0 : 1;
}

}  // namespace ptoctl
}  // namespace ptoserve
