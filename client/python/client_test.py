"""Tests ptoserve_client against the real server on a loopback port.

Run by `bazel test //client/python:client_test`. Outside Bazel, from the
repository root after `bazel build //server:ptoserve //client/python:all`:
    PTOSERVE_BINARY=bazel-bin/server/ptoserve \\
    PYTHONPATH=client/python:bazel-bin/client/python \\
    /usr/bin/python3 client/python/client_test.py
"""

import itertools
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

import grpc
import numpy as np

from ptoserve.v1 import job_pb2, tile_pb2
from ptoserve_client import (Client, PtoserveError, Result, decode_tile,
                             encode_tile, make_job)
from ptoserve_client.client import channel_target

SERVER = os.environ.get("PTOSERVE_BINARY", "server/ptoserve")
EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "example.py")
DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32]
TARGETS = ["host", "a2a3", "a5"]
# Each target's micro-ops for each opcode.
TRACES = {
    ("host", "tand"): ["and"],
    ("host", "txor"): ["xor"],
    ("a2a3", "tand"): ["vand"],
    ("a2a3", "txor"): ["vor", "vand", "vnot", "vand"],
    ("a5", "tand"): ["vand"],
    ("a5", "txor"): ["vxor"],
}
STARTUP_TIMEOUT_S = 30
CALL_TIMEOUT_S = 10


def start_server(*flags):
    """Starts the server on an ephemeral port with `flags`; returns it and
    its address."""
    # Metrics off: the default port would be shared by every server here.
    server = subprocess.Popen(
        [SERVER, "--address=127.0.0.1:0", "--metrics_address=", *flags],
        stdout=subprocess.PIPE)
    ready, _, _ = select.select([server.stdout], [], [], STARTUP_TIMEOUT_S)
    # "ptoserve 0.1.0 listening on 127.0.0.1:PORT (default target host)"
    line = server.stdout.readline().decode() if ready else ""
    if "listening on " not in line:
        server.kill()
        server.wait()
        raise RuntimeError(f"ptoserve did not start; it printed {line!r}")
    # Drain the rest, so the server never blocks on a full pipe.
    threading.Thread(target=server.stdout.read, daemon=True).start()
    return server, line.split("listening on ")[1].split()[0]


def stop_server(server):
    """SIGTERM; the server must exit 0 within 15 s."""
    server.send_signal(signal.SIGTERM)
    try:
        code = server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
        raise
    if code != 0:
        raise AssertionError(f"ptoserve exited with {code} on SIGTERM")


def random_tile(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype,
                        endpoint=True)


def shape_for(dtype):
    """4 rows of 32 bytes of dtype: valid on every target."""
    return 4, 32 // np.dtype(dtype).itemsize


class ClientTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server, cls.address = start_server()
        cls.client = Client(cls.address, timeout=CALL_TIMEOUT_S)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        stop_server(cls.server)

    def setUp(self):
        self.rng = np.random.default_rng(20240601)

    def test_tand_and_txor_match_numpy_on_every_target_and_dtype(self):
        for target, dtype in itertools.product(TARGETS, DTYPES):
            a = random_tile(self.rng, dtype, shape_for(dtype))
            b = random_tile(self.rng, dtype, shape_for(dtype))
            for op, call, expected in [("tand", self.client.tand, a & b),
                                       ("txor", self.client.txor, a ^ b)]:
                with self.subTest(target=target, dtype=dtype.__name__, op=op):
                    result = call(a, b, target=target)
                    self.assertEqual(result.dst.dtype, np.dtype(dtype))
                    np.testing.assert_array_equal(result.dst, expected)
                    self.assertEqual(result.target, target)
                    [event] = result.events
                    self.assertEqual(job_pb2.Opcode.Name(event.opcode),
                                     "OPCODE_" + op.upper())
                    self.assertEqual([step.op for step in event.trace],
                                     TRACES[target, op])

    def test_only_the_valid_region_is_computed(self):
        a = random_tile(self.rng, np.int16, (4, 16))
        b = random_tile(self.rng, np.int16, (4, 16))
        result = self.client.txor(a, b, valid=(3, 5), target="a2a3")
        expected = np.zeros_like(a)
        expected[:3, :5] = a[:3, :5] ^ b[:3, :5]
        np.testing.assert_array_equal(result.dst, expected)

    def test_any_memory_order_and_byte_order_is_sent_little_endian(self):
        a = random_tile(self.rng, np.int32, (8, 4)).T  # column-major view
        b = random_tile(self.rng, np.int32, (4, 8)).astype(">i4")
        result = self.client.tand(a, b, target="a5")
        np.testing.assert_array_equal(result.dst, a & b)

    def test_stream_answers_every_job_once_and_goes_on_after_a_failure(self):
        jobs, expected = [], {}
        for i in range(300):
            target = TARGETS[i % 3]
            dtype = DTYPES[i % len(DTYPES)]
            a = random_tile(self.rng, dtype, shape_for(dtype))
            b = random_tile(self.rng, dtype, shape_for(dtype))
            op = "txor" if i % 2 else "tand"
            tmp = ("t",) if op == "txor" else ()
            jobs.append(make_job([(op, "d", "a", "b") + tmp],
                                 tiles={"a": a, "b": b}, outputs=["d"],
                                 target=target, job_id=f"j{i}"))
            expected[f"j{i}"] = a ^ b if op == "txor" else a & b
        # Rows of 16 bytes: not a multiple of 32, refused on a2a3.
        narrow = np.ones((2, 8), dtype=np.int16)
        jobs.insert(150, make_job([("tand", "d", "a", "b")],
                                  tiles={"a": narrow, "b": narrow},
                                  target="a2a3", job_id="bad"))
        results = {}
        # A generator: the client sends as the server's window allows.
        for r in self.client.execute_stream(job for job in jobs):
            self.assertNotIn(r.id, results, "answered twice")
            results[r.id] = r
        self.assertEqual(set(results), set(expected) | {"bad"})
        self.assertEqual(results["bad"].status.code,
                         grpc.StatusCode.INVALID_ARGUMENT.value[0])
        self.assertIn("a2a3", results["bad"].status.message)
        for job_id, want in expected.items():
            with self.subTest(job=job_id):
                self.assertEqual(results[job_id].status.code, 0)
                np.testing.assert_array_equal(
                    Result.from_proto(results[job_id]).tiles["d"], want)

    def test_program(self):
        a = random_tile(self.rng, np.uint32, (2, 8))
        b = random_tile(self.rng, np.uint32, (2, 8))
        program = [("tand", "c", "a", "b"), ("txor", "d", "c", "a", "t")]
        result = self.client.run(program, tiles={"a": a, "b": b},
                                 target="a2a3")
        self.assertEqual(sorted(result.tiles), ["c", "d"])
        np.testing.assert_array_equal(result.tiles["c"], a & b)
        np.testing.assert_array_equal(result.tiles["d"], (a & b) ^ a)
        self.assertEqual([e.id for e in result.events], ["e0", "e1"])

        only_d = self.client.run(program, tiles={"a": a, "b": b},
                                 outputs=["d"], target="a2a3")
        self.assertEqual(list(only_d.tiles), ["d"])

    def test_program_with_tile_messages_and_instructions(self):
        a = random_tile(self.rng, np.int8, (2, 32))
        program = [job_pb2.Instruction(opcode=job_pb2.OPCODE_TAND, dst="a",
                                       src0="a", src1="a",
                                       record_event="done")]
        result = self.client.run(program,
                                 tiles={"a": encode_tile(a, valid=(1, 32))})
        np.testing.assert_array_equal(result.tiles["a"], a)
        self.assertEqual(result.events[0].id, "done")

    def test_assembly(self):
        a = np.arange(1, 17, dtype=np.int16).reshape(1, 16)
        b = np.full((1, 16), 3, dtype=np.int16)
        text = ("%c = tand %a, %b : !pto.tile<...>\n"
                "%d = pto.txor %c, %a : (!pto.tile<...>, !pto.tile<...>)"
                " -> !pto.tile<...>\n")
        result = self.client.run_assembly(text, tiles={"a": a, "b": b},
                                          target="a2a3")
        np.testing.assert_array_equal(result.tiles["c"], a & b)
        np.testing.assert_array_equal(result.tiles["d"], (a & b) ^ a)
        self.assertIn('tmp "d.tmp" allocated by the server',
                      result.events[1].notes[0])

    def test_execute_raw_job_with_values(self):
        job = job_pb2.Job(
            target=job_pb2.TARGET_HOST,
            tiles={"a": tile_pb2.Tile(dtype=tile_pb2.DTYPE_UINT8, rows=1,
                                      cols=2, values=[12, 255]),
                   "b": tile_pb2.Tile(dtype=tile_pb2.DTYPE_UINT8, rows=1,
                                      cols=2, values=[10, 15])},
            instructions=[job_pb2.Instruction(opcode=job_pb2.OPCODE_TAND,
                                              dst="c", src0="a", src1="b")])
        result = self.client.execute(job)
        self.assertEqual(list(result.tiles["c"].values), [8, 15])
        np.testing.assert_array_equal(decode_tile(result.tiles["c"]),
                                      np.array([[8, 15]], dtype=np.uint8))

    def test_errors_carry_the_code_and_the_servers_message(self):
        a = np.zeros((16, 8), dtype=np.int16)
        with self.assertRaises(PtoserveError) as caught:
            self.client.txor(a, a, target="a2a3")
        self.assertEqual(caught.exception.code,
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(
            caught.exception.details,
            'instruction 0 (TXOR on a2a3): dst "dst" rows are 16 bytes '
            "(8 int16 columns); a2a3 needs rows of a multiple of 32 bytes")

        with self.assertRaises(PtoserveError) as caught:
            self.client.run_assembly("%c = tand %a, %nope : !pto.tile<...>",
                                     tiles={"a": a})
        self.assertEqual(caught.exception.code,
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertTrue(caught.exception.details.startswith("1:15: "),
                        caught.exception.details)

    def test_tile_codec(self):
        a = random_tile(self.rng, np.int32, (3, 5)).astype(">i4")
        np.testing.assert_array_equal(decode_tile(encode_tile(a)), a)
        empty = tile_pb2.Tile(dtype=tile_pb2.DTYPE_UINT16, rows=2, cols=3)
        np.testing.assert_array_equal(decode_tile(empty),
                                      np.zeros((2, 3), dtype=np.uint16))
        with self.assertRaisesRegex(TypeError, "float64"):
            encode_tile(np.zeros((2, 2)))
        with self.assertRaisesRegex(ValueError, "2-D"):
            encode_tile(np.zeros(4, dtype=np.int8))

    def test_capabilities_lists_three_targets(self):
        capabilities = self.client.capabilities()
        self.assertEqual([t.target for t in capabilities.targets],
                         [job_pb2.TARGET_HOST, job_pb2.TARGET_A2A3,
                          job_pb2.TARGET_A5])

    def test_health(self):
        self.assertEqual(self.client.health(), "SERVING")

    def test_example_runs(self):
        done = subprocess.run([sys.executable, EXAMPLE, self.address],
                              capture_output=True, text=True, timeout=60,
                              check=False)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("a ^ b: dst 2x16 int16 on a2a3", done.stdout)
        self.assertIn("vnot  dst <- dst", done.stdout)


class ScaleOutTest(unittest.TestCase):
    """One client over three servers, one of which is stopped (SIGTERM: lame
    duck, drain, exit) halfway: every call still succeeds, once."""

    def test_stopping_one_of_three_servers_shows_no_error(self):
        servers = []
        try:
            for _ in range(3):
                servers.append(
                    start_server("--lame_duck=300ms", "--shutdown_grace=5s"))
            address = ",".join(address for _, address in servers)
            calls, threads = 1500, 8
            answered = [0] * calls
            errors = []
            next_call = iter(range(calls))
            lock = threading.Lock()
            stopped = threading.Event()

            def work(client):
                a = np.arange(8, dtype=np.int32).reshape(1, 8)
                while True:
                    with lock:
                        i = next(next_call, None)
                    if i is None:
                        return
                    b = np.full((1, 8), i, dtype=np.int32)
                    try:
                        result = client.tand(a, b)
                        if not np.array_equal(result.dst, a & b):
                            errors.append(f"call {i}: wrong result")
                    except PtoserveError as error:
                        errors.append(f"call {i}: {error}")
                    with lock:
                        answered[i] += 1
                        if sum(answered) == calls // 2 and not stopped.is_set():
                            stopped.set()
                            servers[1][0].send_signal(signal.SIGTERM)

            with Client(address, timeout=CALL_TIMEOUT_S) as client:
                pool = [threading.Thread(target=work, args=(client,))
                        for _ in range(threads)]
                for t in pool:
                    t.start()
                for t in pool:
                    t.join()
            self.assertTrue(stopped.is_set())
            self.assertEqual(errors, [])
            self.assertEqual(answered, [1] * calls)
            self.assertEqual(servers[1][0].wait(timeout=15), 0)
        finally:
            for server, _ in servers:
                if server.poll() is None:
                    stop_server(server)

    def test_channel_target(self):
        self.assertEqual(channel_target("127.0.0.1:1"), "127.0.0.1:1")
        self.assertEqual(channel_target("127.0.0.1:1,127.0.0.1:2"),
                         "ipv4:127.0.0.1:1,127.0.0.1:2")
        self.assertEqual(channel_target("[::1]:1,[::1]:2"),
                         "ipv6:[::1]:1,[::1]:2")
        self.assertEqual(channel_target("dns:///a:1,b:2"), "dns:///a:1,b:2")


def make_pki(directory):
    """Writes a CA, a server certificate for 127.0.0.1 and a client
    certificate it signed, plus a second, unrelated CA, into `directory`."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
          "-nodes"]

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True,
                       capture_output=True)

    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", *ec, "-keyout", f"{ca}.key", "-out",
                f"{ca}.crt", "-days", "1", "-subj", f"/CN={ca}")
    with open(os.path.join(directory, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1")
    for name, ext in (("server", ["-extfile", "san.ext"]), ("client", [])):
        openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={name}")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt",
                "-CAkey", "ca.key", "-CAcreateserial", "-out",
                f"{name}.crt", "-days", "1", *ext)


class SecureServerTest(unittest.TestCase):
    """TLS, client certificates and bearer tokens against a server that
    requires all three."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        make_pki(cls.dir)
        tokens = cls.path("tokens")
        with open(tokens, "w") as f:
            f.write("secret-one\n")
        cls.server, cls.address = start_server(
            "--tls_cert=" + cls.path("server.crt"),
            "--tls_key=" + cls.path("server.key"),
            "--tls_client_ca=" + cls.path("ca.crt"),
            "--auth_token_file=" + tokens)

    @classmethod
    def tearDownClass(cls):
        stop_server(cls.server)

    @classmethod
    def path(cls, name):
        return os.path.join(cls.dir, name)

    def pem(self, name):
        with open(self.path(name), "rb") as f:
            return f.read()

    def client(self, **overrides):
        options = dict(root_certificates=self.pem("ca.crt"),
                       certificate_chain=self.pem("client.crt"),
                       private_key=self.pem("client.key"),
                       token="secret-one")
        options.update(overrides)
        return Client(self.address, timeout=CALL_TIMEOUT_S, **options)

    def tand_code(self, client):
        """None if a small TAND succeeds (and is right), else its code."""
        a = np.arange(8, dtype=np.int32).reshape(1, 8)
        b = np.full((1, 8), 6, dtype=np.int32)
        with client:
            try:
                result = client.tand(a, b)
            except PtoserveError as error:
                return error.code
        np.testing.assert_array_equal(result.dst, a & b)
        return None

    def test_tls_with_client_certificate_and_token(self):
        self.assertIsNone(self.tand_code(self.client()))

    def test_missing_or_wrong_token_is_unauthenticated(self):
        self.assertEqual(self.tand_code(self.client(token=None)),
                         grpc.StatusCode.UNAUTHENTICATED)
        self.assertEqual(self.tand_code(self.client(token="secret-on")),
                         grpc.StatusCode.UNAUTHENTICATED)

    def test_health_needs_no_token(self):
        with self.client(token=None) as client:
            self.assertEqual(client.health(), "SERVING")

    def test_no_tls_untrusted_server_or_no_client_certificate_cannot_connect(
            self):
        with Client(self.address, timeout=CALL_TIMEOUT_S,
                    token="secret-one") as plain:
            with self.assertRaises(PtoserveError) as raised:
                plain.health()
            self.assertEqual(raised.exception.code,
                             grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(
            self.tand_code(self.client(root_certificates=self.pem(
                "other-ca.crt"))), grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(
            self.tand_code(self.client(certificate_chain=None,
                                       private_key=None)),
            grpc.StatusCode.UNAVAILABLE)

    def test_stream_needs_the_token(self):
        a = np.full((1, 8), 5, dtype=np.int32)
        job = make_job([("tand", "d", "a", "a")], tiles={"a": a}, job_id="x")
        with self.client(token=None) as client:
            with self.assertRaises(PtoserveError) as raised:
                list(client.execute_stream([job]))
            self.assertEqual(raised.exception.code,
                             grpc.StatusCode.UNAUTHENTICATED)
        with self.client() as client:
            [result] = client.execute_stream([job])
            np.testing.assert_array_equal(
                Result.from_proto(result).tiles["d"], a)

    def test_half_a_key_pair_is_refused(self):
        with self.assertRaisesRegex(ValueError, "go together"):
            self.client(private_key=None)


if __name__ == "__main__":
    unittest.main()
