"""Runs a TAND and a TXOR on a2a3 against a ptoserve server and prints the
results and their events.

    example.py [HOST:PORT]    (default 127.0.0.1:50051)
"""

import sys

import numpy as np

from ptoserve_client import Client, PtoserveError, event_text


def print_result(title, result):
    dst = result.dst
    print(f"{title}: dst {dst.shape[0]}x{dst.shape[1]} {dst.dtype} "
          f"on {result.target}")
    print(dst)
    for event in result.events:
        print(event_text(event), end="")


def main(argv):
    address = argv[1] if len(argv) > 1 else "127.0.0.1:50051"
    # a2a3 needs rows of a multiple of 32 bytes: 16 int16 columns.
    a = np.arange(32, dtype=np.int16).reshape(2, 16)
    b = np.full((2, 16), 0b1010, dtype=np.int16)
    with Client(address) as client:
        try:
            print_result("a & b", client.tand(a, b, target="a2a3"))
            print_result("a ^ b", client.txor(a, b, target="a2a3"))
        except PtoserveError as error:
            print(f"example: {error}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
