"""Tests ptoserve_client against the real server on a loopback port.

Run by `bazel test //client/python:client_test`. Outside Bazel, from the
repository root after `bazel build //server:ptoserve //client/python:all`:
    PTOSERVE_BINARY=bazel-bin/server/ptoserve \\
    PYTHONPATH=client/python:bazel-bin/client/python \\
    /usr/bin/python3 client/python/client_test.py
"""

import asyncio
import concurrent.futures
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc
import numpy as np

from ptoserve.v1 import job_pb2, service_pb2, service_pb2_grpc, tile_pb2
from ptoserve_client import (MAX_TILE_BYTES, Client, PtoserveError, Result,
                             ServerMetadata, SharedRegion, aio, binary_job,
                             decode_tile, encode_operands, encode_tile,
                             make_job)
from ptoserve_client.client import channel_target
from server_process import SERVER, start_server, stop_server

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "example.py")
DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32]
TARGETS = ["host", "a2a3", "a5"]
# Each target's micro-ops for each opcode.
TRACES = {
    ("host", "tand"): ["and"],
    ("host", "txor"): ["xor"],
    ("a2a3", "tand"): ["vand"],
    ("a2a3", "txor"): ["vor", "vand", "vnot", "vand"],
    ("a5", "tand"): ["vand"],
    ("a5", "txor"): ["vxor"],
}
CALL_TIMEOUT_S = 10


def unary_calls(rng):
    """(name, call(client, **kwargs)) for every method that makes one call,
    the job methods first: each TANDs or XORs 1x8 int32 tiles."""
    a = random_tile(rng, np.int32, (1, 8))
    job = make_job([("tand", "c", "a", "a")], tiles={"a": a})
    program = [("tand", "c", "a", "a")]
    text = "%c = tand %a, %a : !pto.tile<...>"
    return [
        ("tand", lambda c, **kw: c.tand(a, 3, **kw)),
        ("txor", lambda c, **kw: c.txor(a, 3, **kw)),
        ("run", lambda c, **kw: c.run(program, {"a": a}, **kw)),
        ("run_assembly",
         lambda c, **kw: c.run_assembly(text, {"a": a}, **kw)),
        ("execute", lambda c, **kw: c.execute(job, **kw)),
        ("run_job", lambda c, **kw: c.run_job(job, **kw)),
        ("tand_async", lambda c, **kw: c.tand_async(a, 3, **kw).result()),
        ("txor_async", lambda c, **kw: c.txor_async(a, 3, **kw).result()),
        ("run_async",
         lambda c, **kw: c.run_async(program, {"a": a}, **kw).result()),
        ("run_assembly_async", lambda c, **kw: c.run_assembly_async(
            text, {"a": a}, **kw).result()),
        ("execute_async",
         lambda c, **kw: c.execute_async(job, **kw).result()),
        ("capabilities", lambda c, **kw: c.capabilities(**kw)),
        ("get_server_metadata", lambda c, **kw: c.get_server_metadata(**kw)),
        ("health", lambda c, **kw: c.health(**kw)),
    ]


JOB_CALLS = 11  # unary_calls' first 11 run a job


def random_tile(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype,
                        endpoint=True)


def shape_for(dtype):
    """4 rows of 32 bytes of dtype: valid on every target."""
    return 4, 32 // np.dtype(dtype).itemsize


class ClientTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server, cls.address = start_server()
        cls.client = Client(cls.address, timeout=CALL_TIMEOUT_S)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        stop_server(cls.server)

    def setUp(self):
        self.rng = np.random.default_rng(20240601)

    def test_tand_and_txor_match_numpy_on_every_target_and_dtype(self):
        for target, dtype in itertools.product(TARGETS, DTYPES):
            a = random_tile(self.rng, dtype, shape_for(dtype))
            b = random_tile(self.rng, dtype, shape_for(dtype))
            for op, call, expected in [("tand", self.client.tand, a & b),
                                       ("txor", self.client.txor, a ^ b)]:
                with self.subTest(target=target, dtype=dtype.__name__, op=op):
                    result = call(a, b, target=target)
                    self.assertEqual(result.dst.dtype, np.dtype(dtype))
                    np.testing.assert_array_equal(result.dst, expected)
                    self.assertEqual(result.target, target)
                    [event] = result.events
                    self.assertEqual(job_pb2.Opcode.Name(event.opcode),
                                     "OPCODE_" + op.upper())
                    self.assertEqual([step.op for step in event.trace],
                                     TRACES[target, op])

    def test_only_the_valid_region_is_computed(self):
        a = random_tile(self.rng, np.int16, (4, 16))
        b = random_tile(self.rng, np.int16, (4, 16))
        result = self.client.txor(a, b, valid=(3, 5), target="a2a3")
        expected = np.zeros_like(a)
        expected[:3, :5] = a[:3, :5] ^ b[:3, :5]
        np.testing.assert_array_equal(result.dst, expected)

    def test_any_memory_order_and_byte_order_is_sent_little_endian(self):
        a = random_tile(self.rng, np.int32, (8, 4)).T  # column-major view
        b = random_tile(self.rng, np.int32, (4, 8)).astype(">i4")
        result = self.client.tand(a, b, target="a5")
        np.testing.assert_array_equal(result.dst, a & b)

    def test_stream_answers_every_job_once_and_goes_on_after_a_failure(self):
        jobs, expected = [], {}
        for i in range(300):
            target = TARGETS[i % 3]
            dtype = DTYPES[i % len(DTYPES)]
            a = random_tile(self.rng, dtype, shape_for(dtype))
            b = random_tile(self.rng, dtype, shape_for(dtype))
            op = "txor" if i % 2 else "tand"
            tmp = ("t",) if op == "txor" else ()
            jobs.append(make_job([(op, "d", "a", "b") + tmp],
                                 tiles={"a": a, "b": b}, outputs=["d"],
                                 target=target, job_id=f"j{i}"))
            expected[f"j{i}"] = a ^ b if op == "txor" else a & b
        # Rows of 16 bytes: not a multiple of 32, refused on a2a3.
        narrow = np.ones((2, 8), dtype=np.int16)
        jobs.insert(150, make_job([("tand", "d", "a", "b")],
                                  tiles={"a": narrow, "b": narrow},
                                  target="a2a3", job_id="bad"))
        results = {}
        # A generator: the client sends as the server's window allows.
        for r in self.client.execute_stream(job for job in jobs):
            self.assertNotIn(r.id, results, "answered twice")
            results[r.id] = r
        self.assertEqual(set(results), set(expected) | {"bad"})
        self.assertEqual(results["bad"].status.code,
                         grpc.StatusCode.INVALID_ARGUMENT.value[0])
        self.assertEqual(results["bad"].status.code,
                         job_pb2.Code.INVALID_ARGUMENT)
        self.assertIn("a2a3", results["bad"].status.message)
        with self.assertRaises(PtoserveError) as raised:
            Result.from_proto(results["bad"])
        self.assertEqual(raised.exception.code,
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(raised.exception.details,
                         results["bad"].status.message)
        for job_id, want in expected.items():
            with self.subTest(job=job_id):
                self.assertEqual(results[job_id].status.code, 0)
                np.testing.assert_array_equal(
                    Result.from_proto(results[job_id]).tiles["d"], want)

    def test_execute_batches(self):
        batches, expected = [], {}
        for b in range(12):
            jobs = []
            for j in range(b % 5 + 1):
                a = random_tile(self.rng, np.uint8, (3, 32))
                c = random_tile(self.rng, np.uint8, (3, 32))
                op = "txor" if (b + j) % 2 else "tand"
                tmp = ("t",) if op == "txor" else ()
                job_id = f"{b}.{j}"
                jobs.append(make_job([(op, "d", "a", "c") + tmp],
                                     tiles={"a": a, "c": c}, outputs=["d"],
                                     target="a5", job_id=job_id))
                expected[job_id] = a ^ c if op == "txor" else a & c
            batches.append(jobs)
        # One broken job, in the middle of batch 7: its own error only.
        batches[7][1].instructions[0].src1 = "missing"
        answered = set()
        for results in self.client.execute_batches(iter(batches)):
            b = int(results[0].id.split(".")[0])
            self.assertNotIn(b, answered, "answered twice")
            answered.add(b)
            self.assertEqual([r.id for r in results],
                             [job.id for job in batches[b]])
            for r in results:
                if r.id == "7.1":
                    self.assertEqual(r.status.code,
                                     job_pb2.Code.INVALID_ARGUMENT)
                    self.assertIn('"missing"', r.status.message)
                    continue
                np.testing.assert_array_equal(
                    Result.from_proto(r).tiles["d"], expected[r.id])
        self.assertEqual(answered, set(range(12)))

    def test_program(self):
        a = random_tile(self.rng, np.uint32, (2, 8))
        b = random_tile(self.rng, np.uint32, (2, 8))
        program = [("tand", "c", "a", "b"), ("txor", "d", "c", "a", "t")]
        result = self.client.run(program, tiles={"a": a, "b": b},
                                 target="a2a3")
        self.assertEqual(sorted(result.tiles), ["c", "d"])
        np.testing.assert_array_equal(result.tiles["c"], a & b)
        np.testing.assert_array_equal(result.tiles["d"], (a & b) ^ a)
        self.assertEqual([e.id for e in result.events], ["e0", "e1"])

        only_d = self.client.run(program, tiles={"a": a, "b": b},
                                 outputs=["d"], target="a2a3")
        self.assertEqual(list(only_d.tiles), ["d"])

    def test_tor_and_tnot_on_the_host(self):
        # Beyond the seeds: the host runs TOR and TNOT; the others refuse.
        for dtype in (np.uint8, np.int16, np.int32):
            a = random_tile(self.rng, dtype, (3, 40))
            b = random_tile(self.rng, dtype, (3, 40))
            result = self.client.run([("tor", "c", "a", "b"),
                                      ("tnot", "d", "c")],
                                     tiles={"a": a, "b": b}, target="host")
            np.testing.assert_array_equal(result.tiles["c"], a | b)
            np.testing.assert_array_equal(result.tiles["d"], ~(a | b))
        with self.assertRaises(PtoserveError) as raised:
            self.client.run([("tor", "c", "a", "a")], tiles={"a": a},
                            target="a2a3")
        self.assertIn("a2a3 does not run TOR (host does)",
                      str(raised.exception))

    def test_program_with_tile_messages_and_instructions(self):
        a = random_tile(self.rng, np.int8, (2, 32))
        program = [job_pb2.Instruction(opcode=job_pb2.OPCODE_TAND, dst="a",
                                       src0="a", src1="a",
                                       record_event="done")]
        result = self.client.run(program,
                                 tiles={"a": encode_tile(a, valid=(1, 32))})
        np.testing.assert_array_equal(result.tiles["a"], a)
        self.assertEqual(result.events[0].id, "done")

    def test_assembly(self):
        a = np.arange(1, 17, dtype=np.int16).reshape(1, 16)
        b = np.full((1, 16), 3, dtype=np.int16)
        text = ("%c = tand %a, %b : !pto.tile<...>\n"
                "%d = pto.txor %c, %a : (!pto.tile<...>, !pto.tile<...>)"
                " -> !pto.tile<...>\n")
        result = self.client.run_assembly(text, tiles={"a": a, "b": b},
                                          target="a2a3")
        np.testing.assert_array_equal(result.tiles["c"], a & b)
        np.testing.assert_array_equal(result.tiles["d"], (a & b) ^ a)
        self.assertIn('tmp "d.tmp" allocated by the server',
                      result.events[1].notes[0])

    def test_execute_raw_job_with_values(self):
        job = job_pb2.Job(
            target=job_pb2.TARGET_HOST,
            tiles={"a": tile_pb2.Tile(dtype=tile_pb2.DTYPE_UINT8, rows=1,
                                      cols=2, values=[12, 255]),
                   "b": tile_pb2.Tile(dtype=tile_pb2.DTYPE_UINT8, rows=1,
                                      cols=2, values=[10, 15])},
            instructions=[job_pb2.Instruction(opcode=job_pb2.OPCODE_TAND,
                                              dst="c", src0="a", src1="b")])
        result = self.client.execute(job)
        self.assertEqual(list(result.tiles["c"].values), [8, 15])
        np.testing.assert_array_equal(decode_tile(result.tiles["c"]),
                                      np.array([[8, 15]], dtype=np.uint8))

    def test_errors_carry_the_code_and_the_servers_message(self):
        a = np.zeros((16, 8), dtype=np.int16)
        with self.assertRaises(PtoserveError) as caught:
            self.client.txor(a, a, target="a2a3")
        self.assertEqual(caught.exception.code,
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(
            caught.exception.details,
            'instruction 0 (TXOR on a2a3): dst "dst" rows are 16 bytes '
            "(8 int16 columns); a2a3 needs rows of a multiple of 32 bytes")

        with self.assertRaises(PtoserveError) as caught:
            self.client.run_assembly("%c = tand %a, %nope : !pto.tile<...>",
                                     tiles={"a": a})
        self.assertEqual(caught.exception.code,
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertTrue(caught.exception.details.startswith("1:15: "),
                        caught.exception.details)

    def test_a_request_over_the_message_limit_is_said_as_a_limit(self):
        # The same words as ptoctl's (ptoctl_test), not gRPC's.
        big = np.zeros((4096, 4096), dtype=np.int32)
        with self.assertRaises(PtoserveError) as caught:
            self.client.tand(big, 1)
        self.assertEqual(caught.exception.code,
                         grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertRegex(
            caught.exception.details,
            r"^the request is \d+ bytes, more than a message may be "
            r"\(67108864\): send tiles this large through shared memory, "
            r"as fill, or in parts$")

    def test_errors_are_grpc_rpc_errors(self):
        # What a grpcio or tritonclient user catches, and asks as they do.
        a = np.zeros((16, 8), dtype=np.int16)
        with self.assertRaises(grpc.RpcError) as caught:
            self.client.txor(a, a, target="a2a3")
        self.assertIsInstance(caught.exception, PtoserveError)
        self.assertEqual(caught.exception.code(),
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(caught.exception.code.name, "INVALID_ARGUMENT")
        self.assertTrue(caught.exception.details().startswith(
            "instruction 0 (TXOR on a2a3): "), caught.exception.details())

    def test_unknown_names_list_the_valid_ones(self):
        a = np.zeros((1, 16), dtype=np.int16)
        with self.assertRaisesRegex(
                ValueError, r"^target 'a3' is not one of host, a2a3, a5$"):
            self.client.tand(a, a, target="a3")
        with self.assertRaisesRegex(
                ValueError,
                r"^opcode 'tnand' is not one of tand, txor, tor, tnot$"):
            self.client.run([("tnand", "c", "a", "b")], {"a": a, "b": a})

    def test_tile_codec(self):
        a = random_tile(self.rng, np.int32, (3, 5)).astype(">i4")
        np.testing.assert_array_equal(decode_tile(encode_tile(a)), a)
        empty = tile_pb2.Tile(dtype=tile_pb2.DTYPE_UINT16, rows=2, cols=3)
        np.testing.assert_array_equal(decode_tile(empty),
                                      np.zeros((2, 3), dtype=np.uint16))
        with self.assertRaisesRegex(TypeError, "float64"):
            encode_tile(np.zeros((2, 2)))
        with self.assertRaisesRegex(ValueError, "2-D"):
            encode_tile(np.zeros(4, dtype=np.int8))
        np.testing.assert_array_equal(
            encode_tile([[1, 255]], dtype="uint8").data, b"\x01\xff")
        filled = tile_pb2.Tile(dtype=tile_pb2.DTYPE_INT16, rows=2, cols=3,
                               fill=-7)
        np.testing.assert_array_equal(decode_tile(filled),
                                      np.full((2, 3), -7, np.int16))

    def test_decoding_refuses_hostile_tiles_before_allocating(self):
        huge = 1 << 31  # 2^62 elements in a few bytes
        for tile, message in [
                (tile_pb2.Tile(dtype=tile_pb2.DTYPE_INT8, rows=huge,
                               cols=huge, fill=1), "is over 67108864 bytes"),
                (tile_pb2.Tile(dtype=tile_pb2.DTYPE_INT8, rows=huge,
                               cols=huge), "is over 67108864 bytes"),
                (tile_pb2.Tile(dtype=tile_pb2.DTYPE_UINT8, rows=1, cols=2,
                               data=b"abc"),
                 "data is 3 bytes; 1x2 uint8 is 2"),
                (tile_pb2.Tile(dtype=tile_pb2.DTYPE_UINT8, rows=1, cols=2,
                               values=[1]), "1 values for 1x2 elements"),
                (tile_pb2.Tile(dtype=tile_pb2.DTYPE_UINT8, rows=1, cols=2,
                               values=[1, 256]), "not all integers in the "
                                                 "uint8 range"),
                (tile_pb2.Tile(dtype=tile_pb2.DTYPE_INT8, rows=1, cols=1,
                               fill=0.5), "fill 0.5 is not an integer")]:
            with self.subTest(message=message):
                with self.assertRaisesRegex(ValueError, message):
                    decode_tile(tile)

    def test_capabilities_lists_three_targets(self):
        capabilities = self.client.capabilities()
        self.assertEqual([t.target for t in capabilities.targets],
                         [job_pb2.TARGET_HOST, job_pb2.TARGET_A2A3,
                          job_pb2.TARGET_A5])

    def test_health(self):
        self.assertEqual(self.client.health(), "SERVING")

    def test_a_scalar_operand_is_sent_as_fill_in_the_others_dtype(self):
        for target, dtype in itertools.product(TARGETS, DTYPES):
            a = random_tile(self.rng, dtype, shape_for(dtype))
            info = np.iinfo(dtype)
            mask = int(self.rng.integers(info.min, info.max, endpoint=True))
            with self.subTest(target=target, dtype=dtype.__name__):
                result = self.client.tand(a, mask, target=target)
                self.assertEqual(result.dst.dtype, np.dtype(dtype))
                np.testing.assert_array_equal(
                    result.dst, np.bitwise_and(a, np.array(mask, dtype)))
                result = self.client.txor(np.int64(mask), a, target=target)
                np.testing.assert_array_equal(
                    result.dst, np.bitwise_xor(np.array(mask, dtype), a))
        # A scalar costs a few bytes whatever the shape.
        src0, src1 = encode_operands(np.zeros((256, 256), np.int32), 0x0f)
        self.assertFalse(src0.HasField("fill"))
        self.assertEqual((src1.dtype, src1.rows, src1.cols, src1.fill),
                         (tile_pb2.DTYPE_INT32, 256, 256, 0x0f))
        self.assertLess(src1.ByteSize(), 32)
        self.assertGreater(src0.ByteSize(), 256 * 256 * 4)

    def test_smaller_operands_broadcast_as_numpy_broadcasts(self):
        a = random_tile(self.rng, np.uint16, (4, 16))
        row = random_tile(self.rng, np.uint16, (16,))
        column = random_tile(self.rng, np.uint16, (4, 1))
        cases = {"row": (a, row), "row first": (row, a),
                 "1x16": (a, row.reshape(1, 16)), "column": (a, column),
                 "column and row": (column, row), "1x1": (a, a[:1, :1])}
        for target, (case, (src0, src1)) in itertools.product(
                TARGETS, cases.items()):
            with self.subTest(target=target, case=case):
                np.testing.assert_array_equal(
                    self.client.tand(src0, src1, target=target).dst,
                    np.bitwise_and(src0, src1))
                np.testing.assert_array_equal(
                    self.client.txor(src0, src1, target=target).dst,
                    np.bitwise_xor(src0, src1))
        result = self.client.txor(a, row, valid=(3, 5), target="a2a3")
        expected = np.zeros_like(a)
        expected[:3, :5] = np.bitwise_xor(a, row)[:3, :5]
        np.testing.assert_array_equal(result.dst, expected)
        # One element travels as fill; a row is sent whole.
        src0, src1 = encode_operands(a[:1, :1], a)
        self.assertEqual(src0.fill, a[0, 0])
        src0, src1 = encode_operands(a, row)
        self.assertEqual(len(src1.data), a.nbytes)

    def test_shapes_that_make_no_tile_are_refused_before_sending(self):
        row = np.zeros(16, np.int32)
        with Client("127.0.0.1:1") as nowhere:  # a call would be UNAVAILABLE
            for src0, src1, message in [
                    (np.zeros((4, 16), np.int32), np.zeros(3, np.int32),
                     r"^src0 \(4, 16\) and src1 \(3,\) do not broadcast"),
                    (row, row, r"broadcast to 1-D; a tile is 2-D"),
                    (row, 7, r"broadcast to 1-D"),
                    (np.zeros((2, 4, 16), np.int32), 1, r"to 3-D"),
                    # 4 GiB: refused before anything is allocated.
                    (np.zeros((1, 1 << 15), np.int32),
                     np.zeros((1 << 15, 1), np.int32),
                     rf"^broadcasting to 32768x32768 int32 takes more than "
                     rf"{MAX_TILE_BYTES} bytes$")]:
                with self.subTest(message=message):
                    with self.assertRaisesRegex(ValueError, message):
                        nowhere.tand(src0, src1)

    def test_lists_ints_and_wider_arrays_are_converted(self):
        for target, dtype in itertools.product(TARGETS, DTYPES):
            a = random_tile(self.rng, dtype, shape_for(dtype))
            b = random_tile(self.rng, dtype, shape_for(dtype))
            with self.subTest(target=target, dtype=dtype.__name__):
                # dtype= converts both: nested lists, int64 arrays.
                result = self.client.tand(a.tolist(), b.astype(np.int64),
                                          dtype=dtype, target=target)
                self.assertEqual(result.dst.dtype, np.dtype(dtype))
                np.testing.assert_array_equal(result.dst,
                                              np.bitwise_and(a, b))
                # Without it, to the other operand's dtype.
                result = self.client.txor(a.astype(np.int64), b,
                                          target=target)
                self.assertEqual(result.dst.dtype, np.dtype(dtype))
                np.testing.assert_array_equal(result.dst,
                                              np.bitwise_xor(a, b))
                result = self.client.txor(b, a.tolist(), target=target)
                np.testing.assert_array_equal(result.dst,
                                              np.bitwise_xor(b, a))
        # dtype= by name, and in run() for every tile.
        a = [[0x0f, 0xf0, 0x3c, 0xff] * 2]
        result = self.client.tand(a, 0x55, dtype="uint8")
        np.testing.assert_array_equal(
            result.dst, np.bitwise_and(np.array(a, np.uint8), np.uint8(0x55)))
        a = random_tile(self.rng, np.int16, (2, 16))
        b = random_tile(self.rng, np.int16, (2, 16))
        result = self.client.run([("txor", "c", "a", "b", "t")],
                                 tiles={"a": a.tolist(),
                                        "b": b.astype(np.int64)},
                                 dtype=np.int16, target="a2a3")
        self.assertEqual(result.tiles["c"].dtype, np.int16)
        np.testing.assert_array_equal(result.tiles["c"], np.bitwise_xor(a, b))

    def test_values_that_do_not_fit_raise_value_error_before_sending(self):
        a = np.zeros((2, 16), np.uint8)
        with Client("127.0.0.1:1") as nowhere:  # a call would be UNAVAILABLE
            for call, message in [
                    (lambda: nowhere.tand(a, 256),
                     r"^src1 = 256 does not fit uint8 \[0, 255\]$"),
                    (lambda: nowhere.txor(-1, a),
                     r"^src0 = -1 does not fit uint8 \[0, 255\]$"),
                    (lambda: nowhere.tand([[1, 2], [3, 70000]], 0,
                                          dtype=np.int16),
                     r"^src0\[1, 1\] = 70000 does not fit int16 "
                     r"\[-32768, 32767\]$"),
                    (lambda: nowhere.tand(a, np.full(16, 2**70)),
                     r"^src1\[0\] = 1180591620717411303424 does not fit "
                     r"uint8"),
                    (lambda: nowhere.txor(a.astype(np.int64) - 1, a),
                     r"^src0\[0, 0\] = -1 does not fit uint8"),
                    (lambda: nowhere.run([("tand", "c", "a", "a")],
                                         tiles={"a": [[5, -1]]},
                                         dtype=np.uint32),
                     r"^tile 'a'\[0, 1\] = -1 does not fit uint32 "
                     r"\[0, 4294967295\]$")]:
                with self.subTest(message=message):
                    with self.assertRaisesRegex(ValueError, message):
                        call()

    def test_floats_bools_and_other_kinds_raise_type_error(self):
        a = np.zeros((2, 16), np.int32)
        with Client("127.0.0.1:1") as nowhere:  # a call would be UNAVAILABLE
            for src0, src1, dtype, message in [
                    (a, 1.0, None, r"^src1 has float64 elements; TAND and "
                                   r"TXOR take integers"),
                    (a, np.ones((2, 16)), None, "src1 has float64 elements"),
                    (np.ones((2, 16), bool), a, None,
                     "src0 has bool elements"),
                    (a, [1, 2.5], None, "src1 has float64 elements"),
                    (a, "x", None, "src1 has <U1 elements"),
                    (a, a.astype(np.int16), None,
                     r"^src0 is int32 and src1 is int16: TAND and TXOR take "
                     r"one element type; pass dtype="),
                    ([[1]], [[2]], None,
                     r"^neither operand is an array of int8, .*; pass "
                     r"dtype="),
                    (a, 1, np.float32, "dtype <class 'numpy.float32'> is "
                                       "not one of int8, uint8"),
                    (a, 1, "int64", "dtype 'int64' is not one of")]:
                with self.subTest(message=message):
                    with self.assertRaisesRegex(TypeError, message):
                        nowhere.tand(src0, src1, dtype=dtype)

    def test_futures_resolve_to_results_and_errors(self):
        calls = []
        for i in range(60):
            target, dtype = TARGETS[i % 3], DTYPES[i % len(DTYPES)]
            a = random_tile(self.rng, dtype, shape_for(dtype))
            b = random_tile(self.rng, dtype, shape_for(dtype))
            if i % 2:
                future = self.client.txor_async(a, b, target=target)
                calls.append((future, np.bitwise_xor(a, b)))
            else:
                future = self.client.tand_async(a, b, target=target)
                calls.append((future, np.bitwise_and(a, b)))
        done, _ = concurrent.futures.wait([f for f, _ in calls],
                                          timeout=CALL_TIMEOUT_S)
        self.assertEqual(len(done), len(calls))
        for future, expected in calls:
            result = future.result()
            self.assertIsInstance(result, Result)
            np.testing.assert_array_equal(result.dst, expected)

        a = random_tile(self.rng, np.uint32, (2, 8))
        b = random_tile(self.rng, np.uint32, (2, 8))
        result = self.client.run_async(
            [("tand", "c", "a", "b"), ("txor", "d", "c", "a", "t")],
            {"a": a, "b": b}, target="a2a3").result(CALL_TIMEOUT_S)
        np.testing.assert_array_equal(result.tiles["d"],
                                      np.bitwise_xor(np.bitwise_and(a, b), a))
        result = self.client.run_assembly_async(
            "%c = tand %a, %b : !pto.tile<...>",
            {"a": a, "b": b}).result(CALL_TIMEOUT_S)
        np.testing.assert_array_equal(result.tiles["c"], np.bitwise_and(a, b))
        raw = self.client.execute_async(
            make_job([("txor", "c", "a", "b")], {"a": a, "b": b})
        ).result(CALL_TIMEOUT_S)
        self.assertIsInstance(raw, job_pb2.JobResult)
        np.testing.assert_array_equal(decode_tile(raw.tiles["c"]),
                                      np.bitwise_xor(a, b))

        narrow = np.zeros((16, 8), np.int16)  # 16-byte rows: not on a2a3
        future = self.client.txor_async(narrow, 1, target="a2a3")
        with self.assertRaises(PtoserveError) as raised:
            future.result(CALL_TIMEOUT_S)
        self.assertEqual(raised.exception.code,
                         grpc.StatusCode.INVALID_ARGUMENT)
        with self.assertRaises(PtoserveError) as sync:
            self.client.txor(narrow, 1, target="a2a3")
        self.assertEqual(raised.exception.details, sync.exception.details)
        self.assertIs(future.exception(), raised.exception)

    def test_readiness_and_server_metadata(self):
        self.assertTrue(self.client.is_server_live())
        self.assertTrue(self.client.is_server_ready())
        version = subprocess.run([SERVER, "--version"], capture_output=True,
                                 text=True, check=True).stdout.split()[1]
        self.assertEqual(self.client.get_server_metadata(),
                         ServerMetadata(name="ptoserve", version=version,
                                        targets=TARGETS,
                                        default_target="host"))

    def test_result_as_numpy(self):
        a = random_tile(self.rng, np.int8, (2, 32))
        result = self.client.tand(a, -2)
        self.assertIs(result.as_numpy("dst"), result.dst)
        np.testing.assert_array_equal(result.as_numpy("dst"),
                                      np.bitwise_and(a, np.int8(-2)))
        self.assertIsNone(result.as_numpy("src0"))

    def test_example_runs(self):
        done = subprocess.run([sys.executable, EXAMPLE, self.address],
                              capture_output=True, text=True, timeout=60,
                              check=False)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("a ^ b: dst 2x16 int16 on a2a3", done.stdout)
        self.assertIn("vnot  dst <- dst", done.stdout)


class ScaleOutTest(unittest.TestCase):
    """One client over three servers, one of which is stopped (SIGTERM: lame
    duck, drain, exit) halfway: every call still succeeds, with the right
    result."""

    def test_stopping_one_of_three_servers_shows_no_error(self):
        servers = []
        try:
            for _ in range(3):
                servers.append(
                    start_server("--lame_duck=300ms", "--shutdown_grace=5s"))
            address = ",".join(address for _, address in servers)
            calls, threads = 1500, 8
            succeeded = 0
            errors = []
            next_call = iter(range(calls))
            lock = threading.Lock()
            stopped = threading.Event()

            def work(client):
                a = np.arange(8, dtype=np.int32).reshape(1, 8)
                while True:
                    with lock:
                        i = next(next_call, None)
                    if i is None:
                        return
                    b = np.full((1, 8), i, dtype=np.int32)
                    right = False
                    try:
                        result = client.tand(a, b)
                        right = np.array_equal(result.dst, a & b)
                        if not right:
                            errors.append(f"call {i}: wrong result")
                    except PtoserveError as error:
                        errors.append(f"call {i}: {error}")
                    with lock:
                        nonlocal succeeded
                        succeeded += right
                        if succeeded == calls // 2 and not stopped.is_set():
                            stopped.set()
                            servers[1][0].send_signal(signal.SIGTERM)

            with Client(address, timeout=CALL_TIMEOUT_S) as client:
                pool = [threading.Thread(target=work, args=(client,))
                        for _ in range(threads)]
                for t in pool:
                    t.start()
                for t in pool:
                    t.join()
            self.assertTrue(stopped.is_set())
            self.assertEqual(errors, [])
            self.assertEqual(succeeded, calls)
            self.assertEqual(servers[1][0].wait(timeout=15), 0)
        finally:
            for server, _ in servers:
                if server.poll() is None:
                    stop_server(server)

    def test_channel_target(self):
        self.assertEqual(channel_target("127.0.0.1:1"), "127.0.0.1:1")
        self.assertEqual(channel_target("127.0.0.1:1,127.0.0.1:2"),
                         "ipv4:127.0.0.1:1,127.0.0.1:2")
        self.assertEqual(channel_target("[::1]:1,[::1]:2"),
                         "ipv6:[::1]:1,[::1]:2")
        self.assertEqual(channel_target("dns:///a:1,b:2"), "dns:///a:1,b:2")


class UnresponsiveServerTest(unittest.TestCase):
    """A port that accepts connections and never answers: the per-call
    timeout bounds every call, and a future's cancel() ends its call."""

    def setUp(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()  # never accepted: no HTTP/2 answer, ever
        self.client = Client("127.0.0.1:%d" % self.listener.getsockname()[1],
                             timeout=CALL_TIMEOUT_S)

    def tearDown(self):
        self.client.close()
        self.listener.close()

    def test_per_call_timeout_bounds_every_call(self):
        # The client's own deadline is 10 s; each call's is 0.2 s.
        for name, call in unary_calls(np.random.default_rng(1)):
            with self.subTest(method=name):
                start = time.monotonic()
                with self.assertRaises(PtoserveError) as raised:
                    call(self.client, timeout=0.2)
                self.assertEqual(raised.exception.code,
                                 grpc.StatusCode.DEADLINE_EXCEEDED)
                self.assertLess(time.monotonic() - start, CALL_TIMEOUT_S / 2)
        with self.assertRaises(PtoserveError) as raised:
            list(self.client.execute_stream([make_job([], {})], timeout=0.2))
        self.assertEqual(raised.exception.code,
                         grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertFalse(self.client.is_server_live(timeout=0.2))
        self.assertFalse(self.client.is_server_ready(timeout=0.2))

    async def aio_calls(self, address):
        async with aio.Client(address, timeout=CALL_TIMEOUT_S) as client:
            a = np.zeros((1, 8), np.int32)
            for call in (client.tand(a, 1, timeout=0.2),
                         client.txor(a, 1, timeout=0.2),
                         client.run([("tand", "c", "a", "a")], {"a": a},
                                    timeout=0.2),
                         client.run_assembly(
                             "%c = tand %a, %a : !pto.tile<...>", {"a": a},
                             timeout=0.2),
                         client.capabilities(timeout=0.2),
                         client.health(timeout=0.2)):
                with self.assertRaises(PtoserveError) as raised:
                    await call
                self.assertEqual(raised.exception.code,
                                 grpc.StatusCode.DEADLINE_EXCEEDED)
            self.assertFalse(await client.is_server_live(timeout=0.2))

    def test_per_call_timeout_bounds_every_asyncio_call(self):
        asyncio.run(self.aio_calls(
            "127.0.0.1:%d" % self.listener.getsockname()[1]))

    def test_cancel_a_future(self):
        future = self.client.tand_async(np.zeros((1, 8), np.int32), 1)
        time.sleep(0.2)
        self.assertFalse(future.done())
        self.assertTrue(future.cancel())
        self.assertTrue(future.cancelled())
        with self.assertRaises(concurrent.futures.CancelledError):
            future.result(0)

    def test_no_server_is_not_live(self):
        with socket.socket() as probe:  # a port with no listener
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        with Client(f"127.0.0.1:{port}", timeout=CALL_TIMEOUT_S) as client:
            self.assertFalse(client.is_server_live())
            self.assertFalse(client.is_server_ready())
            with self.assertRaises(PtoserveError) as raised:
                client.health()
            self.assertEqual(raised.exception.code,
                             grpc.StatusCode.UNAVAILABLE)


class SlowServerTest(unittest.TestCase):
    """A server that holds every job 300 ms (a partial batch waiting for
    company): a call's own timeout overrides the client's default, both
    ways."""

    @classmethod
    def setUpClass(cls):
        cls.server, cls.address = start_server("--max_queue_delay_us=300000")

    @classmethod
    def tearDownClass(cls):
        stop_server(cls.server)

    def test_per_call_timeout_overrides_the_clients(self):
        calls = unary_calls(np.random.default_rng(2))[:JOB_CALLS]
        with Client(self.address, timeout=0.05) as impatient, \
                Client(self.address, timeout=CALL_TIMEOUT_S) as patient:
            for name, call in calls:
                with self.subTest(method=name):
                    for client, timeout in ((impatient, None),
                                            (patient, 0.05)):
                        with self.assertRaises(PtoserveError) as raised:
                            call(client, timeout=timeout)
                        self.assertEqual(raised.exception.code,
                                         grpc.StatusCode.DEADLINE_EXCEEDED)
                    call(impatient, timeout=CALL_TIMEOUT_S)  # succeeds
            a = random_tile(np.random.default_rng(3), np.uint8, (2, 32))
            np.testing.assert_array_equal(
                impatient.txor(a, 0x5a, timeout=CALL_TIMEOUT_S).dst,
                np.bitwise_xor(a, np.uint8(0x5a)))


class ShutdownTest(unittest.TestCase):
    """A server draining after SIGTERM is live but not ready."""

    def test_draining_server_is_live_not_ready(self):
        server, address = start_server("--lame_duck=3s")
        try:
            with Client(address, timeout=CALL_TIMEOUT_S) as client:
                self.assertTrue(client.is_server_ready())
                server.send_signal(signal.SIGTERM)
                deadline = time.monotonic() + 2
                while (client.is_server_ready()
                       and time.monotonic() < deadline):
                    time.sleep(0.02)
                self.assertFalse(client.is_server_ready())
                self.assertTrue(client.is_server_live())
                self.assertEqual(client.health(), "NOT_SERVING")
            self.assertEqual(server.wait(timeout=15), 0)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()


class AsyncioClientTest(unittest.IsolatedAsyncioTestCase):
    """ptoserve_client.aio against the real server."""

    @classmethod
    def setUpClass(cls):
        cls.server, cls.address = start_server()

    @classmethod
    def tearDownClass(cls):
        stop_server(cls.server)

    async def asyncSetUp(self):
        self.rng = np.random.default_rng(20240602)
        self.client = aio.Client(self.address, timeout=CALL_TIMEOUT_S)

    async def asyncTearDown(self):
        await self.client.close()

    async def test_concurrent_tand_and_txor_match_numpy(self):
        calls, expected = [], []
        for target, dtype in itertools.product(TARGETS, DTYPES):
            a = random_tile(self.rng, dtype, shape_for(dtype))
            b = random_tile(self.rng, dtype, shape_for(dtype))
            mask = int(random_tile(self.rng, dtype, ()))
            calls += [self.client.tand(a, b, target=target),
                      self.client.txor(a, b, target=target),
                      self.client.tand(a.tolist(), mask, dtype=dtype,
                                       target=target),
                      self.client.txor(a, b[0], target=target)]
            expected += [np.bitwise_and(a, b), np.bitwise_xor(a, b),
                         np.bitwise_and(a, np.array(mask, dtype)),
                         np.bitwise_xor(a, b[0])]
        results = await asyncio.gather(*calls)
        for result, want in zip(results, expected):
            self.assertEqual(result.dst.dtype, want.dtype)
            np.testing.assert_array_equal(result.dst, want)

    async def test_programs_assembly_and_stream(self):
        a = random_tile(self.rng, np.int16, (1, 16))
        b = random_tile(self.rng, np.int16, (1, 16))
        result = await self.client.run(
            [("tand", "c", "a", "b"), ("txor", "d", "c", "a", "t")],
            {"a": a, "b": b}, target="a2a3")
        np.testing.assert_array_equal(result.tiles["d"],
                                      np.bitwise_xor(np.bitwise_and(a, b), a))
        result = await self.client.run_assembly(
            "%c = tand %a, %b : !pto.tile<...>", {"a": a, "b": b})
        np.testing.assert_array_equal(result.as_numpy("c"),
                                      np.bitwise_and(a, b))
        raw = await self.client.execute(
            make_job([("txor", "c", "a", "b")], {"a": a, "b": b}))
        np.testing.assert_array_equal(decode_tile(raw.tiles["c"]),
                                      np.bitwise_xor(a, b))
        jobs = [make_job([("txor", "d", "a", "b")],
                         {"a": a, "b": np.full_like(a, i)}, job_id=str(i))
                for i in range(50)]
        got = {r.id: Result.from_proto(r).tiles["d"]
               async for r in self.client.execute_stream(jobs)}
        self.assertEqual(sorted(got, key=int), [str(i) for i in range(50)])
        for i in range(50):
            np.testing.assert_array_equal(
                got[str(i)], np.bitwise_xor(a, np.int16(i)))
        answers = [results async for results in
                   self.client.execute_batches([jobs[:20], jobs[20:]])]
        self.assertEqual(sorted(len(r) for r in answers), [20, 30])
        for results in answers:
            for r in results:
                np.testing.assert_array_equal(
                    Result.from_proto(r).tiles["d"],
                    np.bitwise_xor(a, np.int16(int(r.id))))

    async def test_errors_and_conversions(self):
        narrow = np.zeros((16, 8), np.int16)
        with self.assertRaises(PtoserveError) as raised:
            await self.client.txor(narrow, narrow, target="a2a3")
        self.assertEqual(raised.exception.code,
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("a2a3 needs rows of a multiple of 32 bytes",
                      raised.exception.details)
        with self.assertRaisesRegex(ValueError, r"^src1 = 40000 does not"):
            await self.client.tand(narrow, 40000)
        with self.assertRaisesRegex(TypeError, "src1 has float64"):
            await self.client.txor(narrow, 0.5)

    async def test_health_readiness_and_metadata(self):
        self.assertEqual(await self.client.health(), "SERVING")
        self.assertTrue(await self.client.is_server_live())
        self.assertTrue(await self.client.is_server_ready())
        capabilities = await self.client.capabilities()
        metadata = await self.client.get_server_metadata()
        self.assertEqual(metadata.version, capabilities.server_version)
        self.assertEqual(metadata.targets, TARGETS)
        self.assertEqual(metadata.default_target, "host")
        async with aio.Client("127.0.0.1:1") as nowhere:
            self.assertFalse(await nowhere.is_server_live())
            self.assertFalse(await nowhere.is_server_ready())


def shm_path(region):
    return os.path.join("/dev/shm", region.name)


def our_objects():
    """The shared-memory objects this process made (and has not removed)."""
    return sorted(name for name in os.listdir("/dev/shm")
                  if name.startswith(f"ptoserve-{os.getpid()}-"))


def shared_tiles(job):
    """Which of a job's tiles travel as slices, which as bytes."""
    return ({name for name, t in job.tiles.items() if t.HasField("shared")},
            {name for name, t in job.tiles.items() if t.data})


class SharedMemoryTest(unittest.TestCase):
    """Tiles in shared-memory regions (SharedRegion) against the real server
    on loopback, where shared memory is on by default: every result checked
    against numpy and against the same call on the bytes path."""

    @classmethod
    def setUpClass(cls):
        cls.server, cls.address = start_server()
        cls.client = Client(cls.address, timeout=CALL_TIMEOUT_S)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        stop_server(cls.server)

    def setUp(self):
        self.rng = np.random.default_rng(20240603)
        self.region = self.client.shared_region(1 << 20)

    def tearDown(self):
        self.region.close()
        self.assertEqual(our_objects(), [], "a shared-memory object leaked")

    def jobs_total(self, region):
        [listed] = [r for r in self.client.list_regions()
                    if r.name == region.name]
        return listed.jobs_total

    def test_region_arrays(self):
        region = self.region
        self.assertTrue(region.name.startswith(f"ptoserve-{os.getpid()}-"))
        self.assertEqual(region.key, "/" + region.name)
        self.assertEqual(os.path.getsize(shm_path(region)), 1 << 20)
        a = region.array((3, 5), np.int16)
        b = region.array(7, "uint8")
        c = region.asarray([[1, 2], [3, 4]], dtype=np.uint32)
        np.testing.assert_array_equal(a, np.zeros((3, 5), np.int16))
        self.assertEqual((b.shape, b.dtype), ((7,), np.uint8))
        np.testing.assert_array_equal(c, [[1, 2], [3, 4]])
        self.assertEqual(c.dtype, np.uint32)
        offsets = [region.slice(x).offset for x in (a, b, c)]
        self.assertEqual(offsets, [0, 64, 128])  # 64-byte aligned, in order
        self.assertEqual(region.used, 128 + 16)
        self.assertEqual(region.slice(c[1:]).offset, 136)
        self.assertEqual(region.slice(c).size, 16)
        for outside in (np.zeros((3, 5), np.int16), a[:, ::2], a.T, a[:0]):
            self.assertIsNone(region.slice(outside))
        a[:] = np.arange(15).reshape(3, 5)
        np.testing.assert_array_equal(region.view(0, (3, 5), np.int16), a)
        with self.assertRaisesRegex(ValueError, r"does not fit uint8"):
            region.asarray([[256]], dtype=np.uint8)
        with self.assertRaisesRegex(ValueError, r"has \d+ of its 1048576 "
                                                r"bytes free"):
            region.array((1024, 1024), np.int8)
        with self.assertRaisesRegex(ValueError, "reach past the end"):
            region.view((1 << 20) - 4, (1, 2), np.int32)

    @unittest.skipUnless(os.geteuid() == 0, "needs root, to run a client "
                         "as another user")
    def test_other_users_objects_are_refused(self):
        # The server runs as root and could open anything; it maps only what
        # the caller (nobody, from its socket's owner) could open itself.
        # Not named as this process's regions are (tearDown looks for those
        # left behind, before the cleanups below run).
        key = f"/ptoserve-secret-{os.getpid()}"
        fd = os.open("/dev/shm" + key, os.O_CREAT | os.O_EXCL | os.O_RDWR,
                     0o600)
        self.addCleanup(os.unlink, "/dev/shm" + key)
        os.write(fd, b"secret".ljust(64, b"."))
        os.close(fd)
        roots = f"roots-{os.getpid()}"
        with grpc.insecure_channel(self.address) as channel:
            service_pb2_grpc.SharedMemoryStub(channel).Register(
                service_pb2.RegisterRequest(name=roots, key=key, size=64),
                timeout=CALL_TIMEOUT_S)
        self.addCleanup(self.client.unregister_region, roots)
        # The packages, where nobody can read them (runfiles may be under
        # a home only root may enter).
        with tempfile.TemporaryDirectory(dir="/tmp") as path:
            import grpc_health
            import ptoserve
            import ptoserve_client
            for package in (grpc_health, ptoserve, ptoserve_client):
                source = os.path.dirname(package.__file__)
                shutil.copytree(source, os.path.join(
                    path, os.path.basename(source)))
            for root, dirs, files in os.walk(path):
                for name in dirs + files:
                    os.chmod(os.path.join(root, name), 0o755)
            os.chmod(path, 0o755)
            run = subprocess.run(
                [sys.executable, "-c", OTHER_USER_SCRIPT, self.address, key,
                 roots],
                cwd=path, env={"PYTHONPATH": path, "PATH": "/usr/bin:/bin"},
                user=65534, group=65534, extra_groups=[],
                capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        out = json.loads(run.stdout)
        for what in ("stolen", "read", "unregister"):
            code, message = out[what]
            self.assertEqual(code, "PERMISSION_DENIED", what)
            self.assertIn(f"belongs to user 0 with mode 0600: the caller "
                          f"(user 65534) could not open it", message)
        self.assertIn(roots, [r.name for r in self.client.list_regions()])
        self.assertNotIn("stolen", [r.name for r in self.client.list_regions()])
        self.assertEqual(out["own"], [[i ^ 0x0f for i in range(16)]])

    def test_shared_operands_match_numpy_and_the_bytes_path(self):
        before = self.jobs_total(self.region)
        shared_jobs = 0
        for target, dtype in itertools.product(TARGETS, DTYPES):
            shape = (8, 64 // np.dtype(dtype).itemsize)
            a = self.region.asarray(random_tile(self.rng, dtype, shape))
            b = self.region.asarray(random_tile(self.rng, dtype, shape))
            out = self.region.array(shape, dtype)
            for op, call, want in [("tand", self.client.tand, a & b),
                                   ("txor", self.client.txor, a ^ b)]:
                with self.subTest(target=target, dtype=dtype.__name__, op=op):
                    job = binary_job(op, a, b, target=target,
                                     regions=self.client.regions)
                    self.assertEqual(shared_tiles(job),
                                     ({"src0", "src1"}, set()))
                    shared = call(a, b, target=target)
                    by_bytes = call(a.copy(), b.copy(), target=target)
                    np.testing.assert_array_equal(shared.dst, want)
                    np.testing.assert_array_equal(shared.dst, by_bytes.dst)
                    self.assertEqual(shared.dst.dtype, np.dtype(dtype))
                    self.assertEqual([s.op for s in shared.events[0].trace],
                                     TRACES[target, op])
                    out[:] = 0
                    written = call(a, b, target=target, out=out)
                    self.assertIs(written.dst, out)
                    np.testing.assert_array_equal(out, want)
                    shared_jobs += 2
        # The server counts the jobs that used the region: not the copies.
        self.assertEqual(self.jobs_total(self.region) - before, shared_jobs)

    def test_an_output_region_comes_back_as_a_slice(self):
        a = self.region.asarray(random_tile(self.rng, np.int32, (4, 8)))
        c = self.region.array((4, 8), np.int32)
        job = binary_job("tand", a, 0x0f0f, out=c, regions=self.client.regions)
        self.assertEqual(job.output_regions["dst"], self.region.slice(c))
        raw = self.client.execute(job)
        tile = raw.tiles["dst"]
        self.assertEqual(tile.shared, self.region.slice(c))
        self.assertEqual((tile.data, len(tile.values)), (b"", 0))
        np.testing.assert_array_equal(c, a & 0x0f0f)
        # Decoded: an array in the region, no copy.
        decoded = Result.from_proto(raw, self.client.regions).dst
        np.testing.assert_array_equal(decoded, a & 0x0f0f)
        self.assertEqual(self.region.slice(decoded), self.region.slice(c))
        with self.assertRaisesRegex(ValueError, "not among the regions given"):
            Result.from_proto(raw)

    def test_out_in_place_valid_regions_and_overlaps(self):
        for target in TARGETS:
            with self.subTest(target=target):
                a0 = random_tile(self.rng, np.uint16, (4, 16))
                b0 = random_tile(self.rng, np.uint16, (4, 16))
                a, b = self.region.asarray(a0), self.region.asarray(b0)
                self.assertIs(self.client.txor(a, b, target=target,
                                               out=a).dst, a)
                np.testing.assert_array_equal(a, a0 ^ b0)
                self.assertIs(self.client.tand(a, b, target=target,
                                               out=b).dst, b)
                np.testing.assert_array_equal(b, (a0 ^ b0) & b0)
                self.client.tand(a, a, target=target, out=a)
                np.testing.assert_array_equal(a, a0 ^ b0)

                # A valid region: out keeps its elements outside it, on the
                # shared path and the bytes path alike, in place or not.
                want = np.full((4, 16), 7, np.uint16)
                want[:2, :5] = (a0 ^ b0)[:2, :5]
                a[:], b[:] = a0, b0
                for out in (self.region.asarray(np.full((4, 16), 7,
                                                        np.uint16)),
                            np.full((4, 16), 7, np.uint16)):
                    self.client.txor(a, b, valid=(2, 5), target=target,
                                     out=out)
                    np.testing.assert_array_equal(out, want)
                self.client.txor(a, b, valid=(2, 5), target=target, out=a)
                want[2:, :], want[:, 5:] = a0[2:, :], a0[:, 5:]
                np.testing.assert_array_equal(a, want)

        # An out that shares some bytes of an operand, not all: the server
        # would refuse the slice, so dst comes back as bytes and is copied.
        flat = self.region.array(96, np.int32)
        flat[:] = self.rng.integers(-1000, 1000, 96)
        a, b = flat[:64].reshape(4, 16), flat[:64].reshape(4, 16).copy()
        out = flat[32:].reshape(4, 16)
        want = a & b
        job = binary_job("tand", a, b, out=out, regions=self.client.regions)
        self.assertEqual(len(job.output_regions), 0)
        self.assertIs(self.client.tand(a, b, out=out).dst, out)
        np.testing.assert_array_equal(out, want)

        # An out outside any region is written too.
        plain = np.empty((4, 16), np.int32)
        self.assertIs(self.client.txor(out, 5, out=plain).dst, plain)
        np.testing.assert_array_equal(plain, want ^ 5)
        for out, error, message in [
                (np.empty((4, 8), np.int32), ValueError,
                 "out is 4x8 int32; the tile is 4x16 int32"),
                (np.empty((4, 16), np.int16), ValueError,
                 "out is 4x16 int16; the tile is 4x16 int32"),
                (np.empty((4, 16)), TypeError, "out dtype float64"),
                ([[1]], TypeError, "out is a list")]:
            with self.subTest(message=message):
                with self.assertRaisesRegex(error, message):
                    self.client.tand(a, b, out=out)

    def test_run_assembly_and_stream_with_shared_tiles(self):
        a0 = random_tile(self.rng, np.int8, (2, 64))
        b0 = random_tile(self.rng, np.int8, (2, 64))
        a, b = self.region.asarray(a0), self.region.asarray(b0)
        c = self.region.array((2, 64), np.int8)
        d = np.empty((2, 64), np.int8)  # not in a region: copied into
        program = [("tand", "c", "a", "b"), ("txor", "d", "c", "a", "t")]
        job = make_job(program, {"a": a, "b": b}, out={"c": c, "d": d},
                       regions=self.client.regions, target="a2a3")
        self.assertEqual(shared_tiles(job), ({"a", "b"}, set()))
        self.assertEqual(list(job.output_regions), ["c"])
        result = self.client.run(program, {"a": a, "b": b}, target="a2a3",
                                 out={"c": c, "d": d})
        self.assertIs(result.tiles["c"], c)
        self.assertIs(result.tiles["d"], d)
        np.testing.assert_array_equal(c, a0 & b0)
        np.testing.assert_array_equal(d, (a0 & b0) ^ a0)

        # In place: the tile read from the region is written back to it.
        result = self.client.run([("txor", "a", "a", "b")], {"a": a, "b": b},
                                 out={"a": a}, target="a5")
        self.assertIs(result.tiles["a"], a)
        np.testing.assert_array_equal(a, a0 ^ b0)
        # Without out=, a written input is the server's copy: the region
        # is not changed.
        result = self.client.run([("txor", "a", "a", "b")], {"a": a, "b": b})
        np.testing.assert_array_equal(result.tiles["a"], a0)
        np.testing.assert_array_equal(a, a0 ^ b0)

        e = self.region.array((2, 64), np.int8)
        result = self.client.run_assembly("%e = tand %a, %b : !pto.tile<...>",
                                          {"a": a, "b": b}, out={"e": e})
        self.assertIs(result.tiles["e"], e)
        np.testing.assert_array_equal(e, (a0 ^ b0) & b0)
        with self.assertRaisesRegex(ValueError, "out names 'nope'"):
            self.client.run([("tand", "c", "a", "b")], {"a": a0, "b": b0},
                            out={"nope": np.empty((2, 64), np.int8)})

        outs = [self.region.array((2, 64), np.int8) for _ in range(10)]
        jobs = [make_job([("txor", "d", "a", "k")],
                         {"a": a, "k": np.full((2, 64), i, np.int8)},
                         out={"d": outs[i]}, regions=self.client.regions,
                         job_id=str(i)) for i in range(10)]
        self.assertTrue(all(len(j.output_regions) == 1 for j in jobs))
        for r in self.client.execute_stream(jobs):
            i = int(r.id)
            d = Result.from_proto(r, self.client.regions,
                                  {"d": outs[i]}).tiles["d"]
            self.assertIs(d, outs[i])
        for i in range(10):
            np.testing.assert_array_equal(outs[i], (a0 ^ b0) ^ np.int8(i))

    def test_arrays_outside_registered_regions_travel_as_bytes(self):
        a = self.region.asarray(random_tile(self.rng, np.int16, (4, 32)))
        b = random_tile(self.rng, np.int16, (4, 32))
        regions = self.client.regions
        with SharedRegion(4096) as unregistered:
            elsewhere = unregistered.asarray(b)
            for src0, src1, kwargs, travels in [
                    (b, b, {}, (set(), {"src0", "src1"})),
                    (a, b, {}, ({"src0"}, {"src1"})),
                    (a[:, ::2], b[:, ::2], {}, (set(), {"src0", "src1"})),
                    (a.T, b.T, {}, (set(), {"src0", "src1"})),
                    (a, b, {"dtype": np.int32}, (set(), {"src0", "src1"})),
                    (a[:1], b, {}, (set(), {"src0", "src1"})),  # a row
                    (a[:1, :1], b, {}, (set(), {"src1"})),      # a fill
                    (elsewhere, a, {}, ({"src1"}, {"src0"}))]:
                with self.subTest(src0=src0.shape, travels=travels):
                    job = binary_job("txor", src0, src1, regions=regions,
                                     **kwargs)
                    self.assertEqual(shared_tiles(job), travels)
                    result = self.client.txor(src0, src1, **kwargs)
                    np.testing.assert_array_equal(
                        result.dst, np.bitwise_xor(src0, src1))

    def test_unknown_unregistered_and_duplicate_regions(self):
        a = self.region.asarray(random_tile(self.rng, np.uint32, (2, 8)))
        job = binary_job("tand", a, 3, regions=self.client.regions)
        job.tiles["src0"].shared.region = "nope"
        with self.assertRaises(PtoserveError) as raised:
            self.client.execute(job)
        self.assertEqual(raised.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertEqual(raised.exception.details,
                         'tile "src0": no region "nope" is registered '
                         "(SharedMemory.Register)")
        job.tiles["src0"].shared.region = self.region.name
        job.tiles["src0"].shared.offset = self.region.size - 32
        with self.assertRaises(PtoserveError) as raised:
            self.client.execute(job)
        self.assertEqual(raised.exception.code, grpc.StatusCode.OUT_OF_RANGE)
        self.assertIn("reaches past the end of region",
                      raised.exception.details)

        with self.assertRaises(PtoserveError) as raised:
            self.client.register_region(self.region)
        self.assertEqual(raised.exception.code,
                         grpc.StatusCode.ALREADY_EXISTS)
        with self.assertRaises(PtoserveError) as raised:
            self.client.unregister_region("nope")
        self.assertEqual(raised.exception.code, grpc.StatusCode.NOT_FOUND)

        answer = self.client.unregister_region(self.region)
        self.assertEqual((answer.name, answer.key, answer.size),
                         (self.region.name, self.region.key, 1 << 20))
        self.assertNotIn(self.region.name, self.client.regions)
        # Unregistered: its arrays travel as bytes again, and a job that
        # names it is NOT_FOUND.
        job = binary_job("tand", a, 3, regions=self.client.regions)
        self.assertEqual(shared_tiles(job), (set(), {"src0"}))
        np.testing.assert_array_equal(self.client.tand(a, 3).dst, a & 3)
        job.tiles["src0"].ClearField("data")
        job.tiles["src0"].shared.CopyFrom(self.region.slice(a))
        with self.assertRaises(PtoserveError) as raised:
            self.client.execute(job)
        self.assertEqual(raised.exception.code, grpc.StatusCode.NOT_FOUND)

        region = self.client.register_region(self.region)
        self.assertEqual(region.name, self.region.name)
        job = binary_job("tand", a, 3, regions=self.client.regions)
        self.assertEqual(shared_tiles(job), ({"src0"}, set()))
        np.testing.assert_array_equal(self.client.run_job(job).dst, a & 3)

    def test_a_truncated_region_is_an_error_and_the_server_stays_healthy(self):
        region = self.client.shared_region(1 << 16)
        try:
            a = region.asarray(random_tile(self.rng, np.int32, (8, 8)))
            c = region.array((8, 8), np.int32)
            # This process would fault reading a or c once they are cut
            # short: the calls below must not (their tiles are slices).
            job = binary_job("txor", a, a, out=c, regions=self.client.regions)
            self.assertEqual(shared_tiles(job), ({"src0", "src1"}, set()))
            self.assertEqual(list(job.output_regions), ["dst"])
            os.truncate(shm_path(region), 0)
            for call in (lambda: self.client.tand(a, 1),
                         lambda: self.client.txor(a, a, out=c,
                                                  target="a2a3")):
                with self.assertRaises(PtoserveError) as raised:
                    call()
                self.assertEqual(raised.exception.code,
                                 grpc.StatusCode.FAILED_PRECONDITION)
                self.assertIn(f'region "{region.name}": shared-memory object '
                              f'"{region.key}" is now 0 bytes, too short',
                              raised.exception.details)
            self.assertEqual(self.client.health(), "SERVING")
            b = self.region.asarray(random_tile(self.rng, np.int32, (8, 8)))
            np.testing.assert_array_equal(self.client.tand(b, 6).dst, b & 6)
            os.truncate(shm_path(region), region.size)  # readable again
            np.testing.assert_array_equal(self.client.tand(a, 1).dst,
                                          np.zeros((8, 8), np.int32))
        finally:
            region.close()

    def test_a_region_cut_short_mid_job_fails_that_job_alone(self):
        # Each object is cut short while a job of 3 x 4 MiB may be reading
        # or writing it: the job either finished first or fails with
        # FAILED_PRECONDITION; the server never dies of the fault (SIGBUS).
        outcomes = set()
        for i in range(6):
            with self.client.shared_region(3 * (4 << 20)) as region:
                a, b, c = (region.array((1024, 1024), np.int32)
                           for _ in range(3))
                a[:], b[:] = 0x0ff0, 0x00ff
                # Slices only: this process would fault touching them.
                job = binary_job("tand", a, b, out=c,
                                 regions=self.client.regions)
                self.assertEqual(shared_tiles(job), ({"src0", "src1"}, set()))
                self.assertEqual(list(job.output_regions), ["dst"])
                future = self.client.run_job_async(job, out={"dst": c})
                time.sleep(0.0005 * i)
                os.truncate(shm_path(region), 0)
                try:
                    future.result(CALL_TIMEOUT_S)
                    outcomes.add("OK")
                except PtoserveError as error:
                    self.assertEqual(error.code,
                                     grpc.StatusCode.FAILED_PRECONDITION)
                    self.assertRegex(error.details, "cut short|is now 0 bytes")
                    outcomes.add(error.code.name)
                os.truncate(shm_path(region), region.size)
                del a, b, c
        self.assertTrue(outcomes <= {"OK", "FAILED_PRECONDITION"}, outcomes)
        self.assertIsNone(self.server.poll())
        self.assertEqual(self.client.health(), "SERVING")
        x = self.region.asarray(random_tile(self.rng, np.uint8, (2, 32)))
        np.testing.assert_array_equal(self.client.txor(x, 9).dst, x ^ 9)

    def test_close_unregisters_unmaps_and_unlinks(self):
        region = self.client.shared_region(4096)
        listed = {r.name: r for r in self.client.list_regions()}
        self.assertEqual((listed[region.name].key, listed[region.name].size),
                         (region.key, 4096))
        self.assertIn(region.name, self.client.regions)
        self.assertTrue(os.path.exists(shm_path(region)))
        a = region.asarray(np.arange(16, dtype=np.uint8).reshape(1, 16))
        region.close()
        self.assertTrue(region.closed)
        self.assertNotIn(region.name,
                         [r.name for r in self.client.list_regions()])
        self.assertNotIn(region.name, self.client.regions)
        self.assertFalse(os.path.exists(shm_path(region)))
        region.close()  # twice: nothing
        # Its arrays keep their memory and travel as bytes.
        np.testing.assert_array_equal(a, np.arange(16).reshape(1, 16))
        job = binary_job("tand", a, 3, regions=self.client.regions)
        self.assertEqual(shared_tiles(job), (set(), {"src0"}))
        np.testing.assert_array_equal(self.client.tand(a, 3).dst, a & 3)
        with self.assertRaisesRegex(ValueError, "is closed"):
            region.array(1, np.uint8)

        with self.client.shared_region(4096) as region:
            self.assertTrue(os.path.exists(shm_path(region)))
        self.assertFalse(os.path.exists(shm_path(region)))
        self.assertNotIn(region.name,
                         [r.name for r in self.client.list_regions()])

        # Closing a client closes the regions it made and unregisters the
        # ones it was given.
        with Client(self.address, timeout=CALL_TIMEOUT_S) as other:
            made = other.shared_region(4096)
            given = SharedRegion(4096)
            other.register_region(given)
            self.assertEqual(sorted(other.regions),
                             sorted([made.name, given.name]))
        names = [r.name for r in self.client.list_regions()]
        self.assertNotIn(made.name, names)
        self.assertNotIn(given.name, names)
        self.assertTrue(made.closed)
        self.assertFalse(os.path.exists(shm_path(made)))
        self.assertFalse(given.closed)
        self.assertTrue(os.path.exists(shm_path(given)))
        given.close()
        self.assertFalse(os.path.exists(shm_path(given)))

    def test_asyncio_client(self):
        async def main():
            async with aio.Client(self.address,
                                  timeout=CALL_TIMEOUT_S) as client:
                async with await client.shared_region(1 << 16) as region:
                    a0 = random_tile(self.rng, np.uint32, (4, 8))
                    a = region.asarray(a0)
                    c = region.array((4, 8), np.uint32)
                    job = binary_job("txor", a, 0xff, out=c,
                                     regions=client.regions)
                    self.assertEqual(shared_tiles(job), ({"src0"}, set()))
                    results = await asyncio.gather(
                        client.txor(a, 0xff, target="a2a3", out=c),
                        client.tand(a, 0xff),
                        client.run([("tand", "d", "a", "a")], {"a": a}))
                    self.assertIs(results[0].dst, c)
                    np.testing.assert_array_equal(c, a0 ^ 0xff)
                    np.testing.assert_array_equal(results[1].dst, a0 & 0xff)
                    np.testing.assert_array_equal(results[2].tiles["d"], a0)
                    [listed] = [r for r in await client.list_regions()
                                if r.name == region.name]
                    self.assertEqual(listed.jobs_total, 3)
                    with self.assertRaisesRegex(RuntimeError, "aclose"):
                        region.close()
                self.assertTrue(region.closed)
                self.assertNotIn(region.name,
                                 [r.name for r in await client.list_regions()])
                self.assertFalse(os.path.exists(shm_path(region)))
                kept = await client.shared_region(4096)
            self.assertTrue(kept.closed)
            self.assertFalse(os.path.exists(shm_path(kept)))

        asyncio.run(main())


# Run as another user by SharedMemoryTest.test_other_users_objects_are_refused:
# registers the object argv[2] names (which that user may not open), reads
# and unregisters the region argv[3] root registered, then uses a region of
# its own, and prints the outcomes.
OTHER_USER_SCRIPT = r"""
import json, sys
import grpc
import numpy as np
from ptoserve.v1 import job_pb2, service_pb2, service_pb2_grpc, tile_pb2
from ptoserve_client import Client
address, key, roots = sys.argv[1], sys.argv[2], sys.argv[3]
out = {}


def outcome(call):
    try:
        call()
        return "OK"
    except grpc.RpcError as e:
        return [e.code().name, e.details()]


with grpc.insecure_channel(address) as channel:
    shared = service_pb2_grpc.SharedMemoryStub(channel)
    compute = service_pb2_grpc.TileComputeStub(channel)
    out["stolen"] = outcome(lambda: shared.Register(
        service_pb2.RegisterRequest(name="stolen", key=key, size=64),
        timeout=10))
    # The region root registered: not to be read, written or taken away.
    tile = tile_pb2.Tile(dtype=tile_pb2.DTYPE_UINT8, rows=1, cols=64,
                         shared=tile_pb2.RegionSlice(region=roots, size=64))
    job = job_pb2.Job(tiles={"a": tile}, outputs=["c"], instructions=[
        job_pb2.Instruction(opcode=job_pb2.OPCODE_TAND, dst="c", src0="a",
                            src1="a")])
    out["read"] = outcome(lambda: compute.Execute(job, timeout=10))
    out["unregister"] = outcome(lambda: shared.Unregister(
        service_pb2.UnregisterRequest(name=roots), timeout=10))
with Client(address, timeout=10) as client, \
        client.shared_region(1 << 12) as region:
    a = region.asarray(np.arange(16, dtype=np.uint8).reshape(1, 16))
    c = region.array((1, 16), np.uint8)
    client.txor(a, 0x0f, out=c)
    out["own"] = c.tolist()
print(json.dumps(out))
"""


class SharedMemoryOffTest(unittest.TestCase):
    """A server with shared memory off answers FAILED_PRECONDITION, and the
    client leaves no object behind."""

    def test_shared_memory_off(self):
        server, address = start_server("--shared_memory=false")
        try:
            with Client(address, timeout=CALL_TIMEOUT_S) as client:
                self.assertFalse(client.capabilities().shared_memory.enabled)
                with self.assertRaises(PtoserveError) as raised:
                    client.shared_region(4096)
                self.assertEqual(raised.exception.code,
                                 grpc.StatusCode.FAILED_PRECONDITION)
                self.assertIn("shared memory is off", raised.exception.details)
                self.assertEqual(our_objects(), [])
                with SharedRegion(4096) as region:
                    with self.assertRaises(PtoserveError) as raised:
                        client.register_region(region)
                    self.assertEqual(raised.exception.code,
                                     grpc.StatusCode.FAILED_PRECONDITION)
                    self.assertEqual(client.regions, {})
                    a = region.asarray(np.ones((1, 8), np.int32))
                    job = binary_job("tand", a, 1, regions=region)
                    with self.assertRaises(PtoserveError) as raised:
                        client.execute(job)
                    self.assertEqual(raised.exception.code,
                                     grpc.StatusCode.FAILED_PRECONDITION)
                    # Not registered with this client: bytes, and it works.
                    np.testing.assert_array_equal(client.tand(a, 1).dst, a)
                self.assertEqual(our_objects(), [])
        finally:
            stop_server(server)


def make_pki(directory):
    """Writes a CA, a server certificate for 127.0.0.1 and a client
    certificate it signed, plus a second, unrelated CA, into `directory`."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
          "-nodes"]

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True,
                       capture_output=True)

    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", *ec, "-keyout", f"{ca}.key", "-out",
                f"{ca}.crt", "-days", "1", "-subj", f"/CN={ca}")
    with open(os.path.join(directory, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1")
    for name, ext in (("server", ["-extfile", "san.ext"]), ("client", [])):
        openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={name}")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt",
                "-CAkey", "ca.key", "-CAcreateserial", "-out",
                f"{name}.crt", "-days", "1", *ext)


class SecureServerTest(unittest.TestCase):
    """TLS, client certificates and bearer tokens against a server that
    requires all three."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        make_pki(cls.dir)
        tokens = cls.path("tokens")
        with open(tokens, "w") as f:
            f.write("secret-one\n")
        cls.server, cls.address = start_server(
            "--tls_cert=" + cls.path("server.crt"),
            "--tls_key=" + cls.path("server.key"),
            "--tls_client_ca=" + cls.path("ca.crt"),
            "--auth_token_file=" + tokens)

    @classmethod
    def tearDownClass(cls):
        stop_server(cls.server)

    @classmethod
    def path(cls, name):
        return os.path.join(cls.dir, name)

    def pem(self, name):
        with open(self.path(name), "rb") as f:
            return f.read()

    def client(self, **overrides):
        options = dict(root_certificates=self.pem("ca.crt"),
                       certificate_chain=self.pem("client.crt"),
                       private_key=self.pem("client.key"),
                       token="secret-one")
        options.update(overrides)
        return Client(self.address, timeout=CALL_TIMEOUT_S, **options)

    def tand_code(self, client):
        """None if a small TAND succeeds (and is right), else its code."""
        a = np.arange(8, dtype=np.int32).reshape(1, 8)
        b = np.full((1, 8), 6, dtype=np.int32)
        with client:
            try:
                result = client.tand(a, b)
            except PtoserveError as error:
                return error.code
        np.testing.assert_array_equal(result.dst, a & b)
        return None

    def test_tls_with_client_certificate_and_token(self):
        self.assertIsNone(self.tand_code(self.client()))

    def test_missing_or_wrong_token_is_unauthenticated(self):
        self.assertEqual(self.tand_code(self.client(token=None)),
                         grpc.StatusCode.UNAUTHENTICATED)
        self.assertEqual(self.tand_code(self.client(token="secret-on")),
                         grpc.StatusCode.UNAUTHENTICATED)

    def test_health_needs_no_token(self):
        with self.client(token=None) as client:
            self.assertEqual(client.health(), "SERVING")

    def test_no_tls_untrusted_server_or_no_client_certificate_cannot_connect(
            self):
        with Client(self.address, timeout=CALL_TIMEOUT_S,
                    token="secret-one") as plain:
            with self.assertRaises(PtoserveError) as raised:
                plain.health()
            self.assertEqual(raised.exception.code,
                             grpc.StatusCode.UNAVAILABLE)
            # Which argument may be missing, as ptoctl names its flags.
            self.assertIn("(the server closed the connection: does it want "
                          "TLS? tls=True, root_certificates=)",
                          raised.exception.details)
        self.assertEqual(
            self.tand_code(self.client(root_certificates=self.pem(
                "other-ca.crt"))), grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(
            self.tand_code(self.client(certificate_chain=None,
                                       private_key=None)),
            grpc.StatusCode.UNAVAILABLE)

    def test_stream_needs_the_token(self):
        a = np.full((1, 8), 5, dtype=np.int32)
        job = make_job([("tand", "d", "a", "a")], tiles={"a": a}, job_id="x")
        with self.client(token=None) as client:
            with self.assertRaises(PtoserveError) as raised:
                list(client.execute_stream([job]))
            self.assertEqual(raised.exception.code,
                             grpc.StatusCode.UNAUTHENTICATED)
        with self.client() as client:
            [result] = client.execute_stream([job])
            np.testing.assert_array_equal(
                Result.from_proto(result).tiles["d"], a)

    def test_half_a_key_pair_is_refused(self):
        with self.assertRaisesRegex(ValueError, "go together"):
            self.client(private_key=None)


class EventTextTest(unittest.TestCase):
    """The client's event lines are ptoctl's (proto/words.h's EventText)."""

    def test_durations_as_abseil_writes_them(self):
        from ptoserve_client import duration_text
        for ns, text in ((0, "0"), (941, "941ns"), (12474, "12.474us"),
                         (10500, "10.5us"), (1500000, "1.5ms"),
                         (2 * 10**9, "2s"), (1000, "1us")):
            self.assertEqual(duration_text(ns), text)

    def test_an_event_reads_as_ptoctl_prints_it(self):
        from ptoserve.v1 import job_pb2
        from ptoserve_client import event_text
        e = job_pb2.EventRecord(id="e0", instruction_index=0,
                                opcode=job_pb2.OPCODE_TXOR,
                                target=job_pb2.TARGET_A2A3,
                                pipe=job_pb2.PIPE_V, batch_id=7, batch_size=2)
        e.enqueue_time.FromNanoseconds(1000)
        e.start_time.FromNanoseconds(13474)
        e.end_time.FromNanoseconds(13474 + 941)
        e.waited_on.append("e9")
        e.trace.add(op="vor", dst="tmp", srcs=["src0", "src1"], repeats=1,
                    elements=16)
        e.trace.add(op="vand", dst="dst", srcs=["dst", "tmp"], repeats=2,
                    elements=1)
        e.notes.append("a note")
        self.assertEqual(
            event_text(e),
            "  e0   instruction 0 TXOR on a2a3, PIPE_V, batch 7 (size 2), "
            "queued 12.474us, ran 941ns, waited on e9\n"
            "       vor   tmp <- src0, src1  (1 repeat, 16 elements)\n"
            "       vand  dst <- dst, tmp  (2 repeats, 1 element)\n"
            "       note: a note\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
