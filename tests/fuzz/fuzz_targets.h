// The bodies of ptoserve's fuzz targets (docs/FUZZING.md). The libFuzzer
// binaries (job_fuzzer.cc, asm_fuzzer.cc, diff_fuzzer.cc) and the corpus
// replay test (corpus_test.cc) call the same functions, so every input a
// fuzzer ever found stays a test.
//
// Each function runs one input and returns OK unless the input shows a bug
// that need not crash by itself: a result that differs from the scalar
// reference, a program that does not survive printing, an execution order
// that changes a result. Whatever status the code under test gives the
// input (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, ...) is fine: rejecting bad
// input is its job. Crashes, sanitizer reports and leaks are for the
// calling process to notice.
#ifndef PTOSERVE_TESTS_FUZZ_FUZZ_TARGETS_H_
#define PTOSERVE_TESTS_FUZZ_FUZZ_TARGETS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace ptoserve {
namespace fuzz {

// A serialized ptoserve.v1.Job, through what the server does with one:
// CheckJobWire, the parse, DecodeJob (assembly included), Engine::Prepare
// admitted by the service's formula, every instruction run in order,
// Finish, ToJobResult and its serialization; on small limits (64 KiB
// tiles, 64 tiles and 64 instructions a job) so that each input runs in
// milliseconds. What the wire check lets through must parse to a job
// within the limits it checks, with the counts it reported. A job that runs
// must also give the same outcome when run again in another order its
// dependencies allow (PreparedJob::predecessors), batching what the
// scheduler may batch (BatchKey); match a naive interpreter of the job; and
// return a tile sent as values that no instruction writes as the same
// numbers. Under AddressSanitizer (clang), the heap must never grow by
// more than a bound made of what admission counted (docs/FUZZING.md);
// $PTOSERVE_FUZZ_HEAP_LOG names a file that gets a line per input with
// the measurement.
absl::Status RunJob(absl::string_view bytes);

// PTO assembly text. If it parses, printing it must give text that parses
// to an equal program and prints the same again; lowering it onto a fixed
// set of tiles on each target, preparing the job and running it must not
// crash; and where it lowers, the printed program must lower to the same
// job.
absl::Status RunAssembly(absl::string_view text);

// Bytes that choose a valid TAND or TXOR job: element type, operands of
// different physical shapes sharing a valid region (rows of a multiple of
// 32 bytes, so that every target accepts them), in-place and aliased
// operands, tiles sent as data, as values or not at all, and the elements.
// The job runs on host, a2a3 and a5, alone and in a batch of identical
// jobs, and every tile must equal the scalar reference computed here: the
// valid region of dst bit for bit, everything outside it untouched, tmp
// written only where the target computes through it.
absl::Status RunDifferential(absl::string_view bytes);

// An Open Inference Protocol request: a serialized ModelInferRequest (or,
// when it starts with '{', a REST body: JSON, a NUL, binary data) through
// the wire scan, the parse and its conversion to a job (server/oip). What
// the scan lets through must be within its bounds, and a job made from a
// request must have a tile per input whose bytes are its shape's.
absl::Status RunInfer(absl::string_view bytes);

struct FuzzTarget {
  const char* name;  // the fuzzer binary and its corpus directory
  absl::Status (*run)(absl::string_view input);
};

// job_fuzzer, asm_fuzzer, diff_fuzzer, infer_fuzzer.
absl::Span<const FuzzTarget> Targets();

// For LLVMFuzzerTestOneInput: runs `run` on the input and aborts, printing
// the finding, if it reports one.
int RunOrAbort(absl::Status (*run)(absl::string_view input),
               const uint8_t* data, size_t size);

}  // namespace fuzz
}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_FUZZ_FUZZ_TARGETS_H_
