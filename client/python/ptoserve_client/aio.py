"""The ptoserve client for asyncio, over grpc.aio: the same methods as
ptoserve_client.Client, as coroutines.

    from ptoserve_client import aio

    async def main():
        async with aio.Client("127.0.0.1:50051") as client:
            r = await client.tand(a, 0x0f)
            results = await asyncio.gather(*(client.txor(a, b) for b in bs))

Create the client inside the event loop that uses it (grpc.aio binds its
channel to the running loop). Shared memory works as with the blocking
client; close a region registered with this one with `await
region.aclose()` or `async with`:

    async with aio.Client("127.0.0.1:50051") as client:
        async with await client.shared_region(1 << 20) as region:
            a = region.asarray(a)
            c = region.array(a.shape, a.dtype)
            r = await client.tand(a, 0x0f, out=c)   # the server writes c
"""

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence

import grpc
import grpc.aio
import numpy as np

from grpc_health.v1 import health_pb2
from ptoserve.v1 import job_pb2, service_pb2
from ptoserve_client.base import (_UNREGISTERED, ClientBase, _not_live,
                                  health_name)
from ptoserve_client.dtypes import DTypeLike, Operand
from ptoserve_client.errors import PtoserveError
from ptoserve_client.jobs import Step, Target, assembly_job, make_job
from ptoserve_client.results import Result, ServerMetadata
from ptoserve_client.shared import SharedRegion
from ptoserve_client.tiles import TileLike


class Client(ClientBase):
    """An asyncio connection to a ptoserve server: ptoserve_client.Client's
    methods as coroutines, with the same arguments, results and errors
    (PtoserveError with the gRPC code and the server's message; `timeout`
    on every call, None: the client's). Use as an async context manager,
    or await close()."""

    _grpc = grpc.aio

    async def close(self) -> None:
        """Closes the regions shared_region() made, unregisters the others
        (errors ignored), and closes the channel, cancelling calls still
        in flight."""
        for request, deadline, made in self._closing():
            try:
                await self._call(self._shared.Unregister, request, deadline)
            except PtoserveError:
                pass
            if made is not None:
                try:
                    await made.aclose()
                except PtoserveError:
                    pass
        await self._channel.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    async def _call(self, method, request, timeout: float | None):
        try:
            return await method(request, timeout=self._deadline(timeout),
                                metadata=self._metadata)
        except grpc.RpcError as error:
            raise self._error(error) from None

    # --- Shared memory ------------------------------------------------------

    async def shared_region(self, size: int, *,
                            timeout: float | None = None) -> SharedRegion:
        """A new region of `size` bytes registered with the server, as
        ptoserve_client.Client.shared_region; close it with `await
        region.aclose()` or `async with` (or with the client)."""
        region = self._new_region(
            (await self.capabilities(timeout=timeout)).shared_memory, size)
        try:
            await self._register(region, timeout, owned=True)
        except BaseException:
            await region.aclose()
            raise
        return region

    async def _register(self, region: SharedRegion, timeout: float | None,
                        owned: bool) -> service_pb2.Region:
        answer = await self._call(self._shared.Register,
                                  region.register_request(), timeout)
        self._adopt(region, owned)
        return answer

    async def register_region(self, region: SharedRegion, *,
                              timeout: float | None = None
                              ) -> service_pb2.Region:
        """Registers `region`, as ptoserve_client.Client.register_region."""
        return await self._register(region, timeout, owned=False)

    async def unregister_region(self, region: SharedRegion | str, *,
                                timeout: float | None = None
                                ) -> service_pb2.Region:
        """Unregisters a region (or a name), as
        ptoserve_client.Client.unregister_region."""
        return await self._call(self._shared.Unregister,
                                self._forget(region), timeout)

    async def list_regions(self, *, timeout: float | None = None
                           ) -> list[service_pb2.Region]:
        """Every region registered with the server, in name order."""
        return list((await self._call(self._shared.List,
                                      service_pb2.ListRequest(),
                                      timeout)).regions)

    async def _release_region(self, region: SharedRegion) -> None:
        """SharedRegion.aclose(): unregisters it; NOT_FOUND and
        UNAVAILABLE are no error."""
        try:
            await self.unregister_region(region)
        except PtoserveError as error:
            if error.code not in _UNREGISTERED:
                raise

    # --- Jobs ----------------------------------------------------------------

    async def execute(self, job: job_pb2.Job, *,
                      timeout: float | None = None) -> job_pb2.JobResult:
        """Runs a raw ptoserve.v1.Job and returns the raw JobResult."""
        return await self._call(self._stub.Execute, job, timeout)

    async def run_job(self, job: job_pb2.Job, *,
                      out: Mapping[str, np.ndarray] | None = None,
                      timeout: float | None = None) -> Result:
        """Runs a ptoserve.v1.Job and decodes its result, as
        ptoserve_client.Client.run_job."""
        return self._decode(await self.execute(job, timeout=timeout), out)

    async def tand(self, src0: Operand, src1: Operand,
                   valid: tuple[int, int] | None = None,
                   target: Target = None, *, dtype: DTypeLike = None,
                   out: np.ndarray | None = None,
                   timeout: float | None = None) -> Result:
        """dst = src0 & src1, as ptoserve_client.Client.tand."""
        job, dst = self._binary("tand", src0, src1, valid, target, dtype,
                                out)
        return await self.run_job(job, out=dst, timeout=timeout)

    async def txor(self, src0: Operand, src1: Operand,
                   valid: tuple[int, int] | None = None,
                   target: Target = None, *, dtype: DTypeLike = None,
                   out: np.ndarray | None = None,
                   timeout: float | None = None) -> Result:
        """dst = src0 ^ src1, as ptoserve_client.Client.txor."""
        job, dst = self._binary("txor", src0, src1, valid, target, dtype,
                                out)
        return await self.run_job(job, out=dst, timeout=timeout)

    async def run(self, program: Sequence[Step],
                  tiles: Mapping[str, TileLike],
                  outputs: Iterable[str] | None = None,
                  target: Target = None, *, dtype: DTypeLike = None,
                  out: Mapping[str, np.ndarray] | None = None,
                  timeout: float | None = None) -> Result:
        """Runs a program of instructions, as ptoserve_client.Client.run."""
        return await self.run_job(
            make_job(program, tiles, outputs, target, dtype=dtype, out=out,
                     regions=self._book.snapshot()),
            out=out, timeout=timeout)

    async def run_assembly(self, text: str, tiles: Mapping[str, TileLike],
                           outputs: Iterable[str] | None = None,
                           target: Target = None, *, dtype: DTypeLike = None,
                           out: Mapping[str, np.ndarray] | None = None,
                           timeout: float | None = None) -> Result:
        """Runs PTO assembly, as ptoserve_client.Client.run_assembly."""
        return await self.run_job(
            assembly_job(text, tiles, outputs, target, dtype, out=out,
                         regions=self._book.snapshot()),
            out=out, timeout=timeout)

    async def execute_stream(self, jobs: Iterable[job_pb2.Job],
                             timeout: float | None = None
                             ) -> AsyncIterator[job_pb2.JobResult]:
        """Yields each JobResult of `jobs` (an iterable or async iterable)
        as it finishes, as ptoserve_client.Client.execute_stream: match
        them by Job.id. `timeout` bounds the whole stream (None: none)."""
        call = self._stub.ExecuteStream(jobs, timeout=timeout,
                                        metadata=self._metadata)
        try:
            async for result in call:
                yield result
        except grpc.RpcError as error:
            raise self._error(error) from None
        finally:
            call.cancel()  # no-op once finished; stops an abandoned stream

    async def execute_batches(self, batches: Iterable[Sequence[job_pb2.Job]],
                              timeout: float | None = None
                              ) -> AsyncIterator[list[job_pb2.JobResult]]:
        """Yields, per sequence of jobs in `batches`, its jobs' results in
        order, as ptoserve_client.Client.execute_batches. `timeout` bounds
        the whole stream (None: none)."""
        call = self._stub.ExecuteBatches(
            (job_pb2.JobBatch(jobs=list(jobs)) for jobs in batches),
            timeout=timeout, metadata=self._metadata)
        try:
            async for answer in call:
                yield list(answer.results)
        except grpc.RpcError as error:
            raise self._error(error) from None
        finally:
            call.cancel()  # no-op once finished; stops an abandoned stream

    async def capabilities(self, *, timeout: float | None = None
                           ) -> service_pb2.Capabilities:
        """The server's ptoserve.v1.Capabilities."""
        return await self._call(self._stub.GetCapabilities,
                                service_pb2.GetCapabilitiesRequest(), timeout)

    async def get_server_metadata(self, *, timeout: float | None = None
                                  ) -> ServerMetadata:
        """The server's name, version and targets."""
        return ServerMetadata.from_capabilities(
            await self.capabilities(timeout=timeout))

    async def health(self, service: str = "", *,
                     timeout: float | None = None) -> str:
        """The grpc.health.v1 status of `service`, e.g. "SERVING"."""
        return health_name(await self._call(
            self._health.Check, health_pb2.HealthCheckRequest(service=service),
            timeout))

    async def is_server_live(self, *, timeout: float | None = None) -> bool:
        """As ptoserve_client.Client.is_server_live."""
        try:
            await self.health(timeout=timeout)
        except PtoserveError as error:
            return _not_live(error)
        return True

    async def is_server_ready(self, *, timeout: float | None = None) -> bool:
        """As ptoserve_client.Client.is_server_ready."""
        try:
            return await self.health(timeout=timeout) == "SERVING"
        except PtoserveError as error:
            return _not_live(error)
