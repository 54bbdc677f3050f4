#include "server/intake/request_body.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"

namespace ptoserve {

IncomingBody::IncomingBody(BodyFormat format, MemoryBudget* budget,
                           std::shared_ptr<MemoryBudget::Share> share,
                           uint64_t limit)
    : format_(format),
      budget_(budget),
      share_(std::move(share)),
      limit_(limit) {}

absl::Status IncomingBody::Reserve(uint64_t need,
                                   absl::string_view limit_flag) {
  if (need > limit_) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the body is over the limit of %u bytes (%s)", limit_, limit_flag));
  }
  if (need <= reserved_) return absl::OkStatus();
  // Doubling up to kMaxStep, then kMaxStep at a time: a body holds at most
  // twice what it has sent while small, and at most kMaxStep more once
  // large, in a few dozen holds.
  const uint64_t step = std::min(
      limit_ - reserved_,
      std::max({std::min(reserved_, kMaxStep), kStep, need - reserved_}));
  absl::StatusOr<MemoryBudget::Hold> more = budget_->Reserve(step, share_);
  if (!more.ok()) return more.status();
  holds_.push_back(*std::move(more));
  reserved_ += step;
  return absl::OkStatus();
}

absl::Status IncomingBody::Expect(uint64_t bytes,
                                  absl::string_view limit_flag) {
  if (bytes > limit_) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("the body is %u bytes, over the limit of %u (%s)",
                        bytes, limit_, limit_flag));
  }
  return Reserve(std::min(bytes, kStep), limit_flag);
}

absl::Status IncomingBody::Append(absl::string_view piece,
                                  absl::string_view limit_flag) {
  absl::Status room = Reserve(bytes_.size() + piece.size(), limit_flag);
  if (!room.ok()) return room;
  bytes_.append(piece.data(), piece.size());
  return absl::OkStatus();
}

absl::Status IncomingBody::Read(
    absl::FunctionRef<void(google::protobuf::io::ZeroCopyInputStream*)> read)
    const {
  google::protobuf::io::ArrayInputStream in(bytes_.data(),
                                            static_cast<int>(bytes_.size()));
  read(&in);
  return absl::OkStatus();
}

void IncomingBody::Discard() {
  std::string().swap(bytes_);
  holds_.clear();
  reserved_ = 0;
}

}  // namespace ptoserve
