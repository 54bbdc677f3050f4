"""Starts and stops the real ptoserve for the Python tests (as
tests/integration/server_process.cc does for the C++ ones)."""

import os
import select
import signal
import subprocess
import threading

# bazel-bin/server/ptoserve outside Bazel; the runfiles path inside.
SERVER = os.environ.get("PTOSERVE_BINARY", "server/ptoserve")
STARTUP_TIMEOUT_S = 30


def start_server(*flags: str) -> tuple[subprocess.Popen, str]:
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
    # Drain the rest, so the server never blocks on a full pipe, and close
    # the pipe once the server has exited.
    threading.Thread(target=_drain, args=(server.stdout,), daemon=True).start()
    return server, line.split("listening on ")[1].split()[0]


def _drain(pipe) -> None:
    with pipe:
        pipe.read()


def stop_server(server: subprocess.Popen) -> None:
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
