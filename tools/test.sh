#!/usr/bin/env bash
# Runs the whole test suite (unit and integration), offline.
set -uo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh || exit 1

flags=(--test_summary=short)
if [[ -n "${CI:-}" ]]; then
  flags+=(--noshow_progress --curses=no --color=no)
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
bazel test //... "${flags[@]}" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

passed=$(grep -cE '^//.* PASSED' "$log")
failed=$(grep -cE '^//.* (FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log")
echo "tests: ${passed} passed, ${failed} failed"
exit "$status"
