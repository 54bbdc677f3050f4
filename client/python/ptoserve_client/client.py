"""A thin Python layer over the generated ptoserve.v1 gRPC stub.

Tiles are 2-D numpy arrays of int8, uint8, int16, uint16, int32 or uint32;
they travel as raw little-endian row-major bytes (`Tile.data`), or as one
number (`Tile.fill`) when every element is the same, and come back as
arrays of the same dtype and shape. Events are the server's
`ptoserve.v1.EventRecord` messages, unchanged.
"""

import concurrent.futures
import dataclasses
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

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
_DTYPE_NAMES = "int8, uint8, int16, uint16, int32, uint32"

# The server's default --max_message_mb.
_MAX_MESSAGE_BYTES = 64 << 20
# The most bytes the client allocates for one tile it builds (a broadcast
# operand) or decodes (a fill or zero-filled tile, whose size its message
# does not bound): no message could carry a larger one.
MAX_TILE_BYTES = _MAX_MESSAGE_BYTES

# gRPC status codes by number, for JobStatus.code.
_STATUS_CODES = {code.value[0]: code for code in grpc.StatusCode}

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

# What a liveness probe reads as "no server there" rather than an error.
_NOT_LIVE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


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
# One of the six element types as numpy spells it: np.int16, "uint8",
# np.dtype("<u4"), ...; None: the operands' own.
DTypeLike = np.dtype | type | str | None
# A 2-D array, or anything np.asarray makes one of (nested lists of ints).
TileLike = np.ndarray | Sequence | tile_pb2.Tile
# An operand of tand/txor: TileLike, a 1-D row, or one integer.
Operand = np.ndarray | Sequence | int | np.integer
# (opcode, dst, src0, src1[, tmp]) with opcode "tand" or "txor", or a
# ptoserve.v1.Instruction.
Step = tuple[str, ...] | job_pb2.Instruction
T = TypeVar("T")


class PtoserveError(Exception):
    """A failed call: the gRPC status code and the server's message."""

    def __init__(self, code: grpc.StatusCode, details: str):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


def _error(error: grpc.RpcError) -> PtoserveError:
    return PtoserveError(error.code(), error.details())


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

    def as_numpy(self, name: str) -> np.ndarray | None:
        """Output tile `name`, or None if the job returned no such tile
        (as tritonclient's InferResult.as_numpy)."""
        return self.tiles.get(name)

    @classmethod
    def from_proto(cls, result: job_pb2.JobResult) -> "Result":
        """Decodes a ptoserve.v1.JobResult. Raises PtoserveError for a
        failed one (a stream's result with a non-zero status.code)."""
        if result.status.code:
            raise PtoserveError(
                _STATUS_CODES.get(result.status.code, grpc.StatusCode.UNKNOWN),
                result.status.message)
        return cls(
            tiles={name: decode_tile(t) for name, t in result.tiles.items()},
            events=list(result.events),
            target=_target_name(result.target))


@dataclasses.dataclass(frozen=True)
class ServerMetadata:
    """What get_server_metadata() returns (tritonclient's name for it).

    name: "ptoserve". version: the server's, e.g. "0.1.0".
    targets: the targets it runs, e.g. ["host", "a2a3", "a5"].
    default_target: the target of jobs that leave it unset.
    """

    name: str
    version: str
    targets: list[str]
    default_target: str

    @classmethod
    def from_capabilities(
            cls, capabilities: service_pb2.Capabilities) -> "ServerMetadata":
        """Picks the metadata out of a ptoserve.v1.Capabilities."""
        return cls(name="ptoserve", version=capabilities.server_version,
                   targets=[_target_name(t.target)
                            for t in capabilities.targets],
                   default_target=_target_name(capabilities.default_target))


def tile_dtype(dtype: DTypeLike) -> np.dtype:
    """np.dtype(dtype) if it is one of the six element types TAND and TXOR
    take; TypeError otherwise."""
    try:
        resolved = np.dtype(dtype)
    except TypeError:
        resolved = None
    if resolved is None or (resolved.kind, resolved.itemsize) not in _DTYPES:
        raise TypeError(f"dtype {dtype!r} is not one of {_DTYPE_NAMES}")
    return resolved


def _has_tile_dtype(array: np.ndarray) -> bool:
    return (array.dtype.kind, array.dtype.itemsize) in _DTYPES


def _cast(array: np.ndarray, dtype: np.dtype, name: str) -> np.ndarray:
    """`array` as `dtype`, refusing what is no integer (TypeError) and any
    value that does not fit (ValueError): never a silent wraparound."""
    kind = array.dtype.kind
    if kind == "O" and all(type(v) is int for v in array.flat):
        pass  # Python ints beyond 64 bits: compared exactly below
    elif kind not in "iu":
        raise TypeError(
            f"{name} has {array.dtype} elements; TAND and TXOR take "
            f"integers ({_DTYPE_NAMES}), and floats, bools and other kinds "
            "are not converted implicitly: convert with .astype() first")
    if np.can_cast(array.dtype, dtype, "safe"):
        return array.astype(dtype, copy=False)
    info = np.iinfo(dtype)
    outside = (array < info.min) | (array > info.max)
    if outside.any():
        index = tuple(int(i) for i in np.argwhere(outside)[0])
        where = f"{name}[{', '.join(map(str, index))}]" if index else name
        raise ValueError(
            f"{where} = {array[index]} does not fit {dtype.name} "
            f"[{info.min}, {info.max}]")
    return array.astype(dtype)


def as_tile_array(value: Operand, dtype: DTypeLike = None,
                  name: str = "tile") -> np.ndarray:
    """`value` (an array, nested lists of integers, or one integer) as an
    array of an element type: `dtype` if given (every value checked to fit:
    ValueError names the first that does not), else its own, which must be
    one of the six (TypeError). Floats and bools are never converted
    (TypeError). `name` labels the errors."""
    array = np.asarray(value)
    if dtype is not None:
        return _cast(array, tile_dtype(dtype), name)
    if not _has_tile_dtype(array):
        raise TypeError(
            f"{name} dtype {array.dtype} is not one of {_DTYPE_NAMES}; "
            "pass dtype= to convert it (values are checked to fit)")
    return array


def encode_tile(array: TileLike, valid: tuple[int, int] | None = None,
                dtype: DTypeLike = None) -> tile_pb2.Tile:
    """A ptoserve.v1.Tile holding `array` as data, with valid region `valid`
    (rows, cols; None: the whole tile). `dtype` converts it first, as
    as_tile_array does."""
    array = as_tile_array(array, dtype)
    if array.ndim != 2:
        raise ValueError(f"a tile is a 2-D array, not {array.ndim}-D")
    rows, cols = array.shape
    valid_rows, valid_cols = valid or (0, 0)
    data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return tile_pb2.Tile(dtype=_DTYPES[array.dtype.kind, array.dtype.itemsize],
                         rows=rows, cols=cols, valid_rows=valid_rows,
                         valid_cols=valid_cols, data=data)


def encode_operands(src0: Operand, src1: Operand,
                    valid: tuple[int, int] | None = None,
                    dtype: DTypeLike = None
                    ) -> tuple[tile_pb2.Tile, tile_pb2.Tile]:
    """The two tiles Client.tand/txor send for `src0` and `src1`.

    Element type: `dtype` if given, else that of the operand that is an
    array of one of the six types (the other, e.g. a Python int, a list or
    an int64 array, is converted to it); both are checked to fit. Two
    arrays of different element types need dtype= (TypeError).

    Shape: the operands broadcast as numpy broadcasts them, and the result
    must be 2-D: a scalar, a 1-D row of `cols` values, a (1, cols) row or
    a (rows, 1) column stretches over the other operand. An operand of one
    element travels as `Tile.fill`, a few bytes whatever the shape; any
    other is sent whole (broadcast to the shape, at most MAX_TILE_BYTES).
    """
    arrays = [np.asarray(src0), np.asarray(src1)]
    if dtype is None:
        own = {a.dtype.newbyteorder("=") for a in arrays
               if _has_tile_dtype(a)}
        if len(own) > 1:
            raise TypeError(
                f"src0 is {arrays[0].dtype} and src1 is {arrays[1].dtype}: "
                "TAND and TXOR take one element type; pass dtype= to "
                "convert both (values are checked to fit)")
        if not own:
            raise TypeError(
                f"neither operand is an array of {_DTYPE_NAMES} "
                f"(src0: {arrays[0].dtype}, src1: {arrays[1].dtype}); pass "
                "dtype=, e.g. dtype=np.int32")
        dtype = next(iter(own))
    dtype = tile_dtype(dtype)
    arrays = [_cast(a, dtype, f"src{i}") for i, a in enumerate(arrays)]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        raise ValueError(
            f"src0 {arrays[0].shape} and src1 {arrays[1].shape} do not "
            "broadcast to one shape") from None
    if len(shape) != 2:
        raise ValueError(
            f"src0 {arrays[0].shape} and src1 {arrays[1].shape} broadcast "
            f"to {len(shape)}-D; a tile is 2-D (a 1-D operand is a row)")
    rows, cols = shape
    valid_rows, valid_cols = valid or (0, 0)
    tiles = []
    for array in arrays:
        if array.size == 1:
            tiles.append(tile_pb2.Tile(
                dtype=_DTYPES[dtype.kind, dtype.itemsize], rows=rows,
                cols=cols, valid_rows=valid_rows, valid_cols=valid_cols,
                fill=float(array.item())))
            continue
        if array.shape != shape and rows * cols * dtype.itemsize > (
                MAX_TILE_BYTES):
            raise ValueError(
                f"broadcasting to {rows}x{cols} {dtype.name} takes more than "
                f"{MAX_TILE_BYTES} bytes")
        tiles.append(encode_tile(np.broadcast_to(array, shape), valid))
    return tiles[0], tiles[1]


def decode_tile(tile: tile_pb2.Tile,
                max_bytes: int = MAX_TILE_BYTES) -> np.ndarray:
    """The elements of a ptoserve.v1.Tile (data, values, fill or none of
    them) as a rows x cols array of its dtype. ValueError for a tile over
    `max_bytes` (before anything is allocated) or whose elements do not
    match its shape and dtype."""
    dtype = _NUMPY_DTYPES.get(tile.dtype)
    if dtype is None:
        raise TypeError(
            f"tile dtype {tile_pb2.DType.Name(tile.dtype)} has no decoder")
    elements = tile.rows * tile.cols
    if elements * dtype.itemsize > max_bytes:
        raise ValueError(
            f"tile of {tile.rows}x{tile.cols} {dtype.name} is over "
            f"{max_bytes} bytes")
    if tile.HasField("fill"):
        info = np.iinfo(dtype)
        if not (tile.fill.is_integer() and info.min <= tile.fill <= info.max):
            raise ValueError(f"tile fill {tile.fill} is not an integer in "
                             f"the {dtype.name} range")
        flat = np.full(elements, int(tile.fill), dtype=dtype)
    elif tile.values:
        if len(tile.values) != elements:
            raise ValueError(f"tile has {len(tile.values)} values for "
                             f"{tile.rows}x{tile.cols} elements")
        numbers = np.array(tile.values)  # float64: exact for every int32
        with np.errstate(invalid="ignore"):
            flat = numbers.astype(dtype)
        if not np.array_equal(flat, numbers):
            raise ValueError(f"tile values are not all integers in the "
                             f"{dtype.name} range")
    elif tile.data:
        if len(tile.data) != elements * dtype.itemsize:
            raise ValueError(
                f"tile data is {len(tile.data)} bytes; {tile.rows}x"
                f"{tile.cols} {dtype.name} is {elements * dtype.itemsize}")
        flat = np.frombuffer(tile.data, dtype=dtype.newbyteorder("<"))
    else:  # no encoding: a zero-filled tile
        flat = np.zeros(elements, dtype=dtype)
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
    # (opcode, dst, src0) for an instruction of one source (tnot).
    opcode, dst, src0, *rest = step
    src1, tmp = (list(rest) + ["", ""])[:2]
    return job_pb2.Instruction(
        opcode=job_pb2.Opcode.Value("OPCODE_" + opcode.upper()),
        dst=dst, src0=src0, src1=src1, tmp=tmp)


def _job(tiles: Mapping[str, TileLike], outputs: Iterable[str] | None,
         target: Target, dtype: DTypeLike = None, **program) -> job_pb2.Job:
    job = job_pb2.Job(target=_target_value(target),
                      outputs=list(outputs or ()), **program)
    for name, tile in tiles.items():
        job.tiles[name].CopyFrom(
            tile if isinstance(tile, tile_pb2.Tile)
            else encode_tile(as_tile_array(tile, dtype, f"tile {name!r}")))
    return job


def make_job(program: Sequence[Step], tiles: Mapping[str, TileLike],
             outputs: Iterable[str] | None = None, target: Target = None,
             job_id: str = "", dtype: DTypeLike = None) -> job_pb2.Job:
    """The ptoserve.v1.Job that Client.run would send, with Job.id
    `job_id`: for Client.execute_stream, which matches results by it."""
    job = _job(tiles, outputs, target, dtype,
               instructions=[_instruction(step) for step in program])
    job.id = job_id
    return job


def binary_job(opcode: str, src0: Operand, src1: Operand,
               valid: tuple[int, int] | None = None, target: Target = None,
               dtype: DTypeLike = None) -> job_pb2.Job:
    """The ptoserve.v1.Job of Client.tand (opcode "tand") or txor: tiles
    "src0" and "src1" from encode_operands, output "dst"."""
    tmp = ("tmp",) if opcode == "txor" else ()
    src0_tile, src1_tile = encode_operands(src0, src1, valid, dtype)
    return make_job([(opcode, "dst", "src0", "src1") + tmp],
                    tiles={"src0": src0_tile, "src1": src1_tile},
                    outputs=["dst"], target=target)


def assembly_job(text: str, tiles: Mapping[str, TileLike],
                 outputs: Iterable[str] | None = None, target: Target = None,
                 dtype: DTypeLike = None) -> job_pb2.Job:
    """The ptoserve.v1.Job that Client.run_assembly would send."""
    return _job(tiles, outputs, target, dtype, assembly=text)


def open_channel(grpc_module: Any, address: str, *, tls: bool = False,
                 root_certificates: bytes | None = None,
                 certificate_chain: bytes | None = None,
                 private_key: bytes | None = None) -> Any:
    """A channel to `address` from `grpc_module` (grpc, or grpc.aio for
    asyncio) with the client's message limits and service config."""
    options = [
        ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
        ("grpc.service_config", _SERVICE_CONFIG),
        ("grpc.enable_retries", 1),
    ]
    if (certificate_chain is None) != (private_key is None):
        raise ValueError("certificate_chain and private_key go together")
    if tls or root_certificates or certificate_chain:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=root_certificates, private_key=private_key,
            certificate_chain=certificate_chain)
        return grpc_module.secure_channel(channel_target(address),
                                          credentials, options=options)
    return grpc_module.insecure_channel(channel_target(address),
                                        options=options)


def health_name(response: health_pb2.HealthCheckResponse) -> str:
    """The status name of a grpc.health.v1 response, e.g. "SERVING"."""
    return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)


class Client:
    """A connection to a ptoserve server.

    Every method raises PtoserveError with the server's code and message
    when the call fails, and takes `timeout`: that call's deadline in
    seconds (None: the client's). The *_async methods return a
    concurrent.futures.Future at once; its result() is what the method
    without _async returns, or raises its PtoserveError, and cancel()
    cancels the call. Use as a context manager, or call close().
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
        call's default deadline in seconds.

        tls: connect with TLS (implied by any of the three PEM arguments).
        root_certificates: PEM of the CA that signed the server's
            certificate (None: the system's roots).
        certificate_chain, private_key: PEM of this client's certificate
            and key, for a server that requires them (--tls_client_ca).
        token: sent as "authorization: Bearer <token>" with every call,
            for a server with --auth_token_file.
        """
        self._channel = open_channel(
            grpc, address, tls=tls, root_certificates=root_certificates,
            certificate_chain=certificate_chain, private_key=private_key)
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

    def _deadline(self, timeout: float | None) -> float:
        return self._timeout if timeout is None else timeout

    def _call(self, method, request, timeout: float | None):
        try:
            return method(request, timeout=self._deadline(timeout),
                          metadata=self._metadata)
        except grpc.RpcError as error:
            raise _error(error) from None

    def _future(self, method, request, timeout: float | None,
                convert: Callable[[Any], T]) -> "concurrent.futures.Future[T]":
        """Starts `method` and returns a Future of convert(its response)."""
        call = method.future(request, timeout=self._deadline(timeout),
                             metadata=self._metadata)
        future: concurrent.futures.Future = concurrent.futures.Future()

        def done(call):
            if future.cancelled():
                return
            try:
                value = convert(call.result())
            except grpc.RpcError as error:
                outcome = (future.set_exception, _error(error))
            except Exception as error:  # a decoding error, as the sync call
                outcome = (future.set_exception, error)
            else:
                outcome = (future.set_result, value)
            try:
                outcome[0](outcome[1])
            except concurrent.futures.InvalidStateError:
                pass  # cancelled meanwhile

        future.add_done_callback(lambda f: f.cancelled() and call.cancel())
        call.add_done_callback(done)
        return future

    def execute(self, job: job_pb2.Job, *,
                timeout: float | None = None) -> job_pb2.JobResult:
        """Runs a raw ptoserve.v1.Job and returns the raw JobResult."""
        return self._call(self._stub.Execute, job, timeout)

    def execute_async(self, job: job_pb2.Job, *, timeout: float | None = None
                      ) -> "concurrent.futures.Future[job_pb2.JobResult]":
        """execute() without waiting: a Future of the JobResult."""
        return self._future(self._stub.Execute, job, timeout, lambda r: r)

    def tand(self, src0: Operand, src1: Operand,
             valid: tuple[int, int] | None = None, target: Target = None, *,
             dtype: DTypeLike = None, timeout: float | None = None) -> Result:
        """dst = src0 & src1 over the valid region (rows, cols; None: the
        whole tile). The result's dst is zero outside it. The operands are
        arrays, rows or integers, converted and broadcast as
        encode_operands says: tand(a, 0x0f) sends the 0x0f as one number
        in a's dtype and shape."""
        return self.run_job(binary_job("tand", src0, src1, valid, target,
                                       dtype), timeout=timeout)

    def txor(self, src0: Operand, src1: Operand,
             valid: tuple[int, int] | None = None, target: Target = None, *,
             dtype: DTypeLike = None, timeout: float | None = None) -> Result:
        """dst = src0 ^ src1 over the valid region, as tand; the server
        allocates a2a3's tmp."""
        return self.run_job(binary_job("txor", src0, src1, valid, target,
                                       dtype), timeout=timeout)

    def tand_async(self, src0: Operand, src1: Operand,
                   valid: tuple[int, int] | None = None,
                   target: Target = None, *, dtype: DTypeLike = None,
                   timeout: float | None = None
                   ) -> "concurrent.futures.Future[Result]":
        """tand() without waiting: a Future of its Result. Conversion
        errors (TypeError, ValueError) raise here, before anything is
        sent."""
        return self.run_job_async(binary_job("tand", src0, src1, valid,
                                             target, dtype), timeout=timeout)

    def txor_async(self, src0: Operand, src1: Operand,
                   valid: tuple[int, int] | None = None,
                   target: Target = None, *, dtype: DTypeLike = None,
                   timeout: float | None = None
                   ) -> "concurrent.futures.Future[Result]":
        """txor() without waiting, as tand_async."""
        return self.run_job_async(binary_job("txor", src0, src1, valid,
                                             target, dtype), timeout=timeout)

    def run(self, program: Sequence[Step], tiles: Mapping[str, TileLike],
            outputs: Iterable[str] | None = None, target: Target = None, *,
            dtype: DTypeLike = None, timeout: float | None = None) -> Result:
        """Runs a program of instructions over `tiles`.

        program: (opcode, dst, src0, src1[, tmp]) tuples, opcode "tand",
            "txor" or (host only, beyond the seeds) "tor"; (opcode, dst,
            src0) for "tnot"; or ptoserve.v1.Instruction messages. Any
            opcode of the wire's Opcode enum is accepted by name.
        tiles: name -> 2-D array (or nested lists), or a ptoserve.v1.Tile
            (e.g. from encode_tile with a valid region). A dst naming no
            tile is allocated by the server.
        outputs: names of the tiles to return; None: every dst.
        target: "host", "a2a3", "a5", or None for the server's default.
        dtype: convert every array to this element type (values checked
            to fit); None: each must be of one already.
        """
        return self.run_job(make_job(program, tiles, outputs, target,
                                     dtype=dtype), timeout=timeout)

    def run_async(self, program: Sequence[Step],
                  tiles: Mapping[str, TileLike],
                  outputs: Iterable[str] | None = None,
                  target: Target = None, *, dtype: DTypeLike = None,
                  timeout: float | None = None
                  ) -> "concurrent.futures.Future[Result]":
        """run() without waiting: a Future of its Result."""
        return self.run_job_async(make_job(program, tiles, outputs, target,
                                           dtype=dtype), timeout=timeout)

    def run_assembly(self, text: str, tiles: Mapping[str, TileLike],
                     outputs: Iterable[str] | None = None,
                     target: Target = None, *, dtype: DTypeLike = None,
                     timeout: float | None = None) -> Result:
        """Runs a program written in PTO assembly (docs/ASSEMBLY.md), where
        `%name` is tiles["name"]; otherwise as run()."""
        return self.run_job(assembly_job(text, tiles, outputs, target, dtype),
                            timeout=timeout)

    def run_assembly_async(self, text: str, tiles: Mapping[str, TileLike],
                           outputs: Iterable[str] | None = None,
                           target: Target = None, *, dtype: DTypeLike = None,
                           timeout: float | None = None
                           ) -> "concurrent.futures.Future[Result]":
        """run_assembly() without waiting: a Future of its Result."""
        return self.run_job_async(
            assembly_job(text, tiles, outputs, target, dtype),
            timeout=timeout)

    def run_job(self, job: job_pb2.Job, *,
                timeout: float | None = None) -> Result:
        """Runs a ptoserve.v1.Job (make_job, binary_job, assembly_job) and
        decodes its result."""
        return Result.from_proto(self.execute(job, timeout=timeout))

    def run_job_async(self, job: job_pb2.Job, *, timeout: float | None = None
                      ) -> "concurrent.futures.Future[Result]":
        """run_job() without waiting: a Future of its Result."""
        return self._future(self._stub.Execute, job, timeout,
                            Result.from_proto)

    def execute_stream(self, jobs: Iterable[job_pb2.Job],
                       timeout: float | None = None
                       ) -> Iterator[job_pb2.JobResult]:
        """Sends `jobs` on one ExecuteStream call and yields each
        ptoserve.v1.JobResult as it arrives: in the order the jobs finish,
        not the order they were sent, so match them by Job.id (make_job
        sets it). A job that fails does not end the stream: its result
        carries a non-zero `status.code` and the server's message
        (Result.from_proto decodes the others and raises PtoserveError for
        it). `jobs` may be a generator; it is read as the server's window
        allows. `timeout`: a deadline in seconds for the whole stream, None
        for none (not the client's). Raises PtoserveError if the call
        itself fails (unreachable, UNAUTHENTICATED, the deadline, the
        server shutting down).
        """
        try:
            yield from self._stub.ExecuteStream(iter(jobs), timeout=timeout,
                                                metadata=self._metadata)
        except grpc.RpcError as error:
            raise _error(error) from None

    def execute_batches(self, batches: Iterable[Sequence[job_pb2.Job]],
                        timeout: float | None = None
                        ) -> Iterator[list[job_pb2.JobResult]]:
        """Sends each sequence of jobs in `batches` as one JobBatch message
        of an ExecuteBatches call and yields, per batch, the list of its
        jobs' ptoserve.v1.JobResults in the batch's order, as each batch
        finishes (batches may finish out of order: match them by Job.id).
        Many small jobs travel faster this way than one per message: the
        server pays a stream message's cost once per batch. The cost to a
        client: a job's result comes back with its whole batch, once the
        slowest of them has run, and a batch holds at most the server's
        Limits.max_jobs_per_batch jobs. A job that fails carries its error
        in its result, as in execute_stream; a message the server refuses
        as a whole (over the job limit, a job over a per-job limit) is
        answered with one result, no id, the error in its status.
        `timeout` bounds the whole stream (None: none)."""
        requests = (job_pb2.JobBatch(jobs=list(jobs)) for jobs in batches)
        try:
            for answer in self._stub.ExecuteBatches(
                    requests, timeout=timeout, metadata=self._metadata):
                yield list(answer.results)
        except grpc.RpcError as error:
            raise _error(error) from None

    def capabilities(self, *, timeout: float | None = None
                     ) -> service_pb2.Capabilities:
        """The server's ptoserve.v1.Capabilities."""
        return self._call(self._stub.GetCapabilities,
                          service_pb2.GetCapabilitiesRequest(), timeout)

    def get_server_metadata(self, *, timeout: float | None = None
                            ) -> ServerMetadata:
        """The server's name, version and targets (from capabilities())."""
        return ServerMetadata.from_capabilities(
            self.capabilities(timeout=timeout))

    def health(self, service: str = "", *,
               timeout: float | None = None) -> str:
        """The grpc.health.v1 status of `service` ("": the whole server),
        e.g. "SERVING"; "NOT_SERVING" while it shuts down."""
        return health_name(self._call(
            self._health.Check, health_pb2.HealthCheckRequest(service=service),
            timeout))

    def is_server_live(self, *, timeout: float | None = None) -> bool:
        """Whether a server answers health checks (SERVING or not): False
        when none can be reached (UNAVAILABLE) or none answers in time
        (DEADLINE_EXCEEDED); other failures raise PtoserveError."""
        try:
            self.health(timeout=timeout)
        except PtoserveError as error:
            if error.code in _NOT_LIVE:
                return False
            raise
        return True

    def is_server_ready(self, *, timeout: float | None = None) -> bool:
        """Whether the server takes jobs: its health is SERVING. False
        while it shuts down (NOT_SERVING) and when is_server_live() is."""
        try:
            return self.health(timeout=timeout) == "SERVING"
        except PtoserveError as error:
            if error.code in _NOT_LIVE:
                return False
            raise
