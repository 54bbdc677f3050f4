#!/bin/bash
# Compiles each snippet given and checks the outcome its first line states:
#   // expect: compiles
#   // expect: error: <text the compiler's output must contain>
# Usage: compile_fail_test.sh COMPILER SNIPPET.cc...
set -u

compiler="$1"
shift
# The runfiles root of this workspace, where the headers are.
root="${TEST_SRCDIR:-$PWD}/${TEST_WORKSPACE:-ptoserve}"
[[ -d "$root/core/include/pto" ]] || root="$PWD"

failures=0
for snippet in "$@"; do
  expect="$(head -n 1 "$snippet" | sed -n 's|^// expect: ||p')"
  output="$("$compiler" -x c++ -std=c++17 -fsyntax-only \
      -I "$root/core/include" -I "$root" "$snippet" 2>&1)"
  status=$?
  name="$(basename "$snippet")"
  case "$expect" in
    compiles)
      if (( status != 0 )); then
        echo "FAIL $name: expected to compile, but:"
        echo "$output" | head -n 20
        failures=$((failures + 1))
        continue
      fi
      ;;
    error:*)
      message="${expect#error: }"
      if (( status == 0 )); then
        echo "FAIL $name: compiled, expected an error containing: $message"
        failures=$((failures + 1))
        continue
      elif ! grep -qF -- "$message" <<<"$output"; then
        echo "FAIL $name: the error does not contain: $message"
        echo "$output" | grep -m 5 'error' 
        failures=$((failures + 1))
        continue
      fi
      ;;
    *)
      echo "FAIL $name: its first line must be '// expect: compiles' or '// expect: error: ...'"
      failures=$((failures + 1))
      continue
      ;;
  esac
  echo "ok   $name ($expect)"
done

if (( $# == 0 )); then
  echo "FAIL: no snippets given"
  exit 1
fi
exit $(( failures > 0 ))
