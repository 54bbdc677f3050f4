#include "client/ptoctl/print.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "client/ptoctl/flags.h"
#include "client/ptoctl/tiles.h"
#include "client/reflection_client.h"
#include "proto/words.h"

namespace ptoserve {
namespace ptoctl {

namespace {

// `v` as --format says: decimal, or the element's bits in hex.
std::string FormatElement(int64_t v, v1::DType dtype, bool hex) {
  if (!hex) return absl::StrCat(v);
  const int bytes = ElementBytes(dtype);
  const uint64_t mask =
      bytes == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1;
  return absl::StrFormat("0x%0*x", 2 * bytes, static_cast<uint64_t>(v) & mask);
}

// "events:", then a line per event record, its micro-ops and notes under it.
void PrintEvents(const v1::JobResult& result) {
  std::cout << "events:\n";
  for (const v1::EventRecord& e : result.events()) std::cout << EventText(e);
}

}  // namespace

bool JsonOutput() { return absl::GetFlag(FLAGS_json); }

std::string ToJson(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.always_print_primitive_fields = true;
  if (pretty) return PrettyJson(message, options);
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out + "\n";
}

int Fail(const absl::Status& status) {
  if (JsonOutput()) {
    v1::JobStatus error;
    error.set_code(static_cast<v1::Code>(status.code()));
    error.set_message(std::string(status.message()));
    std::cout << ToJson(error, true);
  } else {
    std::cerr << "ptoctl: " << absl::StatusCodeToString(status.code()) << ": "
              << status.message();
    // The server's hint names gRPC's metadata; ptoctl's own ways to send it.
    if (status.code() == absl::StatusCode::kUnauthenticated) {
      std::cerr << " (ptoctl sends a token with --token_file=FILE or "
                   "$PTOSERVE_TOKEN)";
    }
    std::cerr << "\n";
  }
  return 1;
}

namespace {

// ptoctl's own error: {"error": "..."} with `json`, else "ptoctl: ..." and
// `hint` on stderr.
void PrintOwnError(absl::string_view message, bool json,
                   absl::string_view hint) {
  if (json) {
    google::protobuf::Struct error;
    (*error.mutable_fields())["error"].set_string_value(std::string(message));
    std::cout << ToJson(error, true);
  } else {
    std::cerr << "ptoctl: " << message << "\n" << hint;
  }
}

}  // namespace

void PrintUsageError(absl::string_view message, bool json) {
  PrintOwnError(message, json, "(see ptoctl --help)\n");
}

int UsageError(absl::string_view message) {
  PrintUsageError(message, JsonOutput());
  return 2;
}

int InputError(absl::string_view message) {
  PrintOwnError(message, JsonOutput(), "");
  return 2;
}

int LocalError(absl::string_view message) {
  PrintOwnError(message, JsonOutput(), "");
  return 1;
}

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

absl::Status WriteFile(absl::string_view flag, const std::string& path,
                       const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file || !file.write(bytes.data(), bytes.size()) || !file.flush()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

int PrintResult(const v1::JobResult& result,
                const std::vector<std::string>& order,
                const std::string& single) {
  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty()) {
    if (!single.empty()) {
      auto it = result.tiles().find(single);
      if (it == result.tiles().end()) {
        return LocalError("the result has no tile " + single);
      }
      absl::StatusOr<std::string> bytes = RawBytes(it->second);
      if (!bytes.ok()) return LocalError(bytes.status().message());
      if (absl::Status s = WriteFile("out", out, *bytes); !s.ok()) {
        return LocalError(s.message());
      }
    } else {
      if (mkdir(out.c_str(), 0777) != 0 && errno != EEXIST) {
        return LocalError(absl::StrCat("--out: cannot make directory ", out,
                                       ": ", std::strerror(errno)));
      }
      for (const auto& [name, tile] : result.tiles()) {
        absl::StatusOr<std::string> bytes = RawBytes(tile);
        if (!bytes.ok()) return LocalError(bytes.status().message());
        if (absl::Status s =
                WriteFile("out", absl::StrCat(out, "/", name, ".bin"), *bytes);
            !s.ok()) {
          return LocalError(s.message());
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

}  // namespace ptoctl
}  // namespace ptoserve
