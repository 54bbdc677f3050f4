"""Compressed requests cost what their bytes on the wire cost, on every
service the server offers, with TLS on or off and with tokens on: the
server accepts no compressed message (docs/SECURITY.md, "Compression").

Each call sends a message of zeros compressed to about a thousandth of its
size (1 MiB of gzip or deflate that would inflate to 1 GiB) over a raw
HTTP/2 connection, and must be refused with UNIMPLEMENTED naming the
algorithm, without the server's peak memory (VmHWM) growing by more than
a small bound. Afterwards the server still answers a plain call."""

import os
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import raw_grpc  # noqa: E402
from server_process import start_server, stop_server  # noqa: E402

INFLATED = 1 << 30
# What the server may grow by over all the bombs of one test: a fraction of
# one inflated message (an uncompressed 1 MiB message costs about 2 MiB).
GROWTH_BOUND_KB = 64 * 1024

# Every method of every service, as a client would call it; the answer must
# not depend on which.
METHODS = [
    "/ptoserve.v1.TileCompute/Execute",
    "/ptoserve.v1.TileCompute/ExecuteStream",
    "/ptoserve.v1.TileCompute/ExecuteBatches",
    "/ptoserve.v1.TileCompute/GetCapabilities",
    "/ptoserve.v1.SharedMemory/Register",
    "/ptoserve.v1.SharedMemory/Unregister",
    "/ptoserve.v1.SharedMemory/List",
    "/grpc.health.v1.Health/Check",
    "/grpc.health.v1.Health/Watch",
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
]
UNIMPLEMENTED = "12"
# A serialized HealthCheckRequest{service: ""} is empty; one message of it.
HEALTH_CHECK = "/grpc.health.v1.Health/Check"


def peak_kb(server) -> int:
    with open(f"/proc/{server.pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/PID/status")


BOMBS = {encoding: raw_grpc.bomb(INFLATED, encoding)
         for encoding in ("gzip", "deflate")}


class Bombs:
    """Checks shared by the plaintext and TLS servers."""

    tls_ca = ""

    def connect(self):
        return raw_grpc.Connection(self.address, self.tls_ca)

    def assert_refused(self, answer, encoding, where):
        self.assertEqual(answer.status, UNIMPLEMENTED,
                         f"{where}: {answer}")
        self.assertIn(f"'{encoding}' is disabled", answer.message, where)

    def assert_serving(self):
        connection = self.connect()
        try:
            answer = connection.call(HEALTH_CHECK, raw_grpc.frame(b""))
        finally:
            connection.close()
        self.assertEqual(answer.status, "0", answer)
        # HealthCheckResponse{status: SERVING}: field 1, varint 1; not
        # compressed although the client accepts nothing else.
        self.assertEqual(answer.body, raw_grpc.frame(b"\x08\x01"))

    def test_every_method_refuses_a_bomb_before_inflating_it(self):
        before = peak_kb(self.server)
        connection = self.connect()
        try:
            for method in METHODS:
                for encoding, bomb in BOMBS.items():
                    answer = connection.call(
                        method, raw_grpc.frame(bomb, compressed=True),
                        self.headers + [("grpc-encoding", encoding)])
                    self.assert_refused(answer, encoding, method)
        finally:
            connection.close()
        grown = peak_kb(self.server) - before
        print(f"{type(self).__name__}: {2 * len(METHODS)} bombs, peak memory "
              f"grew {grown} kB", file=sys.stderr)
        self.assertLess(grown, GROWTH_BOUND_KB,
                        f"peak memory grew {grown} kB over "
                        f"{2 * len(METHODS)} bombs of {INFLATED >> 20} MiB")
        self.assert_serving()

    def test_concurrent_bombs_from_two_clients(self):
        before = peak_kb(self.server)
        answers = {}

        def attack(name, encoding):
            connection = self.connect()
            try:
                answers[name] = [connection.call(
                    HEALTH_CHECK, raw_grpc.frame(BOMBS[encoding], True),
                    [("grpc-encoding", encoding)]) for _ in range(4)]
            finally:
                connection.close()

        threads = [threading.Thread(target=attack, args=(name, encoding))
                   for name, encoding in (("a", "gzip"), ("b", "deflate"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=raw_grpc.CALL_TIMEOUT_S * 5)
        self.assertEqual(sorted(answers), ["a", "b"])
        for name, encoding in (("a", "gzip"), ("b", "deflate")):
            for answer in answers[name]:
                self.assert_refused(answer, encoding, f"client {name}")
        self.assertLess(peak_kb(self.server) - before, GROWTH_BOUND_KB)
        self.assert_serving()

    def test_a_compressed_flag_without_an_encoding_is_not_inflated(self):
        # gRPC takes the bytes as they are: not a HealthCheckRequest.
        before = peak_kb(self.server)
        connection = self.connect()
        try:
            answer = connection.call(
                HEALTH_CHECK, raw_grpc.frame(BOMBS["gzip"], compressed=True))
        finally:
            connection.close()
        self.assertNotEqual(answer.status, "0", answer)
        self.assertLess(peak_kb(self.server) - before, GROWTH_BOUND_KB)
        self.assert_serving()

    def test_answers_are_never_compressed(self):
        connection = self.connect()
        try:
            answer = connection.call(
                HEALTH_CHECK, raw_grpc.frame(b""),
                [("grpc-accept-encoding", "gzip,deflate,identity")])
        finally:
            connection.close()
        self.assertEqual(answer.status, "0", answer)
        self.assertIn(answer.headers.get("grpc-encoding", "identity"),
                      ("identity",))
        self.assertEqual(answer.body[0], 0, "the answer's compressed flag")


class PlaintextTest(Bombs, unittest.TestCase):
    headers = []

    @classmethod
    def setUpClass(cls):
        cls.server, cls.address = start_server()

    @classmethod
    def tearDownClass(cls):
        stop_server(cls.server)


class TlsWithTokensTest(Bombs, unittest.TestCase):
    """TLS (the server's own gRPC listener, not ptoserve's plaintext one)
    and tokens: a bomb with a valid token, and one without (health needs
    none), are refused the same way."""

    headers = [("authorization", "Bearer secret-one")]

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        with open(os.path.join(cls.dir, "san.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
             "server.key", "-out", "server.crt", "-days", "1", "-subj",
             "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
            cwd=cls.dir, check=True, capture_output=True)
        with open(os.path.join(cls.dir, "tokens"), "w") as f:
            f.write("secret-one\n")
        cls.tls_ca = os.path.join(cls.dir, "server.crt")
        cls.server, cls.address = start_server(
            "--tls_cert=" + cls.tls_ca,
            "--tls_key=" + os.path.join(cls.dir, "server.key"),
            "--auth_token_file=" + os.path.join(cls.dir, "tokens"))

    @classmethod
    def tearDownClass(cls):
        stop_server(cls.server)

    def test_without_a_token_too(self):
        before = peak_kb(self.server)
        connection = self.connect()
        try:
            for method in ("/ptoserve.v1.TileCompute/Execute", HEALTH_CHECK):
                answer = connection.call(
                    method, raw_grpc.frame(BOMBS["gzip"], compressed=True),
                    [("grpc-encoding", "gzip")])
                # Refused either way, and never inflated: UNIMPLEMENTED, or
                # UNAUTHENTICATED where the token is checked first.
                self.assertIn(answer.status, (UNIMPLEMENTED, "16"),
                              f"{method}: {answer}")
        finally:
            connection.close()
        self.assertLess(peak_kb(self.server) - before, GROWTH_BOUND_KB)
        self.assert_serving()


if __name__ == "__main__":
    unittest.main()
