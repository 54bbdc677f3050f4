#!/usr/bin/env python3
"""Every file a comment names exists: tools/check_layout runs this.

A comment in the product's code (server/, client/, core/, proto/, bench/,
common/) that names a file, as a path from the repository's root
("server/intake/intake.h") or as a name beside it ("intake.h"), must name
one that is there: a file moved or split leaves no comment pointing at its
old place. Prints each that does not, as FILE:LINE: NAME, and exits 1;
exits 0 when every one holds.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRODUCT = ("server", "client", "core", "proto", "bench", "common")
TOP = ("server", "client", "core", "proto", "bench", "common", "tools",
       "tests", "deploy", "docs", "examples", ".ci")
EXTENSIONS = ("h", "cc", "py", "md", "sh", "bazel", "proto", "html", "yaml",
              "cfg")
# A path from the root: not inside a longer path or a URL.
ROOTED = re.compile(r"(?<![\w/.-])((?:%s)/[\w./-]*\.(?:%s))(?![\w/])" %
                    ("|".join(re.escape(t) for t in TOP),
                     "|".join(EXTENSIONS)))
# A file's bare name, of a kind that lives beside its reader.
BARE = re.compile(r"(?<![\w/.-])([a-z][\w-]*\.(?:h|cc|py))(?![\w/])")


def comment_of(path, line):
    """The comment part of `line`, or ""."""
    marker = "#" if path.endswith((".py", ".bazel")) else "//"
    stripped = line.lstrip()
    if path.endswith((".cc", ".h")) and stripped.startswith("#include"):
        return ""
    # Outside a string: the marker after an even number of quotes.
    at = 0
    while True:
        at = line.find(marker, at)
        if at < 0:
            return ""
        if line.count('"', 0, at) % 2 == 0:
            return line[at + len(marker):]
        at += len(marker)


def main():
    os.chdir(ROOT)
    names = set()
    for top in TOP:
        for folder, _, files in os.walk(top):
            names.update(files)
    broken = []
    for top in PRODUCT:
        for folder, _, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith((".cc", ".h", ".py", ".bazel")):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        comment = comment_of(path, line)
                        if "://" in comment:
                            comment = re.sub(r"\w+://\S+", "", comment)
                        for m in ROOTED.finditer(comment):
                            named = m.group(1).rstrip(".")
                            if not os.path.exists(named):
                                broken.append(f"{path}:{number}: {named}")
                        for m in BARE.finditer(comment):
                            named = m.group(1).rstrip(".")
                            if named not in names:
                                broken.append(f"{path}:{number}: {named}")
    for b in broken:
        print(f"layout: a comment names a file that is not there: {b}",
              file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
