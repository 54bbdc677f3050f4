"""A thin Python layer over the generated ptoserve.v1 gRPC stub.

Tiles are 2-D numpy arrays of int8, uint8, int16, uint16, int32 or uint32;
they travel as raw little-endian row-major bytes (`Tile.data`), or as one
number (`Tile.fill`) when every element is the same, and come back as
arrays of the same dtype and shape. Events are the server's
`ptoserve.v1.EventRecord` messages, unchanged.

On the server's host, tiles may instead live in shared memory
(ptoserve_client.shared.SharedRegion, Client.shared_region): an operand
that is an array inside a region registered with the client travels as
`Tile.shared`, a few bytes, and `out=` arrays in a region are written by
the server in place (`Job.output_regions`).
"""

import concurrent.futures
import dataclasses
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, Union

import grpc
import numpy as np

from grpc_health.v1 import health_pb2, health_pb2_grpc
from ptoserve.v1 import job_pb2, service_pb2, service_pb2_grpc, tile_pb2
# channel_target was defined here before the package had its channels
# module, and is still imported from here.
from ptoserve_client.channels import (_MAX_MESSAGE_BYTES, channel_target,
                                      open_channel)
from ptoserve_client.dtypes import (_DTYPE_NAMES, _DTYPES, _NUMPY_DTYPES,
                                    DTypeLike, Operand, _cast,
                                    _has_tile_dtype, as_tile_array,
                                    tile_dtype)
from ptoserve_client.errors import PtoserveError, _error, _status_error

if TYPE_CHECKING:
    from ptoserve_client.shared import SharedRegion

# The most bytes the client allocates for one tile it builds (a broadcast
# operand) or decodes (a fill or zero-filled tile, whose size its message
# does not bound): no message could carry a larger one.
MAX_TILE_BYTES = _MAX_MESSAGE_BYTES

# What a liveness probe reads as "no server there" rather than an error.
_NOT_LIVE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)

# "host", "a2a3", "a5", a job_pb2.Target value, or None: the server's default.
Target = str | int | None
# A 2-D array, or anything np.asarray makes one of (nested lists of ints).
TileLike = np.ndarray | Sequence | tile_pb2.Tile
# (opcode, dst, src0, src1[, tmp]) with opcode "tand" or "txor", or a
# ptoserve.v1.Instruction.
Step = tuple[str, ...] | job_pb2.Instruction
# Shared-memory regions whose arrays travel as slices: one SharedRegion,
# several, or a mapping of names to them (Client.regions).
Regions = Union[Mapping[str, "SharedRegion"], Iterable["SharedRegion"],
                "SharedRegion", None]
T = TypeVar("T")


@dataclasses.dataclass
class Result:
    """What a job returned, decoded.

    tiles: the output tiles by name, each the whole physical tile: the
        `out=` array itself for a tile the call named one for, an array
        in the shared-memory region for one the server wrote there, a new
        array otherwise.
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
    def from_proto(cls, result: job_pb2.JobResult, regions: Regions = None,
                   out: Mapping[str, np.ndarray] | None = None) -> "Result":
        """Decodes a ptoserve.v1.JobResult. Raises PtoserveError for a
        failed one (a stream's result with a non-zero status.code).

        regions: the shared-memory regions the job's output_regions name
            (e.g. Client.regions): a tile the server wrote to one decodes
            as an array in it (decode_tile).
        out: output name -> the array that receives it, as Client.run's
            out=: the array itself is the tile (a tile that came back as
            bytes is copied into it). ValueError if its shape or element
            type is not the tile's, or the job returned no such tile.
        """
        if result.status.code:
            raise _status_error(result.status.code, result.status.message)
        out = out or {}
        tiles = {}
        for name, tile in result.tiles.items():
            target = out.get(name)
            if target is None:
                tiles[name] = decode_tile(tile, regions=regions)
                continue
            _check_out_matches(target, tile, name)
            if not tile.HasField("shared"):
                np.copyto(target, decode_tile(tile), casting="equiv")
            tiles[name] = target
        missing = sorted(set(out) - set(tiles))
        if missing:
            raise ValueError(
                f"out names {', '.join(map(repr, missing))}, which the job "
                f"did not return (it returned {sorted(tiles)})")
        return cls(tiles=tiles, events=list(result.events),
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


def _region_list(regions: Regions) -> list["SharedRegion"]:
    if regions is None:
        return []
    if isinstance(regions, Mapping):
        regions = regions.values()
    elif hasattr(regions, "slice") and hasattr(regions, "view"):
        return [regions]  # one SharedRegion
    return list(regions)


def shared_slice(array: Any, regions: Regions) -> tile_pb2.RegionSlice | None:
    """The ptoserve.v1.RegionSlice `array` occupies if it lies wholly in
    one of `regions` (open SharedRegions) as a C-contiguous, little-endian
    block; None otherwise (it then travels as bytes)."""
    if not isinstance(array, np.ndarray):
        return None
    for region in _region_list(regions):
        where = region.slice(array)
        if where is not None:
            return where
    return None


def _region_by_name(regions: Regions) -> dict[str, "SharedRegion"]:
    return {region.name: region for region in _region_list(regions)}


def encode_tile(array: TileLike, valid: tuple[int, int] | None = None,
                dtype: DTypeLike = None, *,
                regions: Regions = None) -> tile_pb2.Tile:
    """A ptoserve.v1.Tile holding `array` as data, with valid region `valid`
    (rows, cols; None: the whole tile). `dtype` converts it first, as
    as_tile_array does. An array in one of `regions` (shared_slice) is
    referenced as Tile.shared instead, its elements not copied."""
    array = as_tile_array(array, dtype)
    if array.ndim != 2:
        raise ValueError(f"a tile is a 2-D array, not {array.ndim}-D")
    rows, cols = array.shape
    valid_rows, valid_cols = valid or (0, 0)
    wire_dtype = _DTYPES[array.dtype.kind, array.dtype.itemsize]
    where = shared_slice(array, regions)
    if where is not None:
        return tile_pb2.Tile(dtype=wire_dtype, rows=rows, cols=cols,
                             valid_rows=valid_rows, valid_cols=valid_cols,
                             shared=where)
    data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return tile_pb2.Tile(dtype=wire_dtype, rows=rows, cols=cols,
                         valid_rows=valid_rows, valid_cols=valid_cols,
                         data=data)


def encode_operands(src0: Operand, src1: Operand,
                    valid: tuple[int, int] | None = None,
                    dtype: DTypeLike = None, *, regions: Regions = None
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
    other is sent whole (broadcast to the shape, at most MAX_TILE_BYTES),
    except an operand of the whole shape that lies in one of `regions`
    (shared_slice): that one travels as Tile.shared, its elements not
    copied.
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
        if array.shape == shape:
            tiles.append(encode_tile(array, valid, regions=regions))
            continue
        if rows * cols * dtype.itemsize > MAX_TILE_BYTES:
            raise ValueError(
                f"broadcasting to {rows}x{cols} {dtype.name} takes more than "
                f"{MAX_TILE_BYTES} bytes")
        tiles.append(encode_tile(np.broadcast_to(array, shape), valid))
    return tiles[0], tiles[1]


def decode_tile(tile: tile_pb2.Tile, max_bytes: int = MAX_TILE_BYTES, *,
                regions: Regions = None) -> np.ndarray:
    """The elements of a ptoserve.v1.Tile (data, values, fill or none of
    them) as a rows x cols array of its dtype. ValueError for a tile over
    `max_bytes` (before anything is allocated) or whose elements do not
    match its shape and dtype.

    A tile in shared memory (Tile.shared, as a result's output_regions
    tiles come back) is an array in that region, no copy: `regions` must
    hold it (e.g. Client.regions), else ValueError.
    """
    dtype = _NUMPY_DTYPES.get(tile.dtype)
    if dtype is None:
        raise TypeError(
            f"tile dtype {tile_pb2.DType.Name(tile.dtype)} has no decoder")
    if tile.HasField("shared"):
        where = tile.shared
        region = _region_by_name(regions).get(where.region)
        if region is None:
            raise ValueError(
                f"the tile is in shared-memory region {where.region!r} "
                f"(offset {where.offset}, {where.size} bytes), which is not "
                "among the regions given (regions=, e.g. Client.regions)")
        if tile.rows * tile.cols * dtype.itemsize != where.size:
            raise ValueError(
                f"tile of {tile.rows}x{tile.cols} {dtype.name} is "
                f"{tile.rows * tile.cols * dtype.itemsize} bytes; its slice "
                f"of region {where.region!r} is {where.size}")
        return region.view(where.offset, (tile.rows, tile.cols), dtype)
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


def _same_slice(a: tile_pb2.RegionSlice, b: tile_pb2.RegionSlice) -> bool:
    return (a.region, a.offset, a.size) == (b.region, b.offset, b.size)


def _overlap(a: tile_pb2.RegionSlice, b: tile_pb2.RegionSlice) -> bool:
    return (a.region == b.region and a.offset < b.offset + b.size
            and b.offset < a.offset + a.size)


def _check_out(array: Any, label: str) -> np.ndarray:
    """`array` if it can receive a tile: a writeable 2-D numpy array of one
    of the six element types."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{label} is a {type(array).__name__}; it must be a "
                        "numpy array")
    if not _has_tile_dtype(array):
        raise TypeError(f"{label} dtype {array.dtype} is not one of "
                        f"{_DTYPE_NAMES}")
    if array.ndim != 2:
        raise ValueError(f"{label} is {array.ndim}-D; a tile is 2-D")
    if not array.flags.writeable:
        raise ValueError(f"{label} is read-only")
    return array


def _check_out_matches(array: np.ndarray, tile: tile_pb2.Tile,
                       label: str) -> None:
    """ValueError unless `array` has `tile`'s shape and element type."""
    dtype = _NUMPY_DTYPES.get(tile.dtype)
    if (dtype is None or array.shape != (tile.rows, tile.cols)
            or (array.dtype.kind, array.dtype.itemsize) != (
                dtype.kind, dtype.itemsize)):
        what = dtype.name if dtype is not None else tile_pb2.DType.Name(
            tile.dtype)
        raise ValueError(
            f"{label} is {array.shape[0]}x{array.shape[1]} {array.dtype.name}"
            f"; the tile is {tile.rows}x{tile.cols} {what}")


def _place_outputs(job: job_pb2.Job, out: Mapping[str, np.ndarray],
                   regions: Regions) -> None:
    """Names each `out` array that lies in one of `regions` in
    job.output_regions, so that the server writes that output there. One
    whose bytes overlap another slice of the job (other than its own
    tile's input at the same bytes, an in-place update) is left out: the
    server would refuse the job, so that output comes back as bytes and is
    copied into the array instead (Result.from_proto)."""
    placed: list[tile_pb2.RegionSlice] = []
    for name, array in out.items():
        label = f"out[{name!r}]"
        _check_out(array, label)
        if name in job.tiles:
            _check_out_matches(array, job.tiles[name], label)
        where = shared_slice(array, regions)
        if where is None:
            continue
        clash = any(
            _overlap(where, tile.shared)
            and not (tile_name == name and _same_slice(where, tile.shared))
            for tile_name, tile in job.tiles.items()
            if tile.HasField("shared"))
        if clash or any(_overlap(where, other) for other in placed):
            continue
        job.output_regions[name].CopyFrom(where)
        placed.append(where)


def _job(tiles: Mapping[str, TileLike], outputs: Iterable[str] | None,
         target: Target, dtype: DTypeLike = None, regions: Regions = None,
         out: Mapping[str, np.ndarray] | None = None,
         **program) -> job_pb2.Job:
    job = job_pb2.Job(target=_target_value(target),
                      outputs=list(outputs or ()), **program)
    for name, tile in tiles.items():
        job.tiles[name].CopyFrom(
            tile if isinstance(tile, tile_pb2.Tile)
            else encode_tile(as_tile_array(tile, dtype, f"tile {name!r}"),
                             regions=regions))
    if out:
        _place_outputs(job, out, regions)
    return job


def make_job(program: Sequence[Step], tiles: Mapping[str, TileLike],
             outputs: Iterable[str] | None = None, target: Target = None,
             job_id: str = "", dtype: DTypeLike = None, *,
             out: Mapping[str, np.ndarray] | None = None,
             regions: Regions = None) -> job_pb2.Job:
    """The ptoserve.v1.Job that Client.run would send, with Job.id
    `job_id`: for Client.execute_stream, which matches results by it.

    regions: shared-memory regions (e.g. Client.regions): a tile array
        in one of them travels as Tile.shared (encode_tile).
    out: output name -> array: those in one of `regions` are named in
        Job.output_regions, so the server writes them there; decode the
        result with Result.from_proto(result, regions, out), which also
        copies the others into their arrays.
    """
    job = _job(tiles, outputs, target, dtype, regions, out,
               instructions=[_instruction(step) for step in program])
    job.id = job_id
    return job


def binary_job(opcode: str, src0: Operand, src1: Operand,
               valid: tuple[int, int] | None = None, target: Target = None,
               dtype: DTypeLike = None, *, out: np.ndarray | None = None,
               regions: Regions = None) -> job_pb2.Job:
    """The ptoserve.v1.Job of Client.tand (opcode "tand") or txor: tiles
    "src0" and "src1" from encode_operands (arrays in `regions` as
    Tile.shared), output "dst".

    out: the array dst goes to (decode with Result.from_proto(result,
        regions, {"dst": out})). In one of `regions`, the server writes it
        there (Job.output_regions); if it is src0 or src1 itself, the
        instruction runs in place on that operand's tile, renamed "dst".
        With a `valid` region smaller than the tile, out's elements
        outside it are sent along as dst's, so they keep their values.
    """
    tmp = ("tmp",) if opcode == "txor" else ()
    operands = ["src0", "src1"]
    tiles = dict(zip(operands, encode_operands(src0, src1, valid, dtype,
                                               regions=regions)))
    where = None
    if out is not None:
        first = tiles["src0"]
        _check_out_matches(_check_out(out, "out"), first, "out")
        partial = (first.valid_rows or first.rows,
                   first.valid_cols or first.cols) != (first.rows, first.cols)
        where = shared_slice(out, regions)
        shared = {name: tiles[name].shared for name in operands
                  if tiles[name].HasField("shared")}
        aliases = [name for name, s in shared.items()
                   if where is not None and _same_slice(s, where)]
        if where is not None and any(
                _overlap(s, where) for name, s in shared.items()
                if name not in aliases):
            where = None  # overlaps an operand: written back as bytes
        elif aliases:
            # In place: the aliased operand's tile is dst.
            tiles["dst"] = tiles[aliases[0]]
            for name in aliases:
                del tiles[name]
            operands = ["dst" if name in aliases else name
                        for name in operands]
        elif where is not None and partial:
            # Its own input at the same bytes: kept outside the valid region.
            tiles["dst"] = tile_pb2.Tile(
                dtype=first.dtype, rows=first.rows, cols=first.cols,
                valid_rows=first.valid_rows, valid_cols=first.valid_cols,
                shared=where)
        if where is None and partial:
            tiles["dst"] = encode_tile(out, valid)
    job = make_job([(opcode, "dst", *operands) + tmp], tiles=tiles,
                   outputs=["dst"], target=target)
    if where is not None:
        job.output_regions["dst"].CopyFrom(where)
    return job


def assembly_job(text: str, tiles: Mapping[str, TileLike],
                 outputs: Iterable[str] | None = None, target: Target = None,
                 dtype: DTypeLike = None, *,
                 out: Mapping[str, np.ndarray] | None = None,
                 regions: Regions = None) -> job_pb2.Job:
    """The ptoserve.v1.Job that Client.run_assembly would send; `out` and
    `regions` as make_job's."""
    return _job(tiles, outputs, target, dtype, regions, out, assembly=text)


def health_name(response: health_pb2.HealthCheckResponse) -> str:
    """The status name of a grpc.health.v1 response, e.g. "SERVING"."""
    return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)


def _shared_memory_off() -> PtoserveError:
    return PtoserveError(
        grpc.StatusCode.FAILED_PRECONDITION,
        "shared memory is off on this server (Capabilities.shared_memory."
        "enabled is false: the server's --shared_memory, off by default when "
        "it listens beyond loopback)")


def _name_prefix(info: service_pb2.SharedMemoryInfo) -> str:
    """The start of an object name the server takes: its key prefix
    without the "/" ("ptoserve" for "/ptoserve")."""
    return info.key_prefix.lstrip("/") or "ptoserve"


class _RegionBook:
    """The shared-memory regions one client has registered, by name, and
    which of them it made (and so closes)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._regions: dict[str, "SharedRegion"] = {}
        self._owned: set[str] = set()

    def add(self, region: "SharedRegion", owned: bool = False) -> None:
        with self._lock:
            self._regions[region.name] = region
            if owned:
                self._owned.add(region.name)

    def remove(self, name: str) -> "SharedRegion | None":
        with self._lock:
            self._owned.discard(name)
            return self._regions.pop(name, None)

    def snapshot(self) -> dict[str, "SharedRegion"]:
        with self._lock:
            return dict(self._regions)

    def take_all(self) -> list[tuple["SharedRegion", bool]]:
        """Every region and whether the client made it; forgets them."""
        with self._lock:
            taken = [(region, name in self._owned)
                     for name, region in self._regions.items()]
            self._regions.clear()
            self._owned.clear()
            return taken


_UNREGISTERED = (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE,
                 grpc.StatusCode.CANCELLED)
# The longest close() waits for each Unregister call.
_CLOSE_TIMEOUT_S = 5.0


class Client:
    """A connection to a ptoserve server.

    Every method raises PtoserveError with the server's code and message
    when the call fails, and takes `timeout`: that call's deadline in
    seconds (None: the client's). The *_async methods return a
    concurrent.futures.Future at once; its result() is what the method
    without _async returns, or raises its PtoserveError, and cancel()
    cancels the call. Use as a context manager, or call close().

    On the server's host, shared_region() makes a shared-memory region
    registered with the server: operands that are arrays in it travel as
    slices of it, and out= arrays in it are written by the server in place.
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
        self._shared = service_pb2_grpc.SharedMemoryStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._timeout = timeout
        self._book = _RegionBook()

    def close(self) -> None:
        """Closes the regions shared_region() made (unregistered, unmapped,
        unlinked), unregisters those register_region() registered, and
        closes the channel. Errors unregistering are ignored (each call
        waits at most 5 s, or the client's timeout if shorter)."""
        for region, owned in self._book.take_all():
            region._detach(self)
            try:
                self._call(self._shared.Unregister,
                           service_pb2.UnregisterRequest(name=region.name),
                           min(self._timeout, _CLOSE_TIMEOUT_S))
            except PtoserveError:
                pass
            if owned:
                try:
                    region.close()
                except (PtoserveError, RuntimeError):
                    pass
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

    # --- Shared memory ------------------------------------------------------

    @property
    def regions(self) -> dict[str, "SharedRegion"]:
        """The shared-memory regions registered through this client, by
        name: what make_job(regions=...) and Result.from_proto(regions=...)
        take for jobs sent on a stream."""
        return self._book.snapshot()

    def shared_region(self, size: int, *,
                      timeout: float | None = None) -> "SharedRegion":
        """A new shared-memory region of `size` bytes, registered with the
        server (under the key prefix its capabilities give) and closed
        with the client: region.array(shape, dtype) hands out arrays in
        it. Close it sooner with region.close() or `with`. Raises
        PtoserveError (FAILED_PRECONDITION) when the server has shared
        memory off, e.g. because it is not on this host's loopback."""
        from ptoserve_client.shared import SharedRegion
        info = self.capabilities(timeout=timeout).shared_memory
        if not info.enabled:
            raise _shared_memory_off()
        region = SharedRegion(size, prefix=_name_prefix(info))
        try:
            self._register(region, timeout, owned=True)
        except BaseException:
            region.close()
            raise
        return region

    def _register(self, region: "SharedRegion", timeout: float | None,
                  owned: bool) -> service_pb2.Region:
        answer = self._call(self._shared.Register, region.register_request(),
                            timeout)
        self._book.add(region, owned)
        region._attach(self)
        return answer

    def register_region(self, region: "SharedRegion", *,
                        timeout: float | None = None) -> service_pb2.Region:
        """Registers `region` (a SharedRegion) with the server under its
        name, as the ptoserve.v1.Region returned says. From now on, its
        arrays travel as slices of it. region.close() unregisters it."""
        return self._register(region, timeout, owned=False)

    def unregister_region(self, region: "SharedRegion | str", *,
                          timeout: float | None = None) -> service_pb2.Region:
        """Unregisters a region (a SharedRegion, or a name as registered):
        jobs naming it from now on get NOT_FOUND, and its arrays travel as
        bytes again. Returns the ptoserve.v1.Region, with jobs_in_flight
        the jobs still using it (they finish against it)."""
        name = region if isinstance(region, str) else region.name
        forgotten = self._book.remove(name)
        if forgotten is not None:
            forgotten._detach(self)
        return self._call(self._shared.Unregister,
                          service_pb2.UnregisterRequest(name=name), timeout)

    def list_regions(self, *, timeout: float | None = None
                     ) -> list[service_pb2.Region]:
        """Every region registered with the server now (by any client), as
        ptoserve.v1.Region messages in name order."""
        return list(self._call(self._shared.List, service_pb2.ListRequest(),
                               timeout).regions)

    def _release_region(self, region: "SharedRegion") -> None:
        """SharedRegion.close(): unregisters it; a server that no longer
        has it (NOT_FOUND) or is gone (UNAVAILABLE) is no error."""
        try:
            self.unregister_region(region)
        except PtoserveError as error:
            if error.code not in _UNREGISTERED:
                raise

    # --- Jobs ----------------------------------------------------------------

    def _decoder(self, out: Mapping[str, np.ndarray] | None
                 ) -> Callable[[job_pb2.JobResult], Result]:
        return lambda result: Result.from_proto(result, self._book.snapshot(),
                                                out)

    def _binary(self, opcode: str, src0: Operand, src1: Operand,
                valid: tuple[int, int] | None, target: Target,
                dtype: DTypeLike, out: np.ndarray | None
                ) -> tuple[job_pb2.Job, dict[str, np.ndarray] | None]:
        job = binary_job(opcode, src0, src1, valid, target, dtype, out=out,
                         regions=self._book.snapshot())
        return job, None if out is None else {"dst": out}

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
             dtype: DTypeLike = None, out: np.ndarray | None = None,
             timeout: float | None = None) -> Result:
        """dst = src0 & src1 over the valid region (rows, cols; None: the
        whole tile). The result's dst is zero outside it. The operands are
        arrays, rows or integers, converted and broadcast as
        encode_operands says: tand(a, 0x0f) sends the 0x0f as one number
        in a's dtype and shape.

        Operands that are arrays in a region registered with this client
        (shared_region) travel as slices of it, not copied. out: an array
        of dst's shape and type that receives dst and is the result's dst:
        in a registered region the server writes it there (it may be src0
        or src1 itself: in place); elsewhere it is copied in. With out=,
        out's elements outside the valid region keep their values.
        """
        job, out = self._binary("tand", src0, src1, valid, target, dtype, out)
        return self.run_job(job, out=out, timeout=timeout)

    def txor(self, src0: Operand, src1: Operand,
             valid: tuple[int, int] | None = None, target: Target = None, *,
             dtype: DTypeLike = None, out: np.ndarray | None = None,
             timeout: float | None = None) -> Result:
        """dst = src0 ^ src1 over the valid region, as tand; the server
        allocates a2a3's tmp."""
        job, out = self._binary("txor", src0, src1, valid, target, dtype, out)
        return self.run_job(job, out=out, timeout=timeout)

    def tand_async(self, src0: Operand, src1: Operand,
                   valid: tuple[int, int] | None = None,
                   target: Target = None, *, dtype: DTypeLike = None,
                   out: np.ndarray | None = None,
                   timeout: float | None = None
                   ) -> "concurrent.futures.Future[Result]":
        """tand() without waiting: a Future of its Result. Conversion
        errors (TypeError, ValueError) raise here, before anything is
        sent."""
        job, out = self._binary("tand", src0, src1, valid, target, dtype, out)
        return self.run_job_async(job, out=out, timeout=timeout)

    def txor_async(self, src0: Operand, src1: Operand,
                   valid: tuple[int, int] | None = None,
                   target: Target = None, *, dtype: DTypeLike = None,
                   out: np.ndarray | None = None,
                   timeout: float | None = None
                   ) -> "concurrent.futures.Future[Result]":
        """txor() without waiting, as tand_async."""
        job, out = self._binary("txor", src0, src1, valid, target, dtype, out)
        return self.run_job_async(job, out=out, timeout=timeout)

    def run(self, program: Sequence[Step], tiles: Mapping[str, TileLike],
            outputs: Iterable[str] | None = None, target: Target = None, *,
            dtype: DTypeLike = None,
            out: Mapping[str, np.ndarray] | None = None,
            timeout: float | None = None) -> Result:
        """Runs a program of instructions over `tiles`.

        program: (opcode, dst, src0, src1[, tmp]) tuples, opcode "tand",
            "txor" or (host only, beyond the seeds) "tor"; (opcode, dst,
            src0) for "tnot"; or ptoserve.v1.Instruction messages. Any
            opcode of the wire's Opcode enum is accepted by name.
        tiles: name -> 2-D array (or nested lists), or a ptoserve.v1.Tile
            (e.g. from encode_tile with a valid region). A dst naming no
            tile is allocated by the server. Arrays in a region registered
            with this client travel as slices of it.
        outputs: names of the tiles to return; None: every dst.
        target: "host", "a2a3", "a5", or None for the server's default.
        dtype: convert every array to this element type (values checked
            to fit); None: each must be of one already.
        out: output name -> the array that receives it (and is that
            result tile): in a registered region the server writes it there
            (the same array as tiles[name]: updated in place); elsewhere it
            is copied in. Each must be an output of the job.
        """
        return self.run_job(
            make_job(program, tiles, outputs, target, dtype=dtype, out=out,
                     regions=self._book.snapshot()), out=out, timeout=timeout)

    def run_async(self, program: Sequence[Step],
                  tiles: Mapping[str, TileLike],
                  outputs: Iterable[str] | None = None,
                  target: Target = None, *, dtype: DTypeLike = None,
                  out: Mapping[str, np.ndarray] | None = None,
                  timeout: float | None = None
                  ) -> "concurrent.futures.Future[Result]":
        """run() without waiting: a Future of its Result."""
        return self.run_job_async(
            make_job(program, tiles, outputs, target, dtype=dtype, out=out,
                     regions=self._book.snapshot()), out=out, timeout=timeout)

    def run_assembly(self, text: str, tiles: Mapping[str, TileLike],
                     outputs: Iterable[str] | None = None,
                     target: Target = None, *, dtype: DTypeLike = None,
                     out: Mapping[str, np.ndarray] | None = None,
                     timeout: float | None = None) -> Result:
        """Runs a program written in PTO assembly (docs/ASSEMBLY.md), where
        `%name` is tiles["name"]; otherwise as run()."""
        return self.run_job(
            assembly_job(text, tiles, outputs, target, dtype, out=out,
                         regions=self._book.snapshot()),
            out=out, timeout=timeout)

    def run_assembly_async(self, text: str, tiles: Mapping[str, TileLike],
                           outputs: Iterable[str] | None = None,
                           target: Target = None, *, dtype: DTypeLike = None,
                           out: Mapping[str, np.ndarray] | None = None,
                           timeout: float | None = None
                           ) -> "concurrent.futures.Future[Result]":
        """run_assembly() without waiting: a Future of its Result."""
        return self.run_job_async(
            assembly_job(text, tiles, outputs, target, dtype, out=out,
                         regions=self._book.snapshot()),
            out=out, timeout=timeout)

    def run_job(self, job: job_pb2.Job, *,
                out: Mapping[str, np.ndarray] | None = None,
                timeout: float | None = None) -> Result:
        """Runs a ptoserve.v1.Job (make_job, binary_job, assembly_job) and
        decodes its result: tiles written to this client's regions as
        arrays in them, and `out` as Result.from_proto says."""
        return self._decoder(out)(self.execute(job, timeout=timeout))

    def run_job_async(self, job: job_pb2.Job, *,
                      out: Mapping[str, np.ndarray] | None = None,
                      timeout: float | None = None
                      ) -> "concurrent.futures.Future[Result]":
        """run_job() without waiting: a Future of its Result."""
        return self._future(self._stub.Execute, job, timeout,
                            self._decoder(out))

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
