// Early-return helpers for absl::Status, which Debian 12's Abseil lacks.
#ifndef PTOSERVE_CORE_STATUS_MACROS_H_
#define PTOSERVE_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns from the enclosing function if `expr` yields a non-OK status.
#define PTO_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::absl::Status pto_status_ = (expr);       \
    if (!pto_status_.ok()) return pto_status_; \
  } while (false)

#define PTO_STATUS_CONCAT_INNER_(a, b) a##b
#define PTO_STATUS_CONCAT_(a, b) PTO_STATUS_CONCAT_INNER_(a, b)

// `lhs = value of expr`, or returns expr's status if it is an error.
#define PTO_ASSIGN_OR_RETURN(lhs, expr)                                        \
  PTO_ASSIGN_OR_RETURN_IMPL_(PTO_STATUS_CONCAT_(pto_statusor_, __LINE__), lhs, \
                             expr)

#define PTO_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

#endif  // PTOSERVE_CORE_STATUS_MACROS_H_
