"""Columns that are not rectangular: Ragged rows and bytes values.

A batch is ``dict[str, column]`` where a column is one of

- ``np.ndarray`` with the records on the first axis (fixed-shape features);
- `Ragged`: flat ``values`` plus ``row_splits`` (int64, n + 1), row i being
  ``values[row_splits[i]:row_splits[i + 1]]`` -- the layout of tf.RaggedTensor and Arrow
  lists. values is an ndarray [total, *inner_shape], a `BytesColumn`, or another Ragged
  (SequenceExample VarLen features: records -> steps -> values; a VarLen with partitions:
  one level per partition, as tf.RaggedTensor's nested_row_splits);
- `BytesColumn`: one flat uint8 buffer plus ``offsets`` (int64, n + 1), value i being
  ``data[offsets[i]:offsets[i + 1]]``; no Python object per value until asked for.

Both hold their buffers as given (no copy); slicing returns views of values/data with
fresh, zero-based splits or offsets.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .._core import framing
from .._util.offsets import offsets_of, pack_bytes
from ..errors import SchemaError

__all__ = ["BytesColumn", "Column", "Ragged", "concat_columns", "take_column"]


def _as_offsets(offsets: Any, what: str, size: int | None) -> np.ndarray:
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or len(offsets) < 1:
        raise ValueError(f"{what} must be a 1-D array of n + 1 offsets, got shape {offsets.shape}")
    if offsets[0] != 0:
        raise ValueError(f"{what} must start at 0, not {offsets[0]}")
    if len(offsets) > 1 and np.any(offsets[1:] < offsets[:-1]):
        raise ValueError(f"{what} must not decrease")
    if size is not None and offsets[-1] != size:
        raise ValueError(f"{what} ends at {offsets[-1]} but there are {size} values")
    return offsets


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated aranges: starts[k] .. starts[k] + lengths[k], as one int64 array."""
    lengths = np.asarray(lengths, np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, np.int64)
    ends = np.cumsum(lengths)
    shift = np.repeat(np.asarray(starts, np.int64) - (ends - lengths), lengths)
    return np.arange(total, dtype=np.int64) + shift


def _joined_offsets(parts: Sequence[np.ndarray]) -> np.ndarray:
    """The offsets of columns laid end to end, from each one's own offsets."""
    out, base = [np.zeros(1, np.int64)], 0
    for offsets in parts:
        out.append(offsets[1:] + base)
        base += int(offsets[-1])
    return np.concatenate(out)


def _take_rows(indices: Any, n: int) -> np.ndarray:
    """indices (as take() takes them: an int, a list or array, a boolean mask) as row numbers."""
    idx = _index_array(indices, n)
    return np.atleast_1d(np.asarray(indices, np.int64)) if idx is None else idx


def _index_array(index: Any, n: int) -> np.ndarray | None:
    """index as an int64 array of row numbers, or None if it is not an array-like index."""
    if isinstance(index, (slice, int, np.integer)):
        return None
    idx = np.asarray(index)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise IndexError(f"boolean index of shape {idx.shape} for {n} rows")
        return np.flatnonzero(idx)
    if idx.dtype.kind not in "iu" or idx.ndim != 1:
        if idx.size == 0:
            return np.empty(0, np.int64)
        raise IndexError(f"rows must be picked by ints, a slice or a 1-D int array, not {index!r}")
    idx = idx.astype(np.int64)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"row index out of range for {n} rows")
    return np.where(idx < 0, idx + n, idx)


def _row(i: Any, n: int) -> int:
    i = int(i)
    if not -n <= i < n:
        raise IndexError(f"row {i} out of range for {n} rows")
    return i % n


class BytesColumn:
    """n byte strings in one buffer: value i is data[offsets[i]:offsets[i + 1]].

    col[i] -> bytes, col[a:b] -> BytesColumn (sharing data), col[[i, j]] -> BytesColumn,
    to_numpy() -> object ndarray of bytes (what TensorFlow's .numpy() gives for strings).
    """

    __slots__ = ("data", "offsets")

    def __init__(self, data: Any, offsets: Any):
        if isinstance(data, (bytes, bytearray, memoryview)):
            data = np.frombuffer(data, np.uint8)
        data = np.asarray(data)
        if data.dtype != np.uint8 or data.ndim != 1:
            raise ValueError(f"data must be a 1-D uint8 array, not {data.dtype} {data.shape}")
        self.data = data
        self.offsets = _as_offsets(offsets, "offsets", len(data))

    @classmethod
    def from_offsets(cls, data: Any, offsets: Any, *, validate: bool = True) -> BytesColumn:
        """Values cut from data at offsets, as `Ragged.from_row_splits` cuts rows.

        Parameters
        ----------
        data : a 1-D uint8 array (or bytes), the values back to back.
        offsets : n + 1 int64 offsets into data, from 0 to len(data), never decreasing.
        validate : False takes both as they are, unchecked and unconverted: for callers that
            built them and so know them sound (decoders, readers), where checking every batch
            would cost a pass over the offsets.
        """
        if validate:
            return cls(data, offsets)
        self = cls.__new__(cls)
        self.data, self.offsets = data, offsets
        return self

    @classmethod
    def from_list(cls, values: Iterable[bytes | str]) -> BytesColumn:
        """From byte strings (str is UTF-8 encoded)."""
        items = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values]
        data, offsets = pack_bytes(items)
        return cls.from_offsets(data.copy(), offsets, validate=False)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        """Byte length of each value."""
        return np.diff(self.offsets)

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes + self.offsets.nbytes)

    @property
    def dtype(self) -> str:
        return "bytes"

    def rows(self, a: int, b: int) -> BytesColumn:
        """Rows a..b (0 <= a <= b <= len) as a view of the same buffer: no checks, no copy."""
        o = self.offsets
        return BytesColumn.from_offsets(self.data[o[a] : o[b]], o[a : b + 1] - o[a], validate=False)

    def __getitem__(self, index: Any) -> bytes | BytesColumn:
        n = len(self)
        if isinstance(index, (int, np.integer)):
            i = _row(index, n)
            return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()
        if isinstance(index, slice):
            return _slice_rows(self, index)
        return self.take(_index_array(index, n))

    def take(self, indices: Any) -> BytesColumn:
        """The values at the given row numbers, copied into a new column."""
        idx = _take_rows(indices, len(self))
        starts, lengths = self.offsets[idx], self.offsets[idx + 1] - self.offsets[idx]
        offsets = offsets_of(lengths)
        data = np.empty(int(offsets[-1]), np.uint8)
        framing.gather_ranges(np.ascontiguousarray(self.data), starts, lengths, data)
        return BytesColumn.from_offsets(data, offsets, validate=False)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.to_list())

    def to_list(self) -> list[bytes]:
        # one copy of the buffer as bytes, then slices made in C: no Python loop per value
        raw = self.data.tobytes()
        bounds = self.offsets.tolist()
        return list(map(raw.__getitem__, map(slice, bounds[:-1], bounds[1:])))

    def to_numpy(self) -> np.ndarray:
        """An object ndarray of bytes, one per value."""
        o = self.offsets
        width = int(o[1] - o[0]) if len(o) > 1 else 0
        if width and int(o[-1] - o[0]) == width * (len(o) - 1) and np.all(np.diff(o) == width):
            # values of one length: NumPy makes the bytes objects itself, about 5x faster
            fixed = self.data[int(o[0]) : int(o[-1])]
            return np.frombuffer(fixed.tobytes(), dtype=f"V{width}").astype(object)
        out = np.empty(len(self), dtype=object)
        out[:] = self.to_list()
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BytesColumn):
            return NotImplemented
        return np.array_equal(self.offsets, other.offsets) and np.array_equal(self.data, other.data)

    __hash__ = None  # mutable buffers

    @classmethod
    def concat(cls, columns: Sequence[BytesColumn]) -> BytesColumn:
        """One column holding the values of all the columns, in order."""
        if not columns:
            return cls.from_offsets(np.empty(0, np.uint8), np.zeros(1, np.int64), validate=False)
        if len(columns) == 1:
            return columns[0]
        data = np.concatenate([c.data for c in columns])
        return cls.from_offsets(data, _joined_offsets([c.offsets for c in columns]), validate=False)

    def __repr__(self) -> str:
        n = len(self)
        head = ", ".join(repr(self[i][:20]) for i in range(min(n, 3)))
        more = ", ..." if n > 3 else ""
        return f"BytesColumn([{head}{more}], n={n}, bytes={len(self.data)})"


Values = np.ndarray | BytesColumn


class Ragged:
    """Rows of varying length: row i is values[row_splits[i]:row_splits[i + 1]].

    values is an ndarray [total, *inner_shape], a BytesColumn, or a Ragged (nested rows).
    r[i] -> the row (an ndarray; object ndarray of bytes for bytes values; a Ragged for
    nested ones); r[a:b] -> Ragged; to_padded() -> a dense ndarray; to_list() -> lists.
    """

    __slots__ = ("row_splits", "values")

    def __init__(self, values: Any, row_splits: Any):
        if not isinstance(values, (BytesColumn, Ragged)):
            values = np.asarray(values)
            if values.ndim == 0:
                raise ValueError("Ragged values must have at least one axis")
        self.values = values
        self.row_splits = _as_offsets(row_splits, "row_splits", len(values))

    @classmethod
    def from_row_splits(cls, values: Any, row_splits: Any, *, validate: bool = True) -> Ragged:
        """Rows cut from values at row_splits, as tf.RaggedTensor.from_row_splits.

        Parameters
        ----------
        values : an ndarray [total, *inner_shape], a BytesColumn, or a Ragged.
        row_splits : n + 1 int64 offsets into values, from 0 to len(values), never decreasing.
        validate : False takes both as they are, unchecked and unconverted: for callers that
            built them and so know them sound (decoders, readers), where checking every batch
            would cost a pass over the splits.
        """
        if validate:
            return cls(values, row_splits)
        self = cls.__new__(cls)
        self.values, self.row_splits = values, row_splits
        return self

    @classmethod
    def from_nested_row_splits(
        cls, flat_values: Any, nested_row_splits: Sequence[Any], *, validate: bool = True
    ) -> Ragged:
        """Rows of rows, as tf.RaggedTensor.from_nested_row_splits: the outermost splits
        first, each cutting the rows the next one makes (the last cuts flat_values).

        Parameters
        ----------
        flat_values : an ndarray [total, *inner_shape] or a BytesColumn.
        nested_row_splits : one or more int64 splits, outermost first.
        validate : False takes the splits as they are, unchecked (see from_row_splits).
        """
        if not len(nested_row_splits):
            raise ValueError("from_nested_row_splits needs at least one row_splits")
        out = flat_values
        for splits in reversed(nested_row_splits):
            out = cls.from_row_splits(out, splits, validate=validate)
        return out

    @property
    def ragged_rank(self) -> int:
        """Ragged levels: 1, plus the values' when they are Ragged (tf.RaggedTensor's)."""
        return 1 + (self.values.ragged_rank if isinstance(self.values, Ragged) else 0)

    @property
    def nested_row_splits(self) -> tuple[np.ndarray, ...]:
        """The row splits of every level, outermost first (tf.RaggedTensor's)."""
        splits, v = [self.row_splits], self.values
        while isinstance(v, Ragged):
            splits.append(v.row_splits)
            v = v.values
        return tuple(splits)

    @property
    def flat_values(self) -> Any:
        """The values below every ragged level: an ndarray or a BytesColumn."""
        v = self.values
        while isinstance(v, Ragged):
            v = v.values
        return v

    @classmethod
    def from_lengths(cls, values: Any, lengths: Any) -> Ragged:
        """Rows of the given lengths, cut from values in order."""
        lengths = np.asarray(lengths, np.int64)
        if lengths.ndim != 1 or (lengths.size and lengths.min() < 0):
            raise ValueError("lengths must be a 1-D array of counts >= 0")
        return cls(values, offsets_of(lengths))

    @classmethod
    def from_list(cls, rows: Iterable[Any], dtype: Any = None) -> Ragged:
        """From a list of rows (arrays, lists, or lists of bytes)."""
        rows = list(rows)
        if dtype == "bytes" or (
            dtype is None
            and any(len(r) for r in rows)
            and isinstance(next(v for r in rows for v in r), (bytes, str))
        ):
            values = BytesColumn.from_list(v for r in rows for v in r)
            return cls.from_lengths(values, [len(r) for r in rows])
        if dtype is None:
            dtype = next((np.asarray(r).dtype for r in rows if len(r)), None)
        arrays = [np.asarray(r, dtype=dtype) for r in rows]
        if arrays:
            inner = next((a.shape[1:] for a in arrays if a.size), arrays[0].shape[1:])
            arrays = [a.reshape((-1, *inner)) if a.size == 0 else a for a in arrays]
        values = np.concatenate(arrays) if arrays else np.empty(0, dtype or np.float64)
        return cls.from_lengths(values, [len(a) for a in arrays])

    def __len__(self) -> int:
        return len(self.row_splits) - 1

    @property
    def lengths(self) -> np.ndarray:
        """Number of items in each row."""
        return np.diff(self.row_splits)

    @property
    def dtype(self) -> Any:
        """The values' dtype ("bytes" for byte strings)."""
        return self.values.dtype

    @property
    def inner_shape(self) -> tuple[int, ...]:
        """Shape of each item of a row (values.shape[1:]); () for bytes or nested rows."""
        return self.values.shape[1:] if isinstance(self.values, np.ndarray) else ()

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes + self.row_splits.nbytes)

    def rows(self, a: int, b: int) -> Ragged:
        """Rows a..b (0 <= a <= b <= len): a view of the values and rebased row splits."""
        s = self.row_splits
        lo = s[a]
        return Ragged.from_row_splits(
            slice_column(self.values, int(lo), int(s[b])), s[a : b + 1] - lo, validate=False
        )

    def __getitem__(self, index: Any) -> Any:
        n = len(self)
        if isinstance(index, (int, np.integer)):
            i = _row(index, n)
            row = self.values[self.row_splits[i] : self.row_splits[i + 1]]
            return row.to_numpy() if isinstance(row, BytesColumn) else row
        if isinstance(index, slice):
            return _slice_rows(self, index)
        return self.take(_index_array(index, n))

    def take(self, indices: Any) -> Ragged:
        """The rows at the given row numbers, copied into a new Ragged."""
        idx = _take_rows(indices, len(self))
        starts = self.row_splits[idx]
        lengths = self.row_splits[idx + 1] - starts
        splits = offsets_of(lengths)
        picked = _ranges(starts, lengths)
        values = (
            self.values.take(picked)
            if not isinstance(self.values, np.ndarray)
            else self.values[picked]
        )
        return Ragged.from_row_splits(values, splits, validate=False)

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def to_list(self) -> list:
        """Nested Python lists (bytes values stay bytes)."""
        splits = self.row_splits.tolist()
        flat = (
            self.values.to_list()
            if not isinstance(self.values, np.ndarray)
            else self.values.tolist()
        )
        return [flat[splits[k] : splits[k + 1]] for k in range(len(splits) - 1)]

    def to_numpy(self) -> np.ndarray:
        """An object ndarray of the rows (each an ndarray), like a tf.RaggedTensor's
        .numpy(); to_padded() gives one dense array instead."""
        out = np.empty(len(self), dtype=object)
        for k, row in enumerate(self):
            out[k] = row
        return out

    def to_padded(self, length: int | None = None, value: Any = 0) -> np.ndarray:
        """A dense [n, length, *inner_shape] array: rows cut to length (default: the longest
        row) and padded with value. Bytes values give an object array padded with b"".
        Rows of rows are padded level by level, each inner level to its longest row in the
        whole column (tf.RaggedTensor.to_tensor); length applies to the outermost."""
        if isinstance(self.values, Ragged):
            inner = self.values.to_padded(None, value)
            return Ragged.from_row_splits(inner, self.row_splits, validate=False).to_padded(
                length, value
            )
        lens = self.lengths
        width = int(lens.max(initial=0)) if length is None else int(length)
        if width < 0:
            raise ValueError(f"length must be >= 0, not {length}")
        n = len(self)
        keep = np.minimum(lens, width)
        rows = np.repeat(np.arange(n, dtype=np.int64), keep)
        src = _ranges(self.row_splits[:-1], keep)
        cols = src - np.repeat(self.row_splits[:-1], keep)
        if isinstance(self.values, BytesColumn) or self.values.dtype == object:
            out = np.empty((n, width, *self.inner_shape), dtype=object)
            out.fill(b"" if isinstance(value, int) and value == 0 else value)
            if isinstance(self.values, np.ndarray):
                out[rows, cols] = self.values[src]
                return out
            out[rows, cols] = self.values.take(src).to_numpy()
            return out
        out = np.full((n, width, *self.inner_shape), value, dtype=self.values.dtype)
        out[rows, cols] = self.values[src]
        return out

    def __eq__(self, other: object) -> bool:
        """Same row splits and equal values (NaN equal to NaN)."""
        if not isinstance(other, Ragged):
            return NotImplemented
        if not np.array_equal(self.row_splits, other.row_splits):
            return False
        a, b = self.values, other.values
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return a.shape == b.shape and bool(
                np.array_equal(a, b, equal_nan=a.dtype.kind in "fc" and b.dtype.kind in "fc")
            )
        return type(a) is type(b) and a == b

    __hash__ = None

    @classmethod
    def concat(cls, columns: Sequence[Ragged]) -> Ragged:
        """One Ragged holding the rows of all the given ones, in order."""
        if not columns:
            raise ValueError("Ragged.concat needs at least one Ragged")
        if len(columns) == 1:
            return columns[0]
        first = columns[0].values
        if isinstance(first, np.ndarray):
            shapes = {c.inner_shape for c in columns}
            if len(shapes) > 1:
                raise ValueError(f"cannot concatenate Ragged with inner shapes {sorted(shapes)}")
        values = concat_columns([c.values for c in columns])
        splits = _joined_offsets([c.row_splits for c in columns])
        return cls.from_row_splits(values, splits, validate=False)

    def __repr__(self) -> str:
        v = self.values
        what = (
            f"{v.dtype} values {v.shape}"
            if isinstance(v, np.ndarray)
            else f"{type(v).__name__} of {len(v)}"
        )
        return f"Ragged({len(self)} rows, {what})"


Column = np.ndarray | Ragged | BytesColumn


def _slice_rows(column: BytesColumn | Ragged, index: slice) -> BytesColumn | Ragged:
    """column[index] for a slice: a view (rows) when the step is 1, else a copy (take)."""
    start, stop, step = index.indices(len(column))
    if step != 1:
        return column.take(np.arange(start, stop, step))
    return column.rows(start, max(start, stop))


def concat_columns(columns: Sequence[Column]) -> Column:
    """Concatenate columns of one kind along the record axis."""
    first = columns[0]
    if isinstance(first, Ragged):
        return Ragged.concat(columns)
    if isinstance(first, BytesColumn):
        return BytesColumn.concat(columns)
    if len(columns) == 1:
        return first
    if len({c.shape[1:] for c in columns}) > 1:  # rows of different shapes: images of
        return np.concatenate([_object_rows(c) for c in columns])  # many sizes (tn.Image)
    return np.concatenate(columns)


def _object_rows(column: np.ndarray) -> np.ndarray:
    """A column as an object array of its rows (an object column already is one)."""
    if column.dtype == object and column.ndim == 1:
        return column
    out = np.empty(len(column), object)
    out[:] = list(column)
    return out


def slice_column(column: Any, a: int, b: int) -> Any:
    """Rows a..b (0 <= a <= b <= len) of a column, as a view where the kind allows: the
    per-batch step of serving batches out of decoded blocks."""
    if isinstance(column, np.ndarray):
        return column[a:b]
    rows = getattr(column, "rows", None)
    return rows(a, b) if rows is not None else column[a:b]


def take_column(column: Column, indices: Any) -> Column:
    """The rows of a column at the given row numbers."""
    if isinstance(column, np.ndarray):
        return column[np.asarray(indices, np.int64)]
    return column.take(indices)


def check_lengths(lengths: Mapping[str, int], what: str = "columns") -> int:
    """The one value of lengths (name -> rows); SchemaError naming each if they differ."""
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{name!r} has {n}" for name, n in lengths.items())
        raise SchemaError(
            f"{what} have different lengths: {listed} rows; every column needs one entry "
            "per record (same first dimension)"
        )
    return next(iter(lengths.values()), 0)


class _LazyColumn:
    """A variable-length column still on disk (HDF5 / Zarr): values plus n + 1 splits.

    It answers what the in-memory kinds answer (the column protocol: len, [i], [a:b],
    iteration, lengths, to_list, to_numpy, ==; to_padded for Ragged), reading from the
    store only what each call needs: [i] and [a:b] read those rows, iteration reads
    ITER_ROWS rows at a time, and the whole-column calls read the column once."""

    ITER_ROWS = 4096

    def __init__(self, values: Any, splits: Any):
        self.values = values
        self._splits = splits

    def __len__(self) -> int:
        return int(self._splits.shape[0]) - 1

    def __getitem__(self, index: Any) -> Any:
        n = len(self)
        if isinstance(index, (int, np.integer)):
            i = int(index) + n if index < 0 else int(index)
            if not 0 <= i < n:
                raise IndexError(f"row {index} out of range for {n} rows")
            return self[i : i + 1][0]
        if not isinstance(index, slice) or index.indices(n)[2] != 1:
            if isinstance(index, slice):
                return self.take(np.arange(*index.indices(n)))
            return self.take(index)
        a, b, _ = index.indices(n)
        splits = np.asarray(self._splits[a : max(a, b) + 1], np.int64)
        return self._rows(self.values[int(splits[0]) : int(splits[-1])], splits - splits[0])

    def _rows(self, values: Any, splits: np.ndarray) -> Any:
        raise NotImplementedError

    def take(self, indices: Any) -> Any:
        """The rows at the given row numbers (or a boolean mask), as an in-memory column:
        reads the span from the first to the last row asked for, once."""
        n = len(self)
        idx = _index_array(indices, n)
        if idx is None:
            idx = np.atleast_1d(np.asarray(indices, np.int64))
        if not len(idx):
            return self[0:0]
        lo = int(idx.min())
        return self[lo : int(idx.max()) + 1].take(idx - lo)

    def __iter__(self) -> Iterator[Any]:
        for a in range(0, len(self), self.ITER_ROWS):
            yield from self[a : a + self.ITER_ROWS]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(np.asarray(self._splits[:], np.int64))

    def to_list(self) -> list:
        return self[:].to_list()

    def to_numpy(self) -> np.ndarray:
        return self[:].to_numpy()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _LazyColumn):
            other = other[:]
        return self[:] == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} rows)"


class LazyBytes(_LazyColumn):
    """A bytes column on disk: [i] -> bytes, [a:b] -> BytesColumn."""

    @property
    def offsets(self) -> Any:
        return self._splits

    @property
    def dtype(self) -> str:
        return "bytes"

    def _rows(self, values: Any, splits: np.ndarray) -> BytesColumn:
        return BytesColumn(np.asarray(values, np.uint8), splits)


class LazyRagged(_LazyColumn):
    """A Ragged column on disk: [i] -> the row, [a:b] -> Ragged."""

    @property
    def row_splits(self) -> Any:
        return self._splits

    @property
    def dtype(self) -> Any:
        """The values' dtype ("bytes" for byte strings), as Ragged.dtype."""
        return self.values.dtype

    @property
    def inner_shape(self) -> tuple[int, ...]:
        """Shape of each item of a row; () for bytes or nested rows, as Ragged.inner_shape."""
        if isinstance(self.values, (_LazyColumn, Ragged, BytesColumn)):
            return ()
        return tuple(int(d) for d in self.values.shape[1:])

    def _rows(self, values: Any, splits: np.ndarray) -> Ragged:
        if not isinstance(values, (Ragged, BytesColumn)):
            values = np.asarray(values)
        return Ragged(values, splits)

    def to_padded(self, length: int | None = None, value: Any = 0) -> np.ndarray:
        return self[:].to_padded(length, value)
