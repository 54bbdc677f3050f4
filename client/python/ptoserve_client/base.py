"""What the blocking client (ptoserve_client.Client) and the asyncio one
(ptoserve_client.aio.Client) share: the channel, its stubs and the call
metadata, the shared-memory regions registered through the client, and
the part of each call that waits on nothing. Each client adds how it
waits: blocking, with futures, or as coroutines."""

import threading
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

import grpc
import numpy as np

from grpc_health.v1 import health_pb2, health_pb2_grpc
from ptoserve.v1 import job_pb2, service_pb2, service_pb2_grpc
from ptoserve_client.channels import open_channel
from ptoserve_client.dtypes import DTypeLike, Operand
from ptoserve_client.errors import PtoserveError, _error
from ptoserve_client.jobs import Target, binary_job
from ptoserve_client.results import Result
from ptoserve_client.shared import SharedRegion

# What a liveness probe reads as "no server there" rather than an error.
_NOT_LIVE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
# What unregistering a region as it closes reads as done: the server no
# longer has it, or is gone.
_UNREGISTERED = (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE,
                 grpc.StatusCode.CANCELLED)
# The longest close() waits for each Unregister call.
_CLOSE_TIMEOUT_S = 5.0
T = TypeVar("T")


def health_name(response: health_pb2.HealthCheckResponse) -> str:
    """The status name of a grpc.health.v1 response, e.g. "SERVING"."""
    return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)


def _not_live(error: PtoserveError) -> bool:
    """What is_server_live and is_server_ready answer for a failed health
    check: False when no server is there (_NOT_LIVE); any other error is
    raised."""
    if error.code in _NOT_LIVE:
        return False
    raise error


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


class ClientBase:
    """The state of a connection to a ptoserve server, and the steps of its
    calls that both clients take alike."""

    # Where the channel comes from: grpc.aio for the asyncio client.
    _grpc: Any = grpc

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
        away is retried on another (see channels._SERVICE_CONFIG).
        `timeout` is each call's default deadline in seconds.

        tls: connect with TLS (implied by any of the three PEM arguments).
        root_certificates: PEM of the CA that signed the server's
            certificate (None: the system's roots).
        certificate_chain, private_key: PEM of this client's certificate
            and key, for a server that requires them (--tls_client_ca).
        token: sent as "authorization: Bearer <token>" with every call,
            for a server with --auth_token_file.
        """
        self._channel = open_channel(
            self._grpc, address, tls=tls, root_certificates=root_certificates,
            certificate_chain=certificate_chain, private_key=private_key)
        self._metadata = ((("authorization", f"Bearer {token}"),)
                          if token else None)
        # What a connection the server closes while it is made most likely
        # means, in this client's arguments (ptoctl says it in its flags).
        if not (tls or root_certificates or certificate_chain):
            self._closed_hint = (
                " (the server closed the connection: does it want TLS? "
                "tls=True, root_certificates=)")
        elif certificate_chain is None:
            self._closed_hint = (
                " (does the server want a client certificate? "
                "certificate_chain=, private_key=)")
        else:
            self._closed_hint = (
                " (does the server trust this client certificate?)")
        self._stub = service_pb2_grpc.TileComputeStub(self._channel)
        self._shared = service_pb2_grpc.SharedMemoryStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._timeout = timeout
        self._book = _RegionBook()

    def _error(self, error: grpc.RpcError) -> PtoserveError:
        """A failed call as this client raises it."""
        return _error(error, self._closed_hint)

    def _deadline(self, timeout: float | None) -> float:
        return self._timeout if timeout is None else timeout

    def _decode(self, result: job_pb2.JobResult,
                out: Mapping[str, np.ndarray] | None) -> Result:
        """Result.from_proto over the regions registered now."""
        return Result.from_proto(result, self._book.snapshot(), out)

    def _binary(self, opcode: str, src0: Operand, src1: Operand,
                valid: tuple[int, int] | None, target: Target,
                dtype: DTypeLike, out: np.ndarray | None
                ) -> tuple[job_pb2.Job, Mapping[str, np.ndarray] | None]:
        """What tand and txor (`opcode`) run: binary_job's Job over the
        regions registered now, and where its dst goes (`out`), for
        run_job's out=."""
        job = binary_job(opcode, src0, src1, valid, target, dtype, out=out,
                         regions=self._book.snapshot())
        return job, None if out is None else {"dst": out}

    # --- Shared memory ------------------------------------------------------

    @property
    def regions(self) -> dict[str, SharedRegion]:
        """The shared-memory regions registered through this client, by
        name: what make_job(regions=...) and Result.from_proto(regions=...)
        take for jobs sent on a stream."""
        return self._book.snapshot()

    @staticmethod
    def _new_region(info: service_pb2.SharedMemoryInfo,
                    size: int) -> SharedRegion:
        """A region for shared_region() to register, named under the key
        prefix of the server's Capabilities.shared_memory `info`."""
        if not info.enabled:
            raise PtoserveError(
                grpc.StatusCode.FAILED_PRECONDITION,
                "shared memory is off on this server (Capabilities."
                "shared_memory.enabled is false: the server's --shared_memory,"
                " off by default when it listens beyond loopback)")
        # The key prefix without its "/" starts an object name the server
        # takes ("ptoserve" for "/ptoserve").
        return SharedRegion(size,
                            prefix=info.key_prefix.lstrip("/") or "ptoserve")

    def _adopt(self, region: SharedRegion, owned: bool) -> None:
        """Books `region`, just registered, as this client's (made by it:
        `owned`)."""
        self._book.add(region, owned)
        region._attach(self)

    def _forget(self, region: SharedRegion | str
                ) -> service_pb2.UnregisterRequest:
        """Forgets a region (or a name) as unregister_region begins: the
        request that unregisters it on the server."""
        name = region if isinstance(region, str) else region.name
        forgotten = self._book.remove(name)
        if forgotten is not None:
            forgotten._detach(self)
        return service_pb2.UnregisterRequest(name=name)

    def _closing(self) -> Iterator[tuple[service_pb2.UnregisterRequest,
                                         float, SharedRegion | None]]:
        """What close() undoes, a region at a time, each forgotten as it is
        reached: the request that unregisters it, that call's deadline (at
        most _CLOSE_TIMEOUT_S), and the region if this client made it (and
        so closes it)."""
        for region, owned in self._book.take_all():
            region._detach(self)
            yield (service_pb2.UnregisterRequest(name=region.name),
                   min(self._timeout, _CLOSE_TIMEOUT_S),
                   region if owned else None)
