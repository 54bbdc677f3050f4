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
import os
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

from ptoserve.v1 import job_pb2, tile_pb2
from ptoserve_client import (MAX_TILE_BYTES, Client, PtoserveError, Result,
                             ServerMetadata, aio, decode_tile,
                             encode_operands, encode_tile, make_job)
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
