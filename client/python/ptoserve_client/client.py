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
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import grpc
import numpy as np

from grpc_health.v1 import health_pb2
from ptoserve.v1 import job_pb2, service_pb2
from ptoserve_client.base import (_UNREGISTERED, ClientBase, T,
                                  _not_live, health_name)
from ptoserve_client.channels import channel_target
from ptoserve_client.dtypes import DTypeLike, Operand
from ptoserve_client.errors import PtoserveError
from ptoserve_client.jobs import Step, Target, assembly_job, make_job
from ptoserve_client.results import Result, ServerMetadata
from ptoserve_client.shared import SharedRegion
from ptoserve_client.tiles import TileLike

# channel_target was defined here before the package had its channels
# module, and is still imported from here.
__all__ = ["Client", "channel_target"]


class Client(ClientBase):
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

    def close(self) -> None:
        """Closes the regions shared_region() made (unregistered, unmapped,
        unlinked), unregisters those register_region() registered, and
        closes the channel. Errors unregistering are ignored (each call
        waits at most 5 s, or the client's timeout if shorter)."""
        for request, deadline, made in self._closing():
            try:
                self._call(self._shared.Unregister, request, deadline)
            except PtoserveError:
                pass
            if made is not None:
                try:
                    made.close()
                except (PtoserveError, RuntimeError):
                    pass
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _call(self, method, request, timeout: float | None):
        try:
            return method(request, timeout=self._deadline(timeout),
                          metadata=self._metadata)
        except grpc.RpcError as error:
            raise self._error(error) from None

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
                outcome = (future.set_exception, self._error(error))
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

    def shared_region(self, size: int, *,
                      timeout: float | None = None) -> SharedRegion:
        """A new shared-memory region of `size` bytes, registered with the
        server (under the key prefix its capabilities give) and closed
        with the client: region.array(shape, dtype) hands out arrays in
        it. Close it sooner with region.close() or `with`. Raises
        PtoserveError (FAILED_PRECONDITION) when the server has shared
        memory off, e.g. because it is not on this host's loopback."""
        region = self._new_region(
            self.capabilities(timeout=timeout).shared_memory, size)
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
        self._adopt(region, owned)
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
        return self._call(self._shared.Unregister, self._forget(region),
                          timeout)

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

    def execute(self, job: job_pb2.Job, *,
                timeout: float | None = None) -> job_pb2.JobResult:
        """Runs a raw ptoserve.v1.Job and returns the raw JobResult."""
        return self._call(self._stub.Execute, job, timeout)

    def execute_async(self, job: job_pb2.Job, *, timeout: float | None = None
                      ) -> "concurrent.futures.Future[job_pb2.JobResult]":
        """execute() without waiting: a Future of the JobResult."""
        return self._future(self._stub.Execute, job, timeout, lambda r: r)

    def run_job(self, job: job_pb2.Job, *,
                out: Mapping[str, np.ndarray] | None = None,
                timeout: float | None = None) -> Result:
        """Runs a ptoserve.v1.Job (make_job, binary_job, assembly_job) and
        decodes its result: tiles written to this client's regions as
        arrays in them, and `out` as Result.from_proto says."""
        return self._decode(self.execute(job, timeout=timeout), out)

    def run_job_async(self, job: job_pb2.Job, *,
                      out: Mapping[str, np.ndarray] | None = None,
                      timeout: float | None = None
                      ) -> "concurrent.futures.Future[Result]":
        """run_job() without waiting: a Future of its Result."""
        return self._future(self._stub.Execute, job, timeout,
                            functools.partial(self._decode, out=out))

    def tand(self, src0: Operand, src1: Operand,
             valid: tuple[int, int] | None = None, target: Target = None,
             *, dtype: DTypeLike = None, out: np.ndarray | None = None,
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
        job, dst = self._binary("tand", src0, src1, valid, target, dtype,
                                out)
        return self.run_job(job, out=dst, timeout=timeout)

    def txor(self, src0: Operand, src1: Operand,
             valid: tuple[int, int] | None = None, target: Target = None,
             *, dtype: DTypeLike = None, out: np.ndarray | None = None,
             timeout: float | None = None) -> Result:
        """dst = src0 ^ src1 over the valid region, as tand; the server
        allocates a2a3's tmp."""
        job, dst = self._binary("txor", src0, src1, valid, target, dtype,
                                out)
        return self.run_job(job, out=dst, timeout=timeout)

    def tand_async(self, src0: Operand, src1: Operand,
                   valid: tuple[int, int] | None = None, target: Target = None,
                   *, dtype: DTypeLike = None, out: np.ndarray | None = None,
                   timeout: float | None = None) -> "concurrent.futures.Future[Result]":
        """tand() without waiting: a Future of its Result. Conversion
        errors (TypeError, ValueError) raise here, before anything is
        sent."""
        job, dst = self._binary("tand", src0, src1, valid, target, dtype,
                                out)
        return self.run_job_async(job, out=dst, timeout=timeout)

    def txor_async(self, src0: Operand, src1: Operand,
                   valid: tuple[int, int] | None = None, target: Target = None,
                   *, dtype: DTypeLike = None, out: np.ndarray | None = None,
                   timeout: float | None = None) -> "concurrent.futures.Future[Result]":
        """txor() without waiting, as tand_async."""
        job, dst = self._binary("txor", src0, src1, valid, target, dtype,
                                out)
        return self.run_job_async(job, out=dst, timeout=timeout)

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
        """run() without waiting: a Future of its Result. Conversion
        errors raise here, before anything is sent, as tand_async's."""
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
        """run_assembly() without waiting, as run_async."""
        return self.run_job_async(
            assembly_job(text, tiles, outputs, target, dtype, out=out,
                         regions=self._book.snapshot()),
            out=out, timeout=timeout)

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
            raise self._error(error) from None

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
            raise self._error(error) from None

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
            return _not_live(error)
        return True

    def is_server_ready(self, *, timeout: float | None = None) -> bool:
        """Whether the server takes jobs: its health is SERVING. False
        while it shuts down (NOT_SERVING) and when is_server_live() is."""
        try:
            return self.health(timeout=timeout) == "SERVING"
        except PtoserveError as error:
            return _not_live(error)
