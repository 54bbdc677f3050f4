#!/usr/bin/env bash
# Runs the whole test suite, offline:
#   1. every test (unit, integration, Python client, manifests), after
#      checking that every C++ file is formatted (tools/format --check);
#   2. the same under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the scheduler, streaming and integration tests under ThreadSanitizer;
#   4. each fuzz target for PTOSERVE_FUZZ_SECONDS (default 60; 0 skips).
# PTOSERVE_TEST_STAGES picks stages by name (default "tests asan tsan fuzz").
# Extra arguments go to every `bazel test`.
set -uo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh || exit 1

flags=(--test_summary=short)
if [[ -n "${CI:-}" ]]; then
  flags+=(--noshow_progress --curses=no --color=no)
fi

log=$(mktemp)
started=$(mktemp)  # test logs newer than this are this run's
trap 'rm -f "$log" "$started"' EXIT
status=0
stages=" ${PTOSERVE_TEST_STAGES:-tests asan tsan fuzz} "
selected() { [[ $stages == *" $1 "* ]]; }

stage() {  # KEY NAME BAZEL-TEST-ARGS...
  selected "$1" || return 0
  local name=$2 start=$SECONDS
  shift 2
  echo "=== ${name}"
  bazel test "${flags[@]}" "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  if ((rc != 0)); then
    echo "=== ${name}: FAILED (bazel exit ${rc})"
    status=1
  fi
  echo "=== ${name}: $((SECONDS - start)) s"
}

# Every C++ file as clang-format writes it (tools/format fixes them).
if selected tests; then
  echo "=== format"
  tools/format --check || status=1
fi
stage tests "tests" //... "$@"
# The soak test's full minute runs once, in the plain stage above, which
# also builds every non-test target (benchmarks, fuzzers); sanitizer stages
# build only the tests and what they run.
stage asan "tests under ASan+UBSan" --config=asan --build_tests_only --test_env=PTOSERVE_SOAK_SECONDS=15 //... "$@"
# ThreadSanitizer over the scheduler, streaming and integration tests (the
# server binary they start is built with it too), and a canary that shows
# the setup still reports a race in our own code; see tools/tsan/ and
# docs/RELIABILITY.md. history_size=7 (the most) keeps enough of each
# thread's past accesses to show both stacks of a report, which the
# suppressions need to match one. The suppressions file's hash is in the environment
# so that editing it re-runs the tests instead of taking cached results.
tsan_supp="$PWD/tools/tsan/suppressions.txt"
stage tsan "tests under TSan" --config=tsan --test_env=PTOSERVE_SOAK_SECONDS=15 \
  "--test_env=PTOSERVE_TSAN_SUPPRESSIONS_SHA=$(sha256sum "$tsan_supp" | cut -c1-16)" \
  "--test_env=TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:history_size=7:ignore_noninstrumented_modules=1:suppressions=$tsan_supp" \
  //tests/server/... //tests/integration/... //tests/core:program_test //tests/tsan/... "$@"

fuzz_seconds=${PTOSERVE_FUZZ_SECONDS:-60}
if selected fuzz && ((fuzz_seconds > 0)) && [[ -x tools/fuzz ]]; then
  echo "=== fuzzing, ${fuzz_seconds} s per target"
  start=$SECONDS
  tools/fuzz "$fuzz_seconds" 2>&1 | tee -a "$log"
  if ((PIPESTATUS[0] != 0)); then
    echo "=== fuzzing: FAILED"
    status=1
  fi
  echo "=== fuzzing: $((SECONDS - start)) s"
fi

# Skipped test cases pass in Bazel's summary; say which they were.
skipped=$(find -L "$(bazel info output_path 2>/dev/null)" -path '*/testlogs/*' \
  -name test.log -newer "$started" -print0 2>/dev/null |
  xargs -0 -r grep -h '^\[  SKIPPED \] [A-Za-z]' 2>/dev/null | sort -u)
if [[ -n $skipped ]]; then
  echo "skipped test cases (a test that cannot run here; \$PTOSERVE_REQUIRE_KERNELS turns kernel skips into failures):"
  echo "$skipped"
fi
passed=$(grep -cE '^//.* PASSED' "$log")
failed=$(grep -cE '^//.* (FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log")
echo "tests: ${passed} passed, ${failed} failed"
exit "$status"
