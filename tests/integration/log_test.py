"""What the server logs (server/metrics/log.h), read from its standard
output: one line per call answered on either door at its level (OK calls
at debug, errors at info with their message), start-up and shutdown,
--log_format=json, and --log_rate bounding a flood of bad requests, what
it dropped counted and said."""

import http.client
import json
import os
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse

import numpy as np
from ptoserve_client import Client, PtoserveError
from server_process import metric

SERVER = os.environ.get("PTOSERVE_BINARY", "server/ptoserve")
# Every wait below ends by itself: a state reached or this bound passed.
BOUND_S = 30


class Server:
    """ptoserve on ephemeral ports with `flags`, every line it writes kept."""

    def __init__(self, *flags):
        self.process = subprocess.Popen(
            [SERVER, "--address=127.0.0.1:0", "--metrics_address=127.0.0.1:0",
             "--http_address=127.0.0.1:0", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self.lock = threading.Lock()
        threading.Thread(target=self.read, daemon=True).start()
        self.address = self.word_after("listening on ")
        self.url = self.word_after("HTTP/JSON API on ")
        self.metrics = self.word_after("metrics on ")

    def read(self):
        for line in self.process.stdout:
            with self.lock:
                self.lines.append(line.rstrip("\n"))

    def text(self):
        with self.lock:
            return list(self.lines)

    def wait_for(self, what, predicate):
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline:
            found = [line for line in self.text() if predicate(line)]
            if found:
                return found
            time.sleep(0.02)
        raise AssertionError(f"no line {what} in:\n" + "\n".join(self.text()))

    def word_after(self, marker):
        line = self.wait_for(f"with {marker!r}", lambda l: marker in l)[0]
        word = line.split(marker)[1].split()[0]
        return word.rstrip('"}')

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=BOUND_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def post(url, body):
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port,
                                      timeout=BOUND_S)
    conn.request("POST", "/v1/jobs:execute", body,
                 {"Content-Type": "application/json"})
    answer = conn.getresponse()
    answer.read()
    conn.close()
    return answer.status


def get(url, path):
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port,
                                      timeout=BOUND_S)
    conn.request("GET", path)
    answer = conn.getresponse()
    answer.read()
    conn.close()
    return answer.status


TAND = json.dumps({"tiles": {
    "a": {"dtype": "DTYPE_INT32", "rows": 1, "cols": 4, "fill": 6},
    "b": {"dtype": "DTYPE_INT32", "rows": 1, "cols": 4, "fill": 3}},
    "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a",
                      "src1": "b"}]}).encode()


class LogTest(unittest.TestCase):

    def test_a_line_per_call_on_both_doors_at_debug(self):
        server = Server("--log_level=debug")
        self.addCleanup(server.stop)
        with Client(server.address) as client:
            a = np.full((1, 4), 6, dtype=np.int32)
            client.tand(a, 3)
            with self.assertRaises(PtoserveError):
                client.tand(a, 3, target="a2a3")  # rows of 16 bytes
        self.assertEqual(post(server.url, TAND), 200)
        self.assertEqual(post(server.url, b"{}"), 400)
        ok = server.wait_for(
            "for the OK gRPC call",
            lambda l: l.startswith("ptoserve: grpc "
                                   "/ptoserve.v1.TileCompute/Execute from "
                                   "ipv4:127.0.0.1:") and ": OK in " in l)
        # Its client (this process's user), its time and its bytes.
        self.assertIn(f"(user {os.geteuid()}): OK in ", ok[0])
        self.assertRegex(ok[0], r"OK in \d+\.\d{3} ms, \d+ bytes in, \d+ out$")
        refused = server.wait_for("for the refused gRPC call",
                                  lambda l: ": INVALID_ARGUMENT in " in l)
        # An error's line carries its message.
        self.assertIn("32", refused[0])
        server.wait_for("for the OK HTTP call",
                        lambda l: l.startswith("ptoserve: http "
                                               "/v1/jobs:execute from ") and
                        ": 200 in " in l)
        server.wait_for("for the refused HTTP call",
                        lambda l: ": 400 in " in l and
                        l.endswith("job has no instructions"))
        # Start-up and shutdown.
        server.stop()
        lines = server.text()
        self.assertTrue(lines[0].startswith("ptoserve 0.1.0 listening on"),
                        lines[0])
        self.assertEqual(lines[-1], "ptoserve: stopped")

    def test_at_info_only_errors_are_logged(self):
        server = Server()
        self.addCleanup(server.stop)
        for _ in range(3):
            self.assertEqual(post(server.url, TAND), 200)
        self.assertEqual(get(server.url, "/nowhere"), 404)
        server.wait_for("for the 404", lambda l: ": 404 in " in l and
                        "no such path" in l)
        self.assertEqual([l for l in server.text() if ": 200 in " in l], [])

    def test_json_lines(self):
        server = Server("--log_level=debug", "--log_format=json")
        self.addCleanup(server.stop)
        self.assertEqual(post(server.url, TAND), 200)
        self.assertEqual(post(server.url, b""), 400)
        server.wait_for("for the empty body", lambda l: '"code": "400"' in l)
        server.stop()
        records = [json.loads(line) for line in server.text()]
        for r in records:
            self.assertEqual(set(r) >= {"time", "level", "event"}, True, r)
        self.assertEqual(records[0]["event"], "start")
        self.assertIn("listening on", records[0]["message"])
        calls = [r for r in records if r["event"] == "call"]
        ok = next(r for r in calls if r["code"] == "200")
        self.assertEqual(ok["level"], "debug")
        self.assertEqual(ok["door"], "http")
        self.assertEqual(ok["method"], "/v1/jobs:execute")
        self.assertEqual(ok["client"], f"user {os.geteuid()}")
        self.assertTrue(ok["peer"].startswith("ipv4:127.0.0.1:"), ok)
        self.assertEqual(ok["bytes_in"], len(TAND))
        self.assertGreater(ok["bytes_out"], 0)
        self.assertGreaterEqual(ok["duration_ms"], 0)
        refused = next(r for r in calls if r["code"] == "400")
        self.assertEqual(refused["level"], "info")
        self.assertIn("message", refused)
        self.assertEqual(records[-1]["event"], "stop")

    def test_a_flood_of_bad_requests_is_a_few_lines_and_a_count(self):
        server = Server("--log_rate=5")
        self.addCleanup(server.stop)
        for _ in range(200):
            self.assertEqual(get(server.url, "/nowhere"), 404)
        written = [l for l in server.text() if ": 404 in " in l]
        # The rate's burst, and what refilled while the flood went on.
        self.assertLess(len(written), 60)
        dropped = metric(server.metrics, "ptoserve_log_lines_dropped_total")
        self.assertGreaterEqual(dropped + len(written), 200)
        self.assertGreater(dropped, 100)
        # Once the rate allows a line again, how many were dropped is said.
        deadline = time.monotonic() + BOUND_S
        while (not any("log lines dropped" in l for l in server.text()) and
               time.monotonic() < deadline):
            get(server.url, "/nowhere")
            time.sleep(0.1)
        said = [l for l in server.text() if "log lines dropped" in l]
        self.assertTrue(said, "\n".join(server.text()[-10:]))
        self.assertRegex(said[0], r"ptoserve: \d+ log lines dropped: more "
                         r"than --log_rate=5 a second")


if __name__ == "__main__":
    unittest.main()
