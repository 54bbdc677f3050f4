#!/usr/bin/env python3
"""Measures ptoserve against the echo baseline, interleaved.

The machines this runs on are shared and their speed drifts, so one long run
of each server is not a fair comparison. This alternates short ptobench runs
against each server, many rounds, and reports the median of each and the
median of the per-round ratios.

  bench/compare.py --rounds=9 --seconds=1 -- --concurrency=8 --shape=256x256

Expects both servers running: echo on --echo, ptoserve on --ptoserve. The
arguments after -- go to ptobench for both.
"""
import argparse
import csv
import io
import statistics
import subprocess
import sys


def run(ptobench, server, seconds, extra, check):
    cmd = ["taskset", "-c", "1", ptobench, f"--server={server}", "--format=csv",
           f"--duration={seconds}s", "--warmup=0.3s", f"--check={check}"] + extra
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    if len(rows) != 1:
        sys.exit(f"ptobench failed: {out.stderr}")
    row = rows[0]
    # The short names the rest of this script uses.
    for long, short in [("requests_per_s", "rps"), ("tiles_per_s", "tps"),
                        ("p50_us", "p50"), ("p90_us", "p90"),
                        ("p99_us", "p99"), ("max_us", "max")]:
        row[short] = row[long]
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ptobench", default="bazel-bin/bench/ptobench")
    parser.add_argument("--echo", default="127.0.0.1:50071")
    parser.add_argument("--ptoserve", default="127.0.0.1:50072")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--name", default="")
    parser.add_argument("--check_echo", default="false")
    parser.add_argument("extra", nargs="*")
    args = parser.parse_args()
    echo, pto, ratios = [], [], []
    for _ in range(args.rounds):
        e = run(args.ptobench, args.echo, args.seconds, args.extra, args.check_echo)
        p = run(args.ptobench, args.ptoserve, args.seconds, args.extra, "true")
        if int(p["errors"]) != 0:
            sys.exit(f"ptoserve returned {p['errors']} errors")
        echo.append(e)
        pto.append(p)
        ratios.append(float(p["rps"]) / float(e["rps"]))

    def med(rows, key):
        return statistics.median(float(r[key]) for r in rows)

    print(f"{args.name or ' '.join(args.extra)}: "
          f"echo {med(echo, 'rps'):.0f}/s (p50 {med(echo, 'p50'):.0f} us, p99 {med(echo, 'p99'):.0f} us), "
          f"ptoserve {med(pto, 'rps'):.0f}/s (p50 {med(pto, 'p50'):.0f} us, p99 {med(pto, 'p99'):.0f} us), "
          f"ratio median {statistics.median(ratios):.2f} "
          f"[{min(ratios):.2f}..{max(ratios):.2f}]")


if __name__ == "__main__":
    main()
