#include "proto/json_errors.h"

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/json_quote.h"

namespace ptoserve {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;

constexpr char kJobShape[] =
    "a job is {\"tiles\": {...}, \"instructions\": [...]}";

// Enough of a JSON reader to find an object's keys in a body that parsed
// no further than that (a job nests 4 deep; ScanJson has bounded it).
class Reader {
 public:
  explicit Reader(absl::string_view text) : text_(text) {}

  bool Eat(char c) {
    Space();
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  // A string (its escapes but \" and \\ kept as written), or nullopt.
  std::optional<std::string> String() {
    if (!Eat('"')) return std::nullopt;
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out.push_back(text_[pos_++]);
    }
    if (pos_ >= text_.size()) return std::nullopt;
    ++pos_;
    return out;
  }

  // Skips one value; false when the text ends or is not JSON.
  bool Skip(int depth = 0) {
    Space();
    if (pos_ >= text_.size() || depth > 32) return false;
    const char c = text_[pos_];
    if (c == '"') return String().has_value();
    if (c == '{' || c == '[') {
      ++pos_;
      const char end = c == '{' ? '}' : ']';
      if (Eat(end)) return true;
      do {
        if (c == '{' && (!String() || !Eat(':'))) return false;
        if (!Skip(depth + 1)) return false;
      } while (Eat(','));
      return Eat(end);
    }
    const size_t start = pos_;
    while (pos_ < text_.size() && !absl::ascii_isspace(text_[pos_]) &&
           text_[pos_] != ',' && text_[pos_] != '}' && text_[pos_] != ']') {
      ++pos_;
    }
    return pos_ > start;
  }

 private:
  void Space() {
    while (pos_ < text_.size() && absl::ascii_isspace(text_[pos_])) ++pos_;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

// "output_regions" as JSON writes it: "outputRegions".
std::string CamelCase(absl::string_view name) {
  std::string out;
  bool up = false;
  for (char c : name) {
    if (c == '_') {
      up = true;
      continue;
    }
    out.push_back(up ? absl::ascii_toupper(c) : c);
    up = false;
  }
  return out;
}

// "tile", "instruction": what a message is called to a job's sender.
std::string Noun(const Descriptor& type) {
  std::string name = type.name();
  std::string out;
  for (char c : name) {
    if (absl::ascii_isupper(c) && !out.empty()) out.push_back(' ');
    out.push_back(absl::ascii_tolower(c));
  }
  const bool vowel = !out.empty() && absl::StrContains("aeiou", out[0]);
  return absl::StrCat(vowel ? "an " : "a ", out);
}

// A field of `type` by its proto name or its JSON name.
const FieldDescriptor* FieldOf(const Descriptor& type, absl::string_view name) {
  const FieldDescriptor* field = type.FindFieldByName(std::string(name));
  for (int i = 0; field == nullptr && i < type.field_count(); ++i) {
    if (type.field(i)->json_name() == name) field = type.field(i);
  }
  return field;
}

// protobuf's path to the value ("tiles[1].value.rows") as the sender wrote
// it ("tiles[\"b\"].rows"); `*at` is left at the message the path ends in
// (or its last message, when it ends in a scalar).
std::string Path(absl::string_view body, absl::string_view path,
                 const Descriptor* root, const Descriptor** at) {
  *at = root;
  std::string out;
  const FieldDescriptor* map_field = nullptr;
  std::string map_key;
  for (absl::string_view part : absl::StrSplit(path, '.', absl::SkipEmpty())) {
    size_t index = 0;
    bool indexed = false;
    absl::string_view name = part;
    if (const size_t open = part.find('['); open != absl::string_view::npos) {
      name = part.substr(0, open);
      indexed = absl::SimpleAtoi(part.substr(open + 1, part.size() - open - 2),
                                 &index);
    }
    if (map_field != nullptr && name == "value") {
      // The map's entry: by its key.
      absl::StrAppend(&out, "[", map_key, "]");
      const FieldDescriptor* value = map_field->message_type()->map_value();
      if (value->message_type() != nullptr) *at = value->message_type();
      map_field = nullptr;
      continue;
    }
    const FieldDescriptor* field =
        *at != nullptr ? FieldOf(**at, name) : nullptr;
    absl::StrAppend(&out, out.empty() ? "" : ".",
                    field != nullptr ? field->json_name() : std::string(name));
    if (field != nullptr && field->is_map() && indexed) {
      // Entries count in the order they were written; only the job's own
      // maps are named by their key.
      map_field = field;
      const std::string key = *at == root ? KeyAt(body, name, index) : "";
      map_key = key.empty() ? absl::StrCat("#", index) : JsonQuote(key);
      continue;
    }
    if (indexed) absl::StrAppend(&out, "[", index, "]");
    if (field != nullptr && field->message_type() != nullptr) {
      *at = field->message_type();
    }
  }
  return out;
}

// What a value of protobuf's `type` ("TYPE_UINT32",
// "type.googleapis.com/ptoserve.v1.DType") should have been.
std::string Expected(absl::string_view type) {
  if (absl::ConsumePrefix(&type, "type.googleapis.com/")) {
    if (type == "google.protobuf.Duration") {
      return "a duration: seconds ending in s, e.g. \"2.5s\"";
    }
    const EnumDescriptor* e =
        google::protobuf::DescriptorPool::generated_pool()->FindEnumTypeByName(
            std::string(type));
    if (e != nullptr) {
      // Each value once, by its short name where it has one ("int16"
      // for DTYPE_INT16, which is taken too).
      std::vector<std::string> names;
      for (int i = 0; i < e->value_count(); ++i) {
        const auto* v = e->value(i);
        if (v->number() == 0 || e->FindValueByNumber(v->number()) != v) {
          continue;
        }
        std::string name = v->name();
        for (int j = 0; j < e->value_count(); ++j) {
          const auto* alias = e->value(j);
          if (alias->number() == v->number() && alias != v) {
            name = alias->name();  // the first alias: the lower-case one
            break;
          }
        }
        names.push_back(name);
      }
      return absl::StrCat("one of ", absl::StrJoin(names, ", "));
    }
    return std::string(type);
  }
  if (type == "TYPE_UINT32") return "a whole number from 0 to 4294967295";
  if (type == "TYPE_UINT64") {
    return "a whole number from 0 to 18446744073709551615";
  }
  if (type == "TYPE_INT32") {
    return "a whole number from -2147483648 to 2147483647";
  }
  if (type == "TYPE_DOUBLE" || type == "TYPE_FLOAT") return "a number";
  if (type == "TYPE_STRING") return "a string, in quotes";
  if (type == "TYPE_BYTES") return "bytes in base64, in quotes";
  if (type == "TYPE_BOOL") return "true or false";
  return std::string(type);
}

}  // namespace

std::string KeyAt(absl::string_view body, absl::string_view field,
                  size_t index) {
  Reader r(body);
  if (!r.Eat('{') || r.Eat('}')) return "";
  do {
    std::optional<std::string> key = r.String();
    if (!key || !r.Eat(':')) return "";
    const bool wanted = *key == field || *key == CamelCase(field);
    if (wanted && r.Eat('{')) {
      if (r.Eat('}')) return "";
      size_t i = 0;
      do {
        std::optional<std::string> entry = r.String();
        if (!entry || !r.Eat(':')) return "";
        if (i++ == index) return *entry;
        if (!r.Skip()) return "";
      } while (r.Eat(','));
      return "";
    }
    if (!r.Skip()) return "";
  } while (r.Eat(','));
  return "";
}

google::protobuf::util::JsonParseOptions JobJsonParseOptions() {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  options.case_insensitive_enum_parsing = true;
  return options;
}

std::string ReadableJsonError(absl::string_view what, absl::string_view body,
                              absl::string_view message,
                              const google::protobuf::Descriptor& type) {
  if (absl::StripAsciiWhitespace(body).empty()) {
    return absl::StrCat(what, " is empty; ", kJobShape);
  }
  if (absl::StrContains(message, "Root element must be a message")) {
    return absl::StrCat(what, " is not a JSON object; ", kJobShape);
  }
  static const std::regex* const kInvalid =
      new std::regex(R"(^\((.*)\): invalid value (.*) for type (\S+)$)");
  static const std::regex* const kUnknown =
      new std::regex(R"(^(?:\((.*)\) )?(\S+): Cannot find field\.$)");
  const std::string text(message);
  std::smatch m;
  const Descriptor* at = &type;
  if (std::regex_match(text, m, *kInvalid)) {
    const std::string where = Path(body, m[1].str(), &type, &at);
    const std::string value = m[2].str();
    const std::string expected = Expected(m[3].str());
    // A Duration's parser says what it found instead of the value.
    if (absl::StartsWith(value, "Field ")) {
      return absl::StrCat(where, " is not ", expected);
    }
    return absl::StrCat(where, ": ", value, " is not ", expected);
  }
  if (std::regex_match(text, m, *kUnknown)) {
    const std::string where = Path(body, m[1].str(), &type, &at);
    std::vector<std::string> fields;
    for (int i = 0; i < at->field_count(); ++i) {
      fields.push_back(at->field(i)->json_name());
    }
    return absl::StrCat(where.empty() ? "" : absl::StrCat(where, ": "),
                        Noun(*at), " has no field \"", m[2].str(),
                        "\"; its fields are ", absl::StrJoin(fields, ", "));
  }
  // A syntax error: its first line, and where (protobuf shows the text
  // around it, with a caret line under it).
  std::vector<absl::string_view> lines = absl::StrSplit(message, '\n');
  std::string why(absl::StripSuffix(lines[0], "."));
  if (lines.size() >= 2 && !absl::StripAsciiWhitespace(lines[1]).empty()) {
    absl::StrAppend(&why, ", near ", absl::StripAsciiWhitespace(lines[1]));
  }
  return absl::StrCat(what, " is not a ", type.full_name(), " in JSON: ", why);
}

}  // namespace ptoserve
