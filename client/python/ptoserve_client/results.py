"""What calls return, decoded: Result, a job's tiles as numpy arrays with
its events, and ServerMetadata, the server's name, version and targets."""

import dataclasses
from collections.abc import Mapping

import numpy as np

from ptoserve.v1 import job_pb2, service_pb2
from ptoserve_client.errors import _status_error
from ptoserve_client.jobs import _target_name
from ptoserve_client.shared import Regions
from ptoserve_client.tiles import _check_out_matches, decode_tile


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
