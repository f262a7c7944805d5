"""Arrays as a Dataset: .npy, .npz, HDF5, Zarr, what `save` wrote, or columns in memory.

The same interface as TFRecord files (`len`, ``[i]``, slices, `batches`, `select`, `shard`,
`take`, `save`, the adapters), read from the arrays a block at a time: about 4 MiB per
block, aligned to the store's chunks for HDF5 and Zarr, copied out of memory maps whose
pages are then handed back (`page_releaser`), so memory stays at a few blocks however large
the file. ``shuffle=True`` reads each block's rows in sorted order (one fancy index for
arrays and maps, one slice per run of nearby rows for stores); ``shuffle=N`` reads blocks
from random places through a pool of N rows.

An array dataset pickles as the way to open it again (a path and its keys; arrays in memory
by value, memory maps as references to their file), so PyTorch's DataLoader workers and
Ray tasks open their own handles.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .._util.memory import page_releaser
from .._util.text import format_count
from ..arrays.access import memmap_reference, read_rows, read_span, spec_of_columns
from ..arrays.sources import ArraySource, common_length, open_arrays
from ..example.columns import BytesColumn, LazyBytes, LazyRagged, Ragged
from ..example.padding import feature_names
from ..format.payloads import Origins
from .blocks import Block, shuffle_blocks
from .dataset import Batch, Dataset, column_nbytes
from .files import RandomAccessError
from .source import Shuffle, Source

__all__ = ["ArrayDataset", "Table", "TableSource"]


class Table:
    """Named columns of one length, opened lazily from `opener` (once per process), or
    held in memory. Pickles as its opener, or as its columns (memory maps by reference)."""

    def __init__(self, name: str, opener: Any = None, columns: Mapping[str, Any] | None = None):
        self.name = name
        self._opener = opener
        self._source: ArraySource | None = None
        self._pid = os.getpid()
        self._columns = dict(columns) if columns is not None else None
        self.spec: Any = None
        if self._columns is not None:
            self.length = common_length(self._columns, "the columns")
            self.spec = spec_of_columns(self._columns)
        else:
            source = self._open()
            self.length = len(source)
            self.spec = source.spec or spec_of_columns(source.columns)

    def _open(self) -> ArraySource:
        if self._source is None or self._pid != os.getpid():  # a forked child opens its own
            self._source = self._opener()
            self._pid = os.getpid()
        return self._source

    @property
    def columns(self) -> Mapping[str, Any]:
        return self._columns if self._columns is not None else self._open().columns

    @property
    def format(self) -> str:
        return "arrays" if self._columns is not None else self._open().format

    @property
    def seekable(self) -> bool:
        """False when a column is a compressed .npz member, read front to back."""
        return all(hasattr(c, "dtype") and _seekable(c) for c in self.columns.values())

    def close(self) -> None:
        if self._source is not None and self._pid == os.getpid():
            self._source.close()
        self._source = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__, _source=None)
        if self._columns is not None:
            state["_columns"] = {n: _Mapped.of(c) for n, c in self._columns.items()}
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self._columns is not None:
            self._columns = {n: _Mapped.back(c) for n, c in self._columns.items()}


def _seekable(col: Any) -> bool:
    return type(col).__name__ != "_ZipMember"


class _Mapped:
    """A memory map in a pickle: its file and place, not its bytes."""

    def __init__(self, args: tuple):
        self.args = args

    @staticmethod
    def of(col: Any) -> Any:
        ref = memmap_reference(col) if isinstance(col, np.ndarray) else None
        return _Mapped(ref) if ref is not None else col

    @staticmethod
    def back(col: Any) -> Any:
        if not isinstance(col, _Mapped):
            return col
        filename, dtype, offset, shape, order = col.args
        return np.memmap(filename, np.dtype(dtype), "r", offset, shape, order)


class ArrayDataset(Dataset):
    """Columns of arrays as a Dataset. Made by `tn.open` on an array file or on arrays."""

    source: TableSource

    def __init__(self, source: TableSource, *, start: int = 0, stop: int | None = None):
        super().__init__(source, start=start, stop=stop)

    def __repr__(self) -> str:
        names = ", ".join(feature_names(self.spec))
        return f"Dataset({self.source.table.name}, {format_count(len(self))} records: {names})"


class TableSource(Source):
    """The columns of a Table read with one spec (see `Source` for the contract)."""

    def __init__(self, table: Table, spec: Any):
        self.table = table
        self.spec = spec

    def select(self, spec: Any) -> TableSource:
        return TableSource(self.table, spec)

    @property
    def paths(self) -> list[str]:
        """The file (or folder) the arrays come from; [] for arrays in memory."""
        return [] if self.table.format == "arrays" else [self.table.name]

    def count(self) -> int:
        return self.table.length

    def close(self) -> None:
        self.table.close()

    def _columns(self) -> dict[str, Any]:
        columns = self.table.columns
        return {name: columns[name] for name in feature_names(self.spec)}

    def check_random_access(self, what: str) -> None:
        if not self.table.seekable:
            raise RandomAccessError(
                f"{what} reads records by position, but {self.table.name} holds compressed "
                "members (np.savez_compressed), which read front to back only; stream it "
                "with ds.batches(n), or save it uncompressed (np.savez) for random access"
            )

    # -- records by position ----------------------------------------------------------------

    def read_span(self, a: int, b: int) -> Batch:
        return {name: read_span(col, a, b) for name, col in self._columns().items()}

    def read_ids(self, ids: np.ndarray, what: str) -> Batch:
        self.check_random_access(what)
        return {name: read_rows(col, ids) for name, col in self._columns().items()}

    def read_one(self, i: int) -> dict[str, Any]:
        out = {}
        for name, col in self._columns().items():  # copies: a record outlives the map
            out[name] = read_span(col, i, i + 1)[0]
        return out

    def empty(self) -> Batch:
        return self.read_span(0, 0)

    # -- blocks -----------------------------------------------------------------------------

    def mean_record_bytes(self, start: int, stop: int | None) -> float:
        columns = self._columns()
        n = max(1, self.table.length)
        return float(sum(_row_bytes(col, n) for col in columns.values())) or 1.0

    def _chunk_rows(self) -> int:
        """Rows per chunk of the stores holding the columns (1 for arrays in memory)."""
        rows = 1
        for col in self._columns().values():
            chunks = getattr(col, "chunks", None)
            if isinstance(chunks, tuple) and chunks:
                rows = max(rows, int(chunks[0]))
        return rows

    def blocks(
        self,
        start: int,
        stop: int | None,
        block: int,
        shuffle: Shuffle,
        *,
        threads: int | None = None,
        ahead: int = 0,
    ) -> Iterator[Block]:
        start, stop = self.span(start, stop)
        rng = shuffle.rng()
        if shuffle.kind == "all":
            for ids, place in self.permuted(start, stop, block, rng):
                picked = self.read_ids(ids, "batches(shuffle=True)")
                yield Block({n: _take(c, place) for n, c in picked.items()}, len(ids))
            return
        chunk, batches = self._chunk_rows(), block  # `block` holds a whole number of batches
        if chunk > 1:
            block = max(chunk, round(block / chunk) * chunk)
        starts = list(range(start, stop, block))
        pool = shuffle.kind == "buffer"
        if pool and self.table.seekable:
            starts = [starts[i] for i in rng.permutation(len(starts))]
        blocks = (self._span_block(a, min(stop, a + block)) for a in starts)
        if pool:
            yield from shuffle_blocks(blocks, shuffle.size, rng, batches)
        else:
            yield from blocks

    def _span_block(self, a: int, b: int) -> Block:
        cols = {}
        for name, col in self._columns().items():
            cols[name] = read_span(col, a, b)
            release = page_releaser(col)
            if release is not None:
                release(a, b)
        name = self.table.name
        return Block(cols, b - a, origins=Origins.run(name, a, b - a))

    def estimate_nbytes(self, start: int, stop: int | None) -> tuple[int, int]:
        """(bytes of to_numpy's result, 0): from the arrays' shapes, and for variable-length
        columns from their stored sizes."""
        a, b = self.span(start, stop)
        total = self.table.length
        est = sum(_row_bytes(col, total) * (b - a) for col in self._columns().values())
        return int(est), 0


def _row_bytes(col: Any, n: int) -> float:
    if isinstance(col, (Ragged, BytesColumn)):
        return column_nbytes(col) / max(1, n)
    if isinstance(col, (LazyRagged, LazyBytes)):
        values = col.values
        size = getattr(values, "nbytes", None)
        if size is None:
            size = int(np.prod(values.shape)) * np.dtype(values.dtype).itemsize
        return (int(size) + 8 * (n + 1)) / max(1, n)
    dtype = np.dtype(col.dtype)
    itemsize = 64 if dtype.hasobject else dtype.itemsize
    return float(np.prod(col.shape[1:], dtype=np.int64) * itemsize)


def _take(col: Any, order: np.ndarray) -> Any:
    if isinstance(col, np.ndarray):
        return col[order]
    return col.take(order)


def open_array_dataset(
    source: Any, *, key: str | list[str] | None = None, spec: Any = None
) -> ArrayDataset:
    """An ArrayDataset of an array file or folder (opened lazily, reopened per process), an
    ndarray / np.memmap (one column, "x") or a dict of columns."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        table = Table(path, functools.partial(open_arrays, path, key=key))
    else:
        if key is not None:
            raise ValueError("key= picks arrays from a file; for arrays in memory pass a dict")
        columns = source if isinstance(source, Mapping) else {"x": source}
        columns = {str(n): _as_column(n, c) for n, c in columns.items()}
        table = Table(f"<{len(columns)} array{'s' * (len(columns) != 1)}>", columns=columns)
    ds = ArrayDataset(TableSource(table, table.spec))
    if spec is not None:
        names = feature_names(spec)
        missing = [n for n in names if n not in feature_names(table.spec)]
        if missing:
            raise KeyError(
                f"spec names {missing[0]!r}, which the arrays do not hold; they hold "
                f"{', '.join(map(repr, feature_names(table.spec)))}"
            )
        ds = ds.select(names)
    return ds


def _as_column(name: Any, col: Any) -> Any:
    if isinstance(col, (np.ndarray, Ragged, BytesColumn, LazyRagged, LazyBytes)):
        if isinstance(col, np.ndarray) and col.ndim == 0:
            raise ValueError(f"column {name!r} is a 0-d array: there are no rows")
        return col
    if hasattr(col, "shape") and hasattr(col, "dtype"):  # h5py / Zarr arrays
        return col
    if isinstance(col, (list, tuple)):
        if col and all(isinstance(v, (bytes, str)) for v in col):
            return BytesColumn.from_list(col)
        return np.asarray(col)
    raise TypeError(
        f"column {name!r} is a {type(col).__name__}; a column is an ndarray, np.memmap, "
        "h5py / Zarr array, tn.Ragged or tn.BytesColumn"
    )
