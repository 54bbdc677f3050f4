#!/usr/bin/env python3
"""What each attack on the front doors costs the server and its other
callers: the server's peak RSS during the attack (VmHWM, reset before each
through /proc/PID/clear_refs), the most memory its budget held, the
p50/p99 latency of a light HTTP caller and a light gRPC caller (ptobench,
concurrency 1) running beside it, and the slowest of the readiness probes
(GET /v2/health/ready every 50 ms, as a balancer asks).

The server runs on core 0 with its defaults (4 HTTP threads, 64
connections per client address, a 15 s idle timeout, 64 MiB bodies, a 768
MiB budget), the attackers and the callers on core 1. Each attack runs for
--seconds in a process of its own (its work never holds up the callers'
measurement), repeated as fast as it goes; the slow and idle ones keep 256
connections open from 127.0.0.2 instead (the callers are 127.0.0.1); the
last five connect as another user (as root: a socket made under setfsuid),
since on loopback a client without a token is its user. "none" is the
baseline. --server runs another build (e.g. an older one, for before and
after); --only some of the attacks.

  bazel build -c opt //server:ptoserve //bench:ptobench
  sudo bench/http_attacks.py --seconds=8 > /tmp/attacks.md
"""
import argparse
import ctypes
import http.client
import json
import multiprocessing
import os
import re
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bazel-bin")
# A user none of the machine's accounts use, for the attackers' sockets.
OTHER_USER = 54321

JOB = {
    "tiles": {
        "a": {"dtype": "DTYPE_INT32", "rows": 16, "cols": 16, "fill": 5},
        "b": {"dtype": "DTYPE_INT32", "rows": 16, "cols": 16, "fill": 3},
    },
    "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a",
                      "src1": "b"}],
    "outputs": ["c"],
}
HEAD = (b"POST /v1/jobs:execute HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\n")


def start_server(binary):
    proc = subprocess.Popen(
        ["taskset", "-c", "0", binary, "--address=127.0.0.1:0",
         "--metrics_address=127.0.0.1:0", "--http_address=127.0.0.1:0"],
        stdout=subprocess.PIPE, text=True)
    grpc = http = metrics = None
    while grpc is None or http is None or metrics is None:
        line = proc.stdout.readline()
        if not line:
            sys.exit("ptoserve did not start")
        if "listening on " in line:
            grpc = line.split("listening on ")[1].split()[0]
        if "HTTP/JSON API on " in line:
            http = line.split("HTTP/JSON API on http://")[1].split()[0]
        if "metrics on " in line:
            metrics = line.split("metrics on ")[1].split()[0]
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    host, port = http.rsplit(":", 1)
    return proc, grpc, (host, int(port)), metrics


def other_users_socket(addr, timeout=15):
    """A socket connected to `addr` whose owner is OTHER_USER."""
    libc = ctypes.CDLL(None)
    before = libc.setfsuid(OTHER_USER)
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    finally:
        libc.setfsuid(before)
    s.settimeout(timeout)
    s.connect(addr)
    return s


def send(addr, data, shutdown=False, timeout=15):
    try:
        with socket.create_connection(addr, timeout=timeout) as s:
            s.sendall(data)
            if shutdown:
                s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
    except OSError:
        pass


def oversized(addr, stop):
    while not stop.is_set():
        send(addr, HEAD + b"Content-Length: 100000000000\r\n\r\n",
             shutdown=True)


def truncated(addr, stop):
    while not stop.is_set():
        send(addr, HEAD + b"Content-Length: 1000000\r\n\r\n{\"tiles\": ",
             shutdown=True)


def chunked_bomb(addr, stop):
    # 80 MiB of 4 KiB chunks against the 64 MiB limit.
    chunk = b"1000\r\n" + b" " * 4096 + b"\r\n"
    body = HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + chunk * (20 << 10)
    while not stop.is_set():
        send(addr, body, shutdown=True)


def deep_json(addr, stop):
    body = b'{"tiles": {"a": ' + b"[" * 100000 + b"]" * 100000 + b"}}"
    data = HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body
    while not stop.is_set():
        send(addr, data)


def many_objects(addr, stop):
    body = b'{"instructions": [' + b",".join([b"{}"] * 1000000) + b"]}"
    data = HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body
    while not stop.is_set():
        send(addr, data)


def huge_numbers(addr, stop):
    # 16 MiB of numbers of 2 bytes: what the parser peaks on.
    body = (b'{"tiles": {"a": {"dtype": "DTYPE_INT8", "rows": 4096, '
            b'"cols": 2048, "values": [' + b",".join([b"1"] * (4096 * 2048))
            + b'], "fill": 1e400}}}')
    data = HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body
    while not stop.is_set():
        send(addr, data)


def connect_from_other_address(addr):
    return socket.create_connection(addr, timeout=1,
                                    source_address=("127.0.0.2", 0))


def slow_heads(addr, stop, connections=256):
    """Connections that send a head a byte every 100 ms, reopened when the
    server closes them."""
    socks = []
    head = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 100000
    while not stop.is_set():
        while len(socks) < connections:
            try:
                socks.append([connect_from_other_address(addr), 0])
            except OSError:
                break
        for entry in list(socks):
            try:
                entry[0].send(head[entry[1]:entry[1] + 1])
                entry[1] += 1
            except OSError:
                entry[0].close()
                socks.remove(entry)
        stop.wait(0.1)
    for s, _ in socks:
        s.close()


def idle(addr, stop, connections=256):
    socks = []
    while not stop.is_set():
        while len(socks) < connections:
            try:
                socks.append(connect_from_other_address(addr))
            except OSError:
                break
        for s in list(socks):
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    s.close()
                    socks.remove(s)
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                socks.remove(s)
        stop.wait(0.1)
    for s in socks:
        s.close()


def trickled_bodies(addr, stop):
    """12 bodies that declare 64 MiB each (the whole budget together) and
    send a byte every 5 s; reopened when the server closes one."""
    socks = []
    while not stop.is_set():
        while len(socks) < 12:
            try:
                s = other_users_socket(addr)
                s.sendall(HEAD + b"Content-Length: 67108864\r\n\r\n{")
                socks.append(s)
            except OSError:
                break
        stop.wait(5)
        for s in list(socks):
            try:
                s.sendall(b" ")
            except OSError:
                s.close()
                socks.remove(s)
    for s in socks:
        s.close()


def closed_with_jobs(addr, stop):
    """13 jobs of 4000 TANDs over two 2048x2048 int32 fills, each on a
    connection closed right after sending, sent again every 2 s."""
    job = {"target": "TARGET_HOST", "tiles": {
        name: {"dtype": "DTYPE_INT32", "rows": 2048, "cols": 2048,
               "fill": fill} for name, fill in (("a", 6), ("b", 3))},
        "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a",
                          "src1": "b"}] * 4000}
    body = json.dumps(job).encode()
    data = HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body
    while not stop.is_set():
        for _ in range(13):
            try:
                with other_users_socket(addr) as s:
                    s.sendall(data)
            except OSError:
                pass
        stop.wait(2)


def json_numbers(addr, stop):
    """8 connections sending 1 MiB bodies of numbers, one after another."""
    body = (b'{"tiles": {"a": {"values": [' + b"1," * ((1 << 19) - 1) +
            b'1]}}}')
    data = HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body

    def one():
        try:
            with other_users_socket(addr) as s:
                f = s.makefile("rb")
                while not stop.is_set():
                    s.sendall(data)
                    length = 0
                    while (line := f.readline()) not in (b"\r\n", b""):
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":")[1])
                    f.read(length)
        except OSError:
            pass
    workers = [threading.Thread(target=one) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def rebound_host(addr, stop):
    """A page of http://evil.test:PORT whose name points here: its job's
    Host and Origin agree, and name another server."""
    body = json.dumps(JOB).encode()
    host = b"evil.test:%d" % addr[1]
    data = (b"POST /v1/jobs:execute HTTP/1.1\r\nHost: " + host +
            b"\r\nOrigin: http://" + host +
            b"\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body)
    while not stop.is_set():
        with socket.create_connection(addr, timeout=15) as s:
            s.sendall(data)
            status = s.recv(64).split(b"\r\n")[0]
        print(f"    rebound Host answered: {status.decode()}", flush=True)
        stop.wait(60)


def grpc_fills(grpc_address, stop):
    """50 gRPC connections of one user, each sending small jobs that make
    two 4 MiB fills (raw HTTP/2, python3-h2), eight in flight on each."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    import raw_grpc  # noqa: E402
    # A Job of two 1024x1024 int32 fills (valid 1x16) and one TAND, by hand:
    # field numbers from job.proto and tile.proto.
    def varint(v):
        out = b""
        while True:
            b, v = v & 0x7F, v >> 7
            out += bytes([b | (0x80 if v else 0)])
            if not v:
                return out

    def field(n, wire, payload):
        key = varint(n << 3 | wire)
        return key + (varint(len(payload)) + payload if wire == 2 else payload)

    def tile(fill):
        return (field(1, 0, varint(5)) + field(2, 0, varint(1024)) +
                field(3, 0, varint(1024)) + field(4, 0, varint(1)) +
                field(5, 0, varint(16)) +
                field(11, 1, struct.pack("<d", fill)))
    job = field(2, 0, varint(1))  # TARGET_HOST
    for name, fill in ((b"a", 6.0), (b"b", 3.0)):
        job += field(4, 2, field(1, 2, name) + field(2, 2, tile(fill)))
    # Its dst 1x16: the answer costs nothing to read.
    dst = (field(1, 0, varint(5)) + field(2, 0, varint(1)) +
           field(3, 0, varint(16)))
    job += field(4, 2, field(1, 2, b"c") + field(2, 2, dst))
    job += field(5, 2, field(1, 0, varint(1)) + field(2, 2, b"c") +
                 field(3, 2, b"a") + field(4, 2, b"b"))
    request = raw_grpc.frame(job)

    def one():
        conn = raw_grpc.Connection(grpc_address, uid=OTHER_USER)
        try:
            while not stop.is_set():
                # Eight at once: the attacker's own work is not what bounds
                # the attack.
                conn.call_many("/ptoserve.v1.TileCompute/Execute", request, 8)
        except Exception:  # noqa: BLE001: the server may close it
            pass
        conn.close()
    workers = [threading.Thread(target=one) for _ in range(50)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


ATTACKS = {
    "none": None,
    "oversized Content-Length": oversized,
    "truncated bodies": truncated,
    "chunked, 80 MiB": chunked_bomb,
    "JSON nested 10^5 deep": deep_json,
    "10^6 empty objects": many_objects,
    "16 MiB of 2-byte numbers": huge_numbers,
    "256 slow heads (1 B/100 ms)": slow_heads,
    "256 idle connections": idle,
    "12 bodies of 64 MiB, a byte every 5 s": trickled_bodies,
    "13 jobs of 4000 TANDs, connection closed": closed_with_jobs,
    "8 connections of 1 MiB JSON numbers": json_numbers,
    "rebound Host (evil.test)": rebound_host,
    "50 gRPC connections of one user, 4 MiB fills": grpc_fills,
}
# These take the gRPC address, the others the HTTP one.
GRPC_ATTACKS = {grpc_fills}


def http_caller(addr, stop, latencies, errors):
    body = json.dumps(JOB).encode()
    while not stop.is_set():
        start = time.monotonic()
        try:
            conn = http.client.HTTPConnection(*addr, timeout=30)
            conn.request("POST", "/v1/jobs:execute", body,
                         {"Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            conn.close()
            if response.status != 200:
                errors.append(response.status)
                continue
        except OSError as e:
            errors.append(type(e).__name__)
            continue
        latencies.append(time.monotonic() - start)


def probe_readiness(addr, stop, latencies):
    """GET /v2/health/ready every 50 ms, on a new connection each time."""
    while not stop.is_set():
        start = time.monotonic()
        try:
            conn = http.client.HTTPConnection(*addr, timeout=30)
            conn.request("GET", "/v2/health/ready")
            conn.getresponse().read()
            conn.close()
        except OSError:
            pass
        latencies.append(time.monotonic() - start)
        stop.wait(0.05)


def held_max(metrics, stop, most):
    """The most the memory budget held, scraped every 100 ms."""
    while not stop.is_set():
        try:
            with urllib.request.urlopen(metrics, timeout=5) as r:
                text = r.read().decode()
            m = re.search(r"^ptoserve_memory_held_bytes (\S+)$", text, re.M)
            if m:
                most[0] = max(most[0], float(m.group(1)))
        except OSError:
            pass
        stop.wait(0.1)


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--server", default=f"{BIN}/server/ptoserve")
    parser.add_argument("--only", default="",
                        help="attacks whose names contain this (none: all)")
    args = parser.parse_args()
    os.sched_setaffinity(0, {1})
    multiprocessing.set_start_method("fork")
    proc, grpc, addr, metrics = start_server(args.server)
    print("| attack | server peak RSS | budget held, most | HTTP caller p50 / "
          "p99 (calls, errors) | gRPC caller p50 / p99 | readiness, slowest |")
    print("|---|---|---|---|---|---|")
    try:
        for name, attack in ATTACKS.items():
            if args.only and attack is not None and args.only not in name:
                continue
            with open(f"/proc/{proc.pid}/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM
            stop = threading.Event()
            stop_attack = multiprocessing.Event()
            attacker = None
            if attack is not None:
                attacker = multiprocessing.Process(
                    target=attack,
                    args=(grpc if attack in GRPC_ATTACKS else addr,
                          stop_attack))
                attacker.start()
            latencies, errors, ready, most = [], [], [], [0.0]
            threads = [
                threading.Thread(target=http_caller,
                                 args=(addr, stop, latencies, errors)),
                threading.Thread(target=probe_readiness,
                                 args=(addr, stop, ready)),
                threading.Thread(target=held_max, args=(metrics, stop, most)),
            ]
            for t in threads:
                t.start()
            grpc_out = subprocess.run(
                [f"{BIN}/bench/ptobench", f"--server={grpc}",
                 "--concurrency=1", f"--duration={args.seconds}s",
                 "--warmup=0s", "--format=json"],
                capture_output=True, text=True)
            stop.set()
            stop_attack.set()
            for t in threads:
                t.join()
            if attacker is not None:
                attacker.join(30)
                if attacker.is_alive():
                    attacker.kill()
            with open(f"/proc/{proc.pid}/status") as f:
                hwm = next(int(line.split()[1]) for line in f
                           if line.startswith("VmHWM"))
            lines = grpc_out.stdout.strip().splitlines()
            g = json.loads(lines[-1]) if lines else {}
            print(f"| {name} | {hwm / 1024:.0f} MiB | "
                  f"{most[0] / (1 << 20):.0f} MiB | "
                  f"{percentile(latencies, 50) * 1e3:.2f} / "
                  f"{percentile(latencies, 99) * 1e3:.1f} ms "
                  f"({len(latencies)}, {len(errors)}) | "
                  f"{g.get('p50_us', float('nan')) / 1e3:.2f} / "
                  f"{g.get('p99_us', float('nan')) / 1e3:.2f} ms "
                  f"({g.get('errors', '?')} errors) | "
                  f"{max(ready, default=float('nan')) * 1e3:.0f} ms |",
                  flush=True)
            if proc.poll() is not None:
                sys.exit(f"ptoserve exited during {name}")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
