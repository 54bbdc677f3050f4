"""The Open Inference Protocol on both doors, against the real server, with
a client of the protocol's own (oip_client.py, what tritonclient sends by
default): every instruction model on every target and datatype, as raw and
typed contents over gRPC and as binary and JSON data over HTTP, checked
against numpy's bitwise operators; the job model; ModelStreamInfer's order
and per-message errors; metadata, readiness and the repository index; each
mistake named in the request's words; and the pipeline's promises on the
new doors: tokens, the Host check, the timeout parameter, the message
limit, shared memory refused, unserved methods named."""

import json
import os
import sys
import tempfile
import threading
import unittest

import grpc
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oip_client import (  # noqa: E402
    DATATYPES, GrpcClient, HttpClient, InferError)
from server_process import start_and_read, stop_server  # noqa: E402

from inference import grpc_service_pb2 as pb  # noqa: E402

TARGETS = ("host", "a2a3", "a5")
# Rows of 64 elements: a multiple of 32 bytes for every datatype, as the
# NPU targets need.
SHAPE = (3, 64)
OPS = {"tand": np.bitwise_and, "txor": np.bitwise_xor, "tor": np.bitwise_or,
       "tnot": None}


def start(*flags):
    server, found = start_and_read(
        ["--address=127.0.0.1:0", "--metrics_address=",
         "--http_address=127.0.0.1:0", *flags],
        {"address": "listening on ", "http": "HTTP/JSON API on "})
    return server, found["address"], found["http"]


def operands(datatype, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(DATATYPES[datatype])
    return [rng.integers(info.min, info.max, size=SHAPE, endpoint=True,
                         dtype=DATATYPES[datatype]) for _ in range(2)]


def reference(model, a, b):
    """A plain scalar loop over the elements: the instruction's meaning."""
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            x, y = int(a[i, j]), int(b[i, j])
            out[i, j] = {"tand": x & y, "txor": x ^ y, "tor": x | y,
                         "tnot": ~x}[model]
    return out


class InferenceTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server, cls.address, cls.url = start()
        cls.grpc = GrpcClient(cls.address)
        cls.http = HttpClient(cls.url)

    @classmethod
    def tearDownClass(cls):
        cls.grpc.close()
        stop_server(cls.server)

    def check(self, result, model, a, b, target):
        want = reference(model, a, b)
        np.testing.assert_array_equal(result.outputs["dst"], want)
        self.assertEqual(result.model, model)
        self.assertEqual(result.parameters["target"], target)
        # The event record, in ptoctl's words.
        self.assertIn(f"instruction 0 {model.upper()} on {target}",
                      result.parameters["events"])

    def targets(self, model):
        """The targets that run `model`, as its metadata says."""
        m = self.grpc.call("ModelMetadata", pb.ModelMetadataRequest(name=model))
        return m.properties["targets"].split(",")

    def test_every_model_target_and_datatype_on_every_form(self):
        self.assertEqual(self.targets("tand"), list(TARGETS))
        self.assertEqual(self.targets("txor"), list(TARGETS))
        for model in OPS:
            for target in self.targets(model):
                for n, datatype in enumerate(DATATYPES):
                    a, b = operands(datatype, n)
                    inputs = {"src0": a} if model == "tnot" else \
                        {"src0": a, "src1": b}
                    params = {"target": target}
                    with self.subTest(model=model, target=target,
                                      datatype=datatype):
                        for raw in (True, False):
                            r = self.grpc.infer(model, inputs,
                                                parameters=params, raw=raw,
                                                id_=f"{model}-{n}")
                            self.check(r, model, a, b, target)
                            self.assertEqual(r.id, f"{model}-{n}")
                        for binary in (True, False):
                            r = self.http.infer(model, inputs,
                                                parameters=params,
                                                binary=binary,
                                                binary_outputs=binary)
                            self.check(r, model, a, b, target)

    def test_small_path_requests_answer_as_generic_ones(self):
        # With raw contents and no parameters but the target, a request
        # takes the small path (server/oip/infer_wire.h), read in place and
        # answered from its outcome; with a priority too, the generic one.
        for model in OPS:
            for n, datatype in enumerate(DATATYPES):
                a, b = operands(datatype, n)
                inputs = {"src0": a} if model == "tnot" else \
                    {"src0": a, "src1": b}
                with self.subTest(model=model, datatype=datatype):
                    small = self.grpc.infer(model, inputs, id_=f"s{n}")
                    generic = self.grpc.infer(model, inputs, id_=f"s{n}",
                                              parameters={"priority": 0})
                    self.check(small, model, a, b, "host")
                    self.check(generic, model, a, b, "host")
                    self.assertEqual(small.id, generic.id)
                    self.assertEqual(small.outputs.keys(),
                                     generic.outputs.keys())
                    np.testing.assert_array_equal(small.outputs["dst"],
                                                  generic.outputs["dst"])
        answers = self.grpc.stream([
            GrpcClient.request("tand", {"src0": a, "src1": b}, id_="one"),
            GrpcClient.request("tand", {"src0": a, "src1": b}, id_="two",
                               parameters={"priority": 3})])
        self.assertEqual([r.id for r in answers], ["one", "two"])
        for r in answers:
            np.testing.assert_array_equal(r.outputs["dst"], a & b)
            self.assertIn("instruction 0 TAND on host",
                          r.parameters["events"])

    def test_txor_on_a2a3_answers_its_tmp_when_asked(self):
        a, b = operands("INT16", 7)
        for client in (self.grpc, self.http):
            r = client.infer("txor", {"src0": a, "src1": b},
                             outputs=("dst", "tmp"),
                             parameters={"target": "a2a3"})
            np.testing.assert_array_equal(r.outputs["dst"], a ^ b)
            self.assertEqual(r.outputs["tmp"].shape, SHAPE)
        with self.assertRaises(InferError) as e:
            self.grpc.infer("txor", {"src0": a, "src1": b},
                            outputs=("tmp",), parameters={"target": "host"})
        self.assertEqual(e.exception.status, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("output tmp: TXOR on host has no tmp (a2a3 takes one)",
                      e.exception.message)

    def test_valid_region_limits_what_is_computed(self):
        a, b = operands("INT32", 3)
        r = self.grpc.infer("tand", {"src0": a, "src1": b},
                            parameters={"valid_rows": 2, "valid_cols": 5})
        np.testing.assert_array_equal(r.outputs["dst"][:2, :5],
                                      (a & b)[:2, :5])

    def test_the_job_model_runs_a_program_on_named_inputs(self):
        a, b = operands("UINT16", 5)
        job = {"instructions": [
            {"opcode": "OPCODE_TAND", "dst": "t", "src0": "x", "src1": "y"},
            {"opcode": "OPCODE_TXOR", "dst": "z", "src0": "t", "src1": "x"}],
            "outputs": ["z"]}
        for client in (self.grpc, self.http):
            r = client.infer("job", {"x": a, "y": b},
                             parameters={"job": json.dumps(job)})
            np.testing.assert_array_equal(r.outputs["z"], (a & b) ^ a)
        asm = ("%t = tand %x, %y : !pto.tile<...>\n"
               "%z = txor %t, %y : !pto.tile<...>\n")
        r = self.grpc.infer("job", {"x": a, "y": b}, outputs=("z",),
                            parameters={"assembly": asm})
        np.testing.assert_array_equal(r.outputs["z"], (a & b) ^ b)

    def test_mistakes_are_named_in_the_requests_words(self):
        a, b = operands("INT32", 1)
        cases = [
            (("tfoo", {"src0": a}, {}), grpc.StatusCode.NOT_FOUND, 404,
             'no model "tfoo" on this server; its models are job, tand, '
             'tnot, tor, txor'),
            (("tand", {"src0": a}, {}), grpc.StatusCode.INVALID_ARGUMENT, 400,
             "model tand reads inputs src0 and src1; src1 is missing"),
            (("tand", {"src0": a, "b": b}, {}),
             grpc.StatusCode.INVALID_ARGUMENT, 400,
             'input "b" is not one of model tand\'s: src0, src1'),
            (("tand", {"src0": a, "src1": b}, {"target": "gpu"}),
             grpc.StatusCode.INVALID_ARGUMENT, 400,
             'parameter target is "gpu", not one of this server\'s targets: '
             "host, a2a3, a5"),
            (("tand", {"src0": a, "src1": b}, {"sequence_id": 3}),
             grpc.StatusCode.INVALID_ARGUMENT, 400,
             'parameter "sequence_id" is not one model tand takes: target, '
             "valid_rows"),
            (("tand", {"src0": a, "src1": b.astype(np.int16)}, {}),
             grpc.StatusCode.INVALID_ARGUMENT, 400, "src1"),
        ]
        for (model, inputs, params), code, status, words in cases:
            with self.subTest(words=words):
                with self.assertRaises(InferError) as e:
                    self.grpc.infer(model, inputs, parameters=params)
                self.assertEqual(e.exception.status, code)
                self.assertIn(words, e.exception.message)
                with self.assertRaises(InferError) as e:
                    self.http.infer(model, inputs, parameters=params)
                self.assertEqual(e.exception.status, status)
                self.assertIn(words, e.exception.message)
        # A datatype no model takes, and contents of the wrong size.
        r = GrpcClient.request("tand", {"src0": a, "src1": b})
        r.inputs[0].datatype = "FP32"
        with self.assertRaises(InferError) as e:
            self.grpc.call("ModelInfer", r)
        self.assertIn('input src0: datatype "FP32" is not one model tand '
                      "accepts: INT8, UINT8, INT16, UINT16, INT32, UINT32",
                      e.exception.message)
        r = GrpcClient.request("tand", {"src0": a, "src1": b})
        r.raw_input_contents[1] = r.raw_input_contents[1][:-4]
        with self.assertRaises(InferError) as e:
            self.grpc.call("ModelInfer", r)
        self.assertIn("input src1: 764 bytes of raw contents where a 3x64 "
                      "INT32 tensor has 768", e.exception.message)
        r = GrpcClient.request("tand", {"src0": a, "src1": b})
        r.inputs[0].shape[:] = [192]
        with self.assertRaises(InferError) as e:
            self.grpc.call("ModelInfer", r)
        self.assertIn("input src0: shape [192] is not [rows, cols]",
                      e.exception.message)

    def test_the_stream_answers_in_order_with_ids_and_errors_of_its_own(self):
        requests, wants = [], []
        for i in range(24):
            # Large and small jobs mixed: a small one finishes first unless
            # the stream keeps the order.
            rows = 64 if i % 3 == 0 else 1
            a = np.full((rows, 64), i, dtype=np.int32)
            b = np.full((rows, 64), 0x5A, dtype=np.int32)
            model = "nope" if i == 5 else "txor"
            requests.append(GrpcClient.request(
                model, {"src0": a, "src1": b}, id_=f"m{i}"))
            wants.append(None if i == 5 else a ^ b)
        answers = self.grpc.stream(requests)
        self.assertEqual(len(answers), len(requests))
        for i, (answer, want) in enumerate(zip(answers, wants)):
            self.assertEqual(answer.id, f"m{i}")
            if want is None:
                self.assertIsInstance(answer, InferError)
                self.assertIn('no model "nope"', answer.message)
            else:
                np.testing.assert_array_equal(answer.outputs["dst"], want)

    def test_metadata_readiness_and_the_repository_index(self):
        live = self.grpc.call("ServerLive", pb.ServerLiveRequest())
        ready = self.grpc.call("ServerReady", pb.ServerReadyRequest())
        self.assertTrue(live.live and ready.ready)
        meta = self.grpc.call("ServerMetadata", pb.ServerMetadataRequest())
        self.assertEqual(meta.name, "ptoserve")
        self.assertIn("binary_tensor_data", meta.extensions)
        self.assertEqual(self.http.get_json("/v2")["name"], "ptoserve")
        m = self.grpc.call("ModelMetadata",
                           pb.ModelMetadataRequest(name="txor", version="1"))
        self.assertEqual([t.name for t in m.inputs], ["src0", "src1"])
        self.assertEqual([t.name for t in m.outputs], ["dst", "tmp"])
        self.assertEqual(m.properties["datatypes"],
                         "INT8,UINT8,INT16,UINT16,INT32,UINT32")
        rest = self.http.get_json("/v2/models/txor/versions/1")
        self.assertEqual(rest["inputs"][0]["shape"], [-1, -1])
        self.assertTrue(self.grpc.call(
            "ModelReady", pb.ModelReadyRequest(name="tand")).ready)
        self.assertEqual(self.http.send("GET", "/v2/models/tand/ready")[0],
                         200)
        with self.assertRaises(InferError) as e:
            self.grpc.call("ModelReady",
                           pb.ModelReadyRequest(name="tand", version="2"))
        self.assertIn('model "tand" has no version "2"', e.exception.message)
        index = self.grpc.call("RepositoryIndex", pb.RepositoryIndexRequest())
        names = [m.name for m in index.models]
        self.assertEqual(names, ["job", "tand", "tnot", "tor", "txor"])
        status, _, body = self.http.send("POST", "/v2/repository/index",
                                         b'{"ready": true}')
        self.assertEqual(status, 200)
        self.assertEqual([m["name"] for m in json.loads(body)], names)

    def test_extensions_not_served_are_named(self):
        with self.assertRaises(grpc.RpcError) as e:
            self.grpc.channel.unary_unary(
                "/inference.GRPCInferenceService/ModelConfig")(b"",
                                                                timeout=30)
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        self.assertIn("serves ServerLive, ServerReady", e.exception.details())
        status, _, body = self.http.send("GET", "/v2/models/tand/config")
        self.assertEqual(status, 501)
        self.assertIn("is not served by ptoserve", json.loads(body)["error"])
        a, b = operands("INT32", 2)
        r = GrpcClient.request("tand", {"src0": a, "src1": b})
        r.inputs[0].parameters["shared_memory_region"].string_param = "r"
        with self.assertRaises(InferError) as e:
            self.grpc.call("ModelInfer", r)
        self.assertEqual(e.exception.status, grpc.StatusCode.UNIMPLEMENTED)
        self.assertIn("system shared memory is not served",
                      e.exception.message)

    def test_a_foreign_host_and_a_forms_body_are_refused(self):
        a, b = operands("INT32", 4)
        head = json.dumps({"inputs": [
            {"name": n, "shape": list(SHAPE), "datatype": "INT32",
             "data": [int(x) for x in v.flat]}
            for n, v in (("src0", a), ("src1", b))]}).encode()
        status, _, body = self.http.send(
            "POST", "/v2/models/tand/infer", head,
            {"Host": "evil.example:80", "Content-Type": "application/json"})
        self.assertEqual(status, 421)
        status, _, body = self.http.send(
            "POST", "/v2/models/tand/infer", head,
            {"Content-Type": "text/plain"})
        self.assertEqual(status, 400)
        self.assertIn("not \"text/plain\"", json.loads(body)["error"])
        status, _, body = self.http.send(
            "POST", "/v2/models/tand/infer", head,
            {"Content-Type": "application/json",
             "Origin": "http://evil.example"})
        self.assertEqual(status, 403)


class InferencePromisesTest(unittest.TestCase):
    """The pipeline's promises on the new doors, on servers of their own."""

    def test_tokens_guard_inference_but_not_the_probes(self):
        with tempfile.NamedTemporaryFile("w", suffix=".tokens") as f:
            f.write("s3cret\n")
            f.flush()
            server, address, url = start(f"--auth_token_file={f.name}")
            try:
                a, b = operands("INT32", 9)
                bare, held = GrpcClient(address), GrpcClient(address, "s3cret")
                self.assertTrue(bare.call("ServerLive",
                                          pb.ServerLiveRequest()).live)
                with self.assertRaises(InferError) as e:
                    bare.infer("tand", {"src0": a, "src1": b})
                self.assertEqual(e.exception.status,
                                 grpc.StatusCode.UNAUTHENTICATED)
                np.testing.assert_array_equal(
                    held.infer("tand", {"src0": a, "src1": b})
                    .outputs["dst"], a & b)
                with self.assertRaises(InferError) as e:
                    HttpClient(url).infer("tand", {"src0": a, "src1": b})
                self.assertEqual(e.exception.status, 401)
                np.testing.assert_array_equal(
                    HttpClient(url, "s3cret").infer(
                        "tand", {"src0": a, "src1": b}).outputs["dst"], a & b)
                self.assertEqual(HttpClient(url).send(
                    "GET", "/v2/health/ready")[0], 200)
                bare.close()
                held.close()
            finally:
                stop_server(server)

    def test_one_clients_flood_leaves_anothers_share_alone(self):
        # Two tokens, two clients. One floods the HTTP door with requests
        # that together pass its 4 MiB share (each alone within a job's
        # 4 MiB): it may be refused, never answered wrong. The other's
        # small gRPC inferences, meanwhile, are all answered, and right.
        with tempfile.NamedTemporaryFile("w", suffix=".tokens") as f:
            f.write("alpha\nbeta\n")
            f.flush()
            server, address, url = start(
                f"--auth_token_file={f.name}", "--memory_budget_mb=16",
                "--max_client_memory_mb=4", "--max_job_mb=4",
                "--max_message_mb=4")
            try:
                big = np.arange(256 * 512, dtype=np.int32).reshape(256, 512)
                flood_codes = []

                def flood():
                    client = HttpClient(url, "alpha")
                    for _ in range(8):
                        try:
                            r = client.infer("txor", {"src0": big, "src1": big})
                            self.assertFalse(r.outputs["dst"].any())
                            flood_codes.append(200)
                        except InferError as e:
                            flood_codes.append(e.status)

                threads = [threading.Thread(target=flood) for _ in range(4)]
                for t in threads:
                    t.start()
                victim = GrpcClient(address, "beta")
                a, b = operands("UINT32", 11)
                for _ in range(20):
                    np.testing.assert_array_equal(
                        victim.infer("tand", {"src0": a, "src1": b})
                        .outputs["dst"], a & b)
                for t in threads:
                    t.join(timeout=120)
                    self.assertFalse(t.is_alive())
                self.assertEqual(len(flood_codes), 32)
                self.assertTrue(set(flood_codes) <= {200, 429}, flood_codes)
                victim.close()
            finally:
                stop_server(server)

    def test_the_timeout_parameter_is_the_jobs_deadline(self):
        # A job waits in the queue for company for up to 1 s; its timeout
        # of 50 ms ends it there on both doors.
        server, address, url = start("--max_queue_delay_us=1000000")
        try:
            a, b = operands("INT32", 6)
            client = GrpcClient(address)
            with self.assertRaises(InferError) as e:
                client.infer("tand", {"src0": a, "src1": b},
                             parameters={"timeout": 50000})
            self.assertEqual(e.exception.status,
                             grpc.StatusCode.DEADLINE_EXCEEDED)
            with self.assertRaises(InferError) as e:
                HttpClient(url).infer("tand", {"src0": a, "src1": b},
                                      parameters={"timeout": 50000})
            self.assertEqual(e.exception.status, 504)
            client.close()
        finally:
            stop_server(server)

    def test_a_body_over_the_message_limit_is_refused_and_the_server_serves_on(
            self):
        server, address, url = start("--max_message_mb=1")
        try:
            big = np.zeros((1024, 512), dtype=np.int32)  # 2 MiB a tensor
            with self.assertRaises(InferError) as e:
                HttpClient(url).infer("tand", {"src0": big, "src1": big})
            self.assertEqual(e.exception.status, 413)
            client = GrpcClient(address)
            with self.assertRaises(InferError) as e:
                client.infer("tand", {"src0": big, "src1": big})
            self.assertEqual(e.exception.status,
                             grpc.StatusCode.RESOURCE_EXHAUSTED)
            a, b = operands("INT8", 8)
            np.testing.assert_array_equal(
                client.infer("tor", {"src0": a, "src1": b}).outputs["dst"],
                a | b)
            client.close()
        finally:
            stop_server(server)


if __name__ == "__main__":
    unittest.main()
