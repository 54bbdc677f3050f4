// Reads PTO assembly text (the grammar is in docs/ASSEMBLY.md) into a
// Program. Checks syntax only; whether the program fits the request's tiles
// and the target's rules is Lower's business (lower.h).
#ifndef PTOSERVE_CORE_ASM_PARSER_H_
#define PTOSERVE_CORE_ASM_PARSER_H_

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/asm/ast.h"

namespace ptoserve {
namespace pasm {

// Bounds on what Parse may be asked to hold (the defaults: none), so that
// the memory a program costs is a small multiple of its text.
struct ParseOptions {
  // The most bytes of text; more is RESOURCE_EXHAUSTED.
  size_t max_bytes = std::numeric_limits<size_t>::max();
  // The longest line, in bytes; longer is INVALID_ARGUMENT.
  size_t max_line_bytes = std::numeric_limits<size_t>::max();
  // The most operations and bindings; more is RESOURCE_EXHAUSTED.
  size_t max_statements = std::numeric_limits<size_t>::max();
  // Keep comments (for printing the program again); a server drops them.
  bool keep_comments = true;
};

// The program in `text`, or INVALID_ARGUMENT naming the first error as
// "line:column: what was found and what was expected", e.g.
// "3:17: expected ',' after operand %src0, found '%src1'".
// Runs in time linear in the text and never recurses on its input; the
// tokens of one line exist at a time.
absl::StatusOr<Program> Parse(absl::string_view text,
                              const ParseOptions& options = {});

// The statement forms Parse accepts, one template line each (for
// GetCapabilities): the synchronous, SSA and DPS forms of each instruction,
// and pto.tassign.
const std::vector<std::string>& AcceptedForms();

}  // namespace pasm
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_ASM_PARSER_H_
