#!/usr/bin/env python3
"""Instructions a server executes per answered unary call, counted by
valgrind's callgrind: a figure that does not drift with the machine's load
or clock, for machines whose processor counters perf cannot read (virtual
machines without a PMU: `perf stat -e cycles` says "not supported").

Each server runs under callgrind (all its threads, kernel time not counted:
user-space instructions only). ptobench warms it up, the counters are
zeroed (callgrind_control -z), ptobench runs --seconds of unary calls at
each concurrency, and the counters are dumped (callgrind_control -d): the
instructions in the dump divided by the calls answered. Under callgrind a
server runs some 50 times slower, so the calls are few but the count is
exact; what it leaves out is time spent waiting (context switches, the
kernel), which bench/generator_bench.py --cpu=window measures.

  bazel build -c opt //server:ptoserve //bench:all
  bench/instructions_per_call.py --servers=ptoserve=bazel-bin/server/ptoserve
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

import alloc_bench
from alloc_bench import servers_to_measure

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bazel-bin")


def ptobench(address, seconds, concurrency, args, warmup, check, wire):
    out = subprocess.run(
        [os.path.join(BIN, "bench/ptobench"), f"--server={address}",
         f"--mode={args.mode}", f"--shape={args.shape}",
         f"--target={args.target}",
         f"--opcode={args.opcode}", f"--concurrency={concurrency}",
         f"--duration={seconds}s", f"--warmup={warmup}s", "--format=csv",
         "--csv_header=false", f"--check={str(check).lower()}",
         f"--wire={wire}"],
        capture_output=True, text=True, check=False)
    fields = out.stdout.strip().split(",")
    if out.returncode != 0 or len(fields) < 13:
        sys.exit(f"ptobench failed: {out.stdout}{out.stderr}")
    return float(fields[6]) * seconds  # calls answered in the window


def total_instructions(dump):
    with open(dump) as f:
        for line in f:
            m = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if m:
                return int(m.group(1))
    sys.exit(f"{dump}: no totals")


def measure(name, command, port, args, check, wire):
    address = f"127.0.0.1:{port}"
    rows = []
    with tempfile.TemporaryDirectory(prefix="callgrind.") as out:
        server = subprocess.Popen(
            ["valgrind", "--tool=callgrind",
             f"--callgrind-out-file={out}/cg.%p"] + command +
            [f"--address={address}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 180
            while True:  # until it answers
                probe = subprocess.run(
                    [os.path.join(BIN, "bench/ptobench"),
                     f"--server={address}", "--mode=unary",
                     "--concurrency=1", "--duration=0.2s", "--warmup=0s",
                     "--format=csv", "--csv_header=false",
                     f"--check={str(check).lower()}", f"--wire={wire}"],
                    capture_output=True, text=True, check=False)
                if probe.returncode == 0:
                    break
                if time.monotonic() > deadline or server.poll() is not None:
                    sys.exit(f"{name} did not start under callgrind")
                time.sleep(0.5)
            for c in args.concurrency.split(","):
                ptobench(address, 2, int(c), args, 0, check, wire)  # warm-up
                subprocess.run(["callgrind_control", "-z", str(server.pid)],
                               capture_output=True, check=True)
                calls = ptobench(address, args.seconds, int(c), args, 0, check,
                                 wire)
                for f in glob.glob(f"{out}/cg.*"):
                    os.remove(f)
                subprocess.run(["callgrind_control", "-d", str(server.pid)],
                               capture_output=True, check=True)
                dumps = glob.glob(f"{out}/cg.*")
                instructions = sum(total_instructions(d) for d in dumps)
                rows.append((name, c, calls, instructions / calls))
        finally:
            server.terminate()
            server.wait()
    return rows


def main():
    global BIN
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--servers", default=f"ptoserve={BIN}/server/ptoserve",
        help="NAME=PATH,... of ptoserve builds; the plain servers (flat "
        "and Job, TAND and echo) too unless --no-plain")
    parser.add_argument("--wires", default="job",
                        help="job,oip: each ptoserve build through Execute "
                        "and the inference protocol's ModelInfer")
    parser.add_argument("--concurrency", default="1,8,32,128")
    parser.add_argument("--mode", default="unary", choices=["unary", "stream"],
                        help="unary calls, or stream messages (each server's "
                        "bidirectional stream, one job a message; --concurrency "
                        "counts streams; not with --wires=oip)")
    parser.add_argument("--shape", default="16x16")
    parser.add_argument("--target", default="host",
                        help="host, a2a3 or a5 (the plain servers compute on "
                        "the host whatever it is)")
    parser.add_argument("--opcode", default="tand")
    parser.add_argument("--plain", action=argparse.BooleanOptionalAction,
                        default=True,
                        help="measure the plain TAND server and echo too")
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--bin", default=BIN,
                        help="where the bench/ binaries (ptobench, the plain "
                        "servers) are: an -c opt build's bazel-bin")
    args = parser.parse_args()
    BIN = alloc_bench.BIN = args.bin
    servers = servers_to_measure(args.servers, args.plain, args.wires)
    if args.mode == "stream":  # the plain TAND server serves no stream
        servers = [s for s in servers if s[0] != "plain TAND server"]
    per = "call" if args.mode == "unary" else "stream message"
    print(f"| server | target | concurrency | {per}s measured | "
          f"instructions per {per} |")
    print("|---|---|---|---|---|")
    port = 47200
    for name, command, check, wire in servers:
        port += 1
        for row in measure(name, command, port, args, check, wire):
            print(f"| {row[0]} | {args.target} {args.opcode} {args.shape} | "
                  f"{row[1]} | {row[2]:.0f} | {row[3]:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
