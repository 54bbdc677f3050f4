#!/usr/bin/env bash
# Runs the whole test suite, offline:
#   1. every test (unit, integration, Python client, manifests), after
#      checking that every C++ file is formatted (tools/format --check) and
#      that the code keeps its structure (tools/check_layout);
#   2. the same under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the scheduler, streaming and integration tests under ThreadSanitizer;
#   4. each fuzz target for PTOSERVE_FUZZ_SECONDS (default 60; 0 skips).
# PTOSERVE_TEST_STAGES picks stages by name (default "tests asan tsan fuzz");
# "smoke" is the set a fresh machine runs (below, and tools/fresh_root.sh).
# Extra arguments go to every `bazel test`.
#
# The first stage keeps its outputs and test results in a disk cache
# (PTOSERVE_DISK_CACHE, default ~/.cache/ptoserve-disk-cache; empty turns
# it off) that tools/mutants shares: its scratch copy then builds, and
# passes its baseline, from what this stage left instead of from nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
stages=" ${PTOSERVE_TEST_STAGES:-tests asan tsan fuzz} "
selected() { [[ $stages == *" $1 "* ]]; }
if selected tests || selected asan || selected fuzz; then
  tools/setup.sh clang || exit 1
elif [[ $stages == " smoke " ]]; then
  tools/setup.sh smoke || exit 1
else
  tools/setup.sh || exit 1
fi

ui=()
if [[ -n "${CI:-}" ]]; then
  ui=(--noshow_progress --curses=no --color=no)
fi
flags=(--test_summary=short "${ui[@]}")

log=$(mktemp)
started=$(mktemp)  # test logs newer than this are this run's
trap 'rm -f "$log" "$started"; [[ -n ${PTOSERVE_FAILURES:-} ]] || rm -f "$failures"' EXIT
status=0
# What failed, and why: appended as each stage ends to the file
# PTOSERVE_FAILURES names (.ci/run prints it at CI's very end, even if this
# script is stopped at its budget), and printed at the end.
failures=${PTOSERVE_FAILURES:-$(mktemp)}
touch "$failures"
failures_from=$(($(stat -c %s "$failures") + 1))
# Bazel's startup options for the next stage (an output base of its own).
startup=()
output_paths=()

# Each failed or timed-out test of a stage: its name, the test cases that
# failed and the end of its log (Bazel's summary lists each log's path
# under the test's line).
report_failures() {  # STAGE-NAME STAGE-LOG
  local target test_log first
  grep -E '^//\S+ +(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$2" |
    while read -r target _; do
      echo "--- ${target} failed in: $1"
      sed -n "\#^${target} #,\#^//#p" "$2" | grep -E '^\s+/\S+\.log$' |
        while read -r test_log; do
          grep -E '^\[  FAILED  \] [A-Za-z]|^(FAIL|ERROR): test' "$test_log" |
            sed 's/ ([0-9]* ms)$//' | sort -u | head -n 20
          # A test stopped at its timeout: the case it was running.
          if grep -q '^-- Test timed out' "$test_log"; then
            grep -E '^\[ RUN      \]' "$test_log" | tail -n 1 |
              sed 's/^\[ RUN      \]/    timed out while running:/'
          fi
          echo "    ${test_log}"
          first=$(grep -E -m1 -A30 'Failure$|^(FAIL|ERROR): test|Sanitizer|Check failed|Traceback|Terminated' "$test_log")
          if [[ -n $first ]]; then
            echo "    from its first failure:"
            sed 's/^/    /' <<<"$first"
          fi
          echo "    its last lines:"
          tail -n 8 "$test_log" | sed 's/^/    /'
        done
    done
  grep -E '^(ERROR|FAILED):' "$2" | head -n 20
}

stage() {  # KEY NAME BAZEL-TEST-ARGS...
  selected "$1" || return 0
  local name=$2 start=$SECONDS
  shift 2
  echo "=== ${name}"
  output_paths+=("$(bazel "${startup[@]}" info output_path 2>/dev/null)")
  local stage_log
  stage_log=$(mktemp)
  bazel "${startup[@]}" test "${flags[@]}" "$@" 2>&1 | tee "$stage_log"
  local rc=${PIPESTATUS[0]}
  cat "$stage_log" >>"$log"
  if ((rc != 0)); then
    echo "=== ${name}: FAILED (bazel exit ${rc})"
    report_failures "$name" "$stage_log" >>"$failures"
    status=1
  fi
  rm -f "$stage_log"
  echo "=== ${name}: $((SECONDS - start)) s"
}

# Every C++ file as clang-format writes it (tools/format fixes them), and
# the structure's rules: files within 500 lines, the server's layers
# pointing down (tools/check_layout).
if selected tests; then
  echo "=== format"
  if ! tools/format --check; then
    echo "--- format: files not as clang-format writes them (tools/format fixes them; its output above names them)" >>"$failures"
    status=1
  fi
  echo "=== layout"
  if ! tools/check_layout; then
    echo "--- layout: tools/check_layout's rules broken (its output above names where)" >>"$failures"
    status=1
  fi
fi
disk_cache=${PTOSERVE_DISK_CACHE-$HOME/.cache/ptoserve-disk-cache}
# Built with clang (.bazelrc's --config=clang, about 30 % faster to compile);
# gcc builds the TSan stage, the smoke stage and what ships.
stage tests "tests" --config=clang ${disk_cache:+"--disk_cache=$disk_cache"} //... "$@"
# What a fresh Debian root can break that a used machine hides: a package
# setup.sh forgot, a user or permission a bare root lacks, a name it does
# not resolve. tools/fresh_root.sh runs it after tools/serve.sh, which has
# proved there the served binary, ptoctl, health and /metrics; built
# optimized, as serve.sh builds, so that it adds little to that build. The
# Python client's tests run on Debian's grpcio, protobuf and numpy, make
# their own PKI with openssl for TLS, and run a client as nobody, whom the
# server tells from the kernel's socket tables (client_test); venv and
# wheel (install_test); python3-h2, which sends compressed bombs
# (compression_test); PyYAML (manifests_test); the compiler the seed
# examples need (compile_fail_test); and Google Benchmark's library, built.
# Here too gcc's optimized kernels meet the scalar reference (kernels_test):
# the first stage builds with clang, and this is the compiler and the flags
# that ship. Every other test runs in the first stage, on the same commit,
# on the CI machine.
smoke_tests=(
  //client/python:client_test //client/python:install_test
  //tests/integration:compression_test //tests/deploy:manifests_test
  //tests/core/pto:compile_fail_test
  //tests/core:kernels_test
)
if selected smoke; then
  echo "=== smoke: building the benchmarks' library"
  bazel build "${ui[@]}" -c opt //bench:kernel_bench 2>&1 | tee -a "$log"
  ((PIPESTATUS[0] == 0)) || status=1
fi
stage smoke "smoke tests (optimized, as tools/serve.sh builds)" -c opt "${smoke_tests[@]}" "$@"
# The soak test's full minute runs once, in the plain stage above, which
# also builds every non-test target (benchmarks, fuzzers); sanitizer stages
# build only the tests and what they run.
# Built with clang (.bazelrc), in an output base of its own so that the
# gcc stages keep theirs. Its tests are listed here: there, //... would
# wander into this output base's bazel-* links.
# Every test but those whose subject is not the project's C++ at run time
# (the server they drive is every other test's): the Python wheel's
# packaging (install_test), the deployment recipes (//tests/deploy: the
# alert rules, a real Prometheus and HAProxy, the manifests; 36 s under
# ASan), the docs' commands (docs_test), the playground page in a browser
# (playground_test), the compiler's refusals (compile_fail_test) and the
# benchmark tool's options and report (ptobench_test, 49 s under ASan).
if selected asan; then
  mapfile -t every_test < <(bazel query --noshow_progress \
    'tests(//...) except (tests(//tests/deploy/...) + //client/python:install_test + //tests/docs:docs_test + //tests/integration:playground_test + //tests/core/pto:compile_fail_test + //tests/integration:ptobench_test)')
  if ((${#every_test[@]} == 0)); then
    echo "=== tests under ASan+UBSan: bazel query found no tests"
    status=1
  fi
  startup=(--output_base="${HOME}/.cache/ptoserve-asan/$(pwd | md5sum | cut -c1-16)")
  # The output filter hides what the actions print (gold warns of every
  # ASan symbol of every shared library clang makes); errors still show.
  # --symlink_prefix=/: no bazel-* links to this output base in the
  # workspace, where the next `bazel query //...` would wander into them.
  stage asan "tests under ASan+UBSan" --config=asan --symlink_prefix=/ \
    --test_env=PTOSERVE_SOAK_SECONDS=15 \
    --output_filter=DONT_MATCH_ANYTHING "${every_test[@]}" "$@"
  startup=()
fi
# ThreadSanitizer over the tests whose subject is concurrency: the
# scheduler, the budget, the shared-memory registry and its sweeper, the
# metrics, and every integration test that drives the server from many
# calls, streams or threads at once (the server binary they start is built
# with it too); and a canary that shows the setup still reports a race in
# our own code; see tools/tsan/ and docs/RELIABILITY.md. Left to the plain
# and ASan+UBSan stages: tests that make one call at a time (server_test,
# assembly_test, security_test, kernel_service_test_*, and
# below_handler_test, whose subject is what gRPC's transport and the
# listeners hold (memory pumped in by the gigabyte, connection caps), not
# a race of ours: the pool and caps it relies on run here in task_pool_test
# and connection_caps_test; and
# playground_test, whose browser sends
# at most three small jobs at once: the HTTP door under many connections
# is doors_test's and http_api_test's), the command-line tools' tests (ptoctl_test,
# ptoctl_reflection_test, ptobench_test, whose binaries are half of what
# they would build here) and
# the single-threaded parsers' unit tests (codec_test,
# peer_credentials_test). history_size=7 (the most) keeps enough of each
# thread's past accesses to show both stacks of a report, which the
# suppressions need to match one. The suppressions file's hash is in the environment
# so that editing it re-runs the tests instead of taking cached results.
tsan_supp="$PWD/tools/tsan/suppressions.txt"
stage tsan "tests under TSan" --config=tsan --test_env=PTOSERVE_SOAK_SECONDS=15 \
  "--test_env=PTOSERVE_TSAN_SUPPRESSIONS_SHA=$(sha256sum "$tsan_supp" | cut -c1-16)" \
  "--test_env=TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:history_size=7:ignore_noninstrumented_modules=1:suppressions=$tsan_supp" \
  "$@" -- //tests/server/... //tests/integration/... //tests/core:program_test //tests/tsan/... \
  -//tests/integration:server_test -//tests/integration:assembly_test \
  -//tests/integration:security_test -//tests/integration:ptoctl_test \
  -//tests/integration:playground_test \
  -//tests/integration:below_handler_test \
  -//tests/integration:kernel_service_test_host \
  -//tests/integration:kernel_service_test_a2a3 \
  -//tests/integration:kernel_service_test_a5 \
  -//tests/integration:ptoctl_reflection_test \
  -//tests/integration:ptobench_test -//tests/server:codec_test \
  -//tests/server:peer_credentials_test

fuzz_seconds=${PTOSERVE_FUZZ_SECONDS:-60}
if selected fuzz && ((fuzz_seconds > 0)) && [[ -x tools/fuzz ]]; then
  echo "=== fuzzing, ${fuzz_seconds} s per target"
  start=$SECONDS
  tools/fuzz "$fuzz_seconds" 2>&1 | tee -a "$log"
  if ((PIPESTATUS[0] != 0)); then
    echo "=== fuzzing: FAILED"
    echo "--- fuzzing failed: tools/fuzz's output above names the target and its crash" >>"$failures"
    status=1
  fi
  echo "=== fuzzing: $((SECONDS - start)) s"
fi

# Skipped test cases pass in Bazel's summary; say which they were.
skipped=""
if ((${#output_paths[@]})); then
  skipped=$(find -L "${output_paths[@]}" -path '*/testlogs/*' \
    -name test.log -newer "$started" -print0 2>/dev/null |
    xargs -0 -r grep -h '^\[  SKIPPED \] [A-Za-z]' 2>/dev/null | sort -u)
fi
if [[ -n $skipped ]]; then
  echo "skipped test cases (a test that cannot run here; \$PTOSERVE_REQUIRE_KERNELS turns kernel skips into failures):"
  echo "$skipped"
fi
passed=$(grep -cE '^//.* PASSED' "$log")
failed=$(grep -cE '^//.* (FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log")
echo "tests: ${passed} passed, ${failed} failed"
if (($(stat -c %s "$failures") >= failures_from)); then
  echo "=== what failed"
  tail -c "+${failures_from}" "$failures"
fi
exit "$status"
