#include "tests/server/small_job_checks.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/result_wire.h"
#include "proto/small_job.h"
#include "proto/wire_scan.h"

namespace ptoserve {

namespace {

std::string Field(absl::string_view where, absl::string_view name,
                  const std::string& a, const std::string& b) {
  if (a == b) return "";
  return absl::StrCat(where, name, ": ", a, " vs ", b, "\n");
}

template <typename T>
std::string Str(const T& v) {
  return absl::StrCat(v);
}

std::string Str(const std::optional<uint64_t>& v) {
  return v ? absl::StrCat(*v) : "unset";
}

std::string TileDiff(const TileInput& a, const TileInput& b) {
  const std::string at = absl::StrCat("tile ", a.name, ": ");
  return absl::StrCat(
      Field(at, "name", a.name, b.name),
      Field(at, "dtype", Str(static_cast<int>(a.desc.dtype)),
            Str(static_cast<int>(b.desc.dtype))),
      Field(at, "rows", Str(a.desc.rows), Str(b.desc.rows)),
      Field(at, "cols", Str(a.desc.cols), Str(b.desc.cols)),
      Field(at, "valid_rows", Str(a.desc.valid_rows), Str(b.desc.valid_rows)),
      Field(at, "valid_cols", Str(a.desc.valid_cols), Str(b.desc.valid_cols)),
      Field(at, "layout", Str(static_cast<int>(a.desc.layout)),
            Str(static_cast<int>(b.desc.layout))),
      Field(at, "location", Str(static_cast<int>(a.desc.location)),
            Str(static_cast<int>(b.desc.location))),
      Field(at, "address", Str(a.desc.address), Str(b.desc.address)),
      Field(at, "encoding", Str(static_cast<int>(a.encoding)),
            Str(static_cast<int>(b.encoding))),
      Field(at, "data", std::string(a.data), std::string(b.data)),
      Field(at, "values", Str(a.values.size()),
            a.values == b.values ? Str(a.values.size())
                                 : absl::StrCat(b.values.size(), ", others")),
      Field(at, "fill", Str(a.fill), Str(b.fill)));
}

std::string InstructionDiff(size_t i, const Instruction& a,
                            const Instruction& b) {
  const std::string at = absl::StrCat("instruction ", i, ": ");
  return absl::StrCat(
      Field(at, "opcode", Str(static_cast<int>(a.opcode)),
            Str(static_cast<int>(b.opcode))),
      Field(at, "dst", a.dst, b.dst), Field(at, "src0", a.src0, b.src0),
      Field(at, "src1", a.src1, b.src1), Field(at, "tmp", a.tmp, b.tmp),
      Field(at, "record_event", a.record_event, b.record_event),
      Field(at, "wait_events", absl::StrJoin(a.wait_events, ","),
            absl::StrJoin(b.wait_events, ",")),
      Field(at, "notes", absl::StrJoin(a.notes, ","),
            absl::StrJoin(b.notes, ",")));
}

// What differs between two specs, field by field; empty when nothing.
std::string SpecDiff(const JobSpec& a, const JobSpec& b) {
  std::string diff = absl::StrCat(
      Field("", "target", a.target ? Str(static_cast<int>(*a.target)) : "unset",
            b.target ? Str(static_cast<int>(*b.target)) : "unset"),
      Field("", "mode", Str(static_cast<int>(a.mode)),
            Str(static_cast<int>(b.mode))),
      Field("", "outputs", absl::StrJoin(a.outputs, ","),
            absl::StrJoin(b.outputs, ",")),
      Field("", "places", Str(a.places.size()), Str(b.places.size())),
      Field("", "tiles", Str(a.tiles.size()), Str(b.tiles.size())),
      Field("", "instructions", Str(a.instructions.size()),
            Str(b.instructions.size())));
  for (size_t i = 0; i < a.tiles.size() && i < b.tiles.size(); ++i) {
    absl::StrAppend(&diff, TileDiff(a.tiles[i], b.tiles[i]));
  }
  for (size_t i = 0; i < a.instructions.size() && i < b.instructions.size();
       ++i) {
    absl::StrAppend(&diff,
                    InstructionDiff(i, a.instructions[i], b.instructions[i]));
  }
  return diff;
}

}  // namespace

absl::Status SameJobSpec(const JobSpec& expected, const JobSpec& actual) {
  const std::string diff = SpecDiff(expected, actual);
  if (diff.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("the specs differ: ", diff));
}

std::string SmallJobDiffers(absl::string_view bytes,
                            const EngineLimits& limits) {
  std::optional<SmallJob> small = ReadSmallJob(bytes, limits);
  if (!small) return "";
  google::protobuf::io::ArrayInputStream stream(bytes.data(),
                                                static_cast<int>(bytes.size()));
  absl::StatusOr<WireShape> shape = CheckJobWire(&stream, bytes.size(), limits);
  if (!shape.ok()) {
    return absl::StrCat("the small path read what CheckJobWire refuses: ",
                        shape.status().ToString());
  }
  v1::Job job;
  if (!job.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return "the small path read what protobuf does not parse";
  }
  absl::StatusOr<JobSpec> spec = ToJobSpec(job);
  if (!spec.ok()) {
    return absl::StrCat("the small path read what ToJobSpec refuses: ",
                        spec.status().ToString());
  }
  const JobHeader& h = small->header;
  return absl::StrCat(
      Field("", "id", std::string(h.id), job.id()),
      Field("", "priority", Str(h.priority), Str(job.priority())),
      Field("", "timeout",
            h.has_timeout
                ? absl::StrCat(h.timeout_seconds, "s", h.timeout_nanos)
                : "unset",
            job.has_timeout() ? absl::StrCat(job.timeout().seconds(), "s",
                                             job.timeout().nanos())
                              : "unset"),
      SpecDiff(small->spec, *spec));
}

std::string WrittenResult(absl::string_view id, const JobOutcome& outcome,
                          const ResultEncodings& encodings) {
  const ResultWriter writer(id, outcome, encodings);
  std::string bytes(writer.size(), '\0');
  writer.Write(reinterpret_cast<uint8_t*>(bytes.data()));
  return bytes;
}

std::string PaddedVarint(absl::string_view bytes, size_t at, int width) {
  const uint8_t value = static_cast<uint8_t>(bytes[at]);
  std::string padded(bytes.substr(0, at));
  padded.push_back(static_cast<char>(value | 0x80));
  for (int i = 2; i < width; ++i) padded.push_back('\x80');
  padded.push_back('\0');
  const absl::string_view rest = bytes.substr(at + 1);
  padded.append(rest.data(), rest.size());
  return padded;
}

std::string DeterministicBytes(const google::protobuf::MessageLite& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&out);
  }  // the stream gives back what it did not write
  return bytes;
}

}  // namespace ptoserve
