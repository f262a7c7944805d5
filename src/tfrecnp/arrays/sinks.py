"""Where columns go: a folder of .npy files, a .npz, HDF5 or Zarr; and `load` to get them back.

A sink takes batches (``dict[str, column]``) and appends each column to arrays on disk, so
memory stays bounded by one batch however large the dataset. Every format holds the same
arrays, named after the feature (its *stem*: the name with every character other than
``A-Z a-z 0-9 _ -`` written as ``%XX`` of its UTF-8 bytes, so "image/encoded" is stored as
"image%2Fencoded"):

==============================  ==============================================================
column                          arrays
==============================  ==============================================================
ndarray [N, *shape]             ``stem`` [N, *shape]
Ragged                          ``stem.row_splits`` int64 [N + 1] and ``stem.values``
                                (itself laid out by these rules: an array, bytes, or Ragged)
BytesColumn                     ``stem.values`` uint8 [total bytes] and ``stem.offsets``
                                int64 [N + 1]; value i is values[offsets[i]:offsets[i + 1]]
object ndarray of bytes         as a BytesColumn of the N * prod(shape) values, row-major
==============================  ==============================================================

plus a manifest (format, records, the spec, and each column's layout): ``tfrecnp.json`` in a
.npy folder (beside ``spec.json``, the spec alone, for ``--spec``) and in a .npz, the root
attribute ``tfrecnp`` in HDF5 and Zarr. Files: ``stem.npy`` in a folder; ``stem.npy``
members of a .npz (stored, not compressed, so they memory-map; the .npy files are written
first and packed at the end, so a .npz needs twice its size on disk for a moment);
datasets chunked along records in HDF5 (h5py); arrays chunked along records in Zarr v3.

Outputs are built under a hidden temporary name beside the target and renamed onto it when
complete; the manifest is written last. An exception removes the temporary output, so
nothing incomplete ever carries the target's name. `load` refuses outputs without a manifest.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .._util import fs
from .._util.atomic import CloseOrAbort, deferred_interrupt, hidden_sibling, naming_write_errors
from .._util.optional import require
from ..errors import SchemaError
from ..example.columns import BytesColumn, Column, Ragged
from ..example.spec import spec_to_json
from .npy import npy_header

__all__ = [
    "FORMATS",
    "ArraySink",
    "output_format",
    "stem",
]

FORMATS = ("npy", "npz", "hdf5", "zarr")
MANIFEST = "tfrecnp.json"
SPEC_FILE = "spec.json"
MANIFEST_FORMAT = "tfrecnp.arrays/1"
CHUNK_BYTES = 1 << 20  # HDF5 / Zarr chunks hold about this much (whole rows, at least one)
_EXTENSIONS = {
    ".npz": "npz",
    ".h5": "hdf5",
    ".hdf5": "hdf5",
    ".hdf": "hdf5",
    ".he5": "hdf5",
    ".zarr": "zarr",
    ".npy": "npy",
}
_ALIASES = {"npy": "npy", "npz": "npz", "hdf5": "hdf5", "h5": "hdf5", "zarr": "zarr"}
SAFE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def stem(name: str) -> str:
    """A feature name as a file / array name: characters outside A-Z a-z 0-9 _ - become %XX
    (UTF-8 bytes), so names with '/' or '.' neither nest nor clash with the .values /
    .row_splits / .offsets suffixes. The empty name is '%'."""
    if not name:
        return "%"
    out = []
    for ch in name:
        if ch in SAFE_CHARS:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogateescape"))
    return "".join(out)


def output_format(path: str | os.PathLike, format: str | None = None) -> str:
    """The sink format: `format` if given ("npy", "npz", "hdf5" (or "h5"), "zarr"), else from
    the extension of path (.npz, .h5/.hdf5, .zarr); no extension, or .npy, is a .npy folder."""
    if format is not None:
        fmt = _ALIASES.get(str(format).lower())
        if fmt is None:
            raise ValueError(
                f"unknown format {format!r}; use one of {', '.join(FORMATS)} "
                "(TFRecord output comes from tn.write)"
            )
        return fmt
    path = os.fspath(path)
    ext = os.path.splitext(path.rstrip("/" + os.sep))[1].lower()
    if not ext or path.endswith(("/", os.sep)):
        return "npy"
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    if ext in (".tfrecord", ".tfrecords", ".tfr"):
        raise ValueError(
            f"{path} names a TFRecord file, but TFRecord sources convert to arrays: a .npy "
            "folder (no extension), .npz, .h5 or .zarr; to copy records use `tfrecnp verify "
            "--salvage OUT`, to write columns use tn.write"
        )
    raise ValueError(
        f"cannot tell the output format of {path} from its extension {ext!r}; pass "
        f"format= one of {', '.join(FORMATS)} (or use .npz, .h5, .zarr, or a folder name)"
    )


# --- leaves: one growing array each -------------------------------------------------------


class _Leaf:
    """An array that grows along its first axis: append(rows) ... finish()."""

    def __init__(self, name: str, dtype: np.dtype, inner: tuple[int, ...]):
        self.name = name
        self.dtype = np.dtype(dtype)
        self.inner = tuple(inner)
        self.rows = 0

    def append(self, arr: np.ndarray) -> None:
        if arr.shape[1:] != self.inner:
            raise SchemaError(
                f"array {self.name!r}: rows of shape {arr.shape[1:]} after rows of shape "
                f"{self.inner}; a column keeps one row shape across batches (a tn.Raw shape "
                "with -1 resolves per batch: put the -1 first for a Ragged column)"
            )
        if arr.dtype != self.dtype:
            raise SchemaError(
                f"array {self.name!r}: {arr.dtype} values after {self.dtype} ones; a column "
                "keeps one dtype across batches"
            )
        self._append(np.ascontiguousarray(arr))
        self.rows += len(arr)

    def _append(self, arr: np.ndarray) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        pass

    def describe(self) -> dict:
        return {
            "kind": "array",
            "array": self.name,
            "dtype": np.lib.format.dtype_to_descr(self.dtype),
            "shape": [self.rows, *self.inner],
        }


class _NpyLeaf(_Leaf):
    """A .npy file written front to back: a header with room for any row count, the rows as
    they come, and the real shape written into the header at the end. Nothing is mapped, so
    written pages belong to the page cache, not to this process."""

    HEADER_ROWS = 10**19  # the header is sized for a row count this long

    def __init__(self, folder: str, name: str, dtype: np.dtype, inner: tuple[int, ...]):
        super().__init__(name, dtype, inner)
        self.path = os.path.join(folder, name + ".npy")
        self.header_size = len(npy_header(self.dtype, (self.HEADER_ROWS, *inner)))
        self.file = open(self.path, "wb")  # noqa: SIM115 (closed by finish / close)
        self.file.write(npy_header(self.dtype, (0, *inner), self.header_size))

    def _append(self, arr: np.ndarray) -> None:
        if arr.size:
            self.file.write(arr.reshape(-1).view(np.uint8).data)

    def finish(self) -> None:
        self.file.seek(0)
        self.file.write(npy_header(self.dtype, (self.rows, *self.inner), self.header_size))
        self.file.close()

    def close(self) -> None:
        self.file.close()


class _ChunkedLeaf(_Leaf):
    """An HDF5 dataset or Zarr array, written a whole chunk at a time (rows are staged until
    a chunk fills), so no chunk is ever read back and rewritten."""

    def __init__(self, name: str, dtype: np.dtype, inner: tuple[int, ...]):
        super().__init__(name, dtype, inner)
        row = max(1, math.prod(inner) * self.dtype.itemsize)
        self.chunk_rows = max(1, CHUNK_BYTES // row)
        self.chunks = (self.chunk_rows, *(max(1, d) for d in inner))
        self.stage = np.empty((self.chunk_rows, *inner), self.dtype)
        self.staged = 0

    def _append(self, arr: np.ndarray) -> None:
        k = self.chunk_rows
        if self.staged:
            take = min(k - self.staged, len(arr))
            self.stage[self.staged : self.staged + take] = arr[:take]
            self.staged += take
            arr = arr[take:]
            if self.staged < k:
                return
            self._store(self.stage)
            self.staged = 0
        whole = len(arr) - len(arr) % k
        if whole:
            self._store(arr[:whole])
        rest = len(arr) - whole
        if rest:
            self.stage[:rest] = arr[whole:]
            self.staged = rest

    def finish(self) -> None:
        if self.staged:
            self._store(self.stage[: self.staged])
            self.staged = 0

    def _store(self, block: np.ndarray) -> None:
        raise NotImplementedError


class _H5Leaf(_ChunkedLeaf):
    def __init__(self, file, name: str, dtype: np.dtype, inner: tuple[int, ...]):
        super().__init__(name, dtype, inner)
        self.file = file
        self.dataset = None

    def _store(self, block: np.ndarray) -> None:
        if self.dataset is None:  # created at the first store: a small array gets a small chunk
            rows = min(self.chunk_rows, max(1, len(block)))
            self.dataset = self.file.create_dataset(
                self.name,
                shape=(0, *self.inner),
                maxshape=(None, *self.inner),
                chunks=(rows, *self.chunks[1:]),
                dtype=self.dtype,
            )
        n = self.dataset.shape[0]
        self.dataset.resize(n + len(block), axis=0)
        self.dataset[n:] = block

    def finish(self) -> None:
        super().finish()
        if self.dataset is None:
            self._store(self.stage[:0])


class _ZarrLeaf(_ChunkedLeaf):
    def __init__(self, sink: ArraySink, name: str, dtype: np.dtype, inner: tuple[int, ...]):
        super().__init__(name, dtype, inner)
        self.sink = sink
        self.array = None

    def _store(self, block: np.ndarray) -> None:
        self.sink._zarr_call(self._store_now, block)

    def _store_now(self, block: np.ndarray) -> None:
        if self.array is None:
            rows = min(self.chunk_rows, max(1, len(block)))
            self.array = self.sink._zarr.create_array(
                self.name, shape=(0, *self.inner), chunks=(rows, *self.chunks[1:]), dtype=self.dtype
            )
        if len(block):
            self.array.append(block, axis=0)

    def finish(self) -> None:
        super().finish()
        if self.array is None:
            self._store(self.stage[:0])


# --- nodes: a column's layout over leaves ----------------------------------------------------


class _ArrayNode:
    def __init__(self, sink: ArraySink, name: str, first: np.ndarray):
        self.leaf = sink._leaf(name, first.dtype, first.shape[1:])

    def write(self, col: Any) -> None:
        if not isinstance(col, np.ndarray) or col.dtype.hasobject:
            raise SchemaError(
                f"array {self.leaf.name!r}: a {type(col).__name__} after ndarray batches; a "
                "column keeps one kind across batches"
            )
        self.leaf.append(col)

    def describe(self) -> dict:
        return self.leaf.describe()


class _BytesNode:
    def __init__(self, sink: ArraySink, name: str, shape: tuple[int, ...] = ()):
        self.name = name
        self.shape = shape
        self.values = sink._leaf(name + ".values", np.dtype(np.uint8), ())
        self.offsets = sink._leaf(name + ".offsets", np.dtype(np.int64), ())
        self.offsets.append(np.zeros(1, np.int64))
        self.base = 0
        self.rows = 0

    def write(self, col: Any) -> None:
        if isinstance(col, np.ndarray) and col.dtype.hasobject:
            if col.shape[1:] != self.shape:
                raise SchemaError(
                    f"array {self.name!r}: rows of shape {col.shape[1:]} after rows of "
                    f"shape {self.shape}"
                )
            rows = len(col)
            col = BytesColumn.from_list(col.reshape(-1).tolist())
        elif isinstance(col, BytesColumn):
            rows = len(col)
        else:
            raise SchemaError(
                f"array {self.name!r}: a {type(col).__name__} after batches of bytes; a column "
                "keeps one kind across batches"
            )
        offsets = col.offsets
        data = col.data[offsets[0] : offsets[-1]]
        self.values.append(data)
        self.offsets.append(offsets[1:] - offsets[0] + self.base)
        self.base += len(data)
        self.rows += rows

    def describe(self) -> dict:
        out = {
            "kind": "bytes",
            "values": self.values.name,
            "offsets": self.offsets.name,
            "rows": self.rows,
        }
        if self.shape:
            out["shape"] = list(self.shape)
        return out


class _RaggedNode:
    def __init__(self, sink: ArraySink, name: str, first: Ragged):
        self.name = name
        self.row_splits = sink._leaf(name + ".row_splits", np.dtype(np.int64), ())
        self.row_splits.append(np.zeros(1, np.int64))
        self.values = _node(sink, name + ".values", first.values)
        self.base = 0
        self.rows = 0

    def write(self, col: Any) -> None:
        if not isinstance(col, Ragged):
            raise SchemaError(
                f"array {self.name!r}: a {type(col).__name__} after Ragged batches; a column "
                "keeps one kind across batches"
            )
        splits = col.row_splits
        lo, hi = int(splits[0]), int(splits[-1])
        values = col.values if (lo == 0 and hi == len(col.values)) else col.values[lo:hi]
        self.values.write(values)
        self.row_splits.append(splits[1:] - lo + self.base)
        self.base += hi - lo
        self.rows += len(col)

    def describe(self) -> dict:
        return {
            "kind": "ragged",
            "row_splits": self.row_splits.name,
            "values": self.values.describe(),
            "rows": self.rows,
        }


def _node(sink: ArraySink, name: str, col: Any):
    if isinstance(col, Ragged):
        return _RaggedNode(sink, name, col)
    if isinstance(col, BytesColumn):
        return _BytesNode(sink, name)
    if isinstance(col, np.ndarray):
        if col.dtype.hasobject:
            return _BytesNode(sink, name, col.shape[1:])
        if col.ndim == 0:
            raise SchemaError(f"column {name!r} is a 0-d array; columns have one row per record")
        return _ArrayNode(sink, name, col)
    raise TypeError(
        f"column {name!r} is a {type(col).__name__}; expected an ndarray, tn.Ragged or "
        "tn.BytesColumn"
    )


def _column_length(col: Any) -> int:
    return len(col)


# --- the sink --------------------------------------------------------------------------------


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


class ArraySink(CloseOrAbort):
    """Appends batches of columns to arrays on disk in one of FORMATS.

    The target appears only when `close()` completes; `abort()` (or an exception inside a
    ``with`` block) removes everything written. With overwrite=False an existing target is
    an error before anything is written.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        format: str | None = None,
        *,
        spec: Any = None,
        overwrite: bool = False,
    ):
        self.remote = None  # a URL: built in a local folder, uploaded at close
        if fs.is_url(path):
            url = fs.resolve(path)
            self.remote = fs.like(url, str(url).rstrip("/"))
            if fs.exists(self.remote) and not overwrite:
                raise FileExistsError(
                    f"{self.remote} already exists; pass overwrite=True (--overwrite) to replace "
                    "it, or choose another name"
                )
            self._stage = tempfile.mkdtemp(prefix="tfrecnp-save-")
            path = os.path.join(self._stage, fs.basename(self.remote))
        self.path = os.fspath(path).rstrip("/" + os.sep) or os.fspath(path)
        self.format = output_format(path, format)
        self.spec = spec
        self.overwrite = overwrite
        if os.path.lexists(self.path) and not overwrite:
            raise FileExistsError(
                f"{self.path} already exists; pass overwrite=True (--overwrite) to replace it, "
                "or choose another name"
            )
        parent = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(parent):
            raise FileNotFoundError(f"the folder {parent} for {self.path} does not exist")
        self._columns: dict[str, Any] = {}
        self._leaves: list[_Leaf] = []
        self.records = 0
        self.closed = False
        self.tmp = hidden_sibling(self.path, "tmp")
        self._h5 = self._zarr = self._zarr_io = None
        with naming_write_errors(self.remote or self.path):  # not the hidden name
            try:
                self._open_target()
            except BaseException:
                self._stop_zarr_io()
                _remove(self.tmp)
                raise

    def _open_target(self) -> None:
        if self.format in ("npy", "npz"):
            # a .npz is built as a folder of .npy files, then packed into the zip at close
            self._folder = self.tmp if self.format == "npy" else self.tmp + ".d"
            os.mkdir(self._folder)
        elif self.format == "hdf5":
            h5py = require("h5py", "hdf5")
            self._h5 = h5py.File(self.tmp, "w")
        else:
            zarr = require("zarr", "zarr")
            self._zarr_io = ThreadPoolExecutor(1, thread_name_prefix="tfrecnp-zarr")
            self._zarr = self._zarr_call(zarr.open_group, self.tmp, mode="w", zarr_format=3)

    def _zarr_call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Runs a zarr call in the sink's own thread and waits for it. zarr's writes run on
        its event loop; were the caller's wait for one interrupted (Ctrl-C), the write would
        go on after abort() removed the folder and bring part of it back. abort() waits
        for this thread instead, then removes."""
        return self._zarr_io.submit(fn, *args, **kwargs).result()

    def _stop_zarr_io(self) -> None:
        if self._zarr_io is not None:
            self._zarr_io.shutdown(wait=True, cancel_futures=True)
            self._zarr_io = None

    def _leaf(self, name: str, dtype: np.dtype, inner: tuple[int, ...]) -> _Leaf:
        if self.format in ("npy", "npz"):
            leaf: _Leaf = _NpyLeaf(self._folder, name, dtype, inner)
        elif self.format == "hdf5":
            leaf = _H5Leaf(self._h5, name, dtype, inner)
        else:
            leaf = _ZarrLeaf(self, name, dtype, inner)
        self._leaves.append(leaf)
        return leaf

    @property
    def has_columns(self) -> bool:
        """Whether a first batch (even one of no records) has set the columns written."""
        return bool(self._columns or self._leaves)

    def write(self, batch: Mapping[str, Column]) -> None:
        """Append one batch: the same column names (and kinds) in every batch."""
        if self.closed:
            raise ValueError(f"the sink for {self.path} is closed")
        lengths = {name: _column_length(col) for name, col in batch.items()}
        if len(set(lengths.values())) > 1:
            listed = ", ".join(f"{k!r}: {v}" for k, v in lengths.items())
            raise SchemaError(f"the columns of a batch differ in length ({listed})")
        if not self.has_columns:
            names = {}
            for name in batch:
                s = stem(name)
                if s in names:
                    raise SchemaError(f"features {names[s]!r} and {name!r} share the name {s!r}")
                names[s] = name
            self._columns = {name: _node(self, stem(name), col) for name, col in batch.items()}
        elif set(batch) != set(self._columns):
            raise SchemaError(
                f"batch columns {sorted(batch)} differ from the first batch's "
                f"{sorted(self._columns)}"
            )
        for name, col in batch.items():
            self._columns[name].write(col)
        self.records += next(iter(lengths.values()), 0)

    def manifest(self) -> dict:
        spec = None if self.spec is None else json.loads(spec_to_json(self.spec))
        return {
            "format": MANIFEST_FORMAT,
            "records": self.records,
            "columns": {name: node.describe() for name, node in self._columns.items()},
            "spec": spec,
        }

    def close(self) -> str:
        """Finish every array, write the manifest, and move the output into place."""
        if self.closed:
            return self.path if self.remote is None else self.remote
        try:
            for leaf in self._leaves:
                leaf.finish()
            manifest = self.manifest()
            text = json.dumps(manifest, indent=1, ensure_ascii=False)
            if self.format == "npy":
                if self.spec is not None:
                    with open(os.path.join(self.tmp, SPEC_FILE), "w", encoding="utf-8") as f:
                        f.write(spec_to_json(self.spec) + "\n")
                with open(os.path.join(self.tmp, MANIFEST), "w", encoding="utf-8") as f:
                    f.write(text + "\n")
            elif self.format == "npz":
                self._pack_npz(text)
            elif self.format == "hdf5":
                self._h5.attrs["tfrecnp"] = text
                self._h5.close()
            else:
                self._zarr_call(self._zarr.attrs.__setitem__, "tfrecnp", manifest)
                self._stop_zarr_io()
            self._publish()
            if self.remote is not None:
                fs.publish_upload(self.path, self.remote, last=MANIFEST)
                shutil.rmtree(self._stage, ignore_errors=True)
        except BaseException:
            self.abort()
            raise
        self.closed = True
        return self.path if self.remote is None else self.remote

    def _pack_npz(self, manifest: str) -> None:
        with zipfile.ZipFile(self.tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            for leaf in self._leaves:
                zf.write(os.path.join(self._folder, leaf.name + ".npy"), leaf.name + ".npy")
            zf.writestr(MANIFEST, manifest)
        shutil.rmtree(self._folder)

    def _publish(self) -> None:
        old = None
        with deferred_interrupt():  # Ctrl-C never leaves the old output moved aside
            if os.path.lexists(self.path):
                if not self.overwrite:
                    raise FileExistsError(f"{self.path} appeared while it was being written")
                old = hidden_sibling(self.path, "old")
                os.rename(self.path, old)
            try:
                os.rename(self.tmp, self.path)
            except BaseException:
                if old is not None:  # the old output goes back where it was
                    os.rename(old, self.path)
                raise
        if old is not None:
            _remove(old)

    def abort(self) -> None:
        """Drop everything written; the target is left as it was."""
        if self.closed:
            return
        self.closed = True
        for leaf in self._leaves:
            if isinstance(leaf, _NpyLeaf):
                leaf.close()
        if self._h5 is not None:
            with contextlib.suppress(Exception):
                self._h5.close()
        self._stop_zarr_io()  # a zarr write in flight ends before its folder is removed
        _remove(self.tmp)
        if self.format == "npz":
            _remove(self.tmp + ".d")
        if self.remote is not None:
            shutil.rmtree(self._stage, ignore_errors=True)


# --- loading ---------------------------------------------------------------------------------
