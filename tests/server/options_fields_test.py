"""Every setting of ServerOptions has a flag whose default is its field's,
or a comment saying why it has none.

flags_test (C++) compares each flag's default with its field's, one line
a field; a field added without its line would go unchecked, and an
embedded server and the program would start differently without anyone
seeing. This reads the option structs' declarations (the headers below)
and flags_test.cc, and fails for a field that is in neither flags_test's
comparisons nor under a comment saying "no flag" (its own, or the
comment of the member that holds it), naming the field and its header.
"""

import re
import sys
import unittest

# The headers that declare ServerOptions and every options struct it
# holds, however deep.
HEADERS = [
    "server/server.h",
    "server/transport/grpc_server.h",
    "server/transport/auth.h",
    "server/httpd/http_daemon.h",
    "core/engine.h",
    "core/job.h",
    "server/exec/scheduler.h",
    "server/exec/limits.h",
    "server/shm/shared_memory.h",
    "server/log/log.h",
]
# What messages call each setting where no flag names it: its field.
SETTING_NAMES = "common/setting_names.cc"
FLAGS_TEST = "tests/server/flags_test.cc"
NO_FLAG = re.compile(r"\bno flag\b", re.IGNORECASE)


def struct_bodies(text):
    """Each `struct NAME {...};` at the start of a line: NAME -> its body."""
    bodies = {}
    for match in re.finditer(r"^struct (\w+) \{\n", text, re.M):
        depth, i = 1, match.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        bodies[match.group(1)] = text[match.end():i - 1]
    return bodies


FIELD = re.compile(
    r"^(?:const\s+)?(?P<type>[\w:]+(?:<.*>)?)\s+(?P<name>\w+)"
    r"(?:\s*=\s*[^;]*|\{[^;]*\})?;$")


def fields(body):
    """The data members a struct's body declares, at its own depth: (type,
    name, the comment above it and beside it). A field with no comment
    right after another shares that one's (a comment over a group)."""
    found, comment, depth, group = [], [], 0, None
    for line in body.split("\n"):
        code, _, beside = line.partition("//")
        code = code.strip()
        if depth == 0 and not code and beside:
            comment.append(beside.strip())
            group = None
            continue
        match = FIELD.match(code) if depth == 0 else None
        if match:
            said = " ".join(comment + [beside.strip()]).strip()
            if not said and group is not None:
                said = group
            found.append((match.group("type"), match.group("name"), said))
            group = said
        else:
            group = None
        depth += code.count("{") - code.count("}")
        comment = []
    return found


def leaves(structs, name, prefix="", inherited=""):
    """Every field under struct `name`, by its path from ServerOptions:
    (path, the comments that bear on it)."""
    for type_, field, comment in fields(structs[name]):
        path = prefix + field
        said = inherited + " " + comment
        if type_ in structs:
            yield from leaves(structs, type_, path + ".", said)
        else:
            yield path, said


class OptionsFieldsTest(unittest.TestCase):

    def setUp(self):
        self.structs = {}
        for header in HEADERS:
            with open(header) as f:
                self.structs.update(struct_bodies(f.read()))
        with open(FLAGS_TEST) as f:
            flags_test = f.read()
        self.compared = set(re.findall(r"PTOSERVE_SAME\(([\w.]+)\)",
                                       flags_test))
        self.compared |= set(re.findall(r"\bflags\.([\w.]+)", flags_test))

    def test_the_reader_finds_the_fields_it_must(self):
        # What this test reads, read right: fields of every depth.
        paths = dict(leaves(self.structs, "ServerOptions"))
        for path in ("grpc.address", "http.threads", "metrics.address",
                     "engine.limits.max_tile_bytes", "scheduling.workers",
                     "limits.max_message_bytes", "shared_memory.enabled",
                     "tls.cert", "auth_token_file", "reflection"):
            self.assertIn(path, paths)
        self.assertGreater(len(paths), 50)

    def test_every_field_has_a_flag_or_says_why_not(self):
        unexplained = []
        for path, said in leaves(self.structs, "ServerOptions"):
            if path in self.compared or NO_FLAG.search(said):
                continue
            unexplained.append(path)
        self.assertEqual(
            unexplained, [],
            "ServerOptions fields that flags_test.cc does not compare with "
            "their flag's default, and whose comment (or their member's) "
            "does not say \"no flag\" and why: add the flag and its "
            "PTOSERVE_SAME line, or the comment (headers: "
            + ", ".join(HEADERS) + ")")

    def test_every_setting_name_is_a_field(self):
        # An embedded server's messages name the field to set, which must
        # be one: a path under ServerOptions, or LogOptions' own.
        with open(SETTING_NAMES) as f:
            table = re.search(r"kFieldNames = \{(.*?)\};", f.read(), re.S)
        names = re.findall(r'"([^"]+)"', table.group(1))
        self.assertGreater(len(names), 20)
        paths = set(dict(leaves(self.structs, "ServerOptions")))
        paths |= {"LogOptions." + field
                  for _, field, _ in fields(self.structs["LogOptions"])}
        self.assertEqual([n for n in names if n not in paths], [],
                         f"names in {SETTING_NAMES} that are no field")


if __name__ == "__main__":
    # Run from the workspace's root (Bazel runs a test in its runfiles,
    # which are laid out the same).
    unittest.main(argv=sys.argv[:1], verbosity=2)
