#!/usr/bin/env python3
"""What one heavy client does to another client's small calls.

Starts each server of --servers on core 0 and, for each heavy priority of
--priorities ("none" for no heavy client), runs on core 1:
- the heavy client: one ExecuteStream of jobs that each chain --steps
  a2a3 TANDs writing one 64x64 int32 tile (so every job is --steps event
  records to build), sent as fast as the stream's window takes them and
  read as they come; at nice 19, so that its own CPU does not slow the
  light client down (the server is what is measured);
- the light client: ptobench, unary 16x16 int32 TANDs at concurrency 1,
  for --seconds, on its own connection.
Rounds are interleaved: every (server, priority) pair runs once per round.
Prints one Markdown row per pair with the medians over the rounds: the
light client's requests/s and latency percentiles, the heavy client's jobs
answered per second, and the server's CPU over the light client's run.

  bazel build -c opt //server:ptoserve //bench:ptobench //client/python:all
  bench/neighbours.py --servers=new=bazel-bin/server/ptoserve,old=/tmp/old
"""
import argparse
import itertools
import os
import re
import statistics
import subprocess
import sys
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def heavy_client(address, priority, steps, seconds):
    """Runs the heavy stream for `seconds`; prints the jobs answered."""
    sys.path.insert(0, os.path.join(ROOT, "bazel-bin/client/python"))
    import grpc
    from ptoserve.v1 import job_pb2, service_pb2_grpc, tile_pb2

    job = job_pb2.Job(target=job_pb2.TARGET_A2A3, priority=priority,
                      outputs=["c"])
    for name, fill in (("a", 6), ("b", 3), ("c", None)):
        tile = tile_pb2.Tile(dtype=tile_pb2.DTYPE_INT32, rows=64, cols=64)
        if fill is not None:
            tile.fill = fill
        job.tiles[name].CopyFrom(tile)
    step = job_pb2.Instruction(opcode=job_pb2.OPCODE_TAND, dst="c", src0="a",
                               src1="b")
    job.instructions.extend([step] * steps)
    end = time.monotonic() + seconds

    def jobs():
        for i in itertools.count():
            if time.monotonic() > end:
                return
            job.id = str(i)
            yield job

    stub = service_pb2_grpc.TileComputeStub(grpc.insecure_channel(address))
    answered = 0
    for _ in stub.ExecuteStream(jobs(), timeout=seconds + 60):
        answered += 1
    print(answered)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def wait_serving(ptoctl, address):
    for _ in range(100):
        if subprocess.run([ptoctl, f"--server={address}", "health"],
                          capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    raise SystemExit(f"no server answered on {address}")


def measure(binary, priority, args, port):
    address = f"127.0.0.1:{port}"
    server = subprocess.Popen(
        ["taskset", "-c", "0", binary, f"--address={address}",
         "--metrics_address=", "--http_address="],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_serving(os.path.join(ROOT, "bazel-bin/client/ptoctl/ptoctl"), address)
        heavy = None
        heavy_seconds = args.seconds + 2 * args.warmup
        if priority != "none":
            heavy = subprocess.Popen(
                # Debian's Python: it has python3-grpcio.
                ["taskset", "-c", "1", "nice", "-n", "19", "/usr/bin/python3",
                 os.path.abspath(__file__), "--heavy", address, priority,
                 str(args.steps), str(heavy_seconds)],
                stdout=subprocess.PIPE, text=True)
            time.sleep(args.warmup)
        cpu_before, wall_before = cpu_seconds(server.pid), time.monotonic()
        light = subprocess.run(
            ["taskset", "-c", "1", os.path.join(ROOT, "bazel-bin/bench/ptobench"),
             f"--server={address}", "--mode=unary", "--concurrency=1",
             f"--duration={args.seconds}s", "--warmup=0s"],
            capture_output=True, text=True)
        cpu = (cpu_seconds(server.pid) - cpu_before) / (
            time.monotonic() - wall_before)
        heavy_jobs = 0.0
        if heavy is not None:
            out, _ = heavy.communicate(timeout=heavy_seconds + 120)
            if heavy.returncode != 0:
                raise SystemExit(f"the heavy client failed ({heavy.returncode})")
            heavy_jobs = int(out) / heavy_seconds
    finally:
        server.terminate()
        server.wait(timeout=60)
    figures = {"cpu": cpu, "heavy_jobs": heavy_jobs}
    text = light.stdout + light.stderr
    m = re.search(r"requests/s ([\d.]+)", text)
    figures["rps"] = float(m.group(1)) if m else 0.0
    for name in ("p50", "p99", "max"):
        m = re.search(rf"{name} ([\d.]+)", text)
        figures[name] = float(m.group(1)) / 1000 if m else float("nan")
    return figures


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--heavy":
        heavy_client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                     float(sys.argv[5]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", default=f"ptoserve={ROOT}/bazel-bin/server/ptoserve",
                        help="NAME=PATH,... (each an optimized ptoserve)")
    parser.add_argument("--priorities", default="none,0,3",
                        help="the heavy client's job priorities; none: alone")
    parser.add_argument("--steps", type=int, default=4096,
                        help="instructions per heavy job")
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    servers = [s.split("=", 1) for s in args.servers.split(",")]
    priorities = args.priorities.split(",")
    results = {}
    port = 42000
    for _ in range(args.rounds):
        for (name, binary), priority in itertools.product(servers, priorities):
            port += 1
            results.setdefault((name, priority), []).append(
                measure(binary, priority, args, port))
    print("| server | heavy client | light requests/s | light p50 ms | "
          "light p99 ms | light max ms | heavy jobs/s | server CPU |")
    print("|---|---|---|---|---|---|---|---|")
    for (name, priority), runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        heavy = "none" if priority == "none" else f"priority {priority}"
        print(f"| {name} | {heavy} | {med['rps']:.0f} | {med['p50']:.2f} | "
              f"{med['p99']:.2f} | {med['max']:.1f} | "
              f"{med['heavy_jobs']:.1f} | {med['cpu']:.0%} |")


if __name__ == "__main__":
    main()
