"""Three replicas behind Debian's HAProxy, configured by
deploy/haproxy/haproxy.cfg, restarted one at a time under load as a
rolling update does (SIGTERM, wait for the exit, start it again on the
same ports, wait until the proxy has it back), while gRPC clients call
Execute through the proxy and an HTTP client posts jobs to the HTTP/JSON
API through it.

Every call is counted: none may be lost (each ends, OK or with a status,
within its deadline) and each error that reaches a client must be one the
rolling restart explains: UNAVAILABLE from a replica that has been sent
SIGTERM and refuses new jobs until the proxy's next check takes it out
(about one 200 ms check interval per restart), or HAProxy's own 503 for a
call it could not place. Every OK answer is checked against the scalar
result, and the proxy must have spread the calls over all three replicas.

Usage: haproxy_test.py HAPROXY_CFG (with PTOSERVE_BINARY set)."""

import base64
import csv
import http.client
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

import grpc
import numpy as np
from ptoserve.v1 import job_pb2
from ptoserve_client import binary_job
from server_process import free_port, start_and_read, wait_for

CONFIG = os.path.abspath(sys.argv.pop(1))
HAPROXY = "/usr/sbin/haproxy"
# Every wait below is bounded by this.
WAIT_S = 60
CALL_TIMEOUT_S = 20
GRPC_THREADS = 3
# The replicas' own shutdown: the lame duck, during which late callers are
# answered UNAVAILABLE, and the grace for calls in flight.
REPLICA_FLAGS = ["--shutdown_delay=1s", "--lame_duck=500ms", "--shutdown_grace=5s",
                 "--trusted_proxies=127.0.0.1"]
# The server's words for a job it refused while shutting down.
SHUTTING_DOWN = ("shutting down", "draining", "stopping", "not accepting")


class Replica:
    """One ptoserve, started on ports it keeps across restarts."""

    def __init__(self, name: str):
        self.name = name
        self.process = None
        self.grpc = self.http = self.metrics = None
        self.start()

    def start(self) -> None:
        grpc_at = self.grpc or "127.0.0.1:0"
        http_at = self.http or "127.0.0.1:0"
        metrics_at = self.metrics or "127.0.0.1:0"
        self.process, found = start_and_read(
            [f"--address={grpc_at}", f"--http_address={http_at}",
             f"--metrics_address={metrics_at}", *REPLICA_FLAGS],
            {"grpc": "listening on ", "http": "HTTP/JSON API on ",
             "metrics": "metrics on "})
        self.grpc = found["grpc"]
        self.http = found["http"].removeprefix("http://").rstrip("/")
        self.metrics = found["metrics"].removeprefix("http://").removesuffix(
            "/metrics")

    def stop(self) -> int:
        """SIGTERM, as a rolling update sends; its exit code."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"{self.name} did not exit on SIGTERM")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class Tally:
    """Calls by outcome, thread-safe."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ok = 0
        self.wrong = []        # OK, but not the scalar result
        self.explained = {}    # error kind -> count
        self.examples = {}     # error kind -> its first text
        self.unexplained = []  # anything else

    def error(self, kind: str | None, text: str) -> None:
        with self.lock:
            if kind is None:
                self.unexplained.append(text)
            else:
                self.explained[kind] = self.explained.get(kind, 0) + 1
                self.examples.setdefault(kind, text)


def classify_grpc(error: grpc.RpcError) -> str | None:
    details = (error.details() or "").lower()
    if error.code() == grpc.StatusCode.UNAVAILABLE:
        if any(word in details for word in SHUTTING_DOWN):
            return "UNAVAILABLE from a replica shutting down"
        if "503" in details:
            return "UNAVAILABLE: HAProxy's 503, no replica up"
    return None


class HaproxyTest(unittest.TestCase):

    def setUp(self):
        self.scratch = tempfile.mkdtemp()
        self.replicas = [Replica(f"r{i}") for i in (1, 2, 3)]
        self.proxy_grpc = f"127.0.0.1:{free_port()}"
        self.proxy_http = f"127.0.0.1:{free_port()}"
        self.proxy_stats = f"127.0.0.1:{free_port()}"
        env = dict(os.environ,
                   PTOSERVE_PROXY_GRPC=self.proxy_grpc,
                   PTOSERVE_PROXY_HTTP=self.proxy_http,
                   PTOSERVE_PROXY_STATS=self.proxy_stats)
        for i, r in enumerate(self.replicas, 1):
            env[f"PTOSERVE_R{i}_GRPC"] = r.grpc
            env[f"PTOSERVE_R{i}_HTTP"] = r.http
            env[f"PTOSERVE_R{i}_METRICS_PORT"] = r.metrics.rsplit(":", 1)[1]
        self.log = open(os.path.join(self.scratch, "haproxy.log"), "w+")
        self.haproxy = subprocess.Popen([HAPROXY, "-db", "-f", CONFIG],
                                        env=env, stdout=self.log,
                                        stderr=subprocess.STDOUT)
        wait_for("every replica UP at the proxy", self.all_up)

    def tearDown(self):
        self.haproxy.terminate()
        try:
            self.haproxy.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.haproxy.kill()
            self.haproxy.wait()
        for r in self.replicas:
            r.kill()
        self.log.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def states(self) -> dict[tuple[str, str], str]:
        """(backend, server) -> status ("UP", "DOWN", ...) from the stats
        page's CSV; empty while the proxy does not answer."""
        try:
            with urllib.request.urlopen(
                    f"http://{self.proxy_stats}/stats;csv", timeout=5) as r:
                text = r.read().decode().lstrip("# ")
        except OSError:
            return {}
        return {(row["pxname"], row["svname"]): row["status"]
                for row in csv.DictReader(io.StringIO(text))
                if row["svname"] in ("r1", "r2", "r3")}

    def all_up(self) -> bool:
        states = self.states()
        return len(states) == 6 and all(s == "UP" for s in states.values())

    def haproxy_log(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-3000:]

    def test_rolling_restart_loses_no_call(self):
        a = np.arange(256, dtype=np.int32).reshape(16, 16) * 0x01010101
        b = np.full((16, 16), 0x0F0F0F0F, np.int32)
        expected = (a & b).tobytes()
        job = binary_job("tand", a, b)
        request = job.SerializeToString()
        http_body = json.dumps({
            "tiles": {name: {"dtype": "DTYPE_INT32", "rows": 16, "cols": 16,
                             "data": base64.b64encode(
                                 t.tobytes()).decode()}
                      for name, t in (("src0", a), ("src1", b))},
            "instructions": [{"opcode": "OPCODE_TAND", "dst": "dst",
                              "src0": "src0", "src1": "src1"}],
            "outputs": ["dst"]}).encode()
        grpc_tally, http_tally = Tally(), Tally()
        stop = threading.Event()

        def grpc_calls():
            channel = grpc.insecure_channel(self.proxy_grpc)
            execute = channel.unary_unary("/ptoserve.v1.TileCompute/Execute")
            while not stop.is_set():
                try:
                    reply = execute(request, timeout=CALL_TIMEOUT_S)
                except grpc.RpcError as error:
                    grpc_tally.error(classify_grpc(error),
                                     f"{error.code()}: {error.details()}")
                    continue
                result = job_pb2.JobResult.FromString(reply)
                data = result.tiles["dst"].data
                with grpc_tally.lock:
                    if data == expected:
                        grpc_tally.ok += 1
                    else:
                        grpc_tally.wrong.append(len(data))
            channel.close()

        def http_calls():
            while not stop.is_set():
                post = urllib.request.Request(
                    f"http://{self.proxy_http}/v1/jobs:execute",
                    data=http_body,
                    headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(
                            post, timeout=CALL_TIMEOUT_S) as answer:
                        result = json.load(answer)
                except urllib.error.HTTPError as error:
                    text = error.read().decode(errors="replace")
                    kind = None
                    if error.code == 503 and any(
                            w in text.lower() for w in SHUTTING_DOWN):
                        kind = "503 from a replica shutting down"
                    elif error.code == 503 and "no server" in text.lower():
                        kind = "HAProxy's 503, no replica up"
                    http_tally.error(kind, f"HTTP {error.code}: {text[:200]}")
                    continue
                except OSError as error:
                    http_tally.error(None, f"{type(error).__name__}: {error}")
                    continue
                data = base64.b64decode(
                    result.get("tiles", {}).get("dst", {}).get("data", ""))
                with http_tally.lock:
                    if data == expected:
                        http_tally.ok += 1
                    else:
                        http_tally.wrong.append(str(result)[:200])

        workers = [threading.Thread(target=grpc_calls)
                   for _ in range(GRPC_THREADS)]
        workers.append(threading.Thread(target=http_calls))
        for w in workers:
            w.start()
        restarts = []
        try:
            # Calls flow to every replica before the first restart.
            wait_for("calls through the proxy",
                     lambda: grpc_tally.ok >= 50 and http_tally.ok >= 10)
            for r in self.replicas:
                started = time.monotonic()
                before = grpc_tally.ok + http_tally.ok
                self.assertEqual(r.stop(), 0, f"{r.name} exit code")
                r.start()
                wait_for(f"{r.name} UP again at the proxy", self.all_up)
                # The others carried the calls meanwhile, and go on.
                wait_for("calls after the restart",
                         lambda: grpc_tally.ok + http_tally.ok >= before + 50)
                restarts.append(time.monotonic() - started)
        finally:
            stop.set()
            for w in workers:
                w.join(timeout=CALL_TIMEOUT_S + 10)
        for w in workers:
            self.assertFalse(w.is_alive(), "a client is stuck in a call")

        # Each replica served calls after its restart: the proxy spread them.
        per_replica = self.states()
        print(f"restarts took {', '.join(f'{s:.2f} s' for s in restarts)}")
        for name, tally in (("gRPC", grpc_tally), ("HTTP", http_tally)):
            print(f"{name}: {tally.ok} OK, errors {tally.explained or 'none'}"
                  f", unexplained {len(tally.unexplained)}")
            for kind, text in tally.examples.items():
                print(f"  e.g. {text}")
            self.assertEqual(tally.wrong, [], f"{name}: wrong results")
            self.assertEqual(tally.unexplained, [],
                             f"{name}: errors no restart explains\n"
                             f"{self.haproxy_log()}")
            self.assertGreater(tally.ok, 0)
        self.assertTrue(all(s == "UP" for s in per_replica.values()),
                        per_replica)

    def test_one_callers_slow_uploads_take_no_replica_down(self):
        # One caller (from 127.0.0.2) keeps 200 uploads going through the
        # proxy at 20 KiB/s each, above the replicas' minimum rate; another
        # (from 127.0.0.3) posts small jobs through it meanwhile. The proxy
        # checks the replicas on their metrics ports and forwards who each
        # caller is: no replica goes DOWN, and every call of the other
        # caller is answered, right.
        host, port = self.proxy_http.rsplit(":", 1)
        head = (b"POST /v1/jobs:execute HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\n"
                b"Content-Length: 524288\r\n\r\n{")
        uploads = []
        try:
            for _ in range(200):
                s = socket.create_connection((host, int(port)),
                                             timeout=CALL_TIMEOUT_S,
                                             source_address=("127.0.0.2", 0))
                s.sendall(head)
                uploads.append(s)
            body = json.dumps({
                "tiles": {"a": {"dtype": "DTYPE_INT32", "rows": 1, "cols": 4,
                                "values": [12, 10, 6, 5]},
                          "b": {"dtype": "DTYPE_INT32", "rows": 1, "cols": 4,
                                "fill": 3}},
                "instructions": [{"opcode": "OPCODE_TAND", "dst": "c",
                                  "src0": "a", "src1": "b"}]}).encode()
            answered, states = [], []
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline:
                for s in uploads:
                    s.sendall(b" " * 2048)  # 20 KiB/s at 10 rounds a second
                conn = http.client.HTTPConnection(
                    host, int(port), timeout=CALL_TIMEOUT_S,
                    source_address=("127.0.0.3", 0))
                conn.request("POST", "/v1/jobs:execute", body,
                             {"Content-Type": "application/json"})
                answer = conn.getresponse()
                got = answer.read()
                conn.close()
                answered.append(
                    (answer.status,
                     tuple(json.loads(got)["tiles"]["c"]["values"])
                     if answer.status == 200 else got[:200]))
                states.append(self.states())
                time.sleep(0.1)
        finally:
            for s in uploads:
                s.close()
        up = [len(s) == 6 and all(v == "UP" for v in s.values())
              for s in states]
        print(f"beside 200 slow uploads: {len(answered)} calls, "
              f"{sum(1 for s, _ in answered if s == 200)} answered 200; "
              f"every replica UP in {sum(up)} of {len(states)} looks")
        self.assertGreater(len(answered), 10)
        self.assertEqual([a for a in answered if a != (200, (0, 2, 2, 1))],
                         [])
        for s in states:
            self.assertEqual(len(s), 6, s)
            self.assertTrue(all(v == "UP" for v in s.values()), s)


if __name__ == "__main__":
    unittest.main(verbosity=2)
