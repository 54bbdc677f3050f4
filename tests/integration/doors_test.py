"""Every front door keeps docs/SECURITY.md's promises ("One pipeline, two
doors"), attacked from outside as a client would: two real clients, an
attacker and a victim that makes one small TAND at a time, over gRPC and
HTTP, its every call answered and its p99 under a bound. Each case is an
attack that once broke a promise on one door: a body that trickles, HTTP
clients that close with their jobs queued and running, large JSON bodies
beside health probes, a page of another site whose name points here (DNS
rebinding), and one user's many gRPC connections.

On loopback a client without a token is its user, so the attacker connects
as another user (other_user.py): the test is two clients, as two users on
one machine are. Needs root for that."""

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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import other_user  # noqa: E402
import raw_grpc  # noqa: E402

import h2.exceptions  # noqa: E402
import numpy as np  # noqa: E402
from ptoserve.v1 import job_pb2, tile_pb2  # noqa: E402
from ptoserve_client import Client  # noqa: E402
from server_process import (  # noqa: E402
    scrape, sanitized, start_and_read, stop_server)

SERVER = os.environ.get("PTOSERVE_BINARY", "server/ptoserve")
PTOBENCH = os.environ.get("PTOBENCH_BINARY", "bench/ptobench")
SANITIZED = sanitized(SERVER)
# The victim's p99, and each health probe, stay under these in plain
# builds (what was measured is printed; docs/SECURITY.md has the figures);
# under a sanitizer, everything is many times slower and only liveness is
# checked. The victim's p99 measured 6 to 17 ms on a quiet machine and up to
# 284 ms under tools/flakes' busy loops (the machine's scheduler, not the
# server); an attack that holds what all share takes it to seconds or to
# failures.
VICTIM_P99_S = 10.0 if SANITIZED else 1.0
# ptobench's p99 of one call at a time beside 50 connections of another user
# on a server of one core: 8 to 16 ms measured (-c opt; up to 198 ms in
# fastbuild under tools/flakes' busy loops), 813 to 1,712 ms when every
# connection was a client of its own.
GRPC_P99_S = 10.0 if SANITIZED else 0.5
# Readiness beside eight connections of 1 MiB JSON bodies: nine probes in
# ten under PROBE_P90_S and every one under PROBE_MAX_S. Measured p50 about
# 1 ms, the slowest of 80 8 to 685 ms under tools/flakes' busy loops (the
# machine's scheduler, not a parse); when bodies were parsed on the polling
# threads, 7 of 8 probes took over 200 ms and the slowest 2.4 s.
PROBE_P90_S = 10.0 if SANITIZED else 0.1
PROBE_MAX_S = 10.0 if SANITIZED else 2.0
# Every wait below ends by itself: a state reached or this bound passed.
BOUND_S = 30


def wait_for(what, predicate, bound=BOUND_S):
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def percentile(seconds, p):
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, len(ordered) * p // 100)]


def tand_json(target="TARGET_A5"):
    """A 16x16 int32 TAND, as JSON: a's values and b's fill."""
    return {"target": target, "tiles": {
        "a": {"dtype": "DTYPE_INT32", "rows": 16, "cols": 16,
              "values": list(range(256))},
        "b": {"dtype": "DTYPE_INT32", "rows": 16, "cols": 16, "fill": 0x0F}},
        "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a",
                          "src1": "b"}],
        "outputs": ["c"]}


class Victim:
    """One client making one small TAND at a time, over HTTP and gRPC in
    turn, each answer checked, until stopped. Its calls go to a5, so that
    the host target's job counts are the attacker's alone."""

    def __init__(self, test, grpc_address, http_url):
        self.grpc_address = grpc_address
        self.http = urllib.parse.urlsplit(http_url)
        self.seconds = []
        self.failures = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run)
        self.thread.start()
        # Stopped whatever becomes of the test.
        test.addCleanup(self.halt)

    def halt(self):
        self.stopping.set()
        self.thread.join(BOUND_S)

    def run(self):
        a = np.arange(256, dtype=np.int32).reshape(16, 16)
        b = np.full((16, 16), 0x0F, dtype=np.int32)
        body = json.dumps(tand_json()).encode()
        want = [v & 0x0F for v in range(256)]
        with Client(self.grpc_address) as client:
            while not self.stopping.is_set():
                start = time.perf_counter()
                try:
                    conn = http.client.HTTPConnection(
                        self.http.hostname, self.http.port, timeout=BOUND_S)
                    conn.request("POST", "/v1/jobs:execute", body,
                                 {"Content-Type": "application/json"})
                    answer = conn.getresponse()
                    got = answer.read()
                    conn.close()
                    if answer.status != 200 or json.loads(got)["tiles"]["c"][
                            "values"] != want:
                        self.failures.append(f"HTTP {answer.status}: "
                                             f"{got[:200]!r}")
                    self.seconds.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    result = client.tand(a, b, target="a5")
                    if not np.array_equal(result.dst, a & b):
                        self.failures.append("gRPC: a wrong answer")
                    self.seconds.append(time.perf_counter() - start)
                except Exception as e:  # noqa: BLE001: every failure counts
                    self.failures.append(f"{type(e).__name__}: {e}")
                    self.seconds.append(time.perf_counter() - start)

    def stop(self, test, what, p99_bound=VICTIM_P99_S):
        """Stops once it has made its first calls, and checks every call
        was answered right and their p99 is under `p99_bound` seconds (under
        a sanitizer, VICTIM_P99_S)."""
        # An attack over quickly on a loaded machine may leave the victim
        # few calls: its p99 is that of more than ten.
        wait_for(f"{what}: the victim's first calls",
                 lambda: len(self.seconds) > 10 or not self.thread.is_alive())
        self.halt()
        p50, p99 = percentile(self.seconds, 50), percentile(self.seconds, 99)
        print(f"{what}: the victim's {len(self.seconds)} calls, p50 "
              f"{p50 * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms", file=sys.stderr)
        test.assertEqual(self.failures, [])
        test.assertGreater(len(self.seconds), 10)
        test.assertLess(p99, VICTIM_P99_S if SANITIZED else p99_bound)


class Attacker:
    """An attack run by a process of its own (this file, run as
    `doors_test.py attack NAME TARGET N`), so that its work never slows the
    victim's measurement in this one; its connections are another user's.
    It says "under way" once each of its N workers has been answered, and
    how many requests were answered when it stops."""

    def __init__(self, test, name, target, n):
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "attack", name, target,
             str(n)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        test.addCleanup(self.stop)
        line = []
        reader = threading.Thread(
            target=lambda: line.append(self.process.stdout.readline()))
        reader.start()
        reader.join(BOUND_S)
        test.assertEqual(line, ["under way\n"])

    def stop(self):
        """Ends the attack; how many of its requests were answered."""
        if self.process.stdin.closed:
            return 0
        self.process.stdin.close()  # the attack's end
        try:
            self.process.wait(timeout=BOUND_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        out = self.process.stdout.read()
        self.process.stdout.close()
        return int(out.strip() or 0)


def attack(name, target, n):
    """Runs attack `name` against `target` with `n` workers until stdin
    closes; prints "under way", then how many requests were answered."""
    answered = [0] * n
    stopping = threading.Event()
    if name == "json-bodies":
        # Just under 1 MiB of numbers in one tile's values (the most a JSON
        # body may have, --max_json_kb), sent again once answered.
        body = (b'{"tiles": {"a": {"values": [' + b"1," * ((1 << 19) - 64) +
                b'1]}}}')

        def work(i):
            with other_users_socket(target) as s:
                f = s.makefile("rb")
                while not stopping.is_set():
                    s.sendall(post_head(len(body)) + body)
                    length = 0
                    while (line := f.readline()) not in (b"\r\n", b""):
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":")[1])
                    f.read(length)
                    answered[i] += 1
    else:  # grpc-fills: small requests that make two 4 MiB tiles each
        job = job_pb2.Job(target=job_pb2.TARGET_HOST)
        for tile, fill in (("a", 6), ("b", 3)):
            job.tiles[tile].CopyFrom(tile_pb2.Tile(
                dtype=tile_pb2.DTYPE_INT32, rows=1024, cols=1024,
                valid_rows=1, valid_cols=16, fill=fill))
        # Its dst is small: the answer costs nothing to read.
        job.tiles["c"].CopyFrom(tile_pb2.Tile(dtype=tile_pb2.DTYPE_INT32,
                                              rows=1, cols=16))
        job.instructions.add(opcode=job_pb2.OPCODE_TAND, dst="c", src0="a",
                             src1="b")
        request = raw_grpc.frame(job.SerializeToString())

        def work(i):
            conn = raw_grpc.Connection(target, uid=other_user.OTHER_USER)
            try:
                while not stopping.is_set():
                    # Eight at once: the client's own work is not what
                    # bounds the attack.
                    answered[i] += len(conn.call_many(
                        "/ptoserve.v1.TileCompute/Execute", request, 8))
            except (OSError, h2.exceptions.ProtocolError):
                pass  # the server closed it: this worker is done
            finally:
                conn.close()
    workers = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for w in workers:
        w.start()
    wait_for("every worker's first answer", lambda: min(answered) > 0)
    print("under way", flush=True)
    sys.stdin.read()
    stopping.set()
    for w in workers:
        w.join(BOUND_S)
    print(sum(answered), flush=True)


def other_users_socket(url):
    parts = urllib.parse.urlsplit(url)
    return other_user.connect_as(other_user.OTHER_USER, parts.hostname,
                                 parts.port, BOUND_S)


def post_head(length, host="127.0.0.1"):
    return (b"POST /v1/jobs:execute HTTP/1.1\r\nHost: " + host.encode() +
            b"\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % length)


@unittest.skipUnless(other_user.available(), "needs root, to connect as "
                     "another user")
class DoorsTest(unittest.TestCase):

    def start(self, *flags, pinned=False):
        """The server with `flags`; `pinned`: on core 0, the test (and the
        processes it starts) on core 1, so that the server's one core is
        what its clients share."""
        pin = []
        if pinned and len(os.sched_getaffinity(0)) >= 2:
            pin = ["taskset", "-c", "0"]
            before = os.sched_getaffinity(0)
            os.sched_setaffinity(0, {1})
            self.addCleanup(os.sched_setaffinity, 0, before)
        self.server, found = start_and_read(
            ["--address=127.0.0.1:0", "--metrics_address=127.0.0.1:0",
             "--http_address=127.0.0.1:0", *flags],
            {"address": "listening on ", "http": "HTTP/JSON API on ",
             "metrics": "metrics on "}, prefix=tuple(pin))
        self.address, self.url, self.metrics = (
            found["address"], found["http"], found["metrics"])
        self.addCleanup(stop_server, self.server, 30)

    def series(self, name):
        return scrape(self.metrics).get(name, 0.0)

    def held(self):
        return self.series("ptoserve_memory_held_bytes")

    def test_a_trickled_body_holds_what_it_sent_and_is_cut_off(self):
        # Twelve bodies that declare 64 MiB each (768 MiB: the whole budget)
        # and send a byte every half second, JSON bodies being allowed that
        # large (by default they are refused on their head, over 1 MiB).
        self.start("--http_head_timeout=2s", "--max_json_kb=65536")
        bodies = [other_users_socket(self.url) for _ in range(12)]
        for s in bodies:
            s.sendall(post_head(64 << 20) + b"{")
        # Each holds its first 64 KiB step, not what it declares.
        wait_for("every head to be read", lambda: self.held() >= 12 << 16)
        victim = Victim(self, self.address, self.url)
        closed = set()
        deadline = time.monotonic() + BOUND_S
        while len(closed) < len(bodies) and time.monotonic() < deadline:
            self.assertLessEqual(self.held(), (12 << 16) + (4 << 20))
            for i, s in enumerate(bodies):
                if i in closed:
                    continue
                try:
                    s.sendall(b" ")
                except OSError:
                    closed.add(i)
            time.sleep(0.5)
        victim.stop(self, "12 bodies trickled")
        # Cut off: a body no faster than that is past its rate once the
        # head timeout has passed since its head.
        self.assertEqual(len(closed), len(bodies))
        self.assertGreaterEqual(
            self.series("ptoserve_http_connections_too_slow_total"), 12)
        wait_for("the holds to be given back", lambda: self.held() == 0)
        for s in bodies:
            s.close()

    def test_a_closed_connection_drops_its_job(self):
        # 13 jobs of 4000 TANDs over two 2048x2048 int32 fills, each sent on
        # a connection closed right after: dropped queued or running, and
        # their holds given back, never run to the end.
        self.start()
        job = {"target": "TARGET_HOST", "tiles": {
            name: {"dtype": "DTYPE_INT32", "rows": 2048, "cols": 2048,
                   "fill": fill} for name, fill in (("a", 6), ("b", 3))},
            "instructions": [{"opcode": "OPCODE_TAND", "dst": "c",
                              "src0": "a", "src1": "b"}] * 4000}
        body = json.dumps(job).encode()
        victim = Victim(self, self.address, self.url)
        for _ in range(13):
            with other_users_socket(self.url) as s:
                s.sendall(post_head(len(body)) + body)
        # Every job but the victim's (a5), refused before it was decoded
        # ("unknown") or after.
        def answered():
            return sum(value for name, value in scrape(self.metrics).items()
                       if name.startswith("ptoserve_jobs_total{") and
                       'target="a5"' not in name)
        wait_for("all 13 jobs to be answered", lambda: answered() == 13,
                 bound=10)
        wait_for("the holds to be given back", lambda: self.held() == 0,
                 bound=5)
        victim.stop(self, "13 jobs whose clients closed")
        self.assertEqual(
            self.series('ptoserve_jobs_total{target="host",code="OK"}'), 0)
        cancelled = sum(
            value for name, value in scrape(self.metrics).items()
            if name.startswith("ptoserve_jobs_total{") and
            'code="CANCELLED"' in name and 'target="a5"' not in name)
        self.assertGreaterEqual(cancelled, 1)

    def test_health_is_answered_behind_no_parse(self):
        # Eight connections send 1 MiB bodies of numbers, one after another;
        # readiness is asked for every 50 ms meanwhile, as a balancer would.
        self.start()
        attacker = Attacker(self, "json-bodies", self.url, 8)
        victim = Victim(self, self.address, self.url)
        parts = urllib.parse.urlsplit(self.url)
        probes = []
        for _ in range(80):
            start = time.perf_counter()
            conn = http.client.HTTPConnection(parts.hostname, parts.port,
                                              timeout=BOUND_S)
            conn.request("GET", "/v2/health/ready")
            status = conn.getresponse().status
            conn.close()
            probes.append(time.perf_counter() - start)
            self.assertEqual(status, 200)
            time.sleep(0.05)
        victim.stop(self, "8 connections of 1 MiB JSON bodies")
        sent = attacker.stop()
        print(f"readiness: {len(probes)} probes, slowest "
              f"{max(probes) * 1e3:.2f} ms, p90 "
              f"{percentile(probes, 90) * 1e3:.2f} ms, p50 "
              f"{percentile(probes, 50) * 1e3:.2f} ms; {sent} bodies "
              f"parsed meanwhile", file=sys.stderr)
        self.assertGreater(sent, 8)
        self.assertLess(percentile(probes, 90), PROBE_P90_S)
        self.assertLess(max(probes), PROBE_MAX_S)

    def test_a_rebound_host_is_misdirected(self):
        self.start("--http_allowed_hosts=ptoserve.test")
        port = urllib.parse.urlsplit(self.url).port
        body = json.dumps(tand_json()).encode()
        jobs = 'ptoserve_jobs_total{target="a5",code="OK"}'

        def post(host, origin=None):
            parts = urllib.parse.urlsplit(self.url)
            conn = http.client.HTTPConnection(parts.hostname, parts.port,
                                              timeout=BOUND_S)
            headers = {"Content-Type": "application/json", "Host": host,
                       "Content-Length": str(len(body))}
            if origin:
                headers["Origin"] = origin
            conn.putrequest("POST", "/v1/jobs:execute", skip_host=True)
            for k, v in headers.items():
                conn.putheader(k, v)
            conn.endheaders(body)
            answer = conn.getresponse()
            got = answer.status, answer.read()
            conn.close()
            return got
        # A page of http://evil.test:PORT, its name pointed at this server:
        # its Host and Origin agree, and name another server.
        evil = f"evil.test:{port}"
        status, answer = post(evil, f"http://{evil}")
        self.assertEqual(status, 421, answer)
        self.assertIn(b"evil.test", answer)
        self.assertEqual(post(evil)[0], 421)
        self.assertEqual(self.series(jobs), 0)
        # The page itself, and the probes, are refused to it too.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND_S)
        conn.putrequest("GET", "/", skip_host=True)
        conn.putheader("Host", evil)
        conn.endheaders()
        self.assertEqual(conn.getresponse().status, 421)
        conn.close()
        # This server's own names.
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost",
                     f"ptoserve.test:{port}", f"PTOSERVE.test:{port}"):
            self.assertEqual(post(host)[0], 200, host)
        self.assertEqual(self.series(jobs), 5)

    def test_one_users_connections_are_one_client(self):
        # One process of another user, 50 gRPC connections, each sending
        # jobs whose two 4 MiB fills the server makes (1x16 of them used),
        # against a server on one core; the victim is ptobench, whose own
        # timing no Python thread of this test can disturb.
        self.start(pinned=True)
        attacker = Attacker(self, "grpc-fills", self.address, 50)
        victim = subprocess.run(
            [PTOBENCH, f"--server={self.address}", "--target=a5",
             "--concurrency=1", "--duration=5s", "--warmup=0s",
             "--format=json"],
            capture_output=True, text=True, timeout=BOUND_S)
        answered = attacker.stop()
        self.assertEqual(victim.returncode, 0, victim.stderr)
        figures = json.loads(victim.stdout.strip().splitlines()[-1])
        print(f"50 connections of one user: the victim's "
              f"{figures['requests_per_s']:.0f} calls/s, p50 "
              f"{figures['p50_us'] / 1e3:.2f} ms, p99 "
              f"{figures['p99_us'] / 1e3:.2f} ms; the attacker's {answered} "
              f"calls answered", file=sys.stderr)
        self.assertEqual(figures["errors"], 0)
        self.assertLess(figures["p99_us"] / 1e6, GRPC_P99_S)

    def test_one_client_has_at_most_its_connections(self):
        self.start("--max_connections_per_client=4")

        def health(source=None, uid=None):
            """The health service's answer on a new connection ("closed":
            the server closed it first)."""
            try:
                conn = raw_grpc.Connection(self.address, source=source,
                                           uid=uid)
            except OSError:
                return "closed", None
            try:
                answer = conn.call("/grpc.health.v1.Health/Check",
                                   raw_grpc.frame(b""))
                return ("closed" if answer.reset else answer.status), conn
            except OSError:
                conn.close()
                return "closed", None
        held = [health() for _ in range(4)]
        self.assertEqual([status for status, _ in held], ["0"] * 4)
        # A fifth of the same user is closed as it is accepted, from
        # another address too: the client is the user, not its address.
        self.assertEqual(health()[0], "closed")
        self.assertEqual(health(source="127.0.0.2")[0], "closed")
        # Another user is not held back by this one.
        status, other = health(uid=other_user.OTHER_USER)
        self.assertEqual(status, "0")
        other.close()
        # One closed makes room for another.
        held.pop()[1].close()

        def served():
            status, conn = health()
            if conn is not None:
                conn.close()
            return status == "0"
        wait_for("a connection to be taken again", served)
        for _, conn in held:
            conn.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["attack"]:
        attack(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        unittest.main()
