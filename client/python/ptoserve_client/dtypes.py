"""The six element types a tile may have (int8, uint8, int16, uint16, int32,
uint32), as numpy and the wire spell them, and the checked conversion of
other values to them: a value that does not fit, a float or a bool is
refused, never wrapped around or rounded."""

from collections.abc import Sequence

import numpy as np

from ptoserve.v1 import tile_pb2

# (numpy kind, item size) -> wire element type.
_DTYPES = {
    ("i", 1): tile_pb2.DTYPE_INT8,
    ("u", 1): tile_pb2.DTYPE_UINT8,
    ("i", 2): tile_pb2.DTYPE_INT16,
    ("u", 2): tile_pb2.DTYPE_UINT16,
    ("i", 4): tile_pb2.DTYPE_INT32,
    ("u", 4): tile_pb2.DTYPE_UINT32,
}
_NUMPY_DTYPES = {wire: np.dtype(f"{kind}{size}")
                 for (kind, size), wire in _DTYPES.items()}
_DTYPE_NAMES = "int8, uint8, int16, uint16, int32, uint32"

# One of the six element types as numpy spells it: np.int16, "uint8",
# np.dtype("<u4"), ...; None: the operands' own.
DTypeLike = np.dtype | type | str | None
# An operand of tand/txor: TileLike, a 1-D row, or one integer.
Operand = np.ndarray | Sequence | int | np.integer


def tile_dtype(dtype: DTypeLike) -> np.dtype:
    """np.dtype(dtype) if it is one of the six element types TAND and TXOR
    take; TypeError otherwise."""
    try:
        resolved = np.dtype(dtype)
    except TypeError:
        resolved = None
    if resolved is None or (resolved.kind, resolved.itemsize) not in _DTYPES:
        raise TypeError(f"dtype {dtype!r} is not one of {_DTYPE_NAMES}")
    return resolved


def _has_tile_dtype(array: np.ndarray) -> bool:
    return (array.dtype.kind, array.dtype.itemsize) in _DTYPES


def _cast(array: np.ndarray, dtype: np.dtype, name: str) -> np.ndarray:
    """`array` as `dtype`, refusing what is no integer (TypeError) and any
    value that does not fit (ValueError): never a silent wraparound."""
    kind = array.dtype.kind
    if kind == "O" and all(type(v) is int for v in array.flat):
        pass  # Python ints beyond 64 bits: compared exactly below
    elif kind not in "iu":
        raise TypeError(
            f"{name} has {array.dtype} elements; TAND and TXOR take "
            f"integers ({_DTYPE_NAMES}), and floats, bools and other kinds "
            "are not converted implicitly: convert with .astype() first")
    if np.can_cast(array.dtype, dtype, "safe"):
        return array.astype(dtype, copy=False)
    info = np.iinfo(dtype)
    outside = (array < info.min) | (array > info.max)
    if outside.any():
        index = tuple(int(i) for i in np.argwhere(outside)[0])
        where = f"{name}[{', '.join(map(str, index))}]" if index else name
        raise ValueError(
            f"{where} = {array[index]} does not fit {dtype.name} "
            f"[{info.min}, {info.max}]")
    return array.astype(dtype)


def as_tile_array(value: Operand, dtype: DTypeLike = None,
                  name: str = "tile") -> np.ndarray:
    """`value` (an array, nested lists of integers, or one integer) as an
    array of an element type: `dtype` if given (every value checked to fit:
    ValueError names the first that does not), else its own, which must be
    one of the six (TypeError). Floats and bools are never converted
    (TypeError). `name` labels the errors."""
    array = np.asarray(value)
    if dtype is not None:
        return _cast(array, tile_dtype(dtype), name)
    if not _has_tile_dtype(array):
        raise TypeError(
            f"{name} dtype {array.dtype} is not one of {_DTYPE_NAMES}; "
            "pass dtype= to convert it (values are checked to fit)")
    return array
