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

from grpc_health.v1 import health_pb2, health_pb2_grpc
from ptoserve.v1 import job_pb2, service_pb2, service_pb2_grpc
from ptoserve_client.channels import open_channel
from ptoserve_client.client import (_CLOSE_TIMEOUT_S, _NOT_LIVE,
                                    _UNREGISTERED, _name_prefix, _RegionBook,
                                    _shared_memory_off, health_name)
from ptoserve_client.dtypes import DTypeLike, Operand
from ptoserve_client.errors import PtoserveError, _error
from ptoserve_client.jobs import (Step, Target, assembly_job, binary_job,
                                  make_job)
from ptoserve_client.results import Result, ServerMetadata
from ptoserve_client.shared import SharedRegion
from ptoserve_client.tiles import TileLike


class Client:
    """An asyncio connection to a ptoserve server: ptoserve_client.Client's
    methods as coroutines, with the same arguments, results and errors
    (PtoserveError with the gRPC code and the server's message; `timeout`
    on every call, None: the client's). Use as an async context manager,
    or await close()."""

    def __init__(self, address: str = "127.0.0.1:50051",
                 timeout: float = 30.0, *, tls: bool = False,
                 root_certificates: bytes | None = None,
                 certificate_chain: bytes | None = None,
                 private_key: bytes | None = None,
                 token: str | None = None):
        """As ptoserve_client.Client."""
        self._channel = open_channel(
            grpc.aio, address, tls=tls, root_certificates=root_certificates,
            certificate_chain=certificate_chain, private_key=private_key)
        self._metadata = ((("authorization", f"Bearer {token}"),)
                          if token else None)
        self._stub = service_pb2_grpc.TileComputeStub(self._channel)
        self._shared = service_pb2_grpc.SharedMemoryStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._timeout = timeout
        self._book = _RegionBook()

    async def close(self) -> None:
        """Closes the regions shared_region() made, unregisters the others
        (errors ignored), and closes the channel, cancelling calls still
        in flight."""
        for region, owned in self._book.take_all():
            region._detach(self)
            try:
                await self._call(
                    self._shared.Unregister,
                    service_pb2.UnregisterRequest(name=region.name),
                    min(self._timeout, _CLOSE_TIMEOUT_S))
            except PtoserveError:
                pass
            if owned:
                try:
                    await region.aclose()
                except PtoserveError:
                    pass
        await self._channel.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    async def _call(self, method, request, timeout: float | None):
        try:
            return await method(
                request, timeout=self._timeout if timeout is None else timeout,
                metadata=self._metadata)
        except grpc.RpcError as error:
            raise _error(error) from None

    # --- Shared memory ------------------------------------------------------

    @property
    def regions(self) -> dict[str, SharedRegion]:
        """The regions registered through this client, by name."""
        return self._book.snapshot()

    async def shared_region(self, size: int, *,
                            timeout: float | None = None) -> SharedRegion:
        """A new region of `size` bytes registered with the server, as
        ptoserve_client.Client.shared_region; close it with `await
        region.aclose()` or `async with` (or with the client)."""
        info = (await self.capabilities(timeout=timeout)).shared_memory
        if not info.enabled:
            raise _shared_memory_off()
        region = SharedRegion(size, prefix=_name_prefix(info))
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
        self._book.add(region, owned)
        region._attach(self)
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
        name = region if isinstance(region, str) else region.name
        forgotten = self._book.remove(name)
        if forgotten is not None:
            forgotten._detach(self)
        return await self._call(self._shared.Unregister,
                                service_pb2.UnregisterRequest(name=name),
                                timeout)

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
        result = await self.execute(job, timeout=timeout)
        return Result.from_proto(result, self._book.snapshot(), out)

    async def _binary(self, opcode: str, src0: Operand, src1: Operand,
                      valid: tuple[int, int] | None, target: Target,
                      dtype: DTypeLike, out: np.ndarray | None,
                      timeout: float | None) -> Result:
        job = binary_job(opcode, src0, src1, valid, target, dtype, out=out,
                         regions=self._book.snapshot())
        return await self.run_job(
            job, out=None if out is None else {"dst": out}, timeout=timeout)

    async def tand(self, src0: Operand, src1: Operand,
                   valid: tuple[int, int] | None = None,
                   target: Target = None, *, dtype: DTypeLike = None,
                   out: np.ndarray | None = None,
                   timeout: float | None = None) -> Result:
        """dst = src0 & src1, as ptoserve_client.Client.tand."""
        return await self._binary("tand", src0, src1, valid, target, dtype,
                                  out, timeout)

    async def txor(self, src0: Operand, src1: Operand,
                   valid: tuple[int, int] | None = None,
                   target: Target = None, *, dtype: DTypeLike = None,
                   out: np.ndarray | None = None,
                   timeout: float | None = None) -> Result:
        """dst = src0 ^ src1, as ptoserve_client.Client.txor."""
        return await self._binary("txor", src0, src1, valid, target, dtype,
                                  out, timeout)

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
            raise _error(error) from None
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
            raise _error(error) from None
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
            if error.code in _NOT_LIVE:
                return False
            raise
        return True

    async def is_server_ready(self, *, timeout: float | None = None) -> bool:
        """As ptoserve_client.Client.is_server_ready."""
        try:
            return await self.health(timeout=timeout) == "SERVING"
        except PtoserveError as error:
            if error.code in _NOT_LIVE:
                return False
            raise
