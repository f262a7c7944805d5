"""Array files as sources of columns: .npy, .npz, HDF5, Zarr, and folders of .npy files.

`open_arrays(path)` returns an `ArraySource`: named array-likes with one first dimension
(records), read lazily, plus `batches(rows)` yielding ``dict[str, np.ndarray]`` a slice of
rows at a time. Nothing is loaded whole:

- ``.npy`` opens through its header with ``np.load(mmap_mode="r")`` (never as a headerless
  memmap: the header holds dtype, shape and order);
- ``.npz`` members stored uncompressed (``np.savez``) are memory-mapped at their offset in
  the zip; compressed ones (``np.savez_compressed``) are decompressed front to back;
- HDF5 (h5py) and Zarr read only the rows asked for; one key, or every dataset / array
  with at least one axis; a contiguous, unfiltered HDF5 dataset of plain numbers is
  memory-mapped at its offset in the file (a map costs nothing per call, h5py a Python
  round trip; benchmarks/CONSTANTS.md);
- a folder holding ``.npy`` files (and no Zarr metadata): one column per file.

Reading a memory map touches its pages, and touched file pages count towards the
process's resident memory; `page_releaser` hands them back to the page cache after each
slice, so streaming a 50 GB read-only memmap keeps RSS flat.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .._util.memory import page_releaser
from .._util.optional import require
from .._util.text import format_size
from ..errors import SchemaError
from ..example.columns import BytesColumn, Ragged, check_lengths
from ..format.paths import looks_like_records
from .mapped import copy_span
from .npy import (
    HDF5_MAGIC,
    HEADER_ERRORS,
    NPY_MAGIC,
    ZIP_MAGIC,
    read_npy_header,
    zip_member_offset,
)

__all__ = [
    "ArraySource",
    "array_format",
    "check_lengths",
    "common_length",
    "open_arrays",
    "page_releaser",
]

BATCH_BYTES = 8 << 20  # rows per batch of `ArraySource.batches` default to about this much
_STREAM_READ = 1 << 20


def array_format(path: str | os.PathLike) -> str | None:
    """ "npy", "npz", "hdf5", "zarr", "npy-dir", or None when path is none of those."""
    path = os.fspath(path)
    if os.path.isdir(path):
        names = os.listdir(path)
        if {"zarr.json", ".zarray", ".zgroup"} & set(names) or path.rstrip("/").endswith(".zarr"):
            return "zarr"
        npy = any(n.endswith(".npy") and not n.startswith(".") for n in names)
        if npy and not _holds_records(path, names):  # a .npy of labels beside shards: records
            return "npy-dir"
        return None
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        head = f.read(8)
    if head.startswith(NPY_MAGIC):
        return "npy"
    if head == HDF5_MAGIC:
        return "hdf5"
    if head.startswith(ZIP_MAGIC) and path.endswith(".npz"):
        return "npz"
    if path.endswith(".npy"):
        return "npy"  # lets _open_npy report what is wrong with it
    return None


def _holds_records(folder: str, names: list[str]) -> bool:
    paths = (os.path.join(folder, n) for n in names if not n.startswith("."))
    return any(os.path.isfile(p) and looks_like_records(p) for p in paths)


def common_length(columns: Mapping[str, Any], what: str = "columns") -> int:
    """The shared first dimension of all columns; SchemaError naming every length if they
    differ."""
    return check_lengths({name: _length(col) for name, col in columns.items()}, what)


def _length(col: Any) -> int:
    shape = getattr(col, "shape", None)
    if shape is not None:
        if len(shape) == 0:
            raise SchemaError("a 0-d array has no rows; give each record its own entry")
        return int(shape[0])
    return len(col)


class ArraySource:
    """Named arrays with one first dimension, read lazily. `columns` maps feature name to an
    array-like (np.memmap, h5py.Dataset, zarr.Array, or a streamed .npz member) that
    supports ``len``/``shape``/``dtype`` and row slices ``col[a:b]``."""

    def __init__(
        self, path: str, fmt: str, columns: dict[str, Any], closers: list, spec: Any = None
    ):
        self.path = path
        self.spec = spec  # the manifest's spec, for what Dataset.save wrote
        self.format = fmt
        self.columns = columns
        self._closers = closers
        self.length = common_length(columns, f"the arrays of {path}")

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        cols = ", ".join(
            f"{k}: {v.dtype} {tuple(getattr(v, 'shape', (len(v), None)))}"
            for k, v in self.columns.items()
        )
        return f"ArraySource({self.path!r}, {self.format}, {cols})"

    def batches(self, rows: int | None = None) -> Iterator[dict[str, np.ndarray]]:
        """Consecutive row slices of every column as ndarrays; about 8 MiB per batch unless
        `rows` is given. Memory-mapped pages are released after each batch."""
        if rows is None:
            row_bytes = sum(_row_nbytes(c) for c in self.columns.values())
            rows = max(1, BATCH_BYTES // max(1, row_bytes))
        if rows < 1:
            raise ValueError(f"rows must be at least 1, not {rows}")
        releasers = [page_releaser(c) for c in self.columns.values()]
        for a in range(0, self.length, rows):
            b = min(self.length, a + rows)
            yield {name: _rows(col, a, b) for name, col in self.columns.items()}
            for release in releasers:
                if release:
                    release(a, b)

    def close(self) -> None:
        for close in reversed(self._closers):
            close()
        self._closers = []

    def __enter__(self) -> ArraySource:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _row_nbytes(col: Any) -> int:
    if not hasattr(col, "shape"):  # Ragged / bytes columns: an average row
        return int(getattr(col, "nbytes", 64 * len(col))) // max(1, len(col))
    shape = tuple(col.shape)
    itemsize = np.dtype(col.dtype).itemsize if np.dtype(col.dtype).kind != "O" else 64
    return int(np.prod(shape[1:], dtype=np.int64)) * itemsize


def open_arrays(
    path: str | os.PathLike, *, key: str | list[str] | None = None, feature: str | None = None
) -> ArraySource:
    """Open an array file (or folder) as named columns.

    key picks one dataset / member / array (or a list of them) from .npz, HDF5, Zarr and
    .npy folders (an HDF5 group: every dataset in it); by default all are taken. feature
    renames the single column (the default name of a .npy file's column is its file name
    without .npy).
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    fmt = array_format(path)
    if fmt is None:
        raise ValueError(
            f"{path} is not an array file tfrecnp reads (.npy, .npz, HDF5, Zarr, or a folder "
            "of .npy files)"
        )
    keys = [key] if isinstance(key, str) else (list(key) if key is not None else None)
    closers: list = []
    try:  # every handle opened so far is closed if a later member fails
        columns, spec = _open_columns(path, fmt, keys, closers)
        if not columns:
            raise ValueError(f"{path} holds no arrays with at least one axis")
        if feature is not None:
            if len(columns) != 1:
                raise ValueError(
                    f"feature={feature!r} names one column but {path} gives {len(columns)} "
                    f"({', '.join(columns)}); pick one with key="
                )
            columns = {feature: next(iter(columns.values()))}
        return ArraySource(path, fmt, columns, closers, spec)
    except BaseException:
        for close in closers:
            close()
        raise


def _open_columns(path: str, fmt: str, keys: list[str] | None, closers: list) -> tuple:
    """(columns, the manifest's spec or None)."""
    saved = _saved_by_tfrecnp(path, fmt)
    if saved is not None:  # what Dataset.save wrote: ragged and bytes columns come back whole
        closers.append(saved.close)
        return {n: saved[n] for n in _pick(list(saved), keys, path)}, saved.spec
    return _open_plain(path, fmt, keys, closers), None


def _open_plain(path: str, fmt: str, keys: list[str] | None, closers: list) -> dict[str, Any]:
    if fmt == "npy":
        if keys is not None:
            raise ValueError(f"{path} is a .npy file holding one array; it takes no key")
        name = os.path.splitext(os.path.basename(path))[0]
        return {name: _open_npy(path)}
    if fmt == "npy-dir":
        names = sorted(
            n[:-4] for n in os.listdir(path) if n.endswith(".npy") and not n.startswith(".")
        )
        return {n: _open_npy(os.path.join(path, n + ".npy")) for n in _pick(names, keys, path)}
    if fmt == "npz":
        return _open_npz(path, keys, closers)
    if fmt == "hdf5":
        return _open_hdf5(path, keys, closers)
    return _open_zarr(path, keys)


def _saved_by_tfrecnp(path: str, fmt: str):
    """tn.load(path) when path is an output of Dataset.save (it carries a manifest), else
    None: an array file from elsewhere."""
    from .load import load
    from .sinks import MANIFEST

    if fmt == "npy-dir":
        ours = os.path.exists(os.path.join(path, MANIFEST))
    elif fmt == "npz":
        with zipfile.ZipFile(path) as zf:
            ours = MANIFEST in zf.namelist()
    elif fmt == "zarr":
        try:
            with open(os.path.join(path, "zarr.json"), encoding="utf-8") as f:
                ours = "tfrecnp" in json.load(f).get("attributes", {})
        except (OSError, ValueError):
            ours = False
    elif fmt == "hdf5":
        h5py = require("h5py", "hdf5")
        with h5py.File(path, "r") as f:
            ours = "tfrecnp" in f.attrs
    else:
        ours = False
    return load(path) if ours else None


def _rows(col: Any, a: int, b: int) -> Any:
    """Rows a..b of a column: Ragged and bytes columns as they slice, arrays as ndarrays
    (copied out of memory maps under the guard: a file cut meanwhile raises, never SIGBUS)."""
    mapped = copy_span(col, a, b)
    if mapped is not None:
        return mapped
    part = col[a:b]
    return part if isinstance(part, (Ragged, BytesColumn)) else np.array(part)


def _pick(names: list[str], keys: list[str] | None, path: str) -> list[str]:
    if keys is None:
        return names
    missing = [k for k in keys if k not in names]
    if missing:
        raise KeyError(f"{path} has no array {missing[0]!r}; it holds {', '.join(names) or 'none'}")
    return keys


def _open_npy(path: str) -> np.memmap:
    _check_npy_size(path)
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except HEADER_ERRORS as e:
        raise ValueError(
            f"{path} cannot be memory-mapped ({e}); tfrecnp streams only plain arrays, "
            "not pickled Python objects"
        ) from None
    if arr.ndim == 0:
        raise ValueError(f"{path} holds a 0-d array: there are no rows to write as records")
    return arr


def _check_npy_size(path: str) -> None:
    """A header's shape must fit in the bytes that follow it: a damaged or hostile header
    (2^60 elements) gets an error that says so, not numpy's complaint about mmap."""
    with open(path, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            shape, _, dtype = read_npy_header(f, version)
        except ValueError:
            return  # not a header numpy reads either: np.load says why
        data = os.fstat(f.fileno()).st_size - f.tell()
    if dtype.hasobject:
        return
    claimed = math.prod(shape) * dtype.itemsize
    if claimed > data:
        raise ValueError(
            f"{path}: its header claims shape {shape} of {dtype} ({format_size(claimed)}) "
            f"but only {format_size(data)} follow the header; the file is truncated or its "
            "header damaged"
        )


# --- .npz ---------------------------------------------------------------------------


def _open_npz(path: str, keys: list[str] | None, closers: list) -> dict[str, Any]:
    zf = zipfile.ZipFile(path)
    closers.append(zf.close)
    members = {info.filename[:-4]: info for info in zf.infolist() if info.filename.endswith(".npy")}
    out = {}
    for name in _pick(sorted(members), keys, path):
        info = members[name]
        with zf.open(info) as f:
            version = np.lib.format.read_magic(f)
            shape, fortran, dtype = read_npy_header(f, version)
            header_len = f.tell()
        if dtype.hasobject:
            raise ValueError(
                f"{path} member {name!r} holds pickled Python objects; tfrecnp streams only "
                "plain arrays"
            )
        if len(shape) == 0:
            continue
        if info.compress_type == zipfile.ZIP_STORED:
            start = _member_offset(path, info) + header_len
            out[name] = np.memmap(
                path,
                dtype=dtype,
                mode="r",
                offset=start,
                shape=shape,
                order="F" if fortran else "C",
            )
        else:
            out[name] = _ZipMember(zf, info, shape, dtype, fortran, header_len)
    return out


class _ZipMember:
    """A compressed .npz member as a forward-reading array-like: ``m[a:b]`` decompresses
    up to row b (restarting from the top when asked for earlier rows)."""

    def __init__(self, zf, info, shape, dtype, fortran, header_len):
        self._zf, self._info = zf, info
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.ndim = len(self.shape)
        self._fortran = fortran and self.ndim > 1
        self._header_len = header_len
        self._row_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize
        self._stream = None
        self._row = 0

    def __len__(self) -> int:
        return self.shape[0]

    def _rewind(self) -> None:
        if self._stream is not None:
            self._stream.close()
        self._stream = self._zf.open(self._info)
        self._stream.read(self._header_len)
        self._row = 0

    def __getitem__(self, index):
        if not isinstance(index, slice):
            raise TypeError("a streamed .npz member reads row slices only")
        a, b, step = index.indices(self.shape[0])
        if step != 1:
            raise TypeError("a streamed .npz member reads contiguous row slices only")
        b = max(a, b)
        if self._fortran:
            whole = self._read_all()
            return whole[a:b]
        if self._stream is None or a < self._row:
            self._rewind()
        self._skip((a - self._row) * self._row_bytes)
        out = np.empty((b - a, *self.shape[1:]), self.dtype)
        view = memoryview(out.reshape(-1).view(np.uint8))
        got = 0
        while got < len(view):
            n = self._stream.readinto(view[got : got + _STREAM_READ])
            if not n:
                raise ValueError(f"{self._info.filename} ends before row {b}")
            got += n
        self._row = b
        return out

    def _skip(self, nbytes: int) -> None:
        while nbytes > 0:
            chunk = self._stream.read(min(nbytes, _STREAM_READ))
            if not chunk:
                raise ValueError(f"{self._info.filename} ends early")
            nbytes -= len(chunk)

    def _read_all(self) -> np.ndarray:
        with self._zf.open(self._info) as f:
            return np.lib.format.read_array(f, allow_pickle=False)

    def __array__(self, dtype=None, copy=None):
        out = self[:]
        return out if dtype is None else out.astype(dtype)


# --- HDF5 and Zarr ---------------------------------------------------------------------


def _open_hdf5(path: str, keys: list[str] | None, closers: list) -> dict[str, Any]:
    h5py = require("h5py", "hdf5")
    f = h5py.File(path, "r")
    closers.append(f.close)
    if keys is not None:
        out = {}
        for k in keys:
            obj = f.get(k)
            if isinstance(obj, h5py.Group):  # a group: every dataset in it, named within it
                for name in _hdf5_names(obj, h5py):
                    if obj[name].ndim >= 1:
                        out[name] = obj[name]
                continue
            if not isinstance(obj, h5py.Dataset):
                raise KeyError(
                    f"{path} has no dataset or group {k!r}; datasets: "
                    f"{', '.join(_hdf5_names(f, h5py)) or 'none'}"
                )
            if obj.ndim == 0:
                raise ValueError(f"{path} dataset {k!r} is a scalar: there are no rows")
            out[k.strip("/")] = obj
        return {name: _mapped(path, dset) for name, dset in out.items()}
    names = [name for name in _hdf5_names(f, h5py) if f[name].ndim >= 1]
    return {name: _mapped(path, f[name]) for name in names}


def _mapped(path: str, dset: Any) -> Any:
    """The dataset as an np.memmap of its bytes when HDF5 stores it as plain numbers in
    one piece of this file (contiguous: no chunks, so no filters; not external); else the
    h5py dataset itself."""
    dtype = dset.dtype
    offset = dset.id.get_offset()  # None until written, and for chunked storage
    if (
        offset is None
        or dset.chunks is not None
        or dtype.kind not in "iuf"
        or dtype.fields is not None
        or dtype.subdtype is not None
        or dset.id.get_create_plist().get_external_count()
        or not os.path.isfile(path)
    ):
        return dset
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=dset.shape)


def _hdf5_names(f, h5py) -> list[str]:
    names = []
    f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    return sorted(names)


def _open_zarr(path: str, keys: list[str] | None) -> dict[str, Any]:
    zarr = require("zarr", "zarr")
    root = zarr.open(path, mode="r")
    if isinstance(root, zarr.Array):
        if keys is not None:
            raise ValueError(f"{path} is a single Zarr array; it takes no key")
        name = os.path.basename(os.path.normpath(path))
        return {name.removesuffix(".zarr"): root}
    arrays = {}

    def walk(group, prefix: str) -> None:
        for name, member in sorted(group.members()):
            full = f"{prefix}{name}"
            if isinstance(member, zarr.Array):
                arrays[full] = member
            else:
                walk(member, f"{full}/")

    walk(root, "")
    if keys is not None:
        return {k: arrays[k] for k in _pick(sorted(arrays), keys, path)}
    return {k: a for k, a in arrays.items() if len(a.shape) >= 1}


def _member_offset(path: str, info) -> int:
    try:
        return zip_member_offset(path, info)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
