// The hardware whose rules and algorithms the built-in API follows, chosen
// at compile time: define PTO_TARGET_A2A3 (Atlas A2/A3) or PTO_TARGET_A5
// (Ascend 950PR/950DT) before including <pto/pto-inst.hpp>, or neither for
// the host CPU. The rules are those of ptoserve's backends
// (core/backends/host.cc, a2a3.cc, a5.cc).
#ifndef PTO_COMMON_TARGET_HPP
#define PTO_COMMON_TARGET_HPP

namespace pto {

enum class Target { Host, A2A3, A5 };

// What makes one target's rules differ from another's.
template <Target T>
struct TargetRules;

template <>
struct TargetRules<Target::Host> {
  static constexpr const char* kName = "host";
  static constexpr int kRowAlignmentBytes = 1;  // any row length
  static constexpr bool kTxorUsesTmp = false;
  static constexpr const char* kTandAlgorithm = "direct and";
  static constexpr const char* kTxorAlgorithm = "direct xor";
};

// Atlas A2/A3: no vector xor, so TXOR computes through tmp.
template <>
struct TargetRules<Target::A2A3> {
  static constexpr const char* kName = "a2a3";
  static constexpr int kRowAlignmentBytes = 32;
  static constexpr bool kTxorUsesTmp = true;
  static constexpr const char* kTandAlgorithm = "vand";
  static constexpr const char* kTxorAlgorithm =
      "tmp = vor(src0, src1); dst = vand(src0, src1); dst = vnot(dst); "
      "dst = vand(dst, tmp)";
};

// Ascend 950PR/950DT: a direct vxor; tmp is accepted and unused.
template <>
struct TargetRules<Target::A5> {
  static constexpr const char* kName = "a5";
  static constexpr int kRowAlignmentBytes = 32;
  static constexpr bool kTxorUsesTmp = false;
  static constexpr const char* kTandAlgorithm = "vand";
  static constexpr const char* kTxorAlgorithm = "direct vxor (tmp unused)";
};

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
