#!/usr/bin/env python3
"""Shows whether ptobench or the server limits a figure.

Starts the plain echo server, echo_server (ptoserve's gRPC setup),
ptoserve and the Python peer (those of --servers) on core 0, then runs the
load generator(s) on core 1, interleaved: every round measures every
(server, generator) pair at every concurrency, in turn, so the machine's
drift falls on all of them alike. For each run it records requests/s, tiles
(jobs)/s, p50 and p99, and the CPU share the server and the generator used
over the run (user + system time / wall time; with --cpu=window over the
measured window only, without the generator's start-up, which for large
tiles is long). Prints one Markdown row per
(concurrency, server, generator) with the medians over the rounds.

  bazel build -c opt //server:ptoserve //bench:all
  bench/generator_bench.py --rounds=3 --seconds=4 \\
      --generator=old=/tmp/ptobench_old --generator=new=bazel-bin/bench/ptobench

A generator is NAME=PATH[,extra flags...]: NAME=PATH,--threads=2 runs
PATH --threads=2; NAME=PATH,--shm sends the tiles through shared memory
(ptoserve only). Runs that a generator cannot take (an old ptobench has no
--threads) are the caller's to leave out. --ptoserve_flags adds flags to
ptoserve's command line (--ptoserve_flags=--max_tile_mb=64,--max_job_mb=512
for 4096x4096 tiles).
"""
import argparse
import csv
import io
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def switches(pid):
    """Context switches so far, voluntary and not, of all `pid`'s threads."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                for line in f:
                    if "ctxt_switches:" in line:
                        total += int(line.split()[1])
        except OSError:
            pass  # the thread ended
    return total


def start(cmd, port):
    proc = subprocess.Popen(["taskset", "-c", "0"] + cmd +
                            [f"--address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc


def run(generator, extra, port, server_pid, seconds, warmup, check, conc,
        window=False):
    cmd = ["taskset", "-c", "1", generator, f"--server=127.0.0.1:{port}",
           "--format=csv", f"--duration={seconds}s", f"--warmup={warmup}s",
           f"--check={check}", f"--concurrency={conc}"] + extra
    if window:
        # CPU within the measured window only, leaving out the generator's
        # set-up (large for big tiles: the tiles made, a region filled):
        # both processes' CPU time sampled every 50 ms, and the shares taken
        # over the (seconds - 0.5) s that end 0.3 s before the generator
        # exits (its last answers and tear-down). taskset execs the
        # generator, so its pid is the Popen's. Output goes to files, not
        # pipes, so that nothing blocks while sampling.
        with tempfile.TemporaryFile("w+") as o, \
                tempfile.TemporaryFile("w+") as e:
            proc = subprocess.Popen(cmd, stdout=o, stderr=e, text=True)
            series = []
            while proc.poll() is None:
                try:
                    series.append((time.monotonic(), cpu_seconds(server_pid),
                                   cpu_seconds(proc.pid),
                                   switches(server_pid)))
                except (OSError, IndexError, ValueError):
                    pass  # the generator exited between poll and read
                time.sleep(0.05)
            end = time.monotonic()
            o.seek(0)
            e.seek(0)
            out = subprocess.CompletedProcess(cmd, proc.returncode, o.read(),
                                              e.read())
        hi = end - 0.3
        lo = hi - max(0.2, seconds - 0.5)
        inside = [x for x in series if lo <= x[0] <= hi] or series[-1:]
        (t0, s0, g0, w0), (t1, s1, g1, w1) = inside[0], inside[-1]
        if t1 <= t0:
            sys.exit(f"{' '.join(cmd)}: too short to sample")
        gen = g1 - g0
    else:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        s0, t0, w0 = cpu_seconds(server_pid), time.monotonic(), None
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        s1, t1, w1 = cpu_seconds(server_pid), time.monotonic(), None
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        gen = (after.ru_utime + after.ru_stime - before.ru_utime -
               before.ru_stime)
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    if len(rows) != 1:
        sys.exit(f"{' '.join(cmd)} failed: {out.stdout} {out.stderr}")
    wall = t1 - t0
    row = rows[0]
    rps = float(row["requests_per_s"])
    # Per answered call, over the window (--cpu=window only): the server's
    # CPU time and its threads' context switches.
    per_call = {}
    if w0 is not None and rps > 0:
        per_call = {"cpu_us": 1e6 * (s1 - s0) / wall / rps,
                    "switches": (w1 - w0) / wall / rps}
    return {**per_call, "rps": rps,
            "tps": float(row["tiles_per_s"]), "p50": float(row["p50_us"]),
            "p99": float(row["p99_us"]), "errors": int(row["errors"]),
            "server_cpu": 100 * (s1 - s0) / wall, "gen_cpu": 100 * gen / wall}


def print_ratios(results, base):
    """One row per (concurrency, server, generator) but `base`'s: its
    requests/s, p50 and p99 over those of server `base` with the same
    generator (or of generator `base` on the same server) at the same
    concurrency, in the same round."""
    print()
    print(f"| concurrency | server | generator | requests/s over {base}'s "
          f"(median, spread) | p50 over {base}'s (median, spread) "
          f"| p99 over {base}'s (median, spread) |")
    print("|---|---|---|---|---|---|")
    for (c, s, g), rs in results.items():
        # `base` names a server, or a generator (--shm against bytes).
        base_rs = results.get((c, base, g)) or results.get((c, s, base))
        if base in (s, g) or not base_rs:
            continue
        ratios = {key: [r[key] / b[key] for r, b in zip(rs, base_rs) if b[key]]
                  for key in ("rps", "p50", "p99")}
        if not all(ratios.values()):
            continue
        cells = [f"{statistics.median(v):.2f} ({min(v):.2f} to {max(v):.2f})"
                 for v in ratios.values()]
        print(f"| {c} | {s} | {g} | " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default="bazel-bin",
                        help="where bench/ and server/ binaries are")
    parser.add_argument("--generator", action="append", required=True,
                        help="NAME=PATH[,flag...]")
    parser.add_argument("--servers", default="plain,echo,ptoserve",
                        help="of flat (the simplest server computing TAND on "
                        "the simplest message: the ceiling), flat_echo, plain "
                        "(echo on ptoserve's Job), tand (the plain server "
                        "computing TAND on the Job), echo, ptoserve, "
                        "ptoserve_oip (ptoserve through ModelInfer), python "
                        "(the peer: bench/python_peer_server.py)")
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--shape", default="16x16")
    parser.add_argument("--cpu", default="run", choices=["run", "window"],
                        help="CPU shares over the generator's whole run "
                        "(start-up included), or over the measured window")
    parser.add_argument("--ptoserve_flags", default="",
                        help="comma-separated flags added to ptoserve's")
    parser.add_argument("--builds", default="",
                        help="NAME=PATH,... of other ptoserve builds, each a "
                        "server named NAME (e.g. before=/tmp/ptoserve)")
    parser.add_argument("--pairs", default="",
                        help="SERVER:GENERATOR,... to run (default: all)")
    parser.add_argument("--ratio_to", default="",
                        help="a server of --servers (or a generator): also "
                        "print each other server's (generator's) requests/s, "
                        "p50 and p99 over its, round by round (the runs of one "
                        "round are seconds apart, so the machine's drift "
                        "between rounds cancels), median and spread")
    args = parser.parse_args()

    known = {
        # The ceiling: the simplest message a TAND needs, computed (flat)
        # or echoed (flat_echo); ptobench speaks it with --wire=flat.
        "flat": ([f"{args.bin}/bench/flat_server"], 50186, "true"),
        "flat_echo": ([f"{args.bin}/bench/flat_server", "--echo"], 50187,
                      "false"),
        "plain": ([f"{args.bin}/bench/plain_echo_server"], 50181, "false"),
        "tand": ([f"{args.bin}/bench/plain_tand_server"], 50185, "true"),
        "echo": ([f"{args.bin}/bench/echo_server"], 50182, "false"),
        "ptoserve": ([f"{args.bin}/server/ptoserve", "--metrics_address=", "--http_address="] +
                     [f for f in args.ptoserve_flags.split(",") if f],
                     50183, "true"),
        # ptoserve through the inference protocol's ModelInfer (ptobench
        # --wire=oip).
        "ptoserve_oip": ([f"{args.bin}/server/ptoserve", "--metrics_address=",
                          "--http_address="] +
                         [f for f in args.ptoserve_flags.split(",") if f],
                         50188, "true"),
        "python": (["/usr/bin/python3", "bench/python_peer_server.py"],
                   50184, "true"),
    }
    for i, build in enumerate(b for b in args.builds.split(",") if b):
        name, path = build.split("=", 1)
        known[name] = ([path, "--metrics_address=", "--http_address="] +
                       [f for f in args.ptoserve_flags.split(",") if f],
                       50190 + i, "true")
    servers = args.servers.split(",")
    procs = {s: start(known[s][0], known[s][1]) for s in servers}
    try:
        time.sleep(1.5)
        generators = {}
        for g in args.generator:
            name, spec = g.split("=", 1)
            path, *extra = spec.split(",")
            # A generator's own --shape, if it has one, comes last and wins.
            generators[name] = (path, [f"--shape={args.shape}"] + extra)
        pairs = [(s, g) for s in servers for g in generators]
        if args.pairs:
            pairs = [tuple(p.split(":")) for p in args.pairs.split(",")]
        results = {}
        for _ in range(args.rounds):
            for c in [int(c) for c in args.concurrency.split(",")]:
                for s, g in pairs:
                    path, extra = generators[g]
                    _, port, check = known[s]
                    if s.startswith("flat"):
                        extra = extra + ["--wire=flat"]
                    elif s.endswith("_oip"):
                        extra = extra + ["--wire=oip"]
                    r = run(path, extra, port, procs[s].pid, args.seconds,
                            args.warmup, check, c, args.cpu == "window")
                    results.setdefault((c, s, g), []).append(r)
        window = args.cpu == "window"
        print("| concurrency | server | generator | requests/s | rounds | tiles/s"
              " | p50 us | p99 us | server CPU % | generator CPU % | errors |"
              + (" server CPU us/call | switches/call |" if window else ""))
        print("|---|---|---|---|---|---|---|---|---|---|---|"
              + ("---|---|" if window else ""))
        for (c, s, g), rs in results.items():
            med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            spread = "-".join(f"{min(r['rps'] for r in rs):,.0f}".split()) + \
                " to " + f"{max(r['rps'] for r in rs):,.0f}"
            print(f"| {c} | {s} | {g} | {med['rps']:,.0f} | {spread} | "
                  f"{med['tps']:,.0f} | {med['p50']:.0f} | {med['p99']:.0f} | "
                  f"{med['server_cpu']:.0f} | {med['gen_cpu']:.0f} | "
                  f"{sum(r['errors'] for r in rs)} |"
                  + (f" {med.get('cpu_us', 0):.1f} | "
                     f"{med.get('switches', 0):.2f} |" if window else ""))
        if args.ratio_to:
            print_ratios(results, args.ratio_to)
    finally:
        for p in procs.values():
            p.terminate()
        for p in procs.values():
            p.wait()


if __name__ == "__main__":
    main()
