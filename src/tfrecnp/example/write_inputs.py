"""Input columns -> what the Example encoder takes, and what each column is written as.

`prepare` turns the columns given to `write` / `Writer.write_batch` into InputColumns, one
adapter per kind of input: an array-like [n, *shape] (numbers, bytes / str, or raw bytes
per row), a BytesColumn, uint8 images to encode as JPEG / PNG, a Ragged, and (in
write_sequence.py) a feature list; lists of per-record values become one of these first.
Each reads rows a..b at a time and hands the compiled encoder its buffers, checking what
the wire format cannot hold (uint64 beyond int64, float64 beyond float32, complex, dates).
`Written` is what a column becomes in the records, merged over batches into the spec that
reads the files back.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._core import encode
from .._util.memory import page_releaser
from .._util.offsets import offsets_of, pack_bytes
from .._util.optional import interop
from .._util.sizing import records_per_batch
from ..errors import SchemaError
from ..format.frames import OVERHEAD_BYTES
from ..images.codecs import encode_images
from .columns import BytesColumn, LazyBytes, LazyRagged, Ragged, check_lengths
from .image import Image
from .spec import FixedLen, Raw, VarLen
from .text import Text
from .write_sequence import SequenceColumn

__all__ = [
    "InputColumn",
    "Written",
    "arrow_columns",
    "arrow_stream",
    "bytes_block",
    "check_encoding",
    "key_order",
    "prepare",
    "rows_of",
    "rows_per_slice",
]

BATCH_BYTES = 2 << 20  # input bytes encoded per call of the core
MAX_BATCH_ROWS = 1 << 17
INT64_MAX = (1 << 63) - 1
ENCODINGS = (None, "list", "raw")
IMAGE_ENCODINGS = ("jpeg", "png")  # "jpeg" takes a quality: "jpeg:90" (default 95)
_BYTES_TYPES = (bytes, bytearray, memoryview, np.bytes_, str, np.str_)


# --- what a column is written as --------------------------------------------------------


@dataclass(frozen=True)
class Written:
    """How a feature is written: form "fixed" (shape per record), "varlen" (shape = inner
    shape), "raw" (shape of the array in each bytes value) or "image" (shape = (channels,));
    dtype a NumPy name or "bytes"; text: bytes written from str (read back as tn.Text).
    `spec()` is the feature that reads it back."""

    form: str
    dtype: str
    shape: tuple[int, ...]
    text: bool = False

    @property
    def wire(self) -> str:
        if self.form == "raw" or self.dtype == "bytes":
            return "bytes_list"
        return "float_list" if np.dtype(self.dtype).kind == "f" else "int64_list"

    def spec(self):
        if self.form == "image":
            return Image(self.shape[0])
        if self.text and self.form in ("fixed", "varlen"):
            return Text(self.shape if self.form == "fixed" else (-1, *self.shape))
        if self.form == "fixed":
            return FixedLen(self.shape, self.dtype)
        if self.form == "varlen":
            return VarLen(self.dtype, self.shape)
        return Raw(self.dtype, self.shape if self.shape != (-1,) else None)

    def merge(self, other: Written, name: str) -> Written:
        """The description covering records written as self and as other (a later batch)."""
        if other == self:
            return self
        if other.text != self.text:  # str in one batch, bytes in another: bytes
            return replace(self, text=False).merge(replace(other, text=False), name)
        if other.wire != self.wire or (other.form in ("raw", "image")) != (
            self.form in ("raw", "image")
        ):
            raise SchemaError(
                f"feature {name!r} was written as {self._say()} but this batch holds "
                f"{other._say()}; one feature keeps one kind in a file (cast the column)"
            )
        if self.form == "image" or other.form == "image":
            raise SchemaError(
                f"feature {name!r} was written as {self._say()} but this batch holds "
                f"{other._say()}; one feature keeps one kind in a file"
            )
        if self.form == "raw":
            if self.dtype != other.dtype:
                raise SchemaError(
                    f"feature {name!r} was written as raw {self.dtype} bytes but this batch "
                    f"holds {other.dtype}; cast the column to {self.dtype}"
                )
            if self.shape[1:] == other.shape[1:] and self.shape and other.shape:
                return Written("raw", self.dtype, (-1, *self.shape[1:]))
            return Written("raw", self.dtype, (-1,))
        dtype = self.dtype
        if dtype != "bytes":
            dtype = np.promote_types(self.dtype, other.dtype).name
            if self.wire == "int64_list" and np.dtype(dtype).kind == "f":
                dtype = "int64"  # int64 + uint64 promote to float64 in NumPy
        if self.form == other.form == "fixed" and self.shape == other.shape:
            return Written("fixed", dtype, self.shape, self.text)
        a, b = self._inner(), other._inner()
        return Written("varlen", dtype, a if a == b and dtype != "bytes" else (), self.text)

    def _inner(self) -> tuple[int, ...]:
        return self.shape if self.form == "varlen" else self.shape[1:]

    def _say(self) -> str:
        if self.form == "image":
            return f"images of {self.shape[0]} channels"
        if self.form == "raw":
            return f"raw {self.dtype} bytes"
        return f"{self.wire} ({self.dtype})"


class InputColumn:
    """One input column: reads rows a..b and hands the encoder its buffers."""

    name: str
    key: bytes
    n: int
    desc: Written
    row_bytes: float

    def feature(self, a: int, b: int) -> tuple:
        """(key, kind, data, value offsets, value stride, row splits, row stride)."""
        raise NotImplementedError

    def release(self, a: int, b: int) -> None:
        """Rows a..b are written: drop what reading them pinned in memory."""


def _unsupported(name: str, dtype: np.dtype) -> SchemaError:
    if dtype.kind == "c":
        hint = (
            f"store {name}.real and {name}.imag as two float features, or pass "
            f"encoding={{{name!r}: 'raw'}} (read back with tn.Raw('{dtype.name}'))"
        )
    elif dtype.kind in "mM":
        hint = f"write {name}.view('int64') and convert back when reading"
    else:
        hint = "convert it to numbers, bytes or str first"
    return SchemaError(
        f"feature {name!r} has dtype {dtype}, which a tf.train.Example cannot hold "
        f"(it holds float32, int64 and bytes lists); {hint}"
    )


def rows_of(first_row: int, per_row: int):
    """Value index -> row number, for columns of per_row values per row."""
    return lambda i: first_row + i // max(1, per_row)


def _ragged_rows_of(first_row: int, splits: np.ndarray):
    """Value index -> row number, for a block of Ragged rows with zero-based splits."""
    return lambda i: first_row + int(np.searchsorted(splits, i, side="right")) - 1


def _check_uint64(name: str, values: np.ndarray, row_of) -> None:
    if values.dtype.kind == "u" and values.dtype.itemsize == 8 and values.size:
        big = values.reshape(-1) > INT64_MAX
        if big.any():
            i = int(np.argmax(big))
            value = int(values.reshape(-1)[i])
            raise SchemaError(
                f"feature {name!r} row {row_of(i)}: uint64 value "
                f"{value} does not fit int64_list (largest {INT64_MAX}); pass "
                f"encoding={{{name!r}: 'raw'}} (read back with tn.Raw('uint64')) or store "
                "it as int64 bits with .view('int64')"
            )


def _numeric(name: str, values: np.ndarray, row_of) -> tuple[int, Any]:
    """(encoder kind, contiguous float32 / int64 values) of a numeric block."""
    if values.dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.ascontiguousarray(values, dtype="<f4").reshape(-1)
        if values.dtype.itemsize > 4:
            # a finite value beyond float32's range would be stored as inf without a word
            inf = np.isinf(out)
            if inf.any():
                flat = values.reshape(-1)
                over = np.flatnonzero(inf & np.isfinite(flat))
                if len(over):
                    i = int(over[0])
                    raise SchemaError(
                        f"feature {name!r} row {row_of(i)}: value {float(flat[i])!r} does not "
                        f"fit float32 (float_list); write it with encoding='raw' to keep "
                        f"{values.dtype.name}"
                    )
        return encode.FLOAT, out
    _check_uint64(name, values, row_of)
    return encode.INT64, np.ascontiguousarray(values, dtype="<i8").reshape(-1)


def bytes_block(name: str, values: np.ndarray, row_of):
    """(data uint8, offsets int64) of an S / U / object / StringDType block, values in
    row-major order."""
    kind = values.dtype.kind
    if kind == "U" or kind == "T":
        values = np.strings.encode(values, "utf-8") if hasattr(np, "strings") else None
        if values is None:  # pragma: no cover (NumPy < 2)
            raise SchemaError(f"feature {name!r}: str columns need NumPy >= 2")
        kind = "S"
    if kind == "S":
        width = values.dtype.itemsize
        flat = values.reshape(-1)
        if width == 0 or flat.size == 0:
            return np.empty(0, np.uint8), np.zeros(flat.size + 1, np.int64)
        u8 = np.ascontiguousarray(flat).view(np.uint8).reshape(flat.size, width)
        nonzero = u8 != 0
        # NumPy's S values drop trailing NUL bytes; so do we.
        lengths = np.where(
            nonzero.any(axis=1), width - np.argmax(nonzero[:, ::-1], axis=1), 0
        ).astype(np.int64)
        data = u8[np.arange(width) < lengths[:, None]]
        return data, offsets_of(lengths)
    items = values.reshape(-1).tolist()
    out = []
    for i, v in enumerate(items):
        if isinstance(v, str):
            v = v.encode("utf-8")
        elif not isinstance(v, (bytes, bytearray, memoryview)):
            raise SchemaError(
                f"feature {name!r} row {row_of(i)} holds {type(v).__name__} value {v!r:.40}; "
                "object columns must hold bytes or str (for lists of numbers pass "
                "tn.Ragged(values, row_splits))"
            )
        out.append(v)
    return pack_bytes(out)


class _ArrayColumn(InputColumn):
    """An array-like [n, *shape]: numbers, or bytes / str, or raw bytes per row."""

    def __init__(self, name: str, arr: Any, raw: bool):
        self.name, self.key, self.arr = name, name.encode("utf-8"), arr
        shape = tuple(int(d) for d in arr.shape)
        if not shape:
            raise SchemaError(f"feature {name!r} is a 0-d array: it has no rows")
        self.n, self.shape = shape[0], shape[1:]
        self.size = math.prod(self.shape)
        dtype = np.dtype(arr.dtype)
        self.dtype = dtype
        if dtype.kind in "SUOT":
            if raw:
                raise SchemaError(
                    f"feature {name!r} holds bytes or str; encoding='raw' applies to numeric "
                    "columns (bytes are written as bytes_list already)"
                )
            self.desc = Written("fixed", "bytes", self.shape, _holds_str(arr))
            self.row_bytes = self.size * (dtype.itemsize if dtype.kind in "SU" else 64)
        elif dtype.kind in "biuf" or (raw and dtype.kind == "c"):
            if raw:
                self.desc = Written("raw", dtype.newbyteorder("=").name, self.shape)
            else:
                self.desc = Written("fixed", dtype.newbyteorder("=").name, self.shape)
            self.row_bytes = self.size * dtype.itemsize
        else:
            raise _unsupported(name, dtype)
        self.raw = raw
        release = page_releaser(arr)
        if release is not None:
            self.release = release

    def feature(self, a: int, b: int) -> tuple:
        block = np.asarray(self.arr[a:b])
        m = b - a
        if self.raw:
            little = self.dtype.newbyteorder("<")
            data = np.ascontiguousarray(block, dtype=little).reshape(-1).view(np.uint8)
            stride = self.size * self.dtype.itemsize
            if stride == 0:
                return (self.key, encode.BYTES, data, np.zeros(m + 1, np.int64), 0, None, 1)
            return (self.key, encode.BYTES, data, None, stride, None, 1)
        if self.desc.dtype == "bytes":
            data, offsets = bytes_block(self.name, block, rows_of(a, self.size))
            return (self.key, encode.BYTES, data, offsets, 0, None, self.size)
        kind, values = _numeric(self.name, block, rows_of(a, self.size))
        return (self.key, kind, values, None, 0, None, self.size)


class _BytesValues(InputColumn):
    """A BytesColumn: one bytes value per record."""

    def __init__(self, name: str, col: BytesColumn):
        self.name, self.key, self.col = name, name.encode("utf-8"), col
        self.n = len(col)
        self.desc = Written("fixed", "bytes", ())
        self.row_bytes = (col.offsets[-1] / self.n) if self.n else 1

    def feature(self, a: int, b: int) -> tuple:
        part = self.col[a:b]
        return (self.key, encode.BYTES, part.data, part.offsets, 0, None, 1)


class _ImageColumn(InputColumn):
    """uint8 [n, h, w, c] (or [n, h, w]) pixels, each row encoded as one JPEG or PNG."""

    def __init__(self, name: str, col: Any, encoding: str):
        fmt, _, quality = encoding.partition(":")
        if fmt not in IMAGE_ENCODINGS or (quality and (fmt != "jpeg" or not quality.isdigit())):
            raise ValueError(
                f"encoding[{name!r}] must be 'jpeg', 'jpeg:QUALITY' (1..100) or 'png', "
                f"not {encoding!r}"
            )
        shape = tuple(int(d) for d in getattr(col, "shape", ()))
        dtype = np.dtype(getattr(col, "dtype", object))
        if (
            dtype != np.uint8
            or len(shape) not in (3, 4)
            or (len(shape) == 4 and shape[3] not in (1, 3, 4))
        ):
            raise SchemaError(
                f"feature {name!r}: encoding {encoding!r} takes uint8 images [n, h, w, c] "
                f"with c 1, 3 or 4, not {dtype} {list(shape)}"
            )
        channels = shape[3] if len(shape) == 4 else 1
        if fmt == "jpeg" and channels == 4:
            raise SchemaError(f"feature {name!r}: JPEG has no alpha channel; use 'png'")
        self.name, self.key, self.col = name, name.encode("utf-8"), col
        self.fmt, self.quality = fmt, int(quality or 95)
        self.n = shape[0]
        self.desc = Written("image", "bytes", (channels,))
        self.row_bytes = math.prod(shape[1:]) / 4  # about what one row encodes to, or less

    def feature(self, a: int, b: int) -> tuple:
        images = np.asarray(self.col[a:b])
        blobs = encode_images(images, self.fmt, quality=self.quality)
        part = BytesColumn.from_list(blobs)
        return (self.key, encode.BYTES, part.data, part.offsets, 0, None, 1)


class _RaggedColumn(InputColumn):
    """A Ragged: each record holds its row's values (numbers or bytes)."""

    def __init__(self, name: str, col: Ragged):
        self.name, self.key, self.col = name, name.encode("utf-8"), col
        self.n = len(col)
        values = col.values
        self.splits = col.row_splits
        if isinstance(values, (Ragged, LazyRagged)):
            raise SchemaError(
                f"feature {name!r} is a Ragged of Ragged rows, which one Example feature "
                "cannot hold; write it as a SequenceExample feature list with "
                f"sequence=[{name!r}], or flatten the inner rows"
            )
        total = int(self.splits[-1]) if len(self.splits) else 0
        if isinstance(values, (BytesColumn, LazyBytes)):
            self.mode, self.inner = "bytes", ()
            self.desc = Written("varlen", "bytes", ())
            nbytes = int(values.offsets[-1])
        else:
            dtype = np.dtype(values.dtype)
            self.inner = tuple(int(d) for d in values.shape[1:])
            if dtype.kind in "SUOT":
                self.mode = "bytes"
                if self.inner:
                    raise SchemaError(
                        f"feature {name!r}: Ragged bytes values must be 1-D, not {values.shape}"
                    )
                self.desc = Written("varlen", "bytes", (), _holds_str(values))
            elif dtype.kind in "biuf":
                self.mode = "numeric"
                if math.prod(self.inner) == 0:
                    raise SchemaError(
                        f"feature {name!r}: Ragged inner shape {self.inner} holds no values"
                    )
                self.desc = Written("varlen", dtype.newbyteorder("=").name, self.inner)
            else:
                raise _unsupported(name, dtype)
            nbytes = total * math.prod(self.inner) * (dtype.itemsize if dtype.kind != "O" else 64)
        self.row_bytes = nbytes / self.n if self.n else 1
        self._release_values = (
            page_releaser(values) if isinstance(values, np.ndarray) and values.ndim else None
        )

    def feature(self, a: int, b: int) -> tuple:
        splits = np.asarray(self.splits[a : b + 1], np.int64)
        v0, v1 = int(splits[0]), int(splits[-1])
        splits = splits - v0
        values = self.col.values
        if isinstance(values, (BytesColumn, LazyBytes)):
            part = values[v0:v1]
            return (self.key, encode.BYTES, part.data, part.offsets, 0, splits, 0)
        block = np.asarray(values[v0:v1])
        if self.mode == "bytes":
            data, offsets = bytes_block(self.name, block, _ragged_rows_of(a, splits))
            return (self.key, encode.BYTES, data, offsets, 0, splits, 0)
        size = math.prod(self.inner)
        scaled = splits * size if size != 1 else splits
        kind, flat = _numeric(self.name, block, _ragged_rows_of(a, scaled))
        return (self.key, kind, flat, None, 0, scaled, 0)

    def release(self, a: int, b: int) -> None:
        if self._release_values is not None:
            self._release_values(int(self.splits[a]), int(self.splits[b]))


def _holds_str(arr: Any) -> bool:
    """Whether a bytes-like column holds str (NumPy str, or an object array whose first
    value is str): written as UTF-8, read back as tn.Text."""
    kind = np.dtype(arr.dtype).kind
    if kind in "UT":
        return True
    if kind != "O" or not getattr(arr, "size", 0) or not isinstance(arr, np.ndarray):
        return False
    return isinstance(arr.reshape(-1)[0], str)


def _column(name: Any, col: Any, raw: bool) -> InputColumn:
    """The InputColumn for one input column."""
    if not isinstance(name, str):
        raise TypeError(f"feature names must be str, not {type(name).__name__} ({name!r})")
    if isinstance(col, Ragged):
        if raw:
            raise SchemaError(
                f"feature {name!r}: encoding='raw' needs fixed-shape rows; a Ragged column is "
                "written as a variable-length list (read back with tn.VarLen)"
            )
        return _RaggedColumn(name, col)
    if isinstance(col, (BytesColumn, LazyBytes)):
        if raw:
            raise SchemaError(f"feature {name!r} holds bytes; encoding='raw' applies to numbers")
        return _BytesValues(name, col)
    if isinstance(col, LazyRagged):  # HDF5 / Zarr output of Dataset.save, read in slices
        if isinstance(col.values, LazyRagged):
            return _RaggedColumn(
                name, Ragged.from_row_splits(col.values, np.asarray(col.row_splits), validate=False)
            )
        return _column(name, Ragged(col.values, np.asarray(col.row_splits)), raw)
    if isinstance(col, (list, tuple)):
        col = _from_rows(name, col)
        if isinstance(col, Ragged):
            return _column(name, col, raw)
    if isinstance(col, (bytes, str)) or not (hasattr(col, "shape") and hasattr(col, "dtype")):
        if np.isscalar(col) or isinstance(col, (bytes, str)):
            raise SchemaError(
                f"feature {name!r} is a single {type(col).__name__}, not a column; give one "
                "entry per record (a list or an array)"
            )
        raise TypeError(
            f"feature {name!r}: {type(col).__name__} is not a column; pass an ndarray, "
            "np.memmap, h5py.Dataset, zarr array, tn.Ragged, tn.BytesColumn or a list"
        )
    return _ArrayColumn(name, col, raw)


def _from_rows(name: str, rows: list | tuple) -> Any:
    """A list of per-record values -> an ndarray (equal shapes), an object array of bytes,
    or a Ragged (rows of different lengths)."""
    if all(isinstance(v, _BYTES_TYPES) for v in rows):
        out = np.empty(len(rows), dtype=object)
        out[:] = [v.tobytes() if isinstance(v, memoryview) else v for v in rows]
        return out
    if any(isinstance(v, _BYTES_TYPES) for v in rows):
        bad = next(type(v).__name__ for v in rows if not isinstance(v, _BYTES_TYPES))
        raise SchemaError(f"feature {name!r} mixes bytes / str with {bad} values")
    if any(_is_bytes_row(v) for v in rows):
        return Ragged.from_list([list(v) for v in rows], dtype="bytes")
    arrays = [np.asarray(v) for v in rows]
    for i, a in enumerate(arrays):
        if a.dtype.kind not in "biuf" and a.size:
            raise SchemaError(
                f"feature {name!r} row {i} holds {type(rows[i]).__name__} of dtype {a.dtype}; "
                "rows must be numbers, arrays of numbers, bytes or str"
            )
    if not arrays:
        return np.empty(0, np.float32)
    shapes = {a.shape for a in arrays}
    if len(shapes) == 1:
        return np.stack(arrays)
    dtype = np.result_type(*[a for a in arrays if a.size] or [arrays[0]])
    if any(a.ndim == 0 for a in arrays):
        raise SchemaError(
            f"feature {name!r} mixes scalars and lists across records; give every record a list"
        )
    return Ragged.from_list(arrays, dtype=dtype)


def _is_bytes_row(v: Any) -> bool:
    return (
        isinstance(v, (list, tuple, np.ndarray)) and len(v) > 0 and isinstance(v[0], _BYTES_TYPES)
    )


def _encodings(encoding: Any, names: Iterable[str]) -> dict[str, Any]:
    """encoding (None, "list", "raw" or a dict of those, or image encodings, per feature)
    -> {name: encoding}."""
    names = list(names)
    if encoding is None or isinstance(encoding, str):
        check_encoding(encoding, "encoding")
        return {n: encoding for n in names}
    if not isinstance(encoding, Mapping):
        raise TypeError(f"encoding must be None, 'list', 'raw' or a dict, not {encoding!r}")
    unknown = [k for k in encoding if k not in names]
    if unknown:
        raise KeyError(
            f"encoding names feature {unknown[0]!r}, which is not among the columns "
            f"({', '.join(map(repr, names))})"
        )
    out = {}
    for n in names:
        check_encoding(encoding.get(n), f"encoding[{n!r}]", images=True)
        out[n] = encoding.get(n)
    return out


def _is_image_encoding(value: Any) -> bool:
    return isinstance(value, str) and value.partition(":")[0] in IMAGE_ENCODINGS


def check_encoding(value: Any, what: str, *, images: bool = False) -> None:
    if images and _is_image_encoding(value):
        return
    if value not in ENCODINGS:
        raise ValueError(f"{what} must be None, 'list' or 'raw', not {value!r}")


def key_order(key: bytes) -> tuple[int, ...]:
    """Sort key of upb's deterministic map order: bytewise, a prefix after its extensions
    (256 sorts above every byte)."""
    return (*key, 256)


def prepare(
    columns: Mapping[str, Any], encoding: Any, sequence: frozenset = frozenset()
) -> tuple[list[InputColumn], int]:
    """The InputColumns of one batch of columns, in the order records hold their keys, and
    their one number of rows; sequence: the names written as feature lists."""
    columns = arrow_columns(columns)
    if not isinstance(columns, Mapping):
        raise TypeError(
            f"columns must be a dict of feature name -> column, not {type(columns).__name__}"
        )
    if not columns:
        raise ValueError("no columns to write: pass a dict of feature name -> column")
    encodings = _encodings(encoding, columns)
    raw = {name: how == "raw" for name, how in encodings.items()}
    missing = sorted(set(sequence) - set(columns))
    if missing:
        raise KeyError(
            f"sequence names feature {missing[0]!r}, which is not among the columns "
            f"({', '.join(map(repr, columns))})"
        )
    cols = [
        SequenceColumn(name, col, _column, raw[name])
        if name in sequence
        else _ImageColumn(name, col, encodings[name])
        if _is_image_encoding(encodings[name])
        else _column(name, col, raw[name])
        for name, col in columns.items()
    ]
    n = check_lengths({c.name: c.n for c in cols})
    cols.sort(key=lambda c: key_order(c.key))
    return cols, n


def arrow_columns(columns: Any) -> Any:
    """A pyarrow Table or RecordBatch (`tfrecnp.interop.arrow.from_arrow`: zero-copy where
    Arrow's layout is NumPy's) or a Hugging Face ``datasets.Dataset``
    (`tfrecnp.interop.hf.hf_columns`) as columns; anything else as it is."""
    module = type(columns).__module__ or ""
    if module.startswith("pyarrow") and hasattr(columns, "column_names"):
        return interop("arrow").from_arrow(columns)
    if module.startswith("datasets.") and hasattr(columns, "features"):
        return interop("hf").hf_columns(columns)
    return columns


def arrow_stream(columns: Any) -> Iterator[Any] | None:
    """The record batches of a ``pyarrow.dataset.Dataset`` or ``RecordBatchReader``, pulled
    one at a time (`tfrecnp.interop.arrow.record_batches`); None for any other input (a
    Table is already in memory: it goes through `arrow_columns` whole, without copies)."""
    if not (type(columns).__module__ or "").startswith("pyarrow"):
        return None
    return interop("arrow").record_batches(columns)


def rows_per_slice(cols: list[InputColumn]) -> int:
    """Rows encoded per call of the core: about BATCH_BYTES of input, frames included."""
    row_bytes = sum(c.row_bytes for c in cols) + OVERHEAD_BYTES
    return records_per_batch(BATCH_BYTES, row_bytes, (1, MAX_BATCH_ROWS))
