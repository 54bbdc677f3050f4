"""Client, the blocking ptoserve client: calls that wait for their answer,
and *_async ones that return a concurrent.futures.Future at once.

Tiles are 2-D numpy arrays (ptoserve_client.tiles). On the server's
host they may instead live in shared memory (Client.shared_region, a
SharedRegion): an operand that is an array inside a region registered
with the client travels as `Tile.shared`, a few bytes, and `out=` arrays
in a region are written by the server in place (`Job.output_regions`).
Events are the server's `ptoserve.v1.EventRecord` messages, unchanged.
"""

import concurrent.futures
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import grpc
import numpy as np

from grpc_health.v1 import health_pb2, health_pb2_grpc
from ptoserve.v1 import job_pb2, service_pb2, service_pb2_grpc
# channel_target was defined here before the package had its channels
# module, and is still imported from here.
from ptoserve_client.channels import channel_target, open_channel
from ptoserve_client.dtypes import DTypeLike, Operand
from ptoserve_client.errors import PtoserveError, _error
from ptoserve_client.jobs import (Step, Target, assembly_job, binary_job,
                                  make_job)
from ptoserve_client.results import Result, ServerMetadata
from ptoserve_client.shared import SharedRegion
from ptoserve_client.tiles import TileLike

# What a liveness probe reads as "no server there" rather than an error.
_NOT_LIVE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
T = TypeVar("T")


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
        self._regions: dict[str, SharedRegion] = {}
        self._owned: set[str] = set()

    def add(self, region: SharedRegion, owned: bool = False) -> None:
        with self._lock:
            self._regions[region.name] = region
            if owned:
                self._owned.add(region.name)

    def remove(self, name: str) -> SharedRegion | None:
        with self._lock:
            self._owned.discard(name)
            return self._regions.pop(name, None)

    def snapshot(self) -> dict[str, SharedRegion]:
        with self._lock:
            return dict(self._regions)

    def take_all(self) -> list[tuple[SharedRegion, bool]]:
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
    def regions(self) -> dict[str, SharedRegion]:
        """The shared-memory regions registered through this client, by
        name: what make_job(regions=...) and Result.from_proto(regions=...)
        take for jobs sent on a stream."""
        return self._book.snapshot()

    def shared_region(self, size: int, *,
                      timeout: float | None = None) -> SharedRegion:
        """A new shared-memory region of `size` bytes, registered with the
        server (under the key prefix its capabilities give) and closed
        with the client: region.array(shape, dtype) hands out arrays in
        it. Close it sooner with region.close() or `with`. Raises
        PtoserveError (FAILED_PRECONDITION) when the server has shared
        memory off, e.g. because it is not on this host's loopback."""
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

    def _register(self, region: SharedRegion, timeout: float | None,
                  owned: bool) -> service_pb2.Region:
        answer = self._call(self._shared.Register, region.register_request(),
                            timeout)
        self._book.add(region, owned)
        region._attach(self)
        return answer

    def register_region(self, region: SharedRegion, *,
                        timeout: float | None = None) -> service_pb2.Region:
        """Registers `region` (a SharedRegion) with the server under its
        name, as the ptoserve.v1.Region returned says. From now on, its
        arrays travel as slices of it. region.close() unregisters it."""
        return self._register(region, timeout, owned=False)

    def unregister_region(self, region: SharedRegion | str, *,
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

    def _release_region(self, region: SharedRegion) -> None:
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
