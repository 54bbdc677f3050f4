#!/usr/bin/env python3
"""The Python peer: TAND/TXOR served the way a typical Python service would.

grpcio's synchronous server on a thread pool, numpy for the arithmetic:
Execute reads the first instruction's two source tiles (bytes in `data`),
computes dst = src0 & src1 (or ^ for TXOR) with numpy and returns it.
Nothing else (no health, metrics, reflection, checks beyond what it needs):
it is the figure ptoserve's unary path is compared with, not a server.

  bazel build //client/python:ptoserve_py_proto
  bench/python_peer_server.py --address=127.0.0.1:50184 [--workers=8]

bench/generator_bench.py --servers=...,python starts it on core 0.
"""
import argparse
import os
import sys
from concurrent import futures

import grpc
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bazel-bin", "client", "python"))

from ptoserve.v1 import job_pb2, service_pb2_grpc, tile_pb2  # noqa: E402

DTYPES = {
    tile_pb2.DTYPE_INT8: np.int8, tile_pb2.DTYPE_UINT8: np.uint8,
    tile_pb2.DTYPE_INT16: np.int16, tile_pb2.DTYPE_UINT16: np.uint16,
    tile_pb2.DTYPE_INT32: np.int32, tile_pb2.DTYPE_UINT32: np.uint32,
}


class TileCompute(service_pb2_grpc.TileComputeServicer):
    def Execute(self, request, context):
        inst = request.instructions[0]
        a, b = request.tiles[inst.src0], request.tiles[inst.src1]
        dtype = DTYPES[a.dtype]
        x = np.frombuffer(a.data, dtype=dtype)
        y = np.frombuffer(b.data, dtype=dtype)
        out = x ^ y if inst.opcode == job_pb2.OPCODE_TXOR else x & y
        result = job_pb2.JobResult(id=request.id)
        dst = result.tiles[inst.dst]
        dst.dtype, dst.rows, dst.cols = a.dtype, a.rows, a.cols
        dst.data = out.tobytes()
        return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", default="127.0.0.1:50184")
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=args.workers),
        options=[("grpc.max_receive_message_length", 64 << 20),
                 ("grpc.max_send_message_length", 64 << 20)])
    service_pb2_grpc.add_TileComputeServicer_to_server(TileCompute(), server)
    server.add_insecure_port(args.address)
    server.start()
    server.wait_for_termination()


if __name__ == "__main__":
    main()
