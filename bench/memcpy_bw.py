#!/usr/bin/env python3
"""memcpy's bandwidth on one core: the yardstick of the shared-memory
figures in docs/PERFORMANCE.md.

Copies a --mib MiB buffer into another (numpy.copyto: one memcpy of the
whole buffer) --repeat times, both buffers faulted in first, and prints the
median and best rate over --rounds rounds, counted as bytes copied per second
(the destination's size) and as memory traffic (read plus written, twice
that). Pin it to the core the server runs on; it needs numpy (the system's
python3-numpy, which tools/setup.sh installs):

  taskset -c 0 /usr/bin/python3 bench/memcpy_bw.py --mib=64
"""
import argparse
import statistics
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n = args.mib << 20
    src = np.ones(n, dtype=np.uint8)
    dst = np.zeros(n, dtype=np.uint8)
    np.copyto(dst, src)  # every page of both faulted in
    rates = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        for _ in range(args.repeat):
            np.copyto(dst, src)
        rates.append(n * args.repeat / (time.perf_counter() - t0))
    med = statistics.median(rates)
    print(f"memcpy {args.mib} MiB: {med / 1e9:.2f} GB/s copied "
          f"(best {max(rates) / 1e9:.2f}); read+write {2 * med / 1e9:.2f} GB/s")


if __name__ == "__main__":
    main()
