// ptoctl: the command-line client of ptoserve.
//
//   ptoctl [--server=HOST:PORT] capabilities | health | tand | txor |
//          run JOB.json|PROGRAM.pto|- [--tile ...] [--trace=OUT.json]
//          [--ub-map] | fmt PROGRAM.pto|- |
//          stream JOBS.jsonl|-
//
// See `ptoctl --help` and README.md for the flags of each command.
#include <google/protobuf/util/json_util.h>
#include <grpc/support/log.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "client/chrome_trace.h"
#include "client/client.h"
#include "client/shared_region.h"
#include "client/ub_map.h"
#include "common/cli_help.h"
#include "core/asm/parser.h"
#include "core/asm/printer.h"
#include "core/ops.h"
#include "core/status_macros.h"
#include "proto/wire.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051",
          "ptoserve address: HOST:PORT, a comma-separated list of IP:PORT "
          "(round robin, retried on UNAVAILABLE), or a gRPC name such as "
          "dns:///ptoserve:50051.");
ABSL_FLAG(bool, tls, false,
          "Connect with TLS (implied by --tls_ca, --tls_cert, --tls_key and "
          "--tls_server_name).");
ABSL_FLAG(std::string, tls_ca, "",
          "CA certificate (PEM file) to verify the server with (default: the "
          "system's roots).");
ABSL_FLAG(std::string, tls_cert, "",
          "Client certificate (PEM file), for mutual TLS; needs --tls_key.");
ABSL_FLAG(std::string, tls_key, "",
          "The client certificate's private key (PEM file); needs --tls_cert.");
ABSL_FLAG(std::string, tls_server_name, "",
          "The name the server's certificate must carry, if not the host's.");
ABSL_FLAG(std::string, token, "",
          "Bearer token sent as \"authorization: Bearer <token>\". Visible to "
          "other users in ps: prefer --token_file or $PTOSERVE_TOKEN.");
ABSL_FLAG(std::string, token_file, "",
          "File holding the bearer token: its first line that is neither "
          "blank nor a # comment (a server's --auth_token_file works).");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(30),
          "How long to wait for a connection (a refused or failed one ends "
          "the wait at once, with gRPC's reason), and for each call.");
ABSL_FLAG(bool, json, false,
          "Print responses, and errors, as proto3 JSON on stdout; stream "
          "prints one result per line.");
ABSL_FLAG(std::string, format, "dec",
          "How tiles print: dec (numbers) or hex (each element's bits, "
          "0x00ff for int16 255).");
ABSL_FLAG(
    std::string, out, "",
    "tand/txor/tor/tnot: also write dst's raw little-endian bytes (the whole "
    "tile) to this file. run: a directory to write every result tile "
    "into, as NAME.bin. Tiles are then not printed.");
ABSL_FLAG(
    std::string, dtype, "int32",
    "tand/txor/tor/tnot: element type: int8, uint8, int16, uint16, int32, "
    "uint32.");
ABSL_FLAG(std::string, shape, "",
          "tand/txor/tor/tnot: physical shape ROWSxCOLS, e.g. 16x16.");
ABSL_FLAG(std::string, valid, "",
          "tand/txor/tor/tnot: valid region ROWSxCOLS (default: the shape).");
ABSL_FLAG(
    std::string, src0, "",
    "tand/txor/tor/tnot: src0 elements: one value for every element (sent as "
    "fill, a few bytes whatever the shape), comma-separated values one "
    "per element (row-major), or @FILE of raw little-endian bytes. A "
    "value is decimal (-1, 255) or hex, read as the element's bits "
    "(0xffff is int16 -1).");
ABSL_FLAG(std::string, src1, "", "tand/txor/tor: src1 elements, as --src0.");
ABSL_FLAG(std::string, tmp, "",
          "txor: tmp elements, as --src0 (default: the server allocates tmp).");
ABSL_FLAG(bool, shm, false,
          "tand/txor/tor/tnot: pass the tiles through a shared-memory region "
          "that ptoctl creates, registers and removes, instead of in the "
          "request (the server must run on this host with shared memory on).");
ABSL_FLAG(std::string, target, "",
          "host, a2a3 or a5: the target of tand/txor/tor/tnot, and of every "
          "job that "
          "run and stream send without one (default: the server's).");
ABSL_FLAG(std::string, trace, "",
          "run: also write the job's event records to this file as a Chrome "
          "trace (JSON trace events; open it in ui.perfetto.dev or "
          "chrome://tracing). The result still prints.");
ABSL_FLAG(std::string, service, "",
          "health: the service to ask about (default: the server).");

namespace ptoserve {
namespace {

constexpr char kUsage[] =
    "ptoctl: the command-line client of ptoserve.\n"
    "\n"
    "Usage: ptoctl [--server=HOST:PORT] [--json] COMMAND [flags]\n"
    "  capabilities     targets, element types, limits and version\n"
    "  health           the gRPC health status (exit 0 when SERVING)\n"
    "  regions          the shared-memory regions registered\n"
    "  unregister NAME  unregisters a shared-memory region (e.g. one\n"
    "                   registered to outlive its connection)\n"
    "  tand, txor       --dtype=int16 --shape=16x16 [--valid=RxC] --src0=V\n"
    "                   --src1=V [--tmp=V] [--target=a2a3] [--out=FILE]\n"
    "                   [--shm]: tiles through shared memory\n"
    "                   V: one value for all elements, values one per\n"
    "                   element (1,2,0xff), or @FILE of raw bytes\n"
    "  tor, tnot        as tand, on the host target only (beyond the\n"
    "                   seeds); tnot takes --src0 alone: dst = ~src0\n"
    "  run FILE         send a job: proto3 JSON (FILE.json, or text that\n"
    "                   starts with '{'), or a PTO assembly program with its\n"
    "                   input tiles:\n"
    "                   --tile NAME=DTYPE:RxC[:valid=RxC][:V] (repeatable)\n"
    "                   [--trace=OUT.json]: also write the events as a\n"
    "                   Chrome trace (Perfetto, chrome://tracing)\n"
    "                   [--ub-map]: then print the unified buffer's layout\n"
    "  fmt FILE         print a program in canonical AS level 2 form (no\n"
    "                   server)\n"
    "  stream FILE      send one JSON job per line over one stream; results\n"
    "                   print as jobs finish (a job without an id gets its\n"
    "                   line number)\n"
    "FILE may be - for standard input. The token may also come from\n"
    "$PTOSERVE_TOKEN. A server error exits 1, a usage error 2.\n"
    "\n"
    "  --tile=NAME=DTYPE:RxC[:valid=RxC][:V]\n"
    "      run with assembly: an input tile of the program; V as for --src0\n"
    "      (without V the tile starts zero-filled). Repeat for each tile.\n"
    "\n"
    "  --ub-map\n"
    "      run: after the result, where each instruction's operands lay in\n"
    "      the target's unified buffer ([0x1000, 0x1400)) and a table of the\n"
    "      tiles by address; one line instead when the events carry no\n"
    "      operands (a host job in auto mode has no buffer model).\n";

bool JsonOutput() { return absl::GetFlag(FLAGS_json); }

std::string ToJson(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.always_print_primitive_fields = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!pretty) out += "\n";
  return out;
}

// A failed call: "ptoctl: CODE: message" on stderr, or with --json
// {"code": "CODE", "message": "..."} on stdout. Exits 1.
int Fail(const absl::Status& status) {
  if (JsonOutput()) {
    v1::JobStatus error;
    error.set_code(static_cast<v1::Code>(status.code()));
    error.set_message(std::string(status.message()));
    std::cout << ToJson(error, true);
  } else {
    std::cerr << "ptoctl: " << absl::StatusCodeToString(status.code()) << ": "
              << status.message() << "\n";
  }
  return 1;
}

int UsageError(absl::string_view message) {
  std::cerr << "ptoctl: " << message << "\n(see ptoctl --help)\n";
  return 2;
}

// The contents of `path`, or of standard input for "-".
absl::StatusOr<std::string> ReadInput(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  text << file.rdbuf();
  return text.str();
}

// "line:column" of byte `offset` of `text`, whose first line is
// `first_line`; columns count from 1.
std::string LineColumn(absl::string_view text, size_t offset, int first_line) {
  offset = std::min(offset, text.size());
  size_t line = first_line, column = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return absl::StrCat(line, ":", column);
}

// Protobuf's JSON parser reports a syntax error as "what\nSNIPPET\n   ^",
// the snippet being up to 20 bytes either side of the error, and a schema
// error as "field: what" or "(field): invalid value \"X\" ...". Returns
// "line:column: what", finding the place from the snippet, or from the
// first quoted name or value of the message that appears in `text`.
std::string LocateJsonError(absl::string_view text, absl::string_view error,
                            int first_line) {
  std::vector<absl::string_view> lines = absl::StrSplit(error, '\n');
  const absl::string_view what = lines[0];
  if (lines.size() >= 3 && absl::EndsWith(lines.back(), "^")) {
    const size_t caret = lines.back().size() - 1;
    const std::string snippet =
        absl::StrJoin(lines.begin() + 1, lines.end() - 1, "\n");
    if (size_t at = text.find(snippet); at != absl::string_view::npos) {
      return absl::StrCat(LineColumn(text, at + caret, first_line), ": ", what);
    }
    return std::string(what);
  }
  // A quoted value ("TARGET_HOSTX"), else the field the message starts with.
  std::vector<std::string> candidates;
  if (size_t open = what.find('"'); open != absl::string_view::npos) {
    const size_t close = what.find('"', open + 1);
    if (close != absl::string_view::npos) {
      candidates.push_back(std::string(what.substr(open, close - open + 1)));
    }
  }
  if (size_t colon = what.find(':'); colon != absl::string_view::npos) {
    absl::string_view field = absl::StripPrefix(what.substr(0, colon), "(");
    field = absl::StripSuffix(field, ")");
    if (size_t dot = field.rfind('.'); dot != absl::string_view::npos) {
      field = field.substr(dot + 1);
    }
    if (!field.empty()) candidates.push_back(absl::StrCat("\"", field, "\""));
  }
  for (const std::string& c : candidates) {
    if (size_t at = text.find(c); at != absl::string_view::npos) {
      return absl::StrCat(LineColumn(text, at, first_line), ": ", what);
    }
  }
  return std::string(what);
}

// The job in `text`, line `first_line` of file `where`; errors say
// "where:line:column: what".
absl::StatusOr<v1::Job> ParseJsonJob(absl::string_view text,
                                     absl::string_view where,
                                     int first_line = 1) {
  v1::Job job;
  auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(text.data(), text.size()), &job);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ":",
        LocateJsonError(text, parsed.message().as_string(), first_line),
        " (not a ptoserve.v1.Job in proto3 JSON)"));
  }
  return job;
}

absl::StatusOr<std::pair<uint32_t, uint32_t>> ParseShape(
    const std::string& flag, const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, 'x');
  uint32_t rows = 0, cols = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &rows) ||
      !absl::SimpleAtoi(parts[1], &cols)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, "=", text,
        " is not of the form ROWSxCOLS (each from 0 to 4294967295)"));
  }
  return std::make_pair(rows, cols);
}

absl::StatusOr<v1::DType> ParseDType(const std::string& name) {
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  if (!v1::DType_Parse("DTYPE_" + absl::AsciiStrToUpper(name), &dtype) ||
      dtype == v1::DTYPE_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dtype=", name,
        " is not an element type (int8, uint8, int16, uint16, int32, uint32)"));
  }
  return dtype;
}

absl::StatusOr<v1::Target> ParseTarget(const std::string& name) {
  if (name.empty()) return v1::TARGET_UNSPECIFIED;
  v1::Target target = v1::TARGET_UNSPECIFIED;
  if (!v1::Target_Parse("TARGET_" + absl::AsciiStrToUpper(name), &target) ||
      target == v1::TARGET_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat("--target=", name, " is not one of host, a2a3, a5"));
  }
  return target;
}

// Enum values as printed: "int16" for DTYPE_INT16, "host" for TARGET_HOST,
// "TAND" for OPCODE_TAND. Each strips its own enum's prefix, so what
// follows it may hold '_'; an unknown value's name is empty and stays so.
std::string DTypeText(v1::DType dtype) {
  return absl::AsciiStrToLower(
      absl::StripPrefix(v1::DType_Name(dtype), "DTYPE_"));
}
std::string TargetText(v1::Target target) {
  return absl::AsciiStrToLower(
      absl::StripPrefix(v1::Target_Name(target), "TARGET_"));
}
std::string OpcodeText(v1::Opcode opcode) {
  return std::string(absl::StripPrefix(v1::Opcode_Name(opcode), "OPCODE_"));
}

// Bytes per element of `dtype` (4 for a value that names no type, so
// that a corrupt reply still prints).
int ElementBytes(v1::DType dtype) {
  const size_t bytes = WireElementBytes(dtype);
  return bytes == 0 ? 4 : static_cast<int>(bytes);
}

bool IsSigned(v1::DType dtype) {
  return dtype == v1::DTYPE_INT8 || dtype == v1::DTYPE_INT16 ||
         dtype == v1::DTYPE_INT32;
}

// One element value as typed: decimal ("-1", "255", "1.5" for float32) or
// hex, read as the element's bits ("0xffff" is -1 for int16). Range is the
// server's to check for decimal values; hex must fit the element.
absl::StatusOr<double> ParseValue(const std::string& flag,
                                  absl::string_view text, v1::DType dtype) {
  text = absl::StripAsciiWhitespace(text);
  if (absl::StartsWithIgnoreCase(text, "0x")) {
    uint64_t bits = 0;
    const int bytes = ElementBytes(dtype);
    if (!absl::SimpleHexAtoi(text.substr(2), &bits) || text.size() == 2 ||
        bits >> (8 * bytes) != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--%s: \"%s\" is not a hex value of at most %d bits",
                          flag, text, 8 * bytes));
    }
    if (IsSigned(dtype) && bits >> (8 * bytes - 1)) {
      return static_cast<double>(static_cast<int64_t>(bits) -
                                 (int64_t{1} << (8 * bytes)));
    }
    return static_cast<double>(bits);
  }
  int64_t integer = 0;
  if (absl::SimpleAtoi(text, &integer)) return static_cast<double>(integer);
  double real = 0;
  if (dtype == v1::DTYPE_FLOAT32 && absl::SimpleAtod(text, &real)) return real;
  return absl::InvalidArgumentError(
      absl::StrFormat("--%s: \"%s\" is not an integer", flag, text));
}

// Fills `tile`'s elements from a flag value: one value becomes `fill`,
// several become `values`, and @FILE becomes raw `data`. The server checks
// counts and ranges. REQUIRES: tile's dtype is set.
absl::Status SetElements(const std::string& flag, const std::string& text,
                         v1::Tile* tile) {
  if (text.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " is required"));
  }
  if (text[0] == '@') {
    PTO_ASSIGN_OR_RETURN(std::string bytes, ReadInput(text.substr(1)));
    tile->set_data(std::move(bytes));
    return absl::OkStatus();
  }
  std::vector<double> values;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    PTO_ASSIGN_OR_RETURN(double v, ParseValue(flag, part, tile->dtype()));
    values.push_back(v);
  }
  if (values.size() == 1) {
    tile->set_fill(values[0]);
  } else {
    tile->mutable_values()->Add(values.begin(), values.end());
  }
  return absl::OkStatus();
}

// The tile's elements as integers, whichever encoding it came back in.
absl::StatusOr<std::vector<int64_t>> Elements(const v1::Tile& tile) {
  auto widen = [](auto elements) -> absl::StatusOr<std::vector<int64_t>> {
    if (!elements.ok()) return elements.status();
    return std::vector<int64_t>(elements->begin(), elements->end());
  };
  switch (tile.dtype()) {
    case v1::DTYPE_INT8:
      return widen(TileElements<int8_t>(tile));
    case v1::DTYPE_UINT8:
      return widen(TileElements<uint8_t>(tile));
    case v1::DTYPE_INT16:
      return widen(TileElements<int16_t>(tile));
    case v1::DTYPE_UINT16:
      return widen(TileElements<uint16_t>(tile));
    case v1::DTYPE_INT32:
      return widen(TileElements<int32_t>(tile));
    case v1::DTYPE_UINT32:
      return widen(TileElements<uint32_t>(tile));
    default:
      break;
  }
  return absl::InvalidArgumentError("cannot print a tile of this element type");
}

// `v` as --format says: decimal, or the element's bits in hex.
std::string FormatElement(int64_t v, v1::DType dtype, bool hex) {
  if (!hex) return absl::StrCat(v);
  const int bytes = ElementBytes(dtype);
  const uint64_t mask =
      bytes == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1;
  return absl::StrFormat("0x%0*x", 2 * bytes, static_cast<uint64_t>(v) & mask);
}

// The valid region as a right-aligned grid.
void PrintTile(const std::string& name, const v1::Tile& tile) {
  std::cout << name << ": " << tile.rows() << "x" << tile.cols() << " "
            << DTypeText(tile.dtype());
  const uint32_t vr = tile.valid_rows() ? tile.valid_rows() : tile.rows();
  const uint32_t vc = tile.valid_cols() ? tile.valid_cols() : tile.cols();
  if (vr != tile.rows() || vc != tile.cols()) {
    std::cout << ", valid " << vr << "x" << vc;
  }
  std::cout << "\n";
  absl::StatusOr<std::vector<int64_t>> elements = Elements(tile);
  if (!elements.ok()) {
    std::cout << "  (" << elements.status().message() << ")\n";
    return;
  }
  const bool hex = absl::GetFlag(FLAGS_format) == "hex";
  auto text = [&](uint32_t r, uint32_t c) {
    return FormatElement((*elements)[size_t{r} * tile.cols() + c], tile.dtype(),
                         hex);
  };
  size_t width = 1;
  for (uint32_t r = 0; r < vr; ++r) {
    for (uint32_t c = 0; c < vc; ++c) {
      width = std::max(width, text(r, c).size());
    }
  }
  for (uint32_t r = 0; r < vr; ++r) {
    std::string line = " ";
    for (uint32_t c = 0; c < vc; ++c) {
      absl::StrAppendFormat(&line, " %*s", static_cast<int>(width), text(r, c));
    }
    std::cout << line << "\n";
  }
}

absl::Duration Between(const google::protobuf::Timestamp& a,
                       const google::protobuf::Timestamp& b) {
  return absl::Seconds(b.seconds() - a.seconds()) +
         absl::Nanoseconds(b.nanos() - a.nanos());
}

void PrintEvents(const v1::JobResult& result) {
  std::cout << "events:\n";
  for (const v1::EventRecord& e : result.events()) {
    std::cout << absl::StrFormat(
        "  %-4s instruction %u %s on %s, %s, batch %u (size %u), queued %s, "
        "ran %s",
        e.id(), e.instruction_index(), OpcodeText(e.opcode()),
        TargetText(e.target()), v1::Pipe_Name(e.pipe()), e.batch_id(),
        e.batch_size(),
        absl::FormatDuration(Between(e.enqueue_time(), e.start_time())),
        absl::FormatDuration(Between(e.start_time(), e.end_time())));
    if (e.waited_on_size() > 0) {
      std::cout << ", waited on " << absl::StrJoin(e.waited_on(), ", ");
    }
    std::cout << "\n";
    for (const v1::MicroOp& op : e.trace()) {
      std::cout << absl::StrFormat(
          "       %-5s %s <- %s  (%u repeats, %u elements)\n", op.op(),
          op.dst(), absl::StrJoin(op.srcs(), ", "), op.repeats(),
          op.elements());
    }
    for (const std::string& note : e.notes()) {
      std::cout << "       note: " << note << "\n";
    }
  }
}

// The raw little-endian bytes of `tile`, whichever encoding it came in.
absl::StatusOr<std::string> RawBytes(const v1::Tile& tile) {
  if (tile.values_size() == 0) return tile.data();
  PTO_ASSIGN_OR_RETURN(std::vector<int64_t> elements, Elements(tile));
  const int bytes = ElementBytes(tile.dtype());
  std::string out(elements.size() * bytes, '\0');
  for (size_t i = 0; i < elements.size(); ++i) {
    const uint64_t v = static_cast<uint64_t>(elements[i]);
    for (int b = 0; b < bytes; ++b) {
      out[i * bytes + b] = static_cast<char>(v >> (8 * b));
    }
  }
  return out;
}

// Writes `bytes` to `path` for --`flag`; an error names the flag.
absl::Status WriteFile(absl::string_view flag, const std::string& path,
                       const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file || !file.write(bytes.data(), bytes.size()) || !file.flush()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Prints `result`'s tiles named in `order` and its events, or writes the
// tiles where --out says: a file for `single` (tand/txor), else a directory.
int PrintResult(const v1::JobResult& result,
                const std::vector<std::string>& order,
                const std::string& single = "") {
  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty()) {
    if (!single.empty()) {
      auto it = result.tiles().find(single);
      if (it == result.tiles().end()) {
        return Fail(absl::InternalError("no " + single));
      }
      absl::StatusOr<std::string> bytes = RawBytes(it->second);
      if (!bytes.ok()) return Fail(bytes.status());
      if (absl::Status s = WriteFile("out", out, *bytes); !s.ok()) {
        return Fail(s);
      }
    } else {
      if (mkdir(out.c_str(), 0777) != 0 && errno != EEXIST) {
        return Fail(absl::InvalidArgumentError(absl::StrCat(
            "--out: cannot make directory ", out, ": ", std::strerror(errno))));
      }
      for (const auto& [name, tile] : result.tiles()) {
        absl::StatusOr<std::string> bytes = RawBytes(tile);
        if (!bytes.ok()) return Fail(bytes.status());
        if (absl::Status s =
                WriteFile("out", absl::StrCat(out, "/", name, ".bin"), *bytes);
            !s.ok()) {
          return Fail(s);
        }
      }
    }
  }
  if (JsonOutput()) {
    std::cout << ToJson(result, true);
    return 0;
  }
  for (const std::string& name : order) {
    auto it = result.tiles().find(name);
    if (it == result.tiles().end()) continue;
    if (out.empty()) {
      PrintTile(name, it->second);
    } else {
      std::cout << name << ": written to "
                << (single.empty() ? absl::StrCat(out, "/", name, ".bin") : out)
                << "\n";
    }
  }
  PrintEvents(result);
  return 0;
}

// The bearer token: --token, else --token_file's first line that is not
// blank or a comment, else $PTOSERVE_TOKEN.
absl::StatusOr<std::string> Token() {
  const std::string token = absl::GetFlag(FLAGS_token);
  const std::string file = absl::GetFlag(FLAGS_token_file);
  if (!token.empty() && !file.empty()) {
    return absl::InvalidArgumentError("give --token or --token_file, not both");
  }
  if (!token.empty()) return token;
  if (!file.empty()) {
    PTO_ASSIGN_OR_RETURN(std::string text, ReadInput(file));
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (!line.empty() && line[0] != '#') return std::string(line);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "--token_file=", file, " holds no token (only blank or # lines)"));
  }
  const char* env = std::getenv("PTOSERVE_TOKEN");
  return std::string(env == nullptr ? "" : env);
}

// Client options from the flags; INVALID_ARGUMENT for flags that do not go
// together (a usage error).
absl::StatusOr<ClientOptions> Options() {
  ClientOptions options;
  const bool cert = !absl::GetFlag(FLAGS_tls_cert).empty();
  const bool key = !absl::GetFlag(FLAGS_tls_key).empty();
  if (cert != key) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key go together (mutual TLS needs both)");
  }
  options.tls = absl::GetFlag(FLAGS_tls) || cert ||
                !absl::GetFlag(FLAGS_tls_ca).empty() ||
                !absl::GetFlag(FLAGS_tls_server_name).empty();
  for (auto [flag, pem] : {std::pair{&FLAGS_tls_ca, &options.tls_ca_pem},
                           std::pair{&FLAGS_tls_cert, &options.tls_cert_pem},
                           std::pair{&FLAGS_tls_key, &options.tls_key_pem}}) {
    const std::string path = absl::GetFlag(*flag);
    if (path.empty()) continue;
    PTO_ASSIGN_OR_RETURN(*pem, ReadInput(path));
  }
  options.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  PTO_ASSIGN_OR_RETURN(options.token, Token());
  options.connect_timeout = absl::GetFlag(FLAGS_timeout);
  options.call_timeout = absl::GetFlag(FLAGS_timeout);
  return options;
}

// Connects, or prints why not and sets `exit_code`.
std::unique_ptr<Client> Connect(int* exit_code) {
  absl::StatusOr<ClientOptions> options = Options();
  if (!options.ok()) {
    *exit_code = UsageError(options.status().message());
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect(absl::GetFlag(FLAGS_server), *options);
  if (!client.ok()) {
    absl::Status status = client.status();
    // A server that closes the connection during the handshake says no more
    // than that; the usual causes are these.
    if (absl::EndsWith(status.message(), "Socket closed")) {
      status = absl::Status(
          status.code(),
          absl::StrCat(
              status.message(),
              !options->tls ? " (the server closed the connection: does it "
                              "want TLS? --tls, --tls_ca)"
              : options->tls_cert_pem.empty()
                  ? " (does the server want a client certificate? "
                    "--tls_cert, --tls_key)"
                  : " (does the server trust this client certificate?)"));
    }
    *exit_code = Fail(status);
    return nullptr;
  }
  return std::move(*client);
}

int Capabilities() {
  int code = 0;
  std::unique_ptr<Client> client = Connect(&code);
  if (client == nullptr) return code;
  absl::StatusOr<v1::Capabilities> caps = client->GetCapabilities();
  if (!caps.ok()) return Fail(caps.status());
  if (JsonOutput()) {
    std::cout << ToJson(*caps, true);
    return 0;
  }
  std::cout << "ptoserve " << caps->server_version() << ", default target "
            << TargetText(caps->default_target()) << "\n";
  for (const v1::TargetInfo& t : caps->targets()) {
    std::cout << absl::StrFormat(
        "%-5s %s: unified buffer %u bytes (%s), rows multiple of %u bytes\n",
        TargetText(t.target()), t.description(), t.buffer_bytes(),
        t.auto_mode_in_buffer() ? "every job" : "manual mode only",
        t.row_alignment_bytes());
    for (const v1::OpcodeSupport& op : t.opcodes()) {
      std::vector<std::string> dtypes;
      for (int d : op.dtypes()) {
        dtypes.push_back(DTypeText(static_cast<v1::DType>(d)));
      }
      std::cout << absl::StrFormat(
          "      %s [%s]%s: %s\n", OpcodeText(op.opcode()),
          absl::StrJoin(dtypes, " "), op.tmp_required() ? ", tmp required" : "",
          op.algorithm());
    }
  }
  const v1::Limits& l = caps->limits();
  std::cout << absl::StrFormat(
      "limits: tile %u bytes, %u tiles and %u instructions per job, message %u "
      "bytes\n",
      l.max_tile_bytes(), l.max_tiles_per_job(), l.max_instructions_per_job(),
      l.max_message_bytes());
  const v1::SharedMemoryInfo& shm = caps->shared_memory();
  std::cout << (shm.enabled()
                    ? absl::StrFormat("shared memory: on, keys %s..., at most "
                                      "%u regions\n",
                                      shm.key_prefix(), shm.max_regions())
                    : std::string("shared memory: off\n"));
  return 0;
}

// A region's age to the second, as "0s", "42s" or "1h2m3s".
std::string Age(absl::Duration age) {
  age = absl::Trunc(age, absl::Seconds(1));
  return age <= absl::ZeroDuration() ? "0s" : absl::FormatDuration(age);
}

// The shared-memory regions registered with the server.
int Regions() {
  int code = 0;
  std::unique_ptr<Client> client = Connect(&code);
  if (client == nullptr) return code;
  absl::StatusOr<v1::ListResponse> list = client->ListRegions();
  if (!list.ok()) return Fail(list.status());
  if (JsonOutput()) {
    std::cout << ToJson(*list, true);
    return 0;
  }
  if (list->regions().empty()) std::cout << "no regions\n";
  const absl::Time now = absl::Now();
  for (const v1::Region& r : list->regions()) {
    const absl::Time registered =
        absl::FromUnixSeconds(r.registered_at().seconds()) +
        absl::Nanoseconds(r.registered_at().nanos());
    const char* lease = r.outlives_connection() ? "outlives its connection"
                        : r.connection_closed() ? "its connection closed, going"
                                                : "leased to its connection";
    std::cout << absl::StrFormat(
        "%s: %s offset %u, %u bytes; %u jobs in flight, %u in all; user %u, "
        "registered %s ago, %s\n",
        r.name(), r.key(), r.offset(), r.size(), r.jobs_in_flight(),
        r.jobs_total(), r.registered_by_uid(), Age(now - registered), lease);
  }
  return 0;
}

// Unregisters the region `name`: what an operator does for a region whose
// client died without unregistering it.
int Unregister(const std::string& name) {
  int code = 0;
  std::unique_ptr<Client> client = Connect(&code);
  if (client == nullptr) return code;
  absl::StatusOr<v1::Region> region = client->UnregisterRegion(name);
  if (!region.ok()) return Fail(region.status());
  if (JsonOutput()) {
    std::cout << ToJson(*region, true);
    return 0;
  }
  std::cout << absl::StrFormat(
      "unregistered %s (%s offset %u, %u bytes); %u jobs still use it\n",
      region->name(), region->key(), region->offset(), region->size(),
      region->jobs_in_flight());
  return 0;
}

int Health() {
  int code = 0;
  std::unique_ptr<Client> client = Connect(&code);
  if (client == nullptr) return code;
  absl::StatusOr<std::string> status =
      client->Health(absl::GetFlag(FLAGS_service));
  if (!status.ok()) return Fail(status.status());
  if (JsonOutput()) {
    std::cout << "{\n  \"status\": \"" << *status << "\"\n}\n";
  } else {
    std::cout << *status << "\n";
  }
  return *status == "SERVING" ? 0 : 1;
}

// "tand, txor": the mnemonics of the instructions `pick` selects.
std::string Mnemonics(bool (*pick)(const OpInfo&)) {
  std::vector<absl::string_view> names;
  for (const OpInfo& op : kOps) {
    if (pick(op)) names.push_back(op.mnemonic);
  }
  return absl::StrJoin(names, ", ");
}

// "--out is for tand, txor and run".
int OutIsForInstructionsAndRun() {
  return UsageError(absl::StrCat("--out is for ",
                                 Mnemonics([](const OpInfo&) { return true; }),
                                 " and run"));
}

// The tile's elements as raw little-endian bytes, whichever way the flags
// gave them (data, values or fill).
absl::StatusOr<std::string> RawBytes(const std::string& name,
                                     const v1::Tile& tile) {
  if (!tile.data().empty()) return tile.data();
  const size_t n = size_t{tile.rows()} * tile.cols();
  if (!tile.has_fill() && static_cast<size_t>(tile.values_size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--%s has %d values for %d elements (%ux%u)", name,
                        tile.values_size(), n, tile.rows(), tile.cols()));
  }
  const int width = ElementBytes(tile.dtype());
  std::string out(n * width, '\0');
  for (size_t i = 0; i < n; ++i) {
    // In range for the type (ParseValue checked): the low bytes of the
    // two's complement are the element.
    const int64_t v =
        static_cast<int64_t>(tile.has_fill() ? tile.fill() : tile.values(i));
    std::memcpy(&out[i * width], &v, width);
  }
  return out;
}

// Runs `job` with its tiles, and dst, in a shared-memory region made for
// it, and prints dst as Binary does.
int RunShared(v1::Job job, const Client& client) {
  std::vector<std::pair<std::string, std::string>> inputs;
  uint64_t total = 0;
  for (const auto& [name, tile] : job.tiles()) {
    absl::StatusOr<std::string> bytes = RawBytes(name, tile);
    if (!bytes.ok()) return UsageError(bytes.status().message());
    total += bytes->size() + 64;
    inputs.push_back({name, std::move(*bytes)});
  }
  const v1::Tile& src0 = job.tiles().at("src0");
  const size_t dst_bytes =
      size_t{src0.rows()} * src0.cols() * ElementBytes(src0.dtype());
  total += dst_bytes + 64;
  absl::StatusOr<std::unique_ptr<SharedRegion>> region =
      SharedRegion::Create(client, total);
  if (!region.ok()) return Fail(region.status());
  for (const auto& [name, bytes] : inputs) {
    absl::Span<uint8_t> span = *(*region)->Allocate<uint8_t>(bytes.size());
    std::memcpy(span.data(), bytes.data(), bytes.size());
    v1::Tile& tile = (*job.mutable_tiles())[name];
    tile.clear_data();
    tile.clear_values();
    tile.clear_fill();
    *tile.mutable_shared() = *(*region)->SliceOf(span.data(), span.size());
  }
  absl::Span<uint8_t> dst = *(*region)->Allocate<uint8_t>(dst_bytes);
  (*job.mutable_output_regions())["dst"] =
      *(*region)->SliceOf(dst.data(), dst.size());
  absl::StatusOr<v1::JobResult> result = client.Execute(job);
  if (!result.ok()) return Fail(result.status());
  // dst came back as its slice: print it as the request path would.
  v1::Tile& out = (*result->mutable_tiles())["dst"];
  out.clear_shared();
  out.set_data(reinterpret_cast<const char*>(dst.data()), dst.size());
  return PrintResult(*result, {"dst"}, "dst");
}

// One instruction on tiles src0, src1 (and tmp) made from the flags.
int Binary(const OpInfo& op) {
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

// Parses --tile NAME=DTYPE:RxC[:valid=RxC][:V] into job.tiles[NAME], where
// V is as for --src0; without V the tile starts zero-filled.
absl::Status AddTileSpec(const std::string& spec, v1::Job* job) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tile ", spec,
        ": expected NAME=DTYPE:RxC[:valid=RxC][:VALUES or @FILE]"));
  }
  const std::string name = spec.substr(0, eq);
  std::vector<std::string> fields =
      absl::StrSplit(spec.substr(eq + 1), absl::MaxSplits(':', 3));
  if (fields.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tile ", spec, ": expected DTYPE:RxC after the name"));
  }
  PTO_ASSIGN_OR_RETURN(v1::DType dtype, ParseDType(fields[0]));
  PTO_ASSIGN_OR_RETURN(auto shape, ParseShape("tile " + name, fields[1]));
  v1::Tile& tile = (*job->mutable_tiles())[name];
  tile.set_dtype(dtype);
  tile.set_rows(shape.first);
  tile.set_cols(shape.second);
  size_t next = 2;
  if (fields.size() > next && absl::StartsWith(fields[next], "valid=")) {
    const std::string valid_text(absl::StripPrefix(fields[next], "valid="));
    PTO_ASSIGN_OR_RETURN(auto valid, ParseShape("tile " + name, valid_text));
    tile.set_valid_rows(valid.first);
    tile.set_valid_cols(valid.second);
    ++next;
  }
  if (fields.size() > next) {
    // What is left is V (an @FILE path may hold ':').
    std::vector<std::string> rest(fields.begin() + next, fields.end());
    return SetElements("tile " + name, absl::StrJoin(rest, ":"), &tile);
  }
  return absl::OkStatus();
}

// --target for a job that leaves its target unset; a job that names
// another target is a usage error.
absl::Status ApplyTarget(v1::Target target, absl::string_view where,
                         v1::Job* job) {
  if (target == v1::TARGET_UNSPECIFIED) return absl::OkStatus();
  if (job->target() == v1::TARGET_UNSPECIFIED) {
    job->set_target(target);
    return absl::OkStatus();
  }
  if (job->target() != target) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " sets target ", TargetText(job->target()),
                     ", which --target=", TargetText(target), " contradicts"));
  }
  return absl::OkStatus();
}

// A file is JSON if it is named *.json, assembly if *.pto; otherwise (and
// for standard input) JSON if its first non-blank character is '{'.
bool LooksLikeJson(const std::string& path, absl::string_view text) {
  if (absl::EndsWith(path, ".json")) return true;
  if (absl::EndsWith(path, ".pto")) return false;
  text = absl::StripLeadingAsciiWhitespace(text);
  return !text.empty() && text[0] == '{';
}

int RunJob(const std::string& path, const std::vector<std::string>& tiles,
           bool ub_map) {
  absl::StatusOr<std::string> text = ReadInput(path);
  if (!text.ok()) return UsageError(text.status().message());
  absl::StatusOr<v1::Target> target = ParseTarget(absl::GetFlag(FLAGS_target));
  if (!target.ok()) return UsageError(target.status().message());
  const std::string where = path == "-" ? "<stdin>" : path;
  v1::Job job;
  if (LooksLikeJson(path, *text)) {
    if (!tiles.empty()) {
      return UsageError("--tile is for assembly programs, not JSON jobs");
    }
    absl::StatusOr<v1::Job> parsed = ParseJsonJob(*text, where);
    if (!parsed.ok()) return UsageError(parsed.status().message());
    job = std::move(*parsed);
  } else {
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
  if (!result.ok()) return Fail(result.status());
  if (const std::string trace = absl::GetFlag(FLAGS_trace); !trace.empty()) {
    if (absl::Status s = WriteFile("trace", trace, ChromeTrace(*result));
        !s.ok()) {
      return Fail(s);
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

// Prints a program in the canonical AS level 2 form; needs no server.
int Format(const std::string& path) {
  absl::StatusOr<std::string> text = ReadInput(path);
  if (!text.ok()) return UsageError(text.status().message());
  absl::StatusOr<pasm::Program> program = pasm::Parse(*text);
  if (!program.ok()) {
    std::cerr << (path == "-" ? "<stdin>" : path) << ":"
              << program.status().message() << "\n";
    return 1;
  }
  std::cout << pasm::Print(*program);
  return 0;
}

int StreamJobs(const std::string& path) {
  if (!absl::GetFlag(FLAGS_out).empty()) return OutIsForInstructionsAndRun();
  absl::StatusOr<std::string> text = ReadInput(path);
  if (!text.ok()) return UsageError(text.status().message());
  absl::StatusOr<v1::Target> target = ParseTarget(absl::GetFlag(FLAGS_target));
  if (!target.ok()) return UsageError(target.status().message());
  const std::string where = path == "-" ? "<stdin>" : path;
  std::vector<v1::Job> jobs;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    absl::StatusOr<v1::Job> job = ParseJsonJob(line, where, number);
    if (!job.ok()) return UsageError(job.status().message());
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

int Main(const std::vector<char*>& args, const std::vector<std::string>& tiles,
         bool ub_map) {
  if (args.size() < 2) return UsageError("no command given");
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "dec" && format != "hex") {
    return UsageError(absl::StrCat("--format=", format, " is not dec or hex"));
  }
  const std::string command = args[1];
  const size_t extra = args.size() - 2;
  if (!tiles.empty() && command != "run") {
    return UsageError("--tile is for run only");
  }
  if (!absl::GetFlag(FLAGS_trace).empty() && command != "run") {
    return UsageError("--trace is for run only");
  }
  if (ub_map && command != "run") return UsageError("--ub-map is for run only");
  if (ub_map && JsonOutput()) {
    return UsageError(
        "--ub-map prints text, not JSON: with --json the result's events "
        "carry the operands");
  }
  if (command == "unregister") {
    if (extra != 1) return UsageError("unregister takes one region NAME");
    return Unregister(args[2]);
  }
  if (command == "run" || command == "fmt" || command == "stream") {
    if (extra != 1) {
      return UsageError(
          absl::StrCat(command, " takes one FILE (- for standard input)"));
    }
    if (command == "run") return RunJob(args[2], tiles, ub_map);
    if (command == "fmt") return Format(args[2]);
    return StreamJobs(args[2]);
  }
  if (extra != 0) {
    return UsageError(absl::StrCat("unexpected argument: ", args[2]));
  }
  const OpInfo* op = FindOpByMnemonic(command);
  if (!absl::GetFlag(FLAGS_out).empty() && op == nullptr) {
    return OutIsForInstructionsAndRun();
  }
  if (command == "capabilities") return Capabilities();
  if (command == "health") return Health();
  if (command == "regions") return Regions();
  if (op != nullptr) return Binary(*op);
  return UsageError("unknown command: " + command);
}

}  // namespace
}  // namespace ptoserve

int main(int argc, char** argv) {
  // gRPC logs failed handshakes on stderr as well; ptoctl reports them.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) {
    gpr_set_log_function([](gpr_log_func_args*) {});
  }
  ptoserve::HandleHelpAndVersion(argc, argv, "ptoctl", ptoserve::kUsage,
                                 "client/ptoctl.cc");
  absl::SetProgramUsageMessage("the command-line client of ptoserve");
  // --tile may repeat, which Abseil flags do not allow, and --ub-map has a
  // hyphen, which Abseil's flag names do not: take those first.
  std::vector<std::string> tiles;
  bool ub_map = false;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--ub-map") {
      ub_map = true;
    } else if (arg == "--tile" && i + 1 < argc) {
      tiles.push_back(argv[++i]);
    } else if (absl::StartsWith(arg, "--tile=")) {
      tiles.push_back(std::string(absl::StripPrefix(arg, "--tile=")));
    } else {
      rest.push_back(argv[i]);
    }
  }
  rest.push_back(nullptr);
  return ptoserve::Main(
      absl::ParseCommandLine(static_cast<int>(rest.size()) - 1, rest.data()),
      tiles, ub_map);
}
