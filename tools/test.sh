#!/usr/bin/env bash
# Runs the whole test suite, offline:
#   1. every test (unit, integration, Python client, manifests);
#   2. the same under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the concurrency unit tests (scheduler, metrics) under ThreadSanitizer;
#   4. each fuzz target for PTOSERVE_FUZZ_SECONDS (default 60; 0 skips).
# Extra arguments go to every `bazel test`.
set -uo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh || exit 1

flags=(--test_summary=short)
if [[ -n "${CI:-}" ]]; then
  flags+=(--noshow_progress --curses=no --color=no)
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
stage() {  # NAME BAZEL-TEST-ARGS...
  local name=$1
  shift
  echo "=== ${name}"
  bazel test "${flags[@]}" "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  if ((rc != 0)); then
    echo "=== ${name}: FAILED (bazel exit ${rc})"
    status=1
  fi
}

stage "tests" //... "$@"
# The soak test's full minute runs once, in the plain stage above.
stage "tests under ASan+UBSan" --config=asan --test_env=PTOSERVE_SOAK_SECONDS=15 //... "$@"
# Debian's Abseil and gRPC are not built with ThreadSanitizer; see
# tools/tsan.supp and docs/RELIABILITY.md for what this covers and why.
stage "tests under TSan" --config=tsan \
  "--test_env=TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tools/tsan.supp" \
  //tests/server/... //tests/core:program_test "$@"

fuzz_seconds=${PTOSERVE_FUZZ_SECONDS:-60}
if ((fuzz_seconds > 0)) && [[ -x tools/fuzz ]]; then
  echo "=== fuzzing, ${fuzz_seconds} s per target"
  tools/fuzz "$fuzz_seconds" 2>&1 | tee -a "$log"
  if ((PIPESTATUS[0] != 0)); then
    echo "=== fuzzing: FAILED"
    status=1
  fi
fi

passed=$(grep -cE '^//.* PASSED' "$log")
failed=$(grep -cE '^//.* (FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log")
echo "tests: ${passed} passed, ${failed} failed"
exit "$status"
