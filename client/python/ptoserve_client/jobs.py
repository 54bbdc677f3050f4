"""ptoserve.v1.Job messages built from programs and arrays: what
Client.run, run_assembly, tand and txor send, for sending on a stream
(Client.execute_stream) or by hand. Their tiles are encoded as tiles
says; `out=` arrays in a shared-memory region are named in
Job.output_regions, so that the server writes them in place."""

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ptoserve.v1 import job_pb2, tile_pb2
from ptoserve_client.dtypes import DTypeLike, Operand, as_tile_array
from ptoserve_client.shared import Regions, shared_slice
from ptoserve_client.tiles import (TileLike, _check_out, _check_out_matches,
                                   encode_operands, encode_tile)

# "host", "a2a3", "a5", a job_pb2.Target value, or None: the server's default.
Target = str | int | None
# (opcode, dst, src0, src1[, tmp]) with opcode "tand" or "txor", or a
# ptoserve.v1.Instruction.
Step = tuple[str, ...] | job_pb2.Instruction


def _enum_value(enum, prefix: str, name: str, what: str) -> int:
    """`name` ("a2a3", "tand") as a value of `enum`, or a ValueError that
    lists the names it takes."""
    try:
        return enum.Value(prefix + name.upper())
    except ValueError:
        names = [n[len(prefix):].lower() for n in enum.keys()
                 if n.startswith(prefix) and n != prefix + "UNSPECIFIED"]
        raise ValueError(f"{what} {name!r} is not one of "
                         f"{', '.join(names)}") from None


def _target_value(target: Target) -> int:
    if target is None:
        return job_pb2.TARGET_UNSPECIFIED
    if isinstance(target, str):
        return _enum_value(job_pb2.Target, "TARGET_", target, "target")
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
        opcode=_enum_value(job_pb2.Opcode, "OPCODE_", opcode, "opcode"),
        dst=dst, src0=src0, src1=src1, tmp=tmp)


def _same_slice(a: tile_pb2.RegionSlice, b: tile_pb2.RegionSlice) -> bool:
    return (a.region, a.offset, a.size) == (b.region, b.offset, b.size)


def _overlap(a: tile_pb2.RegionSlice, b: tile_pb2.RegionSlice) -> bool:
    return (a.region == b.region and a.offset < b.offset + b.size
            and b.offset < a.offset + a.size)


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
