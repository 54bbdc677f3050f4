"""What the server logs (server/log/log.h), read from its standard
output: one line per call answered on either door at its level (OK calls
at debug, errors at info with their message), start-up and shutdown,
--log_format=json, and --log_rate bounding a flood of bad requests, what
it dropped counted and said. With TLS: a call refused for its token
before any handler sees it is logged as the others are, and gRPC's own
lines (a failed handshake) come in the server's format, within its rate."""

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse

import grpc
import numpy as np
import other_user
from ptoserve.v1 import job_pb2, tile_pb2
from ptoserve_client import Client, PtoserveError, binary_job
from server_process import metric

SERVER = os.environ.get("PTOSERVE_BINARY", "server/ptoserve")
MAKE_CERTS = os.path.abspath("tools/make_certs.sh")
# Every wait below ends by itself: a state reached or this bound passed.
BOUND_S = 30


class Server:
    """ptoserve on ephemeral ports with `flags`, every line it writes kept."""

    def __init__(self, *flags):
        self.process = subprocess.Popen(
            [SERVER, "--address=127.0.0.1:0", "--metrics_address=127.0.0.1:0",
             "--http_address=127.0.0.1:0", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines = []
        # Lines that were not valid UTF-8, as read.
        self.invalid = []
        self.lock = threading.Lock()
        threading.Thread(target=self.read, daemon=True).start()
        self.address = self.word_after("listening on ")
        self.url = self.word_after("HTTP/JSON API on ")
        self.metrics = self.word_after("metrics on ")

    def read(self):
        for raw in self.process.stdout:
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                line = raw.decode("utf-8", "backslashreplace")
                self.invalid.append(line)
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

        def accounted():  # each 404 written or counted as dropped
            written = [l for l in server.text() if ": 404 in " in l]
            dropped = metric(server.metrics,
                             "ptoserve_log_lines_dropped_total")
            return written, dropped

        # A call is logged when its exchange ends, after its answer went
        # out: the last one's line (or its drop) may follow the answer.
        deadline = time.monotonic() + BOUND_S
        written, dropped = accounted()
        while dropped + len(written) < 200 and time.monotonic() < deadline:
            time.sleep(0.01)
            written, dropped = accounted()
        # The rate's burst, and what refilled while the flood went on.
        self.assertLess(len(written), 60)
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

    def test_no_clients_text_forges_a_line_or_breaks_a_record(self):
        # Names and bodies carrying a newline and a forged line, CR, ESC and
        # bytes that are not UTF-8, on both doors, in both formats: every
        # record stays one line, valid UTF-8, and in JSON valid JSON.
        forged = "x\nptoserve: forged\r\x1b[2J"
        for form in ("text", "json"):
            server = Server(f"--log_format={form}")
            self.addCleanup(server.stop)
            job = job_pb2.Job()
            job.tiles["a"].CopyFrom(tile_pb2.Tile(
                dtype=tile_pb2.DTYPE_INT32, rows=1, cols=8, fill=1))
            job.instructions.add(opcode=job_pb2.OPCODE_TAND, dst=forged,
                                 src0="a", src1=forged)
            with grpc.insecure_channel(server.address) as channel:
                execute = channel.unary_unary(
                    "/ptoserve.v1.TileCompute/Execute")
                with self.assertRaises(grpc.RpcError):
                    execute(job.SerializeToString(), timeout=BOUND_S)
            body = json.dumps({"tiles": {forged: {"dtype": "DTYPE_INT32",
                                                  "rows": 1, "cols": 8}},
                               "instructions": [{"opcode": "OPCODE_TAND",
                                                 "dst": "c", "src0": forged,
                                                 "src1": "nowhere"}]})
            self.assertEqual(post(server.url, body.encode()), 400)
            # protobuf's JSON parser quotes what it could not read.
            self.assertEqual(post(server.url, b'{"tiles": {"a\x1b\r\xff\xfe'
                                  b'": 1}}'), 400)
            self.assertEqual(post(server.url, b'{"\xff\r\nptoserve: '
                                  b'forged": 1}'), 400)
            refusals = lambda: [l for l in server.text() if any(
                code in l for code in ("INVALID_ARGUMENT", "): 400 in ",
                                       '"code": "400"'))]
            deadline = time.monotonic() + BOUND_S
            while len(refusals()) < 4 and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(len(refusals()), 4, "\n".join(server.text()))
            server.stop()
            lines = server.text()
            self.assertEqual(server.invalid, [])
            for line in lines:
                self.assertNotIn("\r", line)
                self.assertNotIn("\x1b", line)
                if form == "json":
                    json.loads(line)
                else:
                    self.assertTrue(line.startswith("ptoserve"), line)
                    self.assertFalse(line.startswith("ptoserve: forged"),
                                     line)
            if form == "text":
                self.assertTrue(any("\\x0aptoserve: forged" in l
                                    for l in lines), "\n".join(lines))

    @unittest.skipUnless(other_user.available(), "needs root, to connect "
                         "as another user")
    def test_one_clients_flood_leaves_anothers_lines_and_the_servers(self):
        # Another user's 400 bad calls against a rate of 5 lines a second:
        # this user's 5 bad calls are each written, and so are the server's
        # own lines at shutdown.
        server = Server("--log_rate=5")
        parts = urllib.parse.urlsplit(server.url)
        for i in range(400):
            with other_user.connect_as(other_user.OTHER_USER, parts.hostname,
                                       parts.port, BOUND_S) as flood:
                flood.sendall(b"GET /flood HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              b"Connection: close\r\n\r\n")
                while flood.recv(4096):
                    pass
            if i % 80 == 40:
                self.assertEqual(get(server.url, f"/mine-{i}"), 404)
        # Each of the flood's calls written or counted as dropped (a call is
        # logged once its answer went out).
        theirs = lambda: [l for l in server.text()
                          if f"(user {other_user.OTHER_USER})" in l and
                          "no such path" in l]
        deadline = time.monotonic() + BOUND_S
        while (len(theirs()) + metric(server.metrics,
                                      "ptoserve_log_lines_dropped_total")
               < 400 and time.monotonic() < deadline):
            time.sleep(0.01)
        server.stop()
        lines = server.text()
        mine = [l for l in lines if "no such path" in l and
                f"(user {os.geteuid()})" in l]
        self.assertEqual(len(mine), 5, "\n".join(lines))
        self.assertLess(len(theirs()), 60)
        self.assertTrue(any("SIGTERM, draining" in l for l in lines))
        self.assertEqual(lines[-1], "ptoserve: stopped")

    def test_with_tls_refused_calls_and_grpcs_own_lines_are_logged(self):
        pki = os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "log-pki")
        subprocess.run([MAKE_CERTS, pki, "1"], check=True,
                       capture_output=True)
        tokens = os.path.join(pki, "tokens")
        with open(tokens, "w") as f:
            f.write("right-token\n")
        server = Server("--log_format=json", "--log_rate=20",
                        f"--tls_cert={pki}/server.crt",
                        f"--tls_key={pki}/server.key",
                        f"--auth_token_file={tokens}")
        self.addCleanup(server.stop)
        records = lambda: [json.loads(l) for l in server.text()
                           if l.startswith("{")]
        # A call with a wrong token is refused by gRPC's auth processor,
        # before any handler runs.
        with open(f"{pki}/ca.crt", "rb") as f:
            credentials = grpc.ssl_channel_credentials(f.read())
        with grpc.secure_channel(server.address, credentials) as channel:
            execute = channel.unary_unary("/ptoserve.v1.TileCompute/Execute")
            a = np.full((1, 8), 6, np.int32)
            with self.assertRaises(grpc.RpcError) as refused:
                execute(binary_job("tand", a, a).SerializeToString(),
                        metadata=[("authorization", "Bearer wrong")],
                        timeout=BOUND_S)
            self.assertEqual(refused.exception.code(),
                             grpc.StatusCode.UNAUTHENTICATED)
        server.wait_for("for the refused call", lambda l:
                        '"code": "UNAUTHENTICATED"' in l)
        call = next(r for r in records()
                    if r.get("code") == "UNAUTHENTICATED")
        self.assertEqual(call["event"], "call")
        self.assertEqual(call["door"], "grpc")
        self.assertEqual(call["method"], "/ptoserve.v1.TileCompute/Execute")
        self.assertEqual(call["level"], "info")
        self.assertIn("message", call)
        # Plaintext bytes to the TLS port: gRPC's handshake fails and says
        # so, as a line of the server's log. A flood of them stays within
        # the rate, the rest counted.
        host, port = server.address.rsplit(":", 1)
        start = time.monotonic()
        for _ in range(100):
            with socket.create_connection((host, int(port)),
                                          timeout=BOUND_S) as s:
                s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" * 4)
                s.settimeout(BOUND_S)
                while s.recv(4096):
                    pass
        server.wait_for("from gRPC", lambda l: '"event": "grpc"' in l)
        ours = [r for r in records() if r.get("event") == "grpc"]
        self.assertTrue(all(r["message"].startswith("ptoserve: grpc: ") and
                            r["level"] == "info" for r in ours), ours[:3])
        self.assertTrue(any("andshake" in r["message"] for r in ours),
                        ours[:3])
        elapsed = time.monotonic() - start
        self.assertLessEqual(len(ours), 20 + 20 * elapsed + 1)
        self.assertFalse([l for l in server.text() if l.startswith("E1")],
                         "gRPC wrote past the server's log")
        if len(ours) < 100:
            self.assertGreater(metric(server.metrics,
                                      "ptoserve_log_lines_dropped_total"), 0)


if __name__ == "__main__":
    unittest.main()
