// Reads PTO assembly text (the grammar is in docs/ASSEMBLY.md) into a
// Program. Checks syntax only; whether the program fits the request's tiles
// and the target's rules is Lower's business (lower.h).
#ifndef PTOSERVE_CORE_ASM_PARSER_H_
#define PTOSERVE_CORE_ASM_PARSER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/asm/ast.h"

namespace ptoserve {
namespace pasm {

// The program in `text`, or INVALID_ARGUMENT naming the first error as
// "line:column: what was found and what was expected", e.g.
// "3:17: expected ',' after operand %src0, found '%src1'".
// Runs in time linear in the text and never recurses on its input.
absl::StatusOr<Program> Parse(absl::string_view text);

// The statement forms Parse accepts, one template line each (for
// GetCapabilities): the synchronous, SSA and DPS forms of each instruction,
// and pto.tassign.
const std::vector<std::string>& AcceptedForms();

}  // namespace pasm
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_ASM_PARSER_H_
