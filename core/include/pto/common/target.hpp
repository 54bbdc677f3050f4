// The hardware whose rules and algorithms the built-in API follows, chosen
// at compile time: define PTO_TARGET_A2A3 (Atlas A2/A3) or PTO_TARGET_A5
// (Ascend 950PR/950DT) before including <pto/pto-inst.hpp>, or neither for
// the host CPU. The rules and steps are ptoserve's own (core/targets/), the
// same data its service runs.
#ifndef PTO_COMMON_TARGET_HPP
#define PTO_COMMON_TARGET_HPP

#include <string>

#include "core/targets/a2a3.h"
#include "core/targets/a5.h"
#include "core/targets/host.h"
#include "core/targets/target_spec.h"

namespace pto {

enum class Target { Host, A2A3, A5 };

namespace impl {

// The algorithm text of `opcode` under `spec`, built once.
template <const ptoserve::TargetSpec& Spec, ptoserve::Opcode opcode>
const char* AlgorithmOf() {
  static const std::string text = ptoserve::AlgorithmText(Spec.rule(opcode));
  return text.c_str();
}

}  // namespace impl

// One target's rules, as the built-in API's checks need them.
template <const ptoserve::TargetSpec& Spec>
struct SpecRules {
  static constexpr const ptoserve::TargetSpec& kSpec = Spec;
  static constexpr const char* kName = Spec.name;
  static constexpr int kRowAlignmentBytes =
      static_cast<int>(Spec.row_alignment_bytes);
  static constexpr bool kTxorUsesTmp =
      Spec.rule(ptoserve::Opcode::kTxor).uses_tmp;
  static inline const char* const kTandAlgorithm =
      impl::AlgorithmOf<Spec, ptoserve::Opcode::kTand>();
  static inline const char* const kTxorAlgorithm =
      impl::AlgorithmOf<Spec, ptoserve::Opcode::kTxor>();
};

template <Target T>
struct TargetRules;
template <>
struct TargetRules<Target::Host> : SpecRules<ptoserve::targets::kHost> {};
template <>
struct TargetRules<Target::A2A3> : SpecRules<ptoserve::targets::kA2A3> {};
template <>
struct TargetRules<Target::A5> : SpecRules<ptoserve::targets::kA5> {};

// What depends on the chosen target lives in an inline namespace named
// after it, so that code built for different targets can share a program.
#if defined(PTO_TARGET_A2A3) && defined(PTO_TARGET_A5)
#error "define at most one of PTO_TARGET_A2A3 and PTO_TARGET_A5"
#elif defined(PTO_TARGET_A2A3)
#define PTO_TARGET_NAMESPACE target_a2a3
#define PTO_TARGET_VALUE Target::A2A3
#elif defined(PTO_TARGET_A5)
#define PTO_TARGET_NAMESPACE target_a5
#define PTO_TARGET_VALUE Target::A5
#else
#define PTO_TARGET_NAMESPACE target_host
#define PTO_TARGET_VALUE Target::Host
#endif

inline namespace PTO_TARGET_NAMESPACE {
inline constexpr Target kTarget = PTO_TARGET_VALUE;
using Rules = TargetRules<kTarget>;
}  // namespace PTO_TARGET_NAMESPACE

}  // namespace pto

#endif  // PTO_COMMON_TARGET_HPP
