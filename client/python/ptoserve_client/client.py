"""A thin Python layer over the generated ptoserve.v1 gRPC stub.

Tiles are 2-D numpy arrays of int8, uint8, int16, uint16, int32 or uint32;
they travel as raw little-endian row-major bytes (`Tile.data`) and come back
as arrays of the same dtype and shape. Events are the server's
`ptoserve.v1.EventRecord` messages, unchanged.
"""

import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence

import grpc
import numpy as np

from grpc_health.v1 import health_pb2, health_pb2_grpc
from ptoserve.v1 import job_pb2, service_pb2, service_pb2_grpc, tile_pb2

# (numpy kind, item size) -> wire element type.
_DTYPES = {
    ("i", 1): tile_pb2.DTYPE_INT8,
    ("u", 1): tile_pb2.DTYPE_UINT8,
    ("i", 2): tile_pb2.DTYPE_INT16,
    ("u", 2): tile_pb2.DTYPE_UINT16,
    ("i", 4): tile_pb2.DTYPE_INT32,
    ("u", 4): tile_pb2.DTYPE_UINT32,
}
_NUMPY_DTYPES = {wire: np.dtype(f"{kind}{size}")
                 for (kind, size), wire in _DTYPES.items()}

# The server's default --max_message_mb.
_MAX_MESSAGE_BYTES = 64 << 20

# As the C++ SDK's (client/client.cc): round robin over every address the
# target resolves to; Execute and GetCapabilities, which have no side
# effects, are retried on another server when one is gone or going away
# (UNAVAILABLE: unreachable or refusing calls in its lame duck; CANCELLED:
# what gRPC answers calls that reach a server as it closes). A call whose
# deadline passes is never retried.
_SERVICE_CONFIG = json.dumps({
    "loadBalancingConfig": [{"round_robin": {}}],
    "methodConfig": [{
        "name": [{"service": "ptoserve.v1.TileCompute", "method": "Execute"},
                 {"service": "ptoserve.v1.TileCompute",
                  "method": "GetCapabilities"}],
        "retryPolicy": {
            "maxAttempts": 5,
            "initialBackoff": "0.05s",
            "maxBackoff": "1s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE", "CANCELLED"],
        },
    }],
})


def channel_target(address: str) -> str:
    """The gRPC target for `address`: HOST:PORT, a comma-separated list of
    them ("10.0.0.5:50051,10.0.0.6:50051", IPv6 in brackets), or any gRPC
    target with a scheme ("dns:///ptoserve.default.svc:50051")."""
    if "," not in address or ":/" in address or address.startswith(
            ("ipv4:", "ipv6:")):
        return address
    return ("ipv6:" if address.startswith("[") else "ipv4:") + address

# "host", "a2a3", "a5", a job_pb2.Target value, or None: the server's default.
Target = str | int | None
TileLike = np.ndarray | tile_pb2.Tile
# (opcode, dst, src0, src1[, tmp]) with opcode "tand" or "txor", or a
# ptoserve.v1.Instruction.
Step = tuple[str, ...] | job_pb2.Instruction


class PtoserveError(Exception):
    """A failed call: the gRPC status code and the server's message."""

    def __init__(self, code: grpc.StatusCode, details: str):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


@dataclasses.dataclass
class Result:
    """What a job returned, decoded.

    tiles: the output tiles by name, each the whole physical tile.
    events: one ptoserve.v1.EventRecord per instruction, in order.
    target: the target the job ran under: "host", "a2a3" or "a5".
    """

    tiles: dict[str, np.ndarray]
    events: list[job_pb2.EventRecord]
    target: str

    @property
    def dst(self) -> np.ndarray:
        """The dst of Client.tand and Client.txor."""
        return self.tiles["dst"]

    @classmethod
    def from_proto(cls, result: job_pb2.JobResult) -> "Result":
        """Decodes a ptoserve.v1.JobResult."""
        return cls(
            tiles={name: decode_tile(t) for name, t in result.tiles.items()},
            events=list(result.events),
            target=_target_name(result.target))


def encode_tile(array: np.ndarray,
                valid: tuple[int, int] | None = None) -> tile_pb2.Tile:
    """A ptoserve.v1.Tile holding `array` as data, with valid region `valid`
    (rows, cols; None: the whole tile)."""
    array = np.asarray(array)
    if array.ndim != 2:
        raise ValueError(f"a tile is a 2-D array, not {array.ndim}-D")
    wire = _DTYPES.get((array.dtype.kind, array.dtype.itemsize))
    if wire is None:
        raise TypeError(
            f"tile dtype {array.dtype} is not one of int8, uint8, int16, "
            "uint16, int32, uint32")
    rows, cols = array.shape
    valid_rows, valid_cols = valid or (0, 0)
    data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return tile_pb2.Tile(dtype=wire, rows=rows, cols=cols,
                         valid_rows=valid_rows, valid_cols=valid_cols,
                         data=data)


def decode_tile(tile: tile_pb2.Tile) -> np.ndarray:
    """The elements of a ptoserve.v1.Tile (data, values or neither) as a
    rows x cols array of its dtype."""
    dtype = _NUMPY_DTYPES.get(tile.dtype)
    if dtype is None:
        raise TypeError(
            f"tile dtype {tile_pb2.DType.Name(tile.dtype)} has no decoder")
    if tile.values:
        flat = np.array(tile.values)  # float64: exact for 32-bit integers
    elif tile.data:
        flat = np.frombuffer(tile.data, dtype=dtype.newbyteorder("<"))
    else:  # neither encoding: a zero-filled tile
        flat = np.zeros(tile.rows * tile.cols, dtype=dtype)
    return flat.astype(dtype).reshape(tile.rows, tile.cols)


def _target_value(target: Target) -> int:
    if target is None:
        return job_pb2.TARGET_UNSPECIFIED
    if isinstance(target, str):
        return job_pb2.Target.Value("TARGET_" + target.upper())
    return target


def _target_name(target: int) -> str:
    return job_pb2.Target.Name(target)[len("TARGET_"):].lower()


def _instruction(step: Step) -> job_pb2.Instruction:
    if isinstance(step, job_pb2.Instruction):
        return step
    opcode, dst, src0, src1, *tmp = step
    return job_pb2.Instruction(
        opcode=job_pb2.Opcode.Value("OPCODE_" + opcode.upper()),
        dst=dst, src0=src0, src1=src1, tmp=tmp[0] if tmp else "")


def _job(tiles: Mapping[str, TileLike], outputs: Iterable[str] | None,
         target: Target, **program) -> job_pb2.Job:
    job = job_pb2.Job(target=_target_value(target),
                      outputs=list(outputs or ()), **program)
    for name, tile in tiles.items():
        job.tiles[name].CopyFrom(
            tile if isinstance(tile, tile_pb2.Tile) else encode_tile(tile))
    return job


def make_job(program: Sequence[Step], tiles: Mapping[str, TileLike],
             outputs: Iterable[str] | None = None, target: Target = None,
             job_id: str = "") -> job_pb2.Job:
    """The ptoserve.v1.Job that Client.run would send, with Job.id
    `job_id`: for Client.execute_stream, which matches results by it."""
    job = _job(tiles, outputs, target,
               instructions=[_instruction(step) for step in program])
    job.id = job_id
    return job


class Client:
    """A connection to a ptoserve server.

    Every method raises PtoserveError with the server's code and message
    when the call fails. Use as a context manager, or call close().
    """

    def __init__(self, address: str = "127.0.0.1:50051",
                 timeout: float = 30.0, *, tls: bool = False,
                 root_certificates: bytes | None = None,
                 certificate_chain: bytes | None = None,
                 private_key: bytes | None = None,
                 token: str | None = None):
        """Opens a channel to `address`; the connection is made on the
        first call. `address` is HOST:PORT, a comma-separated list of them,
        or a gRPC target such as dns:///NAME:PORT: calls are spread over
        every server round robin, and a call a server refuses as it goes
        away is retried on another (see _SERVICE_CONFIG). `timeout` is each
        call's deadline in seconds.

        tls: connect with TLS (implied by any of the three PEM arguments).
        root_certificates: PEM of the CA that signed the server's
            certificate (None: the system's roots).
        certificate_chain, private_key: PEM of this client's certificate
            and key, for a server that requires them (--tls_client_ca).
        token: sent as "authorization: Bearer <token>" with every call,
            for a server with --auth_token_file.
        """
        options = [
            ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
            ("grpc.service_config", _SERVICE_CONFIG),
            ("grpc.enable_retries", 1),
        ]
        if (certificate_chain is None) != (private_key is None):
            raise ValueError(
                "certificate_chain and private_key go together")
        if tls or root_certificates or certificate_chain:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=root_certificates,
                private_key=private_key,
                certificate_chain=certificate_chain)
            self._channel = grpc.secure_channel(channel_target(address),
                                                credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(channel_target(address),
                                                  options=options)
        self._metadata = ((("authorization", f"Bearer {token}"),)
                          if token else None)
        self._stub = service_pb2_grpc.TileComputeStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._timeout = timeout

    def close(self) -> None:
        """Closes the channel."""
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _call(self, method, request):
        try:
            return method(request, timeout=self._timeout,
                          metadata=self._metadata)
        except grpc.RpcError as error:
            raise PtoserveError(error.code(), error.details()) from None

    def execute(self, job: job_pb2.Job) -> job_pb2.JobResult:
        """Runs a raw ptoserve.v1.Job and returns the raw JobResult."""
        return self._call(self._stub.Execute, job)

    def tand(self, src0: np.ndarray, src1: np.ndarray,
             valid: tuple[int, int] | None = None,
             target: Target = None) -> Result:
        """dst = src0 & src1 over the valid region (rows, cols; None: the
        whole tile). The result's dst is zero outside it."""
        return self._binary("tand", src0, src1, valid, target)

    def txor(self, src0: np.ndarray, src1: np.ndarray,
             valid: tuple[int, int] | None = None,
             target: Target = None) -> Result:
        """dst = src0 ^ src1 over the valid region, as tand; the server
        allocates a2a3's tmp."""
        return self._binary("txor", src0, src1, valid, target)

    def _binary(self, opcode, src0, src1, valid, target) -> Result:
        tmp = ("tmp",) if opcode == "txor" else ()
        return self.run([(opcode, "dst", "src0", "src1") + tmp],
                        tiles={"src0": encode_tile(src0, valid),
                               "src1": encode_tile(src1, valid)},
                        outputs=["dst"], target=target)

    def run(self, program: Sequence[Step], tiles: Mapping[str, TileLike],
            outputs: Iterable[str] | None = None,
            target: Target = None) -> Result:
        """Runs a program of instructions over `tiles`.

        program: (opcode, dst, src0, src1[, tmp]) tuples, opcode "tand" or
            "txor", or ptoserve.v1.Instruction messages.
        tiles: name -> array, or a ptoserve.v1.Tile (e.g. from encode_tile
            with a valid region). A dst naming no tile is allocated by the
            server.
        outputs: names of the tiles to return; None: every dst.
        target: "host", "a2a3", "a5", or None for the server's default.
        """
        return Result.from_proto(
            self.execute(make_job(program, tiles, outputs, target)))

    def run_assembly(self, text: str, tiles: Mapping[str, TileLike],
                     outputs: Iterable[str] | None = None,
                     target: Target = None) -> Result:
        """Runs a program written in PTO assembly (docs/ASSEMBLY.md), where
        `%name` is tiles["name"]; otherwise as run()."""
        return Result.from_proto(
            self.execute(_job(tiles, outputs, target, assembly=text)))

    def execute_stream(self, jobs: Iterable[job_pb2.Job],
                       timeout: float | None = None
                       ) -> Iterator[job_pb2.JobResult]:
        """Sends `jobs` on one ExecuteStream call and yields each
        ptoserve.v1.JobResult as it arrives: in the order the jobs finish,
        not the order they were sent, so match them by Job.id (make_job
        sets it). A job that fails does not end the stream: its result
        carries a non-zero `status.code` and the server's message (decode
        the others with Result.from_proto). `jobs` may be a generator; it
        is read as the server's window allows. `timeout`: a deadline in
        seconds for the whole stream, None for none. Raises PtoserveError
        if the call itself fails (unreachable, UNAUTHENTICATED, the
        deadline, the server shutting down).
        """
        try:
            yield from self._stub.ExecuteStream(iter(jobs), timeout=timeout,
                                                metadata=self._metadata)
        except grpc.RpcError as error:
            raise PtoserveError(error.code(), error.details()) from None

    def capabilities(self) -> service_pb2.Capabilities:
        """The server's ptoserve.v1.Capabilities."""
        return self._call(self._stub.GetCapabilities,
                          service_pb2.GetCapabilitiesRequest())

    def health(self, service: str = "") -> str:
        """The grpc.health.v1 status of `service` ("": the whole server),
        e.g. "SERVING"."""
        response = self._call(self._health.Check,
                              health_pb2.HealthCheckRequest(service=service))
        return health_pb2.HealthCheckResponse.ServingStatus.Name(
            response.status)
