"""--http2_window_kb: what a call may send before the server reads it.

With a window set (1 MiB by default) the server announces it as HTTP/2's
INITIAL_WINDOW_SIZE and keeps it: it sends none of gRPC's bandwidth-delay
probes (PINGs while data arrives), whose answers would grow every call's
window to what a round trip can carry. With --http2_window_kb=0 gRPC's own
window applies and the probes are sent. Each server still answers calls
whose messages are larger than its window. Out-of-range values are refused
at start."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import raw_grpc  # noqa: E402
from server_process import SERVER, start_server, stop_server  # noqa: E402

HEALTH_CHECK = "/grpc.health.v1.Health/Check"
# An upload several windows long: not a HealthCheckRequest (field 1 would
# be a string), so the answer is an error, after gRPC has read it whole.
UPLOAD = raw_grpc.frame(b"\x0a" + b"\xff" * 9 + bytes(4 << 20))


def upload(address):
    """(the server's INITIAL_WINDOW_SIZE, PINGs it sent, the answer) for
    UPLOAD, then a health check, on one connection."""
    connection = raw_grpc.Connection(address)
    try:
        answer = connection.call(HEALTH_CHECK, UPLOAD)
        health = connection.call(HEALTH_CHECK, raw_grpc.frame(b""))
        return (connection.h2.remote_settings.initial_window_size,
                connection.pings_received, answer, health)
    finally:
        connection.close()


class ReceiveWindowTest(unittest.TestCase):

    def check(self, flags, window):
        server, address = start_server(*flags)
        try:
            announced, pings, answer, health = upload(address)
        finally:
            stop_server(server)
        self.assertFalse(answer.reset, answer)
        self.assertNotEqual(answer.status, "", answer)
        self.assertEqual(health.status, "0", health)
        if window:
            self.assertEqual(announced, window)
            self.assertEqual(pings, 0, "a fixed window sends no probes")
        else:
            self.assertGreater(pings, 0, "gRPC's own window probes")

    def test_default_is_a_fixed_mebibyte(self):
        self.check([], 1 << 20)

    def test_a_smaller_window(self):
        self.check(["--http2_window_kb=64"], 64 << 10)

    def test_zero_leaves_grpc_its_own_window(self):
        self.check(["--http2_window_kb=0"], 0)

    def test_out_of_range_is_refused(self):
        for value in ("-1", "65537"):
            run = subprocess.run(
                [SERVER, "--address=127.0.0.1:0",
                 f"--http2_window_kb={value}"],
                capture_output=True, text=True, timeout=60, check=False)
            self.assertEqual(run.returncode, 2, run.stderr)
            self.assertIn(f"--http2_window_kb={value} is out of range "
                          "[0, 65536]", run.stderr)


if __name__ == "__main__":
    unittest.main()
