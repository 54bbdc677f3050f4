#include "common/cli_help.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
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

// "  --name=DEFAULT" and the flag's help below it.
std::string OneFlagHelp(const absl::CommandLineFlag& flag) {
  std::string value = flag.DefaultValue();
  if (value.empty()) value = "\"\"";
  return HelpEntry(absl::StrCat("--", flag.Name(), "=", value), flag.Help());
}

}  // namespace

std::string HelpEntry(absl::string_view head, absl::string_view help) {
  return absl::StrCat("  ", head, "\n", Wrap(help, 6, 80));
}

std::string FlagHelp(absl::string_view name) {
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  return flag == nullptr ? "" : OneFlagHelp(*flag);
}

std::string FlagsHelp(absl::string_view flag_file,
                      const std::vector<FlagGroup>& groups,
                      absl::string_view rest_title) {
  absl::btree_map<std::string, const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::EndsWith(flag->Filename(), flag_file)) {
      flags.emplace(std::string(name), flag);
    }
  }
  std::string out;
  for (const FlagGroup& group : groups) {
    absl::StrAppend(&out, out.empty() ? "" : "\n", group.title, ":\n");
    for (const std::string& name : group.flags) {
      auto it = flags.find(name);
      if (it == flags.end()) continue;  // listed in an earlier group
      absl::StrAppend(&out, OneFlagHelp(*it->second));
      flags.erase(it);
    }
  }
  if (flags.empty()) return out;
  if (!groups.empty()) {
    if (rest_title.empty()) return out;
    absl::StrAppend(&out, "\n", rest_title, ":\n");
  }
  for (const auto& [name, flag] : flags) {
    absl::StrAppend(&out, OneFlagHelp(*flag));
  }
  return out;
}

namespace {

// Edits (insert, delete, replace, swap two neighbours) from a to b.
size_t Distance(absl::string_view a, absl::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1,
                                     std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string NearestName(absl::string_view typed,
                        const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = 3;  // at most 2 edits
  for (const std::string& name : names) {
    const size_t d = typed.size() >= 3 && absl::StartsWith(name, typed)
                         ? 1
                         : Distance(typed, name);
    if (d < best_distance) {
      best_distance = d;
      best = name;
    }
  }
  return best;
}

bool FlagGiven(int argc, char** argv, absl::string_view name) {
  bool given = false;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") break;
    const absl::string_view body =
        absl::StripPrefix(absl::StripPrefix(arg, "-"), "-");
    if (body == name || body == absl::StrCat(name, "=true")) given = true;
    if (body == absl::StrCat("no", name) ||
        body == absl::StrCat(name, "=false")) {
      given = false;
    }
  }
  return given;
}

namespace {

// "--name=value: error"; or, for a flag whose type reads on from there
// ("is out of range [1, 1024]", common/ranged_flag.h), "--name=value is
// ...", without Abseil's preamble.
std::string WrongValue(absl::string_view name, absl::string_view value,
                       absl::string_view error) {
  const size_t end = error.find("'; is ");
  if (absl::StartsWith(error, "Illegal value '") &&
      end != absl::string_view::npos) {
    return absl::StrCat("--", name, "=", value, " ", error.substr(end + 3));
  }
  return absl::StrCat("--", name, "=", value, ": ", error);
}

// Whether `name` is one of Abseil's own flags, which it handles while
// parsing (--helpfull, --flagfile); `*takes_next` says whether, given
// without "=value", it takes the next argument ("--flagfile FILE").
bool IsAbseils(const std::string& name, bool has_value, bool* takes_next) {
  static const auto* const kAbseils = new std::vector<std::string>{
      "helpfull",        "helpshort", "helppackage", "helpmatch",  "helpon",
      "only_check_args", "flagfile",  "fromenv",     "tryfromenv", "undefok"};
  if (std::find(kAbseils->begin(), kAbseils->end(), name) == kAbseils->end()) {
    return false;
  }
  *takes_next = !has_value && name != "helpfull" && name != "helpshort" &&
                name != "helppackage" && name != "only_check_args";
  return true;
}

// What is wrong with argv[*i], a flag (an argument, or "-", is fine), with
// `ours` the names a misspelling may be near; *i moves past a value it
// takes. Empty if nothing is.
std::string CheckArgument(int argc, char** argv, int* i,
                          const std::vector<std::string>& ours) {
  absl::string_view arg = argv[*i];
  if (arg.size() < 2 || arg[0] != '-') return "";
  absl::string_view body = absl::StripPrefix(absl::StripPrefix(arg, "-"), "-");
  const size_t eq = body.find('=');
  const std::string name(body.substr(0, eq));
  if (bool takes_next = false;
      IsAbseils(name, eq != absl::string_view::npos, &takes_next)) {
    if (takes_next && *i + 1 < argc) ++*i;
    return "";
  }
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  // --noflag for a boolean --flag.
  if (flag == nullptr && absl::StartsWith(name, "no")) {
    const absl::CommandLineFlag* positive =
        absl::FindCommandLineFlag(name.substr(2));
    if (positive != nullptr && positive->IsOfType<bool>()) return "";
  }
  if (flag == nullptr) {
    const std::string near = NearestName(name, ours);
    return absl::StrCat(
        "unknown flag --", name,
        near.empty() ? "" : absl::StrCat("; did you mean --", near, "?"));
  }
  auto* parse = const_cast<absl::CommandLineFlag*>(flag);
  std::string error;
  if (eq != absl::string_view::npos) {
    return parse->ParseFrom(body.substr(eq + 1), &error)
               ? ""
               : WrongValue(name, body.substr(eq + 1), error);
  }
  // "--flag value" for a non-boolean takes the next argument.
  if (flag->IsOfType<bool>() || *i + 1 >= argc) return "";
  ++*i;
  return parse->ParseFrom(argv[*i], &error) ? ""
                                            : WrongValue(name, argv[*i], error);
}

}  // namespace

void CheckFlagsOrExit(int argc, char** argv, absl::string_view program,
                      const std::vector<std::string>& flag_files,
                      const std::function<void(const std::string&)>& report) {
  std::vector<std::string> ours;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    for (const std::string& file : flag_files) {
      if (absl::EndsWith(flag->Filename(), file)) ours.emplace_back(name);
    }
  }
  for (int i = 1; i < argc; ++i) {
    if (absl::string_view(argv[i]) == "--") return;
    const std::string error = CheckArgument(argc, argv, &i, ours);
    if (error.empty()) continue;
    if (report) {
      report(error);
    } else {
      std::cerr << program << ": " << error << "\n(see " << program
                << " --help)\n";
    }
    std::exit(2);
  }
}

void HandleHelpAndVersion(int argc, char** argv, absl::string_view program,
                          absl::string_view usage, absl::string_view flag_file,
                          const std::vector<FlagGroup>& groups) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") return;
    if (arg == "--version") {
      std::cout << program << " " << kVersion << "\n";
      std::exit(0);
    }
    if (arg == "--help" || arg == "-h" || arg == "--helpshort") {
      std::cout << usage << (groups.empty() ? "\nFlags:\n" : "\n")
                << FlagsHelp(flag_file, groups)
                << "\n--helpfull lists them in Abseil's format, with its "
                   "flag-file flags (--flagfile, --fromenv, ...).\n";
      std::exit(0);
    }
  }
}

}  // namespace ptoserve
