#!/usr/bin/env python3
"""No product function over 80 lines: tools/check_layout runs this.

Reads the C++ sources of the product (server/, client/, core/, proto/,
bench/, common/; not tests) as clang-format writes them: a function defined
at a namespace's level starts at the first column and ends with the first
"}" alone on a line. Prints each over MAX_LINES, as FILE:LINE: NAME (N
lines), and exits 1; exits 0 when none is. A function that long does more
than one thing a reader can hold: name its steps.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRODUCT = ("server", "client", "core", "proto", "bench", "common")
MAX_LINES = 80
# First-column lines that start something other than a function.
NOT_A_FUNCTION = ("//", "#", "namespace", "}", "using", "struct", "class",
                  "enum", "template", "static_assert", "ABSL_FLAG",
                  "constexpr", "extern", "typedef", "union")


def functions(lines):
    """Each function defined at the first column: (first line's index, its
    length in lines, its first line)."""
    i = 0
    while i < len(lines):
        line = lines[i]
        if (line and not line[0].isspace() and "(" in line and
                not line.startswith(NOT_A_FUNCTION)):
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith(("{", ";")):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                end = j + 1
                while end < len(lines) and lines[end] != "}":
                    end += 1
                yield i, end - i + 1, line
                i = end
        i += 1


def main():
    long_ones, seen = [], 0
    for top in PRODUCT:
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not name.endswith(".cc") or name.endswith("_test.cc"):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    lines = f.read().split("\n")
                for start, length, first in functions(lines):
                    seen += 1
                    if length > MAX_LINES:
                        long_ones.append(
                            f"{os.path.relpath(path, ROOT)}:{start + 1}: "
                            f"{first.strip()} ({length} lines)")
    # The reader finds functions at all (a format it no longer reads would
    # pass everything).
    if seen < 500:
        print(f"function_lengths: found only {seen} functions; the reader "
              "no longer reads the sources", file=sys.stderr)
        return 1
    for line in long_ones:
        print(f"layout: {line}, over {MAX_LINES}: name its steps",
              file=sys.stderr)
    return 1 if long_ones else 0


if __name__ == "__main__":
    sys.exit(main())
