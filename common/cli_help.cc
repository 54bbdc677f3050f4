#include "common/cli_help.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/version.h"

namespace ptoserve {

namespace {

// `text` wrapped at `width` columns, each line indented by `indent`.
std::string Wrap(absl::string_view text, size_t indent, size_t width) {
  std::string out;
  std::string line;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      absl::StrAppend(&out, std::string(indent, ' '), line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
  }
  if (!line.empty()) {
    absl::StrAppend(&out, std::string(indent, ' '), line, "\n");
  }
  return out;
}

}  // namespace

std::string FlagsHelp(absl::string_view flag_file) {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::EndsWith(flag->Filename(), flag_file)) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  std::string out;
  for (const absl::CommandLineFlag* flag : flags) {
    std::string value = flag->DefaultValue();
    if (value.empty()) value = "\"\"";
    absl::StrAppend(&out, "  --", flag->Name(), "=", value, "\n",
                    Wrap(flag->Help(), 6, 80));
  }
  return out;
}

void HandleHelpAndVersion(int argc, char** argv, absl::string_view program,
                          absl::string_view usage,
                          absl::string_view flag_file) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") return;
    if (arg == "--version") {
      std::cout << program << " " << kVersion << "\n";
      std::exit(0);
    }
    if (arg == "--help" || arg == "-h" || arg == "--helpshort") {
      std::cout << usage << "\nFlags:\n"
                << FlagsHelp(flag_file)
                << "\n--helpfull lists every flag, Abseil's and gRPC's too.\n";
      std::exit(0);
    }
  }
}

}  // namespace ptoserve
