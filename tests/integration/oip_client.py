"""A client of the Open Inference Protocol written from its specification,
for the tests: what Triton's Python client sends by default, on both doors.

gRPC: the generated stubs of proto/inference/grpc_service.proto, inputs as
raw_input_contents (or typed contents), headers as metadata. HTTP: the REST
API with Triton's binary tensor data: the JSON, then each input's bytes,
with Inference-Header-Content-Length and no Content-Type, and outputs asked
for as binary (the request's binary_data_output when none is named)."""

import http.client
import json

import grpc
import numpy as np

from inference import grpc_service_pb2 as pb
from inference import grpc_service_pb2_grpc as pb_grpc

DATATYPES = {"INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16,
             "UINT16": np.uint16, "INT32": np.int32, "UINT32": np.uint32}
SIGNED = ("INT8", "INT16", "INT32")


class InferError(Exception):
    """A refused request: its gRPC code or HTTP status, and its message."""

    def __init__(self, status, message):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class Result:
    """A response: outputs by name as arrays, its parameters, model, id."""

    def __init__(self, model, id_, parameters, outputs):
        self.model, self.id = model, id_
        self.parameters, self.outputs = parameters, outputs


def _param(value, p):
    if isinstance(value, bool):
        p.bool_param = value
    elif isinstance(value, int):
        p.int64_param = value
    else:
        p.string_param = value


def _unparam(p):
    return getattr(p, p.WhichOneof("parameter_choice"))


class GrpcClient:
    def __init__(self, address, token=None):
        self.channel = grpc.insecure_channel(address)
        self.stub = pb_grpc.GRPCInferenceServiceStub(self.channel)
        self.metadata = [("authorization", f"Bearer {token}")] if token else []

    def close(self):
        self.channel.close()

    def call(self, method, request, timeout=30):
        try:
            return getattr(self.stub, method)(
                request, metadata=self.metadata, timeout=timeout)
        except grpc.RpcError as e:
            raise InferError(e.code(), e.details()) from None

    @staticmethod
    def request(model, inputs, outputs=(), parameters=None, id_="",
                raw=True, version=""):
        r = pb.ModelInferRequest(model_name=model, model_version=version,
                                 id=id_)
        for k, v in (parameters or {}).items():
            _param(v, r.parameters[k])
        for name, array in inputs.items():
            datatype = next(d for d, t in DATATYPES.items()
                            if t == array.dtype.type)
            t = r.inputs.add(name=name, datatype=datatype,
                             shape=list(array.shape))
            if raw:
                r.raw_input_contents.append(array.astype("<" + array.dtype.str[1:]).tobytes())
            elif datatype in SIGNED:
                t.contents.int_contents.extend(int(x) for x in array.flat)
            else:
                t.contents.uint_contents.extend(int(x) for x in array.flat)
        for name in outputs:
            r.outputs.add(name=name)
        return r

    @staticmethod
    def result(response):
        outputs = {}
        for out, raw in zip(response.outputs, response.raw_output_contents):
            outputs[out.name] = np.frombuffer(
                raw, dtype=np.dtype(DATATYPES[out.datatype]).newbyteorder("<")
            ).reshape(list(out.shape))
        return Result(response.model_name, response.id,
                      {k: _unparam(v) for k, v in response.parameters.items()},
                      outputs)

    def infer(self, model, inputs, **kwargs):
        return self.result(self.call(
            "ModelInfer", self.request(model, inputs, **kwargs)))

    def stream(self, requests):
        """Each answer: a Result, or an InferError with its request's id."""
        answers = []
        for a in self.stub.ModelStreamInfer(iter(requests),
                                            metadata=self.metadata,
                                            timeout=60):
            if a.error_message:
                e = InferError("stream", a.error_message)
                e.id = a.infer_response.id
                answers.append(e)
            else:
                answers.append(self.result(a.infer_response))
        return answers


class HttpClient:
    def __init__(self, url, token=None):
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def send(self, method, path, body=None, headers=None):
        """(status, headers, body) of one request on its own connection."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            try:
                conn.request(method, path, body=body,
                             headers={**self.headers, **(headers or {})})
            except (BrokenPipeError, ConnectionResetError):
                pass  # answered before the whole body was sent: read it
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            conn.close()

    def get_json(self, path):
        status, _, body = self.send("GET", path)
        if status != 200:
            raise InferError(status, json.loads(body)["error"])
        return json.loads(body) if body else None

    def infer(self, model, inputs, outputs=(), parameters=None, id_="",
              binary=True, binary_outputs=True, version=""):
        request = {"inputs": []}
        if id_:
            request["id"] = id_
        parameters = dict(parameters or {})
        if outputs:
            request["outputs"] = [
                {"name": n, "parameters": {"binary_data": binary_outputs}}
                for n in outputs]
        elif binary_outputs:
            parameters["binary_data_output"] = True
        if parameters:
            request["parameters"] = parameters
        tail = b""
        for name, array in inputs.items():
            datatype = next(d for d, t in DATATYPES.items()
                            if t == array.dtype.type)
            tensor = {"name": name, "shape": list(array.shape),
                      "datatype": datatype}
            if binary:
                data = array.astype("<" + array.dtype.str[1:]).tobytes()
                tensor["parameters"] = {"binary_data_size": len(data)}
                tail += data
            else:
                tensor["data"] = [int(x) for x in array.flat]
            request["inputs"].append(tensor)
        head = json.dumps(request).encode()
        headers = {"Inference-Header-Content-Length": str(len(head))} \
            if tail else {"Content-Type": "application/json"}
        path = f"/v2/models/{model}" + \
            (f"/versions/{version}" if version else "") + "/infer"
        status, got, body = self.send("POST", path, head + tail, headers)
        if status != 200:
            raise InferError(status, json.loads(body)["error"])
        size = int(got.get("Inference-Header-Content-Length", len(body)))
        answer = json.loads(body[:size])
        rest = body[size:]
        outputs = {}
        for out in answer["outputs"]:
            dtype = np.dtype(DATATYPES[out["datatype"]]).newbyteorder("<")
            n = out.get("parameters", {}).get("binary_data_size")
            if n is not None:
                values = np.frombuffer(rest[:n], dtype=dtype)
                rest = rest[n:]
            else:
                values = np.array(out["data"], dtype=dtype)
            outputs[out["name"]] = values.reshape(out["shape"])
        return Result(answer["model_name"], answer.get("id", ""),
                      answer.get("parameters", {}), outputs)
