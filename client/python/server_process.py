"""Starts and stops the real ptoserve for the Python tests (as
tests/integration/server_process.cc does for the C++ ones)."""

import os
import queue
import re
import select
import signal
import socket
import subprocess
import threading
import time
import urllib.request

# bazel-bin/server/ptoserve outside Bazel; the runfiles path inside.
SERVER = os.environ.get("PTOSERVE_BINARY", "server/ptoserve")
STARTUP_TIMEOUT_S = 30


def start_server(*flags: str) -> tuple[subprocess.Popen, str]:
    """Starts the server on an ephemeral port with `flags`; returns it and
    its address."""
    # Metrics off: the default port would be shared by every server here.
    server = subprocess.Popen(
        [SERVER, "--address=127.0.0.1:0", "--metrics_address=",
         "--http_address=", *flags],
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


def start_and_read(args: list[str], wanted: dict[str, str],
                   prefix: tuple[str, ...] = ()
                   ) -> tuple[subprocess.Popen, dict[str, str]]:
    """Starts the server with `args` (run by `prefix`, e.g. taskset, if
    given) and reads its lines until each of `wanted`'s markers ("listening
    on ") has been followed by a word; returns it and those words by
    `wanted`'s keys."""
    server = subprocess.Popen([*prefix, SERVER, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    lines = queue.Queue()

    def read():  # every line, until the server closes its output
        with server.stdout:
            for line in server.stdout:
                lines.put(line.decode())
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    found: dict[str, str] = {}
    seen = ""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while len(found) < len(wanted):
        try:
            line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        if line is None:
            server.kill()
            server.wait()
            raise RuntimeError(f"ptoserve did not start: {seen}")
        seen += line
        for key, marker in wanted.items():
            if marker in line:
                found[key] = line.split(marker)[1].split()[0]
    return server, found


def start_server_with_metrics(*flags: str
                              ) -> tuple[subprocess.Popen, str, str]:
    """Starts the server on an ephemeral port, its metrics on another, with
    `flags`; returns it, its address and its metrics URL."""
    server, found = start_and_read(
        ["--address=127.0.0.1:0", "--metrics_address=127.0.0.1:0",
         "--http_address=", *flags],
        {"address": "listening on ", "metrics": "metrics on "})
    return server, found["address"], found["metrics"]


def start_server_with_http(*flags: str) -> tuple[subprocess.Popen, str, str]:
    """Starts the server with its gRPC address, metrics and HTTP/JSON API on
    ephemeral ports, with `flags`; returns it, the API's URL and the metrics
    URL."""
    server, found = start_and_read(
        ["--address=127.0.0.1:0", "--metrics_address=127.0.0.1:0",
         "--http_address=127.0.0.1:0", *flags],
        {"http": "HTTP/JSON API on ", "metrics": "metrics on "})
    return server, found["http"], found["metrics"]


def sanitized(binary: str) -> bool:
    """Whether `binary` was built with AddressSanitizer or ThreadSanitizer,
    which make every call many times slower."""
    with open(binary, "rb") as f:
        text = f.read()
    return b"__asan_init" in text or b"__tsan_init" in text


def scrape(url: str) -> dict[str, float]:
    """Every series at the metrics URL `url`, by its name and labels as
    /metrics writes them ('ptoserve_jobs_total{target="host",code="OK"}')."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^([^#\s]\S*) (\S+)$", text, re.M)}


def metric(url: str, series: str) -> float:
    """The value of `series` (a name, with its labels if it has any) at the
    metrics URL `url`."""
    value = scrape(url).get(series)
    if value is None:
        raise AssertionError(f"{series} not in /metrics")
    return value


def stop_server(server: subprocess.Popen, timeout: float = 15) -> None:
    """SIGTERM; the server must exit 0 within `timeout` seconds."""
    server.send_signal(signal.SIGTERM)
    try:
        code = server.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
        raise
    if code != 0:
        raise AssertionError(f"ptoserve exited with {code} on SIGTERM")


def free_port() -> int:
    """A loopback port free now (for a program that cannot take port 0 and
    report the one it got)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what: str, check, timeout: float = 60):
    """Polls `check` every 50 ms until it returns something truthy, and
    returns that; fails after `timeout` seconds naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)
