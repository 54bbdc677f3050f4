"""Tiles as 2-D numpy arrays: ptoserve.v1.Tile messages encoded from
arrays and decoded into them.

A tile's elements travel as raw little-endian row-major bytes
(`Tile.data`), or as one number (`Tile.fill`) when every element is the
same, and come back as arrays of the same dtype and shape. On the
server's host, an array inside a SharedRegion travels as `Tile.shared`, a
few bytes, and a tile the server wrote to one decodes as an array in it.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np

from ptoserve.v1 import tile_pb2
from ptoserve_client.channels import _MAX_MESSAGE_BYTES
from ptoserve_client.dtypes import (_DTYPE_NAMES, _DTYPES, _NUMPY_DTYPES,
                                    DTypeLike, Operand, _cast,
                                    _has_tile_dtype, as_tile_array,
                                    tile_dtype)
from ptoserve_client.shared import Regions, _region_by_name, shared_slice

# The most bytes the client allocates for one tile it builds (a broadcast
# operand) or decodes (a fill or zero-filled tile, whose size its message
# does not bound): no message could carry a larger one.
MAX_TILE_BYTES = _MAX_MESSAGE_BYTES

# A 2-D array, or anything np.asarray makes one of (nested lists of ints).
TileLike = np.ndarray | Sequence | tile_pb2.Tile


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
