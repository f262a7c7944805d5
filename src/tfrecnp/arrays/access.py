"""Rows of any column by position, and the spec that describes a set of columns.

An array dataset reads a block, a shuffled pick or one record from whatever holds its
columns: an ndarray or np.memmap, an h5py / Zarr array, a streamed .npz member, or the
in-memory and on-disk Ragged and bytes columns of `tfrecnp.example.columns`. Arrays in
memory take any row list in one fancy index, memory maps one guarded copy (`mapped`: a
file cut under the map gives an error, not SIGBUS); stores that read slices (HDF5, Zarr,
lazy columns, maps in Fortran order) read sorted runs of nearby rows, one slice per run.
"""

from __future__ import annotations

import mmap
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._util.memory import read_only_map
from ..example.columns import (
    BytesColumn,
    Column,
    LazyBytes,
    LazyRagged,
    Ragged,
    concat_columns,
    take_column,
)
from ..example.spec import Bytes, FixedLen, Raw, Sequence, VarLen
from .mapped import copy_rows, copy_span

__all__ = ["memmap_reference", "read_rows", "read_span", "spec_of_columns"]

RUN_GAP = 32  # rows: picks closer than this are read as one slice from a store


def read_span(col: Any, a: int, b: int) -> Column:
    """Rows a..b as an in-memory column (arrays copied out of maps, guarded, and stores)."""
    mapped = copy_span(col, a, b)
    if mapped is not None:
        return mapped
    if isinstance(col, (Ragged, BytesColumn)) and _on_maps(col):
        return _nested_span(col, a, b)
    part = col[a:b]
    if isinstance(part, (Ragged, BytesColumn)):
        return part
    part = np.array(part)
    if part.dtype.hasobject:  # HDF5 variable-length strings
        return BytesColumn.from_list(part.reshape(-1).tolist())
    return part


def read_rows(col: Any, ids: np.ndarray) -> Column:
    """The rows at ids (any order, repeats allowed) as an in-memory column."""
    ids = np.asarray(ids, np.int64)
    if isinstance(col, (Ragged, BytesColumn)) and not _on_maps(col):
        return take_column(col, ids)
    mapped = copy_rows(col, ids)
    if mapped is not None:
        return mapped
    if isinstance(col, np.ndarray) and not col.dtype.hasobject and not _on_maps(col):
        return col[ids]
    if not len(ids):
        return read_span(col, 0, 0)
    rows, inverse = np.unique(ids, return_inverse=True)
    cut = np.flatnonzero(np.diff(rows) > RUN_GAP) + 1
    starts = rows[np.r_[0, cut]]
    stops = rows[np.r_[cut - 1, len(rows) - 1]] + 1
    parts = [read_span(col, int(a), int(b)) for a, b in zip(starts, stops, strict=True)]
    joined = concat_columns(parts)
    firsts = np.cumsum(np.r_[0, stops - starts])[:-1]
    run = np.searchsorted(starts, rows, side="right") - 1
    return take_column(joined, (firsts[run] + rows - starts[run])[inverse])


def _on_maps(col: Any) -> bool:
    """Whether any buffer of col is a read-only memory map (a saved folder's columns)."""
    if isinstance(col, Ragged):
        return _on_maps(col.values) or _on_maps(col.row_splits)
    if isinstance(col, BytesColumn):
        return _on_maps(col.data) or _on_maps(col.offsets)
    return isinstance(col, np.ndarray) and read_only_map(col) is not None


def _nested_span(col: Ragged | BytesColumn, a: int, b: int) -> Ragged | BytesColumn:
    """Rows a..b of a Ragged or bytes column held in maps: its splits, then the values they
    span, each copied out under the guard (a slice would hand out views of the maps)."""
    inner, splits = (
        (col.values, col.row_splits) if isinstance(col, Ragged) else (col.data, col.offsets)
    )
    splits = read_span(splits, a, b + 1)
    lo, hi = int(splits[0]), int(splits[-1])
    values = read_span(inner, lo, hi)
    if isinstance(col, Ragged):
        return Ragged.from_row_splits(values, splits - lo, validate=False)
    return BytesColumn.from_offsets(values, splits - lo, validate=False)


def spec_of_columns(columns: Mapping[str, Any]) -> dict | Sequence:
    """The spec a TFRecord file of these columns would be read back with: FixedLen for
    arrays ([n, *shape] of numbers or bytes), VarLen for Ragged rows, Raw for complex
    numbers; a Ragged of Ragged rows makes the spec a tn.Sequence with that column as a
    feature list."""
    context: dict[str, Any] = {}
    sequence: dict[str, Any] = {}
    for name, col in columns.items():
        if isinstance(col, (Ragged, LazyRagged)):
            values = col.values
            if isinstance(values, (Ragged, LazyRagged)):
                sequence[name] = VarLen(_value_dtype(values.values))
            else:
                context[name] = VarLen(_value_dtype(values), tuple(col.inner_shape))
        elif isinstance(col, (BytesColumn, LazyBytes)):
            context[name] = Bytes()
        else:
            dtype = np.dtype(col.dtype)
            shape = tuple(int(d) for d in col.shape[1:])
            if dtype.kind in "SOU":
                context[name] = FixedLen(shape, "bytes")
            elif dtype.kind == "c":
                context[name] = Raw(dtype.name, shape)
            else:
                context[name] = FixedLen(shape, dtype)
    return Sequence(context, sequence) if sequence else context


def _value_dtype(values: Any) -> str:
    if isinstance(values, (BytesColumn, LazyBytes)):
        return "bytes"
    return np.dtype(values.dtype).name


def memmap_reference(arr: np.ndarray) -> tuple | None:
    """For a contiguous view of a read-only np.memmap: the arguments that map it again,
    (filename, dtype, offset, shape, order), so that it pickles as a reference to its
    file rather than as a copy of its bytes. None for anything else."""
    mapped = read_only_map(arr)
    if mapped is None:
        return None
    owner, m = mapped
    filename = getattr(owner, "filename", None)
    if filename is None:
        return None
    order = "C" if arr.flags.c_contiguous else "F" if arr.flags.f_contiguous else None
    if order is None:
        return None
    base = np.frombuffer(m, np.uint8).ctypes.data
    mapped_from = owner.offset - owner.offset % mmap.ALLOCATIONGRANULARITY
    offset = mapped_from + arr.ctypes.data - base
    return filename, arr.dtype.str, int(offset), tuple(arr.shape), order
