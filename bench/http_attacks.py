#!/usr/bin/env python3
"""What each attack on the HTTP/JSON API costs the server and its other
callers: the server's peak RSS during the attack (VmHWM, reset before each
through /proc/PID/clear_refs) and the p50/p99 latency of a light HTTP
caller and a light gRPC caller (ptobench, concurrency 1) running beside it.

The server runs on core 0 with its defaults (4 HTTP threads, 64
connections per client address, a 15 s idle timeout, 64 MiB bodies, a 768
MiB budget), the attackers and the callers on core 1. Each attack runs for
--seconds, repeated as fast as it goes; the slow and idle ones keep 256
connections open from 127.0.0.2 instead (the callers are 127.0.0.1).
"none" is the baseline.

  bazel build -c opt //server:ptoserve //bench:ptobench
  bench/http_attacks.py --seconds=8 > /tmp/attacks.md
"""
import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bazel-bin")

JOB = {
    "tiles": {
        "a": {"dtype": "DTYPE_INT32", "rows": 16, "cols": 16, "fill": 5},
        "b": {"dtype": "DTYPE_INT32", "rows": 16, "cols": 16, "fill": 3},
    },
    "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a",
                      "src1": "b"}],
    "outputs": ["c"],
}
HEAD = (b"POST /v1/jobs:execute HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/json\r\n")


def start_server():
    proc = subprocess.Popen(
        ["taskset", "-c", "0", f"{BIN}/server/ptoserve",
         "--address=127.0.0.1:0", "--metrics_address=",
         "--http_address=127.0.0.1:0"],
        stdout=subprocess.PIPE, text=True)
    grpc = http = None
    while grpc is None or http is None:
        line = proc.stdout.readline()
        if not line:
            sys.exit("ptoserve did not start")
        if "listening on " in line:
            grpc = line.split("listening on ")[1].split()[0]
        if "HTTP/JSON API on " in line:
            http = line.split("HTTP/JSON API on http://")[1].split()[0]
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    host, port = http.rsplit(":", 1)
    return proc, grpc, (host, int(port))


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
    head = b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 100000
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
}


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


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8)
    args = parser.parse_args()
    os.sched_setaffinity(0, {1})
    proc, grpc, addr = start_server()
    print("| attack | server peak RSS | HTTP caller p50 / p99 (calls, errors) "
          "| gRPC caller p50 / p99 |")
    print("|---|---|---|---|")
    try:
        for name, attack in ATTACKS.items():
            with open(f"/proc/{proc.pid}/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM
            stop = threading.Event()
            threads = []
            if attack is not None:
                threads.append(threading.Thread(target=attack,
                                                args=(addr, stop)))
            latencies, errors = [], []
            threads.append(threading.Thread(
                target=http_caller, args=(addr, stop, latencies, errors)))
            for t in threads:
                t.start()
            grpc_out = subprocess.run(
                [f"{BIN}/bench/ptobench", f"--server={grpc}",
                 "--concurrency=1", f"--duration={args.seconds}s",
                 "--warmup=0s", "--format=json"],
                capture_output=True, text=True)
            stop.set()
            for t in threads:
                t.join()
            with open(f"/proc/{proc.pid}/status") as f:
                hwm = next(int(line.split()[1]) for line in f
                           if line.startswith("VmHWM"))
            g = json.loads(grpc_out.stdout.strip().splitlines()[-1])
            print(f"| {name} | {hwm / 1024:.0f} MiB | "
                  f"{percentile(latencies, 50) * 1e3:.2f} / "
                  f"{percentile(latencies, 99) * 1e3:.1f} ms "
                  f"({len(latencies)}, {len(errors)}) | "
                  f"{g['p50_us'] / 1e3:.2f} / {g['p99_us'] / 1e3:.2f} ms |",
                  flush=True)
            if proc.poll() is not None:
                sys.exit(f"ptoserve exited during {name}")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
