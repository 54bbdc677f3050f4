#include "core/error_site.h"

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace ptoserve {

namespace {

constexpr char kInstructionUrl[] = "ptoserve/error-site/instruction";
constexpr char kTileUrl[] = "ptoserve/error-site/tile";

}  // namespace

absl::Status AtInstruction(absl::Status status, size_t index) {
  if (!status.ok()) {
    status.SetPayload(kInstructionUrl, absl::Cord(absl::StrCat(index)));
  }
  return status;
}

absl::Status AtTile(absl::Status status, absl::string_view name) {
  if (!status.ok()) status.SetPayload(kTileUrl, absl::Cord(name));
  return status;
}

ErrorSite SiteOf(const absl::Status& status) {
  ErrorSite site;
  if (auto index = status.GetPayload(kInstructionUrl)) {
    size_t value = 0;
    if (absl::SimpleAtoi(std::string(*index), &value)) site.instruction = value;
  }
  if (auto tile = status.GetPayload(kTileUrl)) {
    site.tile = std::string(*tile);
  }
  return site;
}

}  // namespace ptoserve
