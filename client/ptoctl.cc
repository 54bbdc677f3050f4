// ptoctl: the command-line client of ptoserve.
//
//   ptoctl [--server=HOST:PORT] capabilities | health | tand | txor |
//          run JOB.json | run PROGRAM.pto --tile ... | fmt PROGRAM.pto |
//          stream JOBS.jsonl
//
// See `ptoctl --help` and README.md for the flags of each command.
#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "absl/strings/match.h"
#include "client/client.h"
#include "common/cli_help.h"
#include "core/asm/parser.h"
#include "core/asm/printer.h"
#include "core/status_macros.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051",
          "ptoserve address: HOST:PORT, a comma-separated list of IP:PORT "
          "(round robin, retried on UNAVAILABLE), or a gRPC name such as "
          "dns:///ptoserve:50051.");
ABSL_FLAG(bool, tls, false, "Connect with TLS.");
ABSL_FLAG(std::string, tls_ca, "",
          "With --tls: CA certificate (PEM file) to verify the server with "
          "(default: the system's roots).");
ABSL_FLAG(std::string, tls_cert, "", "With --tls: client certificate (PEM file), for mutual TLS.");
ABSL_FLAG(std::string, tls_key, "", "With --tls: the client certificate's key (PEM file).");
ABSL_FLAG(std::string, tls_server_name, "",
          "With --tls: the name the server's certificate must carry, if not the host's.");
ABSL_FLAG(std::string, token, "",
          "Bearer token sent as \"authorization: Bearer <token>\".");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(30),
          "How long to wait for the connection, and for each call.");
ABSL_FLAG(bool, json, false, "Print the response as proto3 JSON.");
ABSL_FLAG(std::string, dtype, "int32",
          "tand/txor: element type: int8, uint8, int16, uint16, int32, uint32.");
ABSL_FLAG(std::string, shape, "", "tand/txor: physical shape ROWSxCOLS, e.g. 16x16.");
ABSL_FLAG(std::string, valid, "", "tand/txor: valid region ROWSxCOLS (default: the shape).");
ABSL_FLAG(std::string, src0, "",
          "tand/txor: src0 elements: comma-separated integers (one per element, "
          "row-major, or a single value for all), or @FILE of raw little-endian bytes.");
ABSL_FLAG(std::string, src1, "", "tand/txor: src1 elements, as --src0.");
ABSL_FLAG(std::string, tmp, "",
          "txor: tmp elements, as --src0 (default: the server allocates tmp).");
ABSL_FLAG(std::string, target, "", "tand/txor: host, a2a3 or a5 (default: the server's).");
ABSL_FLAG(std::string, service, "", "health: the service to ask about (default: the server).");

namespace ptoserve {
namespace {

constexpr char kUsage[] =
    "ptoctl: the command-line client of ptoserve.\n"
    "\n"
    "Usage: ptoctl [--server=HOST:PORT] [--json] COMMAND [flags]\n"
    "  capabilities     targets, element types, limits and version\n"
    "  health           the gRPC health status (exit 0 when SERVING)\n"
    "  tand, txor       --dtype=int16 --shape=16x16 [--valid=RxC] --src0=V\n"
    "                   --src1=V [--tmp=V] [--target=a2a3]\n"
    "                   V: comma-separated integers, or @FILE of raw bytes\n"
    "  run JOB.json     send a job written as proto3 JSON\n"
    "  run PROGRAM.pto --tile NAME=DTYPE:RxC[:valid=RxC][:V] ... [--target=a2a3]\n"
    "                   send a PTO assembly program with its input tiles\n"
    "  fmt PROGRAM.pto  print a program in canonical AS level 2 form (no server)\n"
    "  stream JOBS.jsonl  send one job per line over one stream; results print\n"
    "                   as jobs finish (a job without an id gets its line number)\n";


int Fail(const absl::Status& status) {
  std::cerr << "ptoctl: " << absl::StatusCodeToString(status.code()) << ": "
            << status.message() << "\n";
  return 1;
}

int UsageError(const std::string& message) {
  std::cerr << "ptoctl: " << message << "\n(see ptoctl --help)\n";
  return 2;
}

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream file(path, std::ios::binary);
  *ok = static_cast<bool>(file);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

absl::StatusOr<std::pair<uint32_t, uint32_t>> ParseShape(const std::string& flag,
                                                         const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, 'x');
  uint32_t rows = 0, cols = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &rows) ||
      !absl::SimpleAtoi(parts[1], &cols)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", text, " is not of the form ROWSxCOLS"));
  }
  return std::make_pair(rows, cols);
}

absl::StatusOr<v1::DType> ParseDType(const std::string& name) {
  v1::DType dtype;
  if (!v1::DType_Parse("DTYPE_" + absl::AsciiStrToUpper(name), &dtype) ||
      dtype == v1::DTYPE_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dtype=", name, " is not an element type (int8, uint8, int16, uint16, "
        "int32, uint32)"));
  }
  return dtype;
}

absl::StatusOr<v1::Target> ParseTarget(const std::string& name) {
  if (name.empty()) return v1::TARGET_UNSPECIFIED;
  v1::Target target;
  if (!v1::Target_Parse("TARGET_" + absl::AsciiStrToUpper(name), &target) ||
      target == v1::TARGET_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat("--target=", name, " is not one of host, a2a3, a5"));
  }
  return target;
}

// Fills `tile`'s elements from a flag value: numbers become `values`, and
// @FILE becomes raw `data`. The server checks counts and ranges.
absl::Status SetElements(const std::string& flag, const std::string& text,
                         v1::Tile* tile) {
  if (text.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " is required"));
  }
  if (text[0] == '@') {
    std::ifstream file(text.substr(1), std::ios::binary);
    if (!file) {
      return absl::NotFoundError(absl::StrCat("--", flag, ": cannot read ", text.substr(1)));
    }
    std::stringstream bytes;
    bytes << file.rdbuf();
    tile->set_data(bytes.str());
    return absl::OkStatus();
  }
  std::vector<double> values;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &v)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, ": \"", part, "\" is not an integer"));
    }
    values.push_back(static_cast<double>(v));
  }
  const size_t n = size_t{tile->rows()} * tile->cols();
  if (values.size() == 1) values.assign(n, values[0]);
  tile->mutable_values()->Add(values.begin(), values.end());
  return absl::OkStatus();
}

// The tile's elements as integers, whichever encoding it came back in.
absl::StatusOr<std::vector<int64_t>> Elements(const v1::Tile& tile) {
  auto widen = [](auto elements) -> absl::StatusOr<std::vector<int64_t>> {
    if (!elements.ok()) return elements.status();
    return std::vector<int64_t>(elements->begin(), elements->end());
  };
  switch (tile.dtype()) {
    case v1::DTYPE_INT8: return widen(TileElements<int8_t>(tile));
    case v1::DTYPE_UINT8: return widen(TileElements<uint8_t>(tile));
    case v1::DTYPE_INT16: return widen(TileElements<int16_t>(tile));
    case v1::DTYPE_UINT16: return widen(TileElements<uint16_t>(tile));
    case v1::DTYPE_INT32: return widen(TileElements<int32_t>(tile));
    case v1::DTYPE_UINT32: return widen(TileElements<uint32_t>(tile));
    default: break;
  }
  return absl::InvalidArgumentError("cannot print a tile of this element type");
}

std::string DTypeText(v1::DType dtype) {
  return absl::AsciiStrToLower(v1::DType_Name(dtype).substr(6));
}

std::string TargetText(v1::Target target) {
  return absl::AsciiStrToLower(v1::Target_Name(target).substr(7));
}

// The valid region as a right-aligned grid.
void PrintTile(const std::string& name, const v1::Tile& tile) {
  std::cout << name << ": " << tile.rows() << "x" << tile.cols() << " "
            << DTypeText(tile.dtype());
  const uint32_t vr = tile.valid_rows() ? tile.valid_rows() : tile.rows();
  const uint32_t vc = tile.valid_cols() ? tile.valid_cols() : tile.cols();
  if (vr != tile.rows() || vc != tile.cols()) std::cout << ", valid " << vr << "x" << vc;
  std::cout << "\n";
  absl::StatusOr<std::vector<int64_t>> elements = Elements(tile);
  if (!elements.ok()) {
    std::cout << "  (" << elements.status().message() << ")\n";
    return;
  }
  size_t width = 1;
  for (uint32_t r = 0; r < vr; ++r) {
    for (uint32_t c = 0; c < vc; ++c) {
      width = std::max(width, absl::StrCat((*elements)[size_t{r} * tile.cols() + c]).size());
    }
  }
  for (uint32_t r = 0; r < vr; ++r) {
    std::string line = " ";
    for (uint32_t c = 0; c < vc; ++c) {
      absl::StrAppendFormat(&line, " %*d", static_cast<int>(width),
                            (*elements)[size_t{r} * tile.cols() + c]);
    }
    std::cout << line << "\n";
  }
}

absl::Duration Between(const google::protobuf::Timestamp& a,
                       const google::protobuf::Timestamp& b) {
  return absl::Seconds(b.seconds() - a.seconds()) + absl::Nanoseconds(b.nanos() - a.nanos());
}

void PrintEvents(const v1::JobResult& result) {
  std::cout << "events:\n";
  for (const v1::EventRecord& e : result.events()) {
    std::cout << absl::StrFormat(
        "  %-4s instruction %u %s on %s, %s, batch %u (size %u), queued %s, ran %s",
        e.id(), e.instruction_index(), v1::Opcode_Name(e.opcode()).substr(7),
        TargetText(e.target()), v1::Pipe_Name(e.pipe()), e.batch_id(),
        e.batch_size(), absl::FormatDuration(Between(e.enqueue_time(), e.start_time())),
        absl::FormatDuration(Between(e.start_time(), e.end_time())));
    if (e.waited_on_size() > 0) {
      std::cout << ", waited on " << absl::StrJoin(e.waited_on(), ", ");
    }
    std::cout << "\n";
    for (const v1::MicroOp& op : e.trace()) {
      std::cout << absl::StrFormat("       %-5s %s <- %s  (%u repeats, %u elements)\n",
                                   op.op(), op.dst(), absl::StrJoin(op.srcs(), ", "),
                                   op.repeats(), op.elements());
    }
    for (const std::string& note : e.notes()) std::cout << "       note: " << note << "\n";
  }
}

void PrintResult(const v1::JobResult& result, const std::vector<std::string>& order) {
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(result);
    return;
  }
  for (const std::string& name : order) {
    auto it = result.tiles().find(name);
    if (it != result.tiles().end()) PrintTile(name, it->second);
  }
  PrintEvents(result);
}

absl::StatusOr<std::unique_ptr<Client>> Connect() {
  ClientOptions options;
  options.tls = absl::GetFlag(FLAGS_tls);
  for (auto [flag, pem] : {std::pair{&FLAGS_tls_ca, &options.tls_ca_pem},
                           std::pair{&FLAGS_tls_cert, &options.tls_cert_pem},
                           std::pair{&FLAGS_tls_key, &options.tls_key_pem}}) {
    const std::string path = absl::GetFlag(*flag);
    if (path.empty()) continue;
    bool ok = false;
    *pem = ReadFile(path, &ok);
    if (!ok) return absl::InvalidArgumentError("cannot read " + path);
  }
  options.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  options.token = absl::GetFlag(FLAGS_token);
  options.connect_timeout = absl::GetFlag(FLAGS_timeout);
  options.call_timeout = absl::GetFlag(FLAGS_timeout);
  return Client::Connect(absl::GetFlag(FLAGS_server), options);
}

int Capabilities() {
  auto client = Connect();
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<v1::Capabilities> caps = (*client)->GetCapabilities();
  if (!caps.ok()) return Fail(caps.status());
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ToJson(*caps);
    return 0;
  }
  std::cout << "ptoserve " << caps->server_version() << ", default target "
            << TargetText(caps->default_target()) << "\n";
  for (const v1::TargetInfo& t : caps->targets()) {
    std::cout << absl::StrFormat("%-5s %s: unified buffer %u bytes, rows multiple of %u bytes\n",
                                 TargetText(t.target()), t.description(), t.buffer_bytes(),
                                 t.row_alignment_bytes());
    for (const v1::OpcodeSupport& op : t.opcodes()) {
      std::vector<std::string> dtypes;
      for (int d : op.dtypes()) dtypes.push_back(DTypeText(static_cast<v1::DType>(d)));
      std::cout << absl::StrFormat("      %s [%s]%s: %s\n", v1::Opcode_Name(op.opcode()).substr(7),
                                   absl::StrJoin(dtypes, " "),
                                   op.tmp_required() ? ", tmp required" : "", op.algorithm());
    }
  }
  const v1::Limits& l = caps->limits();
  std::cout << absl::StrFormat(
      "limits: tile %u bytes, %u tiles and %u instructions per job, message %u bytes\n",
      l.max_tile_bytes(), l.max_tiles_per_job(), l.max_instructions_per_job(),
      l.max_message_bytes());
  return 0;
}

int Health() {
  auto client = Connect();
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<std::string> status = (*client)->Health(absl::GetFlag(FLAGS_service));
  if (!status.ok()) return Fail(status.status());
  std::cout << *status << "\n";
  return *status == "SERVING" ? 0 : 1;
}

int Binary(v1::Opcode opcode) {
  absl::StatusOr<v1::DType> dtype = ParseDType(absl::GetFlag(FLAGS_dtype));
  if (!dtype.ok()) return UsageError(std::string(dtype.status().message()));
  if (absl::GetFlag(FLAGS_shape).empty()) return UsageError("--shape is required");
  auto shape = ParseShape("shape", absl::GetFlag(FLAGS_shape));
  if (!shape.ok()) return UsageError(std::string(shape.status().message()));
  std::pair<uint32_t, uint32_t> valid = {0, 0};
  if (!absl::GetFlag(FLAGS_valid).empty()) {
    auto parsed = ParseShape("valid", absl::GetFlag(FLAGS_valid));
    if (!parsed.ok()) return UsageError(std::string(parsed.status().message()));
    valid = *parsed;
  }
  absl::StatusOr<v1::Target> target = ParseTarget(absl::GetFlag(FLAGS_target));
  if (!target.ok()) return UsageError(std::string(target.status().message()));

  v1::Job job;
  job.set_target(*target);
  std::vector<std::pair<std::string, std::string>> operands = {
      {"src0", absl::GetFlag(FLAGS_src0)}, {"src1", absl::GetFlag(FLAGS_src1)}};
  if (!absl::GetFlag(FLAGS_tmp).empty()) {
    if (opcode != v1::OPCODE_TXOR) return UsageError("--tmp is for txor only");
    operands.push_back({"tmp", absl::GetFlag(FLAGS_tmp)});
  }
  for (const auto& [name, text] : operands) {
    v1::Tile& tile = (*job.mutable_tiles())[name];
    tile.set_dtype(*dtype);
    tile.set_rows(shape->first);
    tile.set_cols(shape->second);
    tile.set_valid_rows(valid.first);
    tile.set_valid_cols(valid.second);
    absl::Status status = SetElements(name, text, &tile);
    if (!status.ok()) return UsageError(std::string(status.message()));
  }
  v1::Instruction* inst = job.add_instructions();
  inst->set_opcode(opcode);
  inst->set_dst("dst");
  inst->set_src0("src0");
  inst->set_src1("src1");
  if (opcode == v1::OPCODE_TXOR) inst->set_tmp("tmp");

  auto client = Connect();
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<v1::JobResult> result = (*client)->Execute(job);
  if (!result.ok()) return Fail(result.status());
  PrintResult(*result, {"dst"});
  return 0;
}

// Parses --tile NAME=DTYPE:RxC[:valid=RxC][:V] into job.tiles[NAME], where
// V is as for --src0; without V the tile starts zero-filled.
absl::Status AddTileSpec(const std::string& spec, v1::Job* job) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tile ", spec, ": expected NAME=DTYPE:RxC[:valid=RxC][:VALUES or @FILE]"));
  }
  const std::string name = spec.substr(0, eq);
  std::vector<std::string> fields = absl::StrSplit(spec.substr(eq + 1), absl::MaxSplits(':', 3));
  if (fields.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("--tile ", spec, ": expected DTYPE:RxC after the name"));
  }
  PTO_ASSIGN_OR_RETURN(v1::DType dtype, ParseDType(fields[0]));
  PTO_ASSIGN_OR_RETURN(auto shape, ParseShape("tile " + name, fields[1]));
  v1::Tile& tile = (*job->mutable_tiles())[name];
  tile.set_dtype(dtype);
  tile.set_rows(shape.first);
  tile.set_cols(shape.second);
  size_t next = 2;
  if (fields.size() > next && absl::StartsWith(fields[next], "valid=")) {
    PTO_ASSIGN_OR_RETURN(auto valid, ParseShape("tile " + name, fields[next].substr(6)));
    tile.set_valid_rows(valid.first);
    tile.set_valid_cols(valid.second);
    ++next;
  }
  if (fields.size() > next) {
    // What is left (values may hold no ':', so rejoin nothing) is V.
    std::string values = fields[next];
    for (size_t i = next + 1; i < fields.size(); ++i) absl::StrAppend(&values, ":", fields[i]);
    return SetElements("tile " + name, values, &tile);
  }
  return absl::OkStatus();
}

int RunJob(const std::string& path, const std::vector<std::string>& tiles) {
  bool ok = false;
  const std::string text = ReadFile(path, &ok);
  if (!ok) return UsageError("cannot read " + path);
  v1::Job job;
  if (absl::EndsWith(path, ".json")) {
    if (!tiles.empty()) return UsageError("--tile is for assembly programs, not JSON jobs");
    auto parsed = google::protobuf::util::JsonStringToMessage(text, &job);
    if (!parsed.ok()) {
      return UsageError(absl::StrCat(path, " is not a ptoserve.v1.Job in proto3 JSON: ",
                                     parsed.message().as_string()));
    }
  } else {
    job.set_assembly(text);
    absl::StatusOr<v1::Target> target = ParseTarget(absl::GetFlag(FLAGS_target));
    if (!target.ok()) return UsageError(std::string(target.status().message()));
    job.set_target(*target);
    for (const std::string& spec : tiles) {
      absl::Status added = AddTileSpec(spec, &job);
      if (!added.ok()) return UsageError(std::string(added.message()));
    }
  }
  auto client = Connect();
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<v1::JobResult> result = (*client)->Execute(job);
  if (!result.ok()) return Fail(result.status());
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
  PrintResult(*result, order);
  return 0;
}

// Prints a program in the canonical AS level 2 form; needs no server.
int Format(const std::string& path) {
  bool ok = false;
  const std::string text = ReadFile(path, &ok);
  if (!ok) return UsageError("cannot read " + path);
  absl::StatusOr<pasm::Program> program = pasm::Parse(text);
  if (!program.ok()) {
    std::cerr << path << ":" << program.status().message() << "\n";
    return 1;
  }
  std::cout << pasm::Print(*program);
  return 0;
}

int StreamJobs(const std::string& path) {
  std::ifstream file(path);
  if (!file) return UsageError("cannot read " + path);
  std::vector<v1::Job> jobs;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    v1::Job& job = jobs.emplace_back();
    auto parsed = google::protobuf::util::JsonStringToMessage(line, &job);
    if (!parsed.ok()) {
      return UsageError(absl::StrCat(path, ":", number, " is not a ptoserve.v1.Job in proto3 JSON: ",
                                     parsed.message().as_string()));
    }
    if (job.id().empty()) job.set_id(absl::StrCat(number));
  }
  auto client = Connect();
  if (!client.ok()) return Fail(client.status());
  int failed = 0;
  absl::Status status = (*client)->ExecuteStream(jobs, [&](v1::JobResult result) {
    if (absl::GetFlag(FLAGS_json)) {
      google::protobuf::util::JsonPrintOptions options;
      std::string out;
      (void)google::protobuf::util::MessageToJsonString(result, &out, options);
      std::cout << out << "\n";
      if (result.status().code() != 0) ++failed;
      return;
    }
    if (result.status().code() != 0) {
      ++failed;
      std::cout << "job " << result.id() << ": "
                << absl::StatusCodeToString(static_cast<absl::StatusCode>(result.status().code()))
                << ": " << result.status().message() << "\n";
      return;
    }
    std::cout << "job " << result.id() << ": OK\n";
    std::vector<std::string> names;
    for (const auto& [name, tile] : result.tiles()) names.push_back(name);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) PrintTile(name, result.tiles().at(name));
  });
  if (!status.ok()) return Fail(status);
  return failed == 0 ? 0 : 1;
}

int Main(const std::vector<char*>& args, const std::vector<std::string>& tiles) {
  if (args.size() < 2) return UsageError("no command given");
  const std::string command = args[1];
  const size_t extra = args.size() - 2;
  if (!tiles.empty() && command != "run") return UsageError("--tile is for run only");
  if (command == "run") {
    if (extra != 1) return UsageError("run takes one JOB.json or PROGRAM.pto file");
    return RunJob(args[2], tiles);
  }
  if (command == "fmt") {
    if (extra != 1) return UsageError("fmt takes one PROGRAM.pto file");
    return Format(args[2]);
  }
  if (command == "stream") {
    if (extra != 1) return UsageError("stream takes one JOBS.jsonl file");
    return StreamJobs(args[2]);
  }
  if (extra != 0) return UsageError(absl::StrCat("unexpected argument: ", args[2]));
  if (command == "capabilities") return Capabilities();
  if (command == "health") return Health();
  if (command == "tand") return Binary(v1::OPCODE_TAND);
  if (command == "txor") return Binary(v1::OPCODE_TXOR);
  return UsageError("unknown command: " + command);
}

}  // namespace
}  // namespace ptoserve

int main(int argc, char** argv) {
  ptoserve::HandleHelpAndVersion(argc, argv, "ptoctl", ptoserve::kUsage,
                                 "client/ptoctl.cc");
  absl::SetProgramUsageMessage(ptoserve::kUsage);
  // --tile may repeat, which Abseil flags do not allow: take those first.
  std::vector<std::string> tiles;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--tile" && i + 1 < argc) {
      tiles.push_back(argv[++i]);
    } else if (absl::StartsWith(arg, "--tile=")) {
      tiles.push_back(arg.substr(7));
    } else {
      rest.push_back(argv[i]);
    }
  }
  rest.push_back(nullptr);
  return ptoserve::Main(absl::ParseCommandLine(static_cast<int>(rest.size()) - 1, rest.data()),
                        tiles);
}
