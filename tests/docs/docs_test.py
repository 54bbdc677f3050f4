"""The docs' examples, run against a real ptoserve and compared with what
the docs show; and the docs checked against the binaries they describe.

Documents: README.md, every page of docs/ and client/python/README.md
(the links in checked/; tools/check_layout fails when a page has none).

What runs:
- Every ```console block: each `$ COMMAND` line (continued on the next line
  while it ends in a backslash) runs in bash, in a scratch directory laid out
  like the repository root (the docs' convention: commands run from there),
  and what it prints, stdout and stderr together, is compared with the
  block's lines after it, up to the next `$ ` line. The scratch directory
  holds examples/ (a copy of the checkout's files) and
  client/python/example.py, and `ptoctl` is first on PATH.
- Every ```python block that a paragraph "prints" and a block follow: the
  code runs with /usr/bin/python3 and the client on PYTHONPATH, and its
  stdout is compared with that block.

The server: one ptoserve, started here with its defaults except for its
ports (gRPC and the HTTP/JSON API on ephemeral loopback ports, metrics
off), serves every example in the documents' order.

Substitutions in what runs (the docs use ptoserve's default addresses):
- `127.0.0.1:50051` becomes the server's gRPC address, and
  `http://127.0.0.1:8000` its HTTP/JSON API's URL.
- `ptoctl` runs the real ptoctl with `--server=ADDRESS` first, so that
  commands without a server (ptoctl's default is 127.0.0.1:50051) reach
  this one; a command that names one (`--server=...`, or the address as
  its first argument, grpcurl's way) runs as written.
- REWRITES below: commands of the docs that run a Bazel target, run as
  `bazel run` runs them: the file the target runs, from a directory of its
  own (bazel run's runfiles), with BUILD_WORKING_DIRECTORY the directory
  the command was typed in. Only the program is replaced, never its
  arguments: a command that works here works as the page shows it.

Normalisation, applied to what the docs show and to what ran alike, of
timings and ids only:
- the server's address and URL in the output are written back as
  127.0.0.1:50051 and http://127.0.0.1:8000;
- a number followed by ns, us, µs, ms or s (`queued 11.247us`) is `<time>`;
- `batch N` (the server's batch id; the size that follows is compared) is
  `batch <id>`;
- in Chrome trace JSON, the numbers of "ts", "dur" and "..._us" are
  `<time>` and the number of "batch_id" is `<id>`.
Elisions the docs mark: a line that is `...` stands for any lines (none
included), and `, ...` inside a line for `, ` and the rest of what the
program printed there. Everything else is compared exactly, line by line,
blank lines and spacing included.

Exit codes: a command whose shown output has a line `ptoctl: CODE: ...`
(CODE a status code name, UNAVAILABLE say) or a `job ID: CODE: ...` line of
`ptoctl stream` must exit 1, one with any other `ptoctl: ...` line (a usage
error) must exit 2, and every other command, and every Python block, 0.

EXEMPTIONS below lists the commands that cannot run here, keyed by the
document and the command's first line, each with its reason; an exemption
that matches no command fails the test, so the list stays as small as the
docs allow.

Checks beside the examples:
- every flag `ptoserve --help` lists appears in docs/FLAGS.md, and every
  flag of `ptoctl --help` in docs/CLI.md, as `--NAME`;
- every citation of a section, `docs/PAGE.md, "Title"` (or README's,
  client/python/README.md's), names a heading that page has;
- the BUILD rule docs/CLIENTS.md shows is examples/cpp/BUILD.bazel's.

Run by `bazel test //tests/docs:docs_test`. Outside Bazel, from the
repository root after `bazel build //server:ptoserve //client/ptoctl
//client/python:all`:
    PTOSERVE_BINARY=bazel-bin/server/ptoserve \\
    PTOCTL_BINARY=bazel-bin/client/ptoctl/ptoctl \\
    PYTHONPATH=client/python:bazel-bin/client/python \\
    /usr/bin/python3 tests/docs/docs_test.py
"""

import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import server_process

# Where the documents are read: links to them at their repository paths
# (BUILD.bazel says why).
CHECKED = "tests/docs/checked"
DOCS = ["README.md"] + sorted(
    f"docs/{name}" for name in os.listdir(os.path.join(CHECKED, "docs"))
    if name.endswith(".md")) + ["client/python/README.md"]
PTOSERVE = os.environ.get("PTOSERVE_BINARY", "server/ptoserve")
PTOCTL = os.environ.get("PTOCTL_BINARY", "client/ptoctl/ptoctl")
DOC_ADDRESS = "127.0.0.1:50051"
DOC_HTTP = "http://127.0.0.1:8000"
# A command or block that runs longer fails the test.
COMMAND_TIMEOUT_S = 60

# (document, the command's first line as the document writes it): why it
# does not run here.
EXEMPTIONS = {
    ("docs/DEPLOYING.md", "ptoctl --tls_ca=pki/other-ca.crt health"):
        "needs a TLS server and tools/make_certs.sh's second CA; "
        "security_test checks this message against a server started with "
        "that script's certificates",
    ("docs/DEPLOYING.md",
     "ptoctl --tls_ca=pki/ca.crt health   # the server wants a client "
     "certificate"):
        "needs a TLS server that wants client certificates; security_test "
        "checks this message",
    ("docs/METRICS.md", "curl -s http://127.0.0.1:9464/metrics"):
        "an excerpt of a scrape: its counts and latency buckets depend on "
        "every call made before it and on their timing; metrics_test checks "
        "the series",
    ("client/python/README.md",
     "~/.venvs/ptoserve/bin/pip install --no-build-isolation --no-index "
     "./client/python"):
        "installs into a venv in the home directory; install_test does it "
        "in a scratch venv",
    ("client/python/README.md",
     "cd /tmp && ~/.venvs/ptoserve/bin/python -c 'import ptoserve_client; "
     "print(ptoserve_client.__file__)'"):
        "needs the venv of the exempted install above; install_test checks "
        "where the modules come from",
}

# Commands that run a Bazel target, as bazel run runs it (no Bazel inside a
# test): (the start of the command, the program it runs). The program runs
# from a directory of its own (bazel_run_dir), as bazel run's from its runfiles, with
# BUILD_WORKING_DIRECTORY the directory the command ran in.
REWRITES = [
    ("bazel run //client/python:example -- ",
     "/usr/bin/python3 \"$PWD/client/python/example.py\""),
    ("bazel run -c opt //examples/cpp:first_request -- ",
     os.path.abspath("examples/cpp/first_request")),
    ("bazel run -c opt //client:shared_memory_example -- ",
     os.path.abspath("client/shared_memory_example")),
    ("bazel run -c opt //examples/cpp:xor_kernel -- ",
     os.path.abspath("examples/cpp/xor_kernel")),
]

ERROR_WITH_CODE = re.compile(r"^ptoctl: [A-Z][A-Z_]+: ")
STREAM_ERROR = re.compile(r"^job \S+: (?!OK$)[A-Z][A-Z_]+: ")
# What ptoctl failed to do itself once the server answered: exit 1.
LOCAL_FAILURE = re.compile(r"^ptoctl: --[a-z_]+: cannot (write|make) ")


class Example:
    """One command of a console block, or one Python block with its
    output."""

    def __init__(self, doc, line, kind, code, shown):
        self.doc = doc          # the document's path
        self.line = line        # where the command or block starts, from 1
        self.kind = kind        # "console" or "python"
        self.code = code        # the command's lines, or the Python code
        self.shown = shown      # the output lines the document shows

    def key(self):
        return (self.doc, self.code.split("\n")[0])

    def where(self):
        return f"{self.doc}:{self.line}"


def fence(line):
    """The language of a fence line (``` followed by it), or None."""
    stripped = line.strip()
    return stripped[3:] if stripped.startswith("```") else None


def examples(doc, text):
    """Every console command and Python block with output of `text`."""
    lines = text.split("\n")
    found = []
    i = 0
    while i < len(lines):
        language = fence(lines[i])
        if language is None:
            i += 1
            continue
        start = i + 1
        end = start
        while end < len(lines) and fence(lines[end]) is None:
            end += 1
        body = lines[start:end]
        if language == "console":
            found.extend(console_commands(doc, start + 1, body))
        elif language == "python":
            shown = shown_after(lines, end + 1)
            if shown is not None:
                found.append(Example(doc, start + 1, "python",
                                     "\n".join(body) + "\n", shown))
        i = end + 1
    return found


def console_commands(doc, first_line, body):
    commands = []
    continued = False
    for n, line in enumerate(body):
        if continued:
            commands[-1].code += "\n" + line
            continued = line.endswith("\\")
        elif line.startswith("$ "):
            commands.append(Example(doc, first_line + n, "console", line[2:],
                                    []))
            continued = line.endswith("\\")
        elif commands:
            commands[-1].shown.append(line)
        else:
            raise AssertionError(f"{doc}:{first_line + n}: a console block "
                                 f"starts with output, not a `$ ` command")
    return commands


def shown_after(lines, i):
    """The lines of the block after a Python block when a paragraph
    "prints" comes between them, else None."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or lines[i].strip() != "prints":
        return None
    i += 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or fence(lines[i]) is None:
        return None
    end = i + 1
    while end < len(lines) and fence(lines[end]) is None:
        end += 1
    return lines[i + 1:end]


def normalise(text):
    """Timings and ids (the module's docstring lists them)."""
    text = re.sub(r'"(ts|dur|[a-z_]+_us)": \d+(?:\.\d+)?', r'"\1": <time>',
                  text)
    text = re.sub(r'"batch_id": \d+', '"batch_id": <id>', text)
    text = re.sub(r"\b\d+(?:\.\d+)?(?:ns|us|µs|ms|s)\b", "<time>", text)
    return re.sub(r"\bbatch \d+", "batch <id>", text)


def pattern(shown):
    """A regular expression for the output `shown` (normalised lines, with
    the docs' elisions)."""
    parts = []
    for line in shown:
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(
                re.escape(line).replace(re.escape(", ..."), ", [^\n]*?") +
                r"\n")
    return re.compile("".join(parts))


def expected_exit(example):
    if example.kind == "python":
        return 0
    for line in example.shown:
        if (ERROR_WITH_CODE.match(line) or STREAM_ERROR.match(line) or
                LOCAL_FAILURE.match(line)):
            return 1
    for line in example.shown:
        if line.startswith("ptoctl: "):
            return 2
    return 0


class DocsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        # The server's address and HTTP URL, from its start-up lines.
        cls.server, found = server_process.start_and_read(
            ["--address=127.0.0.1:0", "--metrics_address=",
             "--http_address=127.0.0.1:0"],
            {"address": "listening on ", "http": "HTTP/JSON API on "})
        # SIGTERM; it must exit 0.
        cls.addClassCleanup(server_process.stop_server, cls.server)
        cls.address = found["address"]
        cls.http = found["http"]
        cls.root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.addClassCleanup(shutil.rmtree, cls.root, ignore_errors=True)
        # Where a `bazel run` program runs (its runfiles, for Bazel): a
        # file it writes to a relative path lands there, not where the
        # next command of the page looks for it.
        cls.bazel_run_dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.addClassCleanup(shutil.rmtree, cls.bazel_run_dir,
                            ignore_errors=True)
        cls.scratch_root()

    @classmethod
    def scratch_root(cls):
        """The scratch directory the commands run in, laid out like the
        repository root."""
        examples = os.path.join(cls.root, "examples")
        os.makedirs(examples)
        for name in sorted(os.listdir("examples")):
            path = os.path.join("examples", name)
            if not name.startswith("BUILD") and os.path.isfile(path):
                shutil.copy(path, examples)
        # ptoctl, first on PATH: this server unless the command names one.
        bin_dir = os.path.join(cls.root, ".bin")
        os.makedirs(bin_dir)
        wrapper = os.path.join(bin_dir, "ptoctl")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\n'
                    'for a in "$@"; do\n'
                    '  case "$a" in %s|--server|--server=*) exec %s "$@";; '
                    'esac\n'
                    'done\n'
                    'exec %s --server=%s "$@"\n' %
                    (cls.address, os.path.abspath(PTOCTL),
                     os.path.abspath(PTOCTL), cls.address))
        os.chmod(wrapper, 0o755)
        os.makedirs(os.path.join(cls.root, "client", "python"))
        shutil.copy("client/python/example.py",
                    os.path.join(cls.root, "client", "python"))
        # The client and its generated modules, wherever this test found
        # them.
        cls.env = dict(os.environ)
        cls.env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in
            os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
        cls.env["PYTHONDONTWRITEBYTECODE"] = "1"
        cls.env["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")

    def substituted(self, code):
        code = code.replace(DOC_HTTP, self.http)
        code = code.replace(DOC_ADDRESS, self.address)
        for start, program in REWRITES:
            if code.startswith(start):
                code = (f"env -C {self.bazel_run_dir} "
                        f"BUILD_WORKING_DIRECTORY=\"$PWD\" {program} " +
                        code[len(start):])
        return code

    def printed(self, text):
        """What ran printed, with the server's addresses as the docs'."""
        text = text.replace(self.http, DOC_HTTP)
        return text.replace(self.address, DOC_ADDRESS)

    def run_example(self, example):
        """(exit status, output) of one example."""
        code = self.substituted(example.code)
        if example.kind == "console":
            args = ["bash", "-c", code]
            stderr = subprocess.STDOUT
        else:
            args = ["/usr/bin/python3", "-c", code]
            stderr = subprocess.PIPE
        done = subprocess.run(args, cwd=self.root, env=self.env,
                              stdout=subprocess.PIPE, stderr=stderr,
                              timeout=COMMAND_TIMEOUT_S)
        output = done.stdout.decode(errors="replace")
        if example.kind == "python" and done.returncode != 0:
            output += done.stderr.decode(errors="replace")
        return done.returncode, self.printed(output)

    def check(self, example):
        """A description of how `example` differs from its doc, or None."""
        try:
            status, output = self.run_example(example)
        except subprocess.TimeoutExpired:
            return (f"{example.where()}: {example.code.splitlines()[0]}\n"
                    f"still running after {COMMAND_TIMEOUT_S} s")
        output = normalise(output)
        shown = [normalise(line) for line in example.shown]
        # Blank lines between a command's output and the next command, or
        # the block's end, are the doc's layout.
        while shown and example.kind == "console" and not shown[-1]:
            shown.pop()
        problems = []
        if not pattern(shown).fullmatch(output):
            diff = difflib.unified_diff(
                shown, output.split("\n")[:-1] if output.endswith("\n")
                else output.split("\n") + ["(no newline at the end)"],
                "shown", "printed", lineterm="")
            problems.append("output differs:\n" + "\n".join(diff))
        wanted = expected_exit(example)
        if (status == 0) != (wanted == 0) or (wanted and status != wanted):
            problems.append(f"exit status {status}, expected {wanted}")
        if not problems:
            return None
        return (f"{example.where()}: {example.code.splitlines()[0]}\n" +
                "\n".join(problems))

    def test_every_example_prints_what_its_doc_shows(self):
        failures = []
        exempted = set()
        ran = {doc: 0 for doc in DOCS}
        for doc in DOCS:
            with open(os.path.join(CHECKED, doc), encoding="utf-8") as f:
                text = f.read()
            for example in examples(doc, text):
                if example.key() in EXEMPTIONS:
                    exempted.add(example.key())
                    continue
                ran[doc] += 1
                problem = self.check(example)
                if problem:
                    failures.append(problem)
        for key in sorted(set(EXEMPTIONS) - exempted):
            failures.append(f"exemption {key} matches no command: remove it")
        for doc, count in ran.items():
            with open(os.path.join(CHECKED, doc), encoding="utf-8") as f:
                fenced = re.search(r"^```console$", f.read(), re.M)
            if fenced and count == 0 and not any(k[0] == doc
                                                 for k in exempted):
                failures.append(f"{doc}: has console blocks, no example ran")
        print(f"examples run: {ran}; exempted: {len(exempted)}")
        if failures:
            self.fail("\n\n".join(failures))


def help_flags(binary):
    """The flags `binary --help` lists (`  --NAME=...` or `  --NAME`)."""
    done = subprocess.run([binary, "--help"], capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT_S)
    return sorted(set(re.findall(r"^  --([a-z0-9_]+)\b",
                                 done.stdout + done.stderr, re.M)))


def flags_md_sections(text):
    """FLAGS.md's "## Title" -> the flags its table's rows name first."""
    sections = {}
    title = None
    for line in text.split("\n"):
        if line.startswith("## "):
            title = line[3:].strip()
        elif title and line.startswith("| `--"):
            cell = line.split("|")[1]
            sections.setdefault(title, set()).update(
                re.findall(r"`--([a-z0-9_]+)`", cell))
    return sections


def headings(text):
    """The titles of a Markdown text's headings, outside code fences."""
    titles = set()
    inside = False
    for line in text.split("\n"):
        if fence(line) is not None:
            inside = not inside
        elif not inside and line.startswith("#"):
            titles.add(line.lstrip("#").strip())
    return titles


# `docs/PAGE.md, "Title"`, `README, "Title"`, `client/python/README.md`,
# "Title": a citation of a section.
CITATION = re.compile(
    r'`?((?:docs/[A-Z_]+\.md)|README(?:\.md)?|client/python/README\.md)`?'
    r'(?:\'s)?,?\s+"([^"]+)"')


class DocsAgreeWithTheBinariesTest(unittest.TestCase):

    def test_every_ptoserve_flag_is_in_flags_md(self):
        self.check_flags(PTOSERVE, "docs/FLAGS.md")

    def test_every_ptoctl_flag_is_in_cli_md(self):
        self.check_flags(PTOCTL, "docs/CLI.md")

    def test_ptoserve_help_groups_are_flags_md_sections(self):
        """--help lists the flags most people set first, then the rest
        under FLAGS.md's section titles, each under its own section's."""
        done = subprocess.run([PTOSERVE, "--help"], capture_output=True,
                              text=True, timeout=COMMAND_TIMEOUT_S)
        groups = []
        for line in done.stdout.split("\n"):
            title = re.match(r"^([A-Za-z][^:]*):$", line)
            flag = re.match(r"^  --([a-z0-9_]+)=", line)
            if title:
                groups.append((title.group(1), set()))
            elif flag and groups:
                groups[-1][1].add(flag.group(1))
        self.assertGreater(len(groups), 5, done.stdout)
        self.assertEqual(groups[0][0], "Flags most people set")
        first = groups[0][1]
        with open(os.path.join(CHECKED, "docs/FLAGS.md"),
                  encoding="utf-8") as f:
            sections = flags_md_sections(f.read())
        for title, flags in groups[1:]:
            self.assertIn(title, sections, "a --help group FLAGS.md lacks")
            self.assertEqual(flags, sections[title] - first,
                             f"--help's {title!r} and FLAGS.md's differ")
        shown = {title for title, _ in groups}
        left = [t for t, flags in sections.items()
                if flags - first and t not in shown]
        self.assertEqual(left, [], "FLAGS.md sections --help lacks")

    def check_flags(self, binary, doc):
        flags = help_flags(binary)
        self.assertGreater(len(flags), 10, f"{binary} --help")
        with open(os.path.join(CHECKED, doc), encoding="utf-8") as f:
            text = f.read()
        missing = [f for f in flags
                   if not re.search(rf"--{f}\b", text)]
        self.assertEqual(missing, [], f"{doc} does not name these flags of "
                         f"{os.path.basename(binary)} --help")

    def test_every_cited_section_exists(self):
        texts = {}
        for doc in DOCS:
            with open(os.path.join(CHECKED, doc), encoding="utf-8") as f:
                texts[doc] = f.read()
        wrong = []
        for doc, text in texts.items():
            for page, title in CITATION.findall(" ".join(text.split())):
                page = "README.md" if page == "README" else page
                if page not in texts:
                    wrong.append(f"{doc}: cites {page}, not a page")
                elif title not in headings(texts[page]):
                    wrong.append(f'{doc}: cites {page}, "{title}": no such '
                                 f"heading")
        self.assertEqual(wrong, [])

    def test_the_build_rule_shown_is_the_example_package(self):
        with open(os.path.join(CHECKED, "docs/CLIENTS.md"),
                  encoding="utf-8") as f:
            text = f.read()
        rule = re.search(r"```bzl\n(cc_binary\(.*?\n\))\n```", text,
                         re.S).group(1)
        with open("examples/cpp/BUILD.bazel", encoding="utf-8") as f:
            self.assertIn(rule, f.read())


if __name__ == "__main__":
    unittest.main()
