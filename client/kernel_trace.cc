#include "client/kernel_trace.h"

#include <fstream>

#include "client/chrome_trace.h"
#include "google/protobuf/util/json_util.h"
#include "proto/recorded_result.h"

namespace pto {

namespace {

bool Write(const char* path, const std::string& text, std::string* error) {
  if (!ptoserve::AnyInstructionRecorded()) {
    *error = "no instruction was recorded";
    return false;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    *error = std::string("cannot write ") + path;
    return false;
  }
  return true;
}

}  // namespace

ptoserve::v1::JobResult KernelResult() { return ptoserve::RecordedJobResult(); }

std::string KernelEventsJson() {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  // Cannot fail for a message made here.
  (void)google::protobuf::util::MessageToJsonString(KernelResult(), &out,
                                                    options);
  return out;
}

std::string KernelChromeTrace() {
  return ptoserve::ChromeTrace(KernelResult());
}

bool WriteKernelEvents(const char* path, std::string* error) {
  return Write(path, KernelEventsJson(), error);
}

bool WriteKernelTrace(const char* path, std::string* error) {
  return Write(path, KernelChromeTrace(), error);
}

}  // namespace pto
