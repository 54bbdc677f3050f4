#ifndef PTOSERVE_CORE_VERSION_H_
#define PTOSERVE_CORE_VERSION_H_

namespace ptoserve {

// The version of ptoserve, reported by the server and ptoctl.
inline constexpr char kVersion[] = "0.1.0";

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_VERSION_H_
