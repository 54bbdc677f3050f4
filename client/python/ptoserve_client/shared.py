"""Shared-memory regions: numpy arrays that a ptoserve server on the same
host reads and writes in place, instead of receiving and sending their
bytes through gRPC.

    import numpy as np
    from ptoserve_client import Client

    with Client("127.0.0.1:50051") as client, \\
            client.shared_region(1 << 20) as region:
        a = region.array((64, 64), np.int32)     # zeros, in the region
        a[:] = np.arange(64)                      # filled in place
        b = region.asarray(np.full((64, 64), 0x0f, np.int32))   # a copy
        c = region.array((64, 64), np.int32)
        client.tand(a, b, out=c)                  # the server writes c

A region is a POSIX shared-memory object (multiprocessing.shared_memory,
named "ptoserve-<pid>-<random>", i.e. /dev/shm/ptoserve-...) mapped into
this process and registered with the server (SharedMemory.Register), which
maps it too. array() hands out arrays in it one after another, each at a
64-byte boundary; nothing is handed out twice. An operand array that lies
wholly in a region registered with the client, C-contiguous and
little-endian, travels as a slice of it (Tile.shared); any other array
travels as bytes, as it always did.

close() (or leaving `with`) unregisters the region from every client it
was registered with, unmaps it and removes the object; arrays from it that
are still referenced keep their memory (the mapping lasts until the last
of them is gone) and from then on travel as bytes. Do not cut the object
short (ftruncate) while it is mapped: this process would fault on its
arrays' missing pages, and the server answers jobs that use it
FAILED_PRECONDITION.
"""

import inspect
import mmap
import os
import secrets
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from multiprocessing import shared_memory
from typing import Any

import numpy as np

from ptoserve.v1 import service_pb2, tile_pb2
from ptoserve_client.dtypes import DTypeLike, as_tile_array
from ptoserve_client.errors import PtoserveError

# Each array starts at a multiple of this many bytes from the region's
# start (itself page-aligned): a cache line, and every element type's size.
ALIGNMENT = 64
# Where POSIX shared-memory objects live on Linux (shm_open's directory).
SHM_DIR = "/dev/shm"


def _little_endian(dtype: np.dtype) -> bool:
    order = dtype.byteorder
    return order in ("<", "|") or (order == "=" and sys.byteorder == "little")


class SharedRegion:
    """A POSIX shared-memory object of `size` bytes, mapped here, that
    numpy arrays live in (array(), asarray()), for a ptoserve server on the
    same host to read and write in place once it is registered
    (Client.register_region, or Client.shared_region, which makes and
    registers one).

    name: the object's and the region's name, e.g. "ptoserve-1234-9f3a0c1e".
    key: the object's name as shm_open takes it: "/" + name.
    size: its bytes. used: the bytes array() has handed out so far.
    """

    def __init__(self, size: int, *, prefix: str = "ptoserve"):
        """Creates the object "<prefix>-<pid>-<random>" (`prefix`: the
        server's Capabilities.shared_memory.key_prefix without its "/")
        and maps it. ValueError for a size below 1."""
        size = int(size)
        if size < 1:
            raise ValueError(f"a region holds at least one byte, not {size}")
        self._lock = threading.Lock()
        self._clients: list[Any] = []
        self._closed = False
        self._used = 0
        for attempt in range(8):
            name = f"{prefix}-{os.getpid()}-{secrets.token_hex(4)}"
            try:
                self._shm = shared_memory.SharedMemory(name=name, create=True,
                                                       size=size)
                break
            except FileExistsError:
                if attempt == 7:
                    raise
        # SharedMemory's own mapping goes at once: the arrays use one this
        # object owns, which lasts as long as any of them (mmap unmaps when
        # the last reference goes), so that close() never leaves one
        # pointing at unmapped memory.
        self._shm.close()
        try:
            fd = os.open(os.path.join(SHM_DIR, self._shm.name),
                         os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                self._mmap = mmap.mmap(fd, size)
            finally:
                os.close(fd)
        except BaseException:
            self._shm.unlink()
            raise
        self._size = size
        self._bytes = np.frombuffer(self._mmap, dtype=np.uint8)
        self._address = self._bytes.__array_interface__["data"][0]

    # --- What it is ----------------------------------------------------------

    @property
    def name(self) -> str:
        """The object's name without "/": also the region's name on the
        server (RegionSlice.region)."""
        return self._shm.name

    @property
    def key(self) -> str:
        """The object's name as shm_open takes it (RegisterRequest.key)."""
        return "/" + self._shm.name

    @property
    def size(self) -> int:
        """The region's bytes."""
        return self._size

    @property
    def used(self) -> int:
        """The bytes array() and asarray() have handed out, alignment
        included."""
        return self._used

    @property
    def closed(self) -> bool:
        """Whether close() ran."""
        return self._closed

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self._used} used"
        return f"SharedRegion({self.name!r}, {self._size} bytes, {state})"

    def register_request(self) -> service_pb2.RegisterRequest:
        """The ptoserve.v1.RegisterRequest for the whole object under its
        name. ValueError once closed."""
        self._check_open()
        return service_pb2.RegisterRequest(name=self.name, key=self.key,
                                           offset=0, size=self._size)

    # --- Arrays --------------------------------------------------------------

    def array(self, shape: int | Sequence[int],
              dtype: DTypeLike) -> np.ndarray:
        """A zero-filled C-contiguous array of `shape` and `dtype` (stored
        little-endian) in the region, at the next 64-byte boundary after
        the arrays handed out before. ValueError when the region has no
        room left for it."""
        self._check_open()
        dtype = np.dtype(dtype)
        if dtype.hasobject:
            raise TypeError(f"dtype {dtype} holds Python objects; a region "
                            "holds plain numbers")
        if not _little_endian(dtype):
            dtype = dtype.newbyteorder("<")
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(
            int(n) for n in shape)
        if any(n < 0 for n in shape):
            raise ValueError(f"shape {shape} has a negative dimension")
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        with self._lock:
            self._check_open()
            offset = -(-self._used // ALIGNMENT) * ALIGNMENT
            if offset + nbytes > self._size:
                raise ValueError(
                    f"region {self.name!r} has {max(self._size - offset, 0)} "
                    f"of its {self._size} bytes free; an array of {shape} "
                    f"{dtype.name} needs {nbytes}")
            self._used = offset + nbytes
            array = self._bytes[offset:offset + nbytes].view(dtype)
        array = array.reshape(shape)
        array.fill(0)
        return array

    def asarray(self, values: Any, dtype: DTypeLike = None) -> np.ndarray:
        """A copy of `values` (an array, nested lists of integers) in the
        region: array() of its shape, filled with them. `dtype` converts
        them first, as the client's conversions do (every value checked
        to fit; ValueError names the first that does not)."""
        source = as_tile_array(values, dtype)
        array = self.array(source.shape, source.dtype)
        array[...] = source
        return array

    def slice(self, array: Any) -> tile_pb2.RegionSlice | None:
        """The ptoserve.v1.RegionSlice that `array` occupies, if it is a
        non-empty C-contiguous little-endian numpy array wholly inside the
        region (array() makes them; a contiguous view of one is too);
        None otherwise, and always once closed."""
        if (self._closed or not isinstance(array, np.ndarray)
                or array.nbytes == 0 or not array.flags.c_contiguous
                or not _little_endian(array.dtype)):
            return None
        offset = array.__array_interface__["data"][0] - self._address
        if offset < 0 or offset + array.nbytes > self._size:
            return None
        return tile_pb2.RegionSlice(region=self.name, offset=offset,
                                    size=array.nbytes)

    def view(self, offset: int, shape: Sequence[int],
             dtype: DTypeLike) -> np.ndarray:
        """The array of `shape` and `dtype` (little-endian) at byte
        `offset` of the region, as decode_tile returns a tile the server
        wrote there. ValueError if it does not lie within the region, or
        once closed."""
        self._check_open()
        dtype = np.dtype(dtype).newbyteorder("<")
        shape = tuple(int(n) for n in shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if offset < 0 or offset + nbytes > self._size:
            raise ValueError(
                f"{nbytes} bytes at offset {offset} reach past the end of "
                f"region {self.name!r} ({self._size} bytes)")
        return self._bytes[offset:offset + nbytes].view(dtype).reshape(shape)

    # --- Registration and closing --------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"region {self.name!r} is closed")

    def _attach(self, client: Any) -> None:
        with self._lock:
            if client not in self._clients:
                self._clients.append(client)

    def _detach(self, client: Any) -> None:
        with self._lock:
            if client in self._clients:
                self._clients.remove(client)

    def _begin_close(self, asyncio: bool) -> list[Any] | None:
        """The clients to unregister from, or None if already closed."""
        with self._lock:
            if self._closed:
                return None
            clients = list(self._clients)
            if not asyncio and any(
                    inspect.iscoroutinefunction(c._release_region)
                    for c in clients):
                raise RuntimeError(
                    f"region {self.name!r} is registered with an asyncio "
                    "client: close it with `await region.aclose()` (or "
                    "`async with`)")
            self._closed = True
            return clients

    def _free(self) -> None:
        """Unmaps the region (now, or when its last array is gone) and
        removes the object."""
        self._bytes = None
        try:
            self._mmap.close()
        except BufferError:
            pass  # arrays still use it: unmapped when the last one goes
        self._mmap = None
        try:
            self._shm.unlink()
        except FileNotFoundError:
            pass  # removed by someone else

    def _end_close(self, failures: list[PtoserveError | None]) -> None:
        """Frees the region once each client released it, then raises the
        first of their `failures` (None: that client released it)."""
        self._free()
        error = next((failure for failure in failures if failure), None)
        if error is not None:
            raise error

    def _release_from(self, client: Any) -> PtoserveError | None:
        """Unregisters the region from `client`: the error, or None."""
        try:
            client._release_region(self)
        except PtoserveError as failure:
            return failure
        return None

    async def _arelease_from(self, client: Any) -> PtoserveError | None:
        """_release_from for a client whose release may be a coroutine."""
        try:
            released = client._release_region(self)
            if inspect.isawaitable(released):
                await released
        except PtoserveError as failure:
            return failure
        return None

    def close(self) -> None:
        """Unregisters the region from every client it is registered with,
        unmaps it and removes the object. A server that no longer knows it
        (NOT_FOUND) or is gone (UNAVAILABLE) is no error; another error is
        raised once the region is freed anyway. Closing twice does
        nothing. RuntimeError (and nothing done) if an asyncio client has
        it registered: use aclose()."""
        clients = self._begin_close(asyncio=False)
        if clients is not None:
            self._end_close([self._release_from(c) for c in clients])

    async def aclose(self) -> None:
        """close() for a region registered with asyncio clients
        (ptoserve_client.aio.Client) too."""
        clients = self._begin_close(asyncio=True)
        if clients is not None:
            self._end_close([await self._arelease_from(c) for c in clients])

    def __enter__(self) -> "SharedRegion":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    async def __aenter__(self) -> "SharedRegion":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()


# Shared-memory regions whose arrays travel as slices: one SharedRegion,
# several, or a mapping of names to them (Client.regions).
Regions = (Mapping[str, SharedRegion] | Iterable[SharedRegion] | SharedRegion
           | None)


def _region_list(regions: Regions) -> list[SharedRegion]:
    if regions is None:
        return []
    if isinstance(regions, Mapping):
        regions = regions.values()
    elif hasattr(regions, "slice") and hasattr(regions, "view"):
        return [regions]  # one SharedRegion
    return list(regions)


def _region_by_name(regions: Regions) -> dict[str, SharedRegion]:
    return {region.name: region for region in _region_list(regions)}


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
