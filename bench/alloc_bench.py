#!/usr/bin/env python3
"""Heap allocations per answered call: ptoserve beside the plain TAND server
and the plain echo, each counted by bench/alloc_count.c (LD_PRELOAD).

Each server runs on core 0 with the counter preloaded; ptobench (core 1)
warms it up, then the counter is read, ptobench runs --seconds of unary
calls at each concurrency, and the counter is read again: allocations
during the run divided by the calls answered in it. The counter counts
every allocation of the server process, gRPC's own included, so the plain
echo's figure is what gRPC spends on such a call, and the others' figures
above it what their own work adds. Prints one Markdown row per server and
concurrency.

  bazel build -c opt //server:ptoserve //bench:all
  bench/alloc_bench.py --servers=ptoserve=bazel-bin/server/ptoserve
"""
import argparse
import mmap
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bazel-bin")


def read_count(path):
    with open(path, "rb") as f:
        data = f.read(8)
    return struct.unpack("<Q", data)[0] if len(data) == 8 else 0


def ptobench(address, seconds, concurrency, shape, warmup, check, wire):
    out = subprocess.run(
        ["taskset", "-c", "1", os.path.join(BIN, "bench/ptobench"),
         f"--server={address}", "--mode=unary", f"--shape={shape}",
         f"--concurrency={concurrency}", f"--duration={seconds}s",
         f"--warmup={warmup}s", "--format=csv", "--csv_header=false",
         f"--check={str(check).lower()}", f"--wire={wire}"],
        capture_output=True, text=True, check=False)
    fields = out.stdout.strip().split(",")
    if out.returncode != 0 or len(fields) < 13:
        sys.exit(f"ptobench failed: {out.stdout}{out.stderr}")
    return float(fields[6]) * seconds  # requests/s over the window


def measure(name, command, port, args, check, wire):
    address = f"127.0.0.1:{port}"
    rows = []
    with tempfile.NamedTemporaryFile(prefix="alloc_count.") as counter:
        env = dict(os.environ,
                   LD_PRELOAD=os.path.join(BIN, "bench/liballoc_count.so"),
                   ALLOC_COUNT_FILE=counter.name)
        server = subprocess.Popen(
            ["taskset", "-c", "0"] + command + [f"--address={address}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1)
            for concurrency in args.concurrency.split(","):
                ptobench(address, 1, concurrency, args.shape, 0,
                         check, wire)  # warm up
                before = read_count(counter.name)
                calls = ptobench(address, args.seconds, concurrency,
                                 args.shape, 0, check, wire)
                after = read_count(counter.name)
                rows.append((name, concurrency, calls,
                             (after - before) / max(calls, 1)))
        finally:
            server.terminate()
            server.wait(timeout=60)
    return rows


def servers_to_measure(builds, plain, wires="job"):
    """(name, command, check, wire) of each ptoserve build in `builds`
    (NAME=PATH,...), once for each of `wires` (job: Execute; oip: the
    inference protocol's ModelInfer, named "NAME oip"), and, with `plain`,
    the plain servers: the flat-message TAND server and echo (the ceiling:
    bench/flat_server, ptobench --wire=flat), the plain TAND server and echo
    (ptoserve's Job)."""
    servers = [(name if wire == "job" else f"{name} {wire}",
                [path, "--metrics_address=", "--http_address="], True, wire)
               for name, path in (b.split("=", 1) for b in builds.split(","))
               for wire in wires.split(",")]
    if plain:
        # The echoes' answers are src0, not the TAND: not checked.
        servers += [
            ("flat TAND server", [f"{BIN}/bench/flat_server"], True, "flat"),
            ("flat echo", [f"{BIN}/bench/flat_server", "--echo"], False,
             "flat"),
            ("plain TAND server", [f"{BIN}/bench/plain_tand_server"], True,
             "job"),
            ("plain echo", [f"{BIN}/bench/plain_echo_server"], False, "job")]
    return servers


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--servers", default=f"ptoserve={BIN}/server/ptoserve",
        help="NAME=PATH,... of ptoserve builds; the plain TAND server and "
        "the plain echo are always measured")
    parser.add_argument("--concurrency", default="1,32")
    parser.add_argument("--shape", default="16x16")
    parser.add_argument("--seconds", type=float, default=3)
    args = parser.parse_args()
    servers = servers_to_measure(args.servers, plain=True)
    print("| server | concurrency | calls measured | heap allocations per call |")
    print("|---|---|---|---|")
    port = 47100
    for name, command, check, wire in servers:
        port += 1
        for row in measure(name, command, port, args, check, wire):
            print(f"| {row[0]} | {row[1]} | {row[2]:.0f} | {row[3]:.1f} |")


if __name__ == "__main__":
    main()
