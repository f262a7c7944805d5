"""Rows copied out of read-only memory maps (.npy, .npz members stored plain, HDF5), safely.

A map is the fastest way to read an array file, but touching a page of a file that was cut
after it was mapped raises SIGBUS, which ends the process without a word. Every copy out of
a map here goes through the core's guarded copy (`_core/mapcopy`), which turns that fault
into a `FileChangedError` naming the file and the first row it no longer holds. Arrays that
are not read-only maps of a file (arrays in memory, writable maps, strided views) return
None, and the caller copies them as before.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .._core.mapcopy import copy_runs
from .._util.memory import read_only_map
from ..errors import FileChangedError, file_changed

__all__ = ["copy_rows", "copy_span"]


class _Layout:
    """Where a mapped array's bytes lie in its map: the map as bytes, the array's first
    byte in it, its file, and whether rows (C order) or columns (Fortran order) are runs."""

    def __init__(self, arr: np.ndarray, owner: np.memmap, whole: np.ndarray):
        self.bytes = whole
        self.start = arr.ctypes.data - whole.ctypes.data
        self.path = str(owner.filename)
        # the file offset of arr's first byte (np.memmap maps from a page at or before it)
        self.data_offset = int(owner.offset) + arr.ctypes.data - owner.ctypes.data
        self.fortran = arr.ndim > 1 and not arr.flags.c_contiguous
        self.item = arr.dtype.itemsize
        self.n = arr.shape[0]
        self.row = arr.dtype.itemsize * int(np.prod(arr.shape[1:], dtype=np.int64))


def _layout(arr: Any) -> _Layout | None:
    if not isinstance(arr, np.ndarray) or arr.ndim == 0 or arr.dtype.hasobject:
        return None
    mapped = read_only_map(arr)
    if mapped is None or not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        return None
    owner, m = mapped
    if getattr(owner, "filename", None) is None:
        return None
    return _Layout(arr, owner, np.frombuffer(m, np.uint8))


def copy_span(arr: Any, a: int, b: int) -> np.ndarray | None:
    """Rows a..b of a read-only mapped array as a new array, or None when arr is not one."""
    lay = _layout(arr)
    if lay is None:
        return None
    a = min(max(0, a), lay.n)
    b = min(max(a, b), lay.n)
    shape = (b - a, *arr.shape[1:])
    if lay.fortran:  # each trailing element's rows a..b lie together: one run per element
        cells = int(np.prod(arr.shape[1:], dtype=np.int64))
        starts = lay.start + (a + np.arange(cells, dtype=np.int64) * lay.n) * lay.item
        sizes = np.full(cells, (b - a) * lay.item, np.int64)
        out = np.empty(shape, arr.dtype, order="F")
    else:
        starts = np.array([lay.start + a * lay.row], np.int64)
        sizes = np.array([(b - a) * lay.row], np.int64)
        out = np.empty(shape, arr.dtype)
    _copy(lay, starts, sizes, out, lambda k: (a, b))
    return out


def copy_rows(arr: Any, ids: np.ndarray) -> np.ndarray | None:
    """The rows at ids (any order, repeats allowed) of a read-only mapped array in C order,
    or None when arr is not one (Fortran-ordered maps are read by spans)."""
    lay = _layout(arr)
    if lay is None or lay.fortran:
        return None
    ids = np.asarray(ids, np.int64)
    if len(ids) and (ids.min() < -lay.n or ids.max() >= lay.n):
        bad = ids[(ids < -lay.n) | (ids >= lay.n)][0]
        raise IndexError(f"row {bad} is out of range for {lay.n} rows of {lay.path}")
    ids = np.where(ids < 0, ids + lay.n, ids)
    out = np.empty((len(ids), *arr.shape[1:]), arr.dtype)
    starts = lay.start + ids * lay.row
    sizes = np.full(len(ids), lay.row, np.int64)
    _copy(lay, starts, sizes, out, lambda k: (int(ids[k]), int(ids[k]) + 1))
    return out


def _copy(lay: _Layout, starts: np.ndarray, sizes: np.ndarray, out: np.ndarray, rows) -> None:
    """The runs into out; rows(k): the rows (first, last exclusive) run k reads."""
    if not len(starts):
        return
    c_order = out.T if lay.fortran else out  # a Fortran array's transpose is in C order
    flat = c_order.reshape(-1).view(np.uint8) if out.size else np.empty(0, np.uint8)
    before = _stat(lay.path)
    k = copy_runs(lay.bytes, starts, sizes, flat)
    if k < 0:
        ends = starts + sizes
        if not _changed(lay, before, _stat(lay.path), int(ends.max())):
            return
        k = int(np.argmax(ends))
    raise _cut(lay, *rows(k))


def _changed(lay: _Layout, before, after, end: int) -> bool:
    """Whether the mapped file was cut or rewritten while the bytes up to `end` of the map
    were copied. A cut inside the map's last page reads zeros rather than faulting, so the
    file is looked at before and after the copy: changed meanwhile (a new ctime), or now
    ending before the bytes read. A file gone or replaced by rename still has its old map
    whole."""
    if before is None or after is None or before.st_ino != after.st_ino:
        return False
    short = after.st_size < lay.data_offset + end - lay.start
    return short or before.st_ctime_ns != after.st_ctime_ns


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _cut(lay: _Layout, first: int, last: int) -> FileChangedError:
    """The error for a map whose file no longer holds a row in first..last (exclusive):
    named exactly by where the file ends now, when that falls in the range."""
    expected = lay.data_offset + lay.n * lay.row
    at = first
    now = _stat(lay.path)
    size = -1 if now is None else now.st_size
    if size >= 0 and lay.row and not lay.fortran:
        held = (size - lay.data_offset) // lay.row
        at = held if first <= held < last else first
    step = lay.item if lay.fortran else lay.row
    return file_changed(lay.path, int(at), lay.data_offset + int(at) * step, expected)
