// Tile types in PTO assembly: `!pto.tile<...>` and `!pto.tile_buf<key=value,
// ...>`, read from a statement's tokens. Internal to the parser.
#ifndef PTOSERVE_CORE_ASM_TYPE_PARSER_H_
#define PTOSERVE_CORE_ASM_TYPE_PARSER_H_

#include "absl/status/statusor.h"
#include "core/asm/ast.h"
#include "core/asm/token_reader.h"

namespace ptoserve {
namespace pasm {

// The tile type at `in`'s next token, consumed; INVALID_ARGUMENT, as the
// parser reports errors, at the first token that does not fit.
absl::StatusOr<TileBufType> ParseType(TokenReader* in);

}  // namespace pasm
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_ASM_TYPE_PARSER_H_
