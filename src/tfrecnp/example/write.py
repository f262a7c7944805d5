"""Columns -> TFRecord files of tf.train.Example: `write`, `Writer`, `convert`.

A column is anything with one entry per record along its first axis: np.ndarray,
np.memmap, h5py.Dataset, zarr array, `Ragged`, `BytesColumn`, or a list of bytes / str /
lists. Columns are read a slice of rows at a time (about 2 MiB), encoded by the compiled
core in one call per slice (GIL released), framed into a reused buffer and written by a
background thread while the next slice is encoded; memory stays bounded by a few slices,
never by the data. What each column becomes:

=============================  ====================================  =========================
column                         in each record                        read back with
=============================  ====================================  =========================
float16/32/64 [n, *shape]      float_list of prod(shape) float32s    FixedLen(shape, dtype)
bool, int8 .. int64, uint*     int64_list (packed varints)           FixedLen(shape, dtype)
bytes / str [n, *shape]        bytes_list of prod(shape) values      Bytes() / FixedLen(shape,
                                                                     "bytes")
Ragged                         the row's values, any number          VarLen(dtype, inner_shape)
BytesColumn                    bytes_list of one value               Bytes()
numbers, encoding="raw"        one bytes value: the row's raw        Raw(dtype, shape)
                               little-endian bytes
uint8 [n, h, w, c], encoding   one bytes value: the image encoded    Image(c)
"jpeg" / "jpeg:Q" / "png"      (Pillow; JPEG quality Q, default 95)
=============================  ====================================  =========================

float_list holds float32: float64 values are rounded, and finite ones beyond float32's
range are refused (encoding="raw" keeps them exact).
str is written as UTF-8 and reads back as bytes. Feature keys are written in one fixed
order, so equal inputs give equal bytes: the order of ``SerializeToString(deterministic=True)``
in Python TensorFlow (protobuf's upb runtime), which is bytewise except that a key comes
after the keys it is a prefix of ("ab" before "a"). Each record is byte-identical to that.

Files appear only when complete: shards are written under hidden temporary names and
renamed when the writer closes cleanly (after `verify`, if asked); an exception removes
them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core import encode, framing
from .._util import fs
from .._util.atomic import CloseOrAbort, deferred_interrupt, naming_write_errors, require_folder
from .._util.memory import page_releaser
from .._util.progress import Progress
from .._util.text import format_count
from ..errors import SchemaError, TFRecordError
from ..format.compression import normalize_compression
from ..format.index import index_path
from ..format.reader import RecordReader
from ..format.writer import RecordWriter, check_index_option
from .columns import BytesColumn, LazyBytes, LazyRagged, Ragged, check_lengths
from .image import Image, encode_images
from .spec import FixedLen, Raw, Sequence, VarLen
from .write_sequence import SequenceColumn, encode_sequence_examples

__all__ = ["WriteResult", "Writer", "write"]

BATCH_BYTES = 2 << 20  # input bytes encoded per call of the core
MAX_BATCH_ROWS = 1 << 17
EXAMPLE_BUFFER = 1024  # write_example: records gathered before they are encoded together
INT64_MAX = (1 << 63) - 1
ENCODINGS = (None, "list", "raw")
IMAGE_ENCODINGS = ("jpeg", "png")  # "jpeg" takes a quality: "jpeg:90" (default 95)
_BYTES_TYPES = (bytes, bytearray, memoryview, np.bytes_, str, np.str_)


class WriteResult(tuple):
    """What `write` returns: ``(paths, spec)``, plus ``.records`` written and ``.bytes``
    (the files' size on disk)."""

    paths: list[str]
    spec: dict
    records: int
    bytes: int

    def __new__(cls, paths: list[str], spec: dict, records: int, nbytes: int):
        self = super().__new__(cls, (paths, spec))
        self.paths, self.spec, self.records, self.bytes = paths, spec, records, nbytes
        return self

    def __reduce__(self) -> tuple:
        return (type(self), (self.paths, self.spec, self.records, self.bytes))

    def __repr__(self) -> str:
        return (
            f"WriteResult(paths={self.paths!r}, spec={self.spec!r}, records={self.records}, "
            f"bytes={self.bytes})"
        )


# --- what a column is written as --------------------------------------------------------


@dataclass(frozen=True)
class _Desc:
    """How a feature is written: form "fixed" (shape per record), "varlen" (shape = inner
    shape) or "raw" (shape of the array in each bytes value); dtype a NumPy name or "bytes".
    """

    form: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def wire(self) -> str:
        if self.form == "raw" or self.dtype == "bytes":
            return "bytes_list"
        return "float_list" if np.dtype(self.dtype).kind == "f" else "int64_list"

    def spec(self):
        if self.form == "image":
            return Image(self.shape[0])
        if self.form == "fixed":
            return FixedLen(self.shape, self.dtype)
        if self.form == "varlen":
            return VarLen(self.dtype, self.shape)
        return Raw(self.dtype, self.shape if self.shape != (-1,) else None)

    def merge(self, other: _Desc, name: str) -> _Desc:
        """The description covering records written as self and as other (a later batch)."""
        if other == self:
            return self
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
                return _Desc("raw", self.dtype, (-1, *self.shape[1:]))
            return _Desc("raw", self.dtype, (-1,))
        dtype = self.dtype
        if dtype != "bytes":
            dtype = np.promote_types(self.dtype, other.dtype).name
            if self.wire == "int64_list" and np.dtype(dtype).kind == "f":
                dtype = "int64"  # int64 + uint64 promote to float64 in NumPy
        if self.form == other.form == "fixed" and self.shape == other.shape:
            return _Desc("fixed", dtype, self.shape)
        a, b = self._inner(), other._inner()
        return _Desc("varlen", dtype, a if a == b and dtype != "bytes" else ())

    def _inner(self) -> tuple[int, ...]:
        return self.shape if self.form == "varlen" else self.shape[1:]

    def _say(self) -> str:
        if self.form == "image":
            return f"images of {self.shape[0]} channels"
        if self.form == "raw":
            return f"raw {self.dtype} bytes"
        return f"{self.wire} ({self.dtype})"


class _Column:
    """One input column: reads rows a..b and hands the encoder its buffers."""

    name: str
    key: bytes
    n: int
    desc: _Desc
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


def _rows_of(first_row: int, per_row: int):
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


def _bytes_block(name: str, values: np.ndarray, row_of):
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
        offsets = np.zeros(flat.size + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = u8[np.arange(width) < lengths[:, None]]
        return data, offsets
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
    lengths = np.fromiter(map(len, out), np.int64, len(out))
    offsets = np.zeros(len(out) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return np.frombuffer(b"".join(out), np.uint8), offsets


class _ArrayColumn(_Column):
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
            self.desc = _Desc("fixed", "bytes", self.shape)
            self.row_bytes = self.size * (dtype.itemsize if dtype.kind in "SU" else 64)
        elif dtype.kind in "biuf" or (raw and dtype.kind == "c"):
            if raw:
                self.desc = _Desc("raw", dtype.newbyteorder("=").name, self.shape)
            else:
                self.desc = _Desc("fixed", dtype.newbyteorder("=").name, self.shape)
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
            data, offsets = _bytes_block(self.name, block, _rows_of(a, self.size))
            return (self.key, encode.BYTES, data, offsets, 0, None, self.size)
        kind, values = _numeric(self.name, block, _rows_of(a, self.size))
        return (self.key, kind, values, None, 0, None, self.size)


class _BytesValues(_Column):
    """A BytesColumn: one bytes value per record."""

    def __init__(self, name: str, col: BytesColumn):
        self.name, self.key, self.col = name, name.encode("utf-8"), col
        self.n = len(col)
        self.desc = _Desc("fixed", "bytes", ())
        self.row_bytes = (col.offsets[-1] / self.n) if self.n else 1

    def feature(self, a: int, b: int) -> tuple:
        part = self.col[a:b]
        return (self.key, encode.BYTES, part.data, part.offsets, 0, None, 1)


class _ImageColumn(_Column):
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
        self.desc = _Desc("image", "bytes", (channels,))
        self.row_bytes = math.prod(shape[1:]) / 4  # about what one row encodes to, or less

    def feature(self, a: int, b: int) -> tuple:
        images = np.asarray(self.col[a:b])
        blobs = encode_images(images, self.fmt, quality=self.quality)
        part = BytesColumn.from_list(blobs)
        return (self.key, encode.BYTES, part.data, part.offsets, 0, None, 1)


class _RaggedColumn(_Column):
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
            self.desc = _Desc("varlen", "bytes", ())
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
                self.desc = _Desc("varlen", "bytes", ())
            elif dtype.kind in "biuf":
                self.mode = "numeric"
                if math.prod(self.inner) == 0:
                    raise SchemaError(
                        f"feature {name!r}: Ragged inner shape {self.inner} holds no values"
                    )
                self.desc = _Desc("varlen", dtype.newbyteorder("=").name, self.inner)
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
            data, offsets = _bytes_block(self.name, block, _ragged_rows_of(a, splits))
            return (self.key, encode.BYTES, data, offsets, 0, splits, 0)
        size = math.prod(self.inner)
        scaled = splits * size if size != 1 else splits
        kind, flat = _numeric(self.name, block, _ragged_rows_of(a, scaled))
        return (self.key, kind, flat, None, 0, scaled, 0)

    def release(self, a: int, b: int) -> None:
        if self._release_values is not None:
            self._release_values(int(self.splits[a]), int(self.splits[b]))


def _column(name: Any, col: Any, raw: bool) -> _Column:
    """The _Column for one input column."""
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
            return _RaggedColumn(name, Ragged._trusted(col.values, np.asarray(col.row_splits)))
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
        _check_encoding(encoding, "encoding")
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
        _check_encoding(encoding.get(n), f"encoding[{n!r}]", images=True)
        out[n] = encoding.get(n)
    return out


def _is_image_encoding(value: Any) -> bool:
    return isinstance(value, str) and value.partition(":")[0] in IMAGE_ENCODINGS


def _check_encoding(value: Any, what: str, *, images: bool = False) -> None:
    if images and _is_image_encoding(value):
        return
    if value not in ENCODINGS:
        raise ValueError(f"{what} must be None, 'list' or 'raw', not {value!r}")


def key_order(key: bytes) -> tuple[int, ...]:
    """Sort key of upb's deterministic map order: bytewise, a prefix after its extensions
    (256 sorts above every byte)."""
    return (*key, 256)


def _prepare(
    columns: Mapping[str, Any], encoding: Any, sequence: frozenset = frozenset()
) -> tuple[list[_Column], int]:
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


# --- the writer ----------------------------------------------------------------------------


def shard_name(path: str, shard: int, shards: int) -> str:
    """TensorFlow's shard naming: out/data.tfrecord -> out/data-00002-of-00008.tfrecord."""
    root, ext = os.path.splitext(path)
    width = max(5, len(str(shards)))
    return fs.like(path, f"{root}-{shard:0{width}d}-of-{shards:0{width}d}{ext}")


class Writer(CloseOrAbort):
    """Streams batches of columns (or single examples) into TFRecord files of
    tf.train.Example.

    Use as a context manager: files appear under their final names only when the block
    ends without an exception. With records_per_shard, shards are named like TensorFlow's
    (``data-00000-of-00008.tfrecord``), the count known at close. `spec` describes what was
    written (the spec that reads it back); `paths` lists the files after close.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        encoding: str | Mapping[str, str | None] | None = None,
        compression: str | None = None,
        records_per_shard: int | None = None,
        index: bool = False,
        progress: bool = True,
        verify: bool = False,
        sequence: Iterable[str] | None = None,
        storage_options: dict | None = None,
    ):
        self.path = fs.resolve(path, storage_options)
        if isinstance(sequence, str):
            raise TypeError(f"sequence takes a list of column names, not a str ({sequence!r})")
        self.sequence = frozenset(sequence or ())
        if self.path.endswith(("/", os.sep)) or fs.isdir(self.path):
            raise IsADirectoryError(
                f"{self.path} is a folder; give a file name such as "
                f"{fs.join(self.path.rstrip('/' + os.sep), 'data.tfrecord')}"
            )
        self.compression = normalize_compression(compression, allow_auto=False)
        if records_per_shard is not None and (
            not isinstance(records_per_shard, (int, np.integer)) or records_per_shard < 1
        ):
            raise ValueError(f"records_per_shard must be a positive int, not {records_per_shard!r}")
        check_index_option(index, self.compression)
        if isinstance(encoding, Mapping):
            for k, v in encoding.items():
                _check_encoding(v, f"encoding[{k!r}]", images=True)
        else:
            _check_encoding(encoding, "encoding")
        self.encoding = encoding
        self.records_per_shard = records_per_shard
        self.index = index
        self.verify = verify
        self.records = 0
        self.bytes = 0
        self.paths: list[str] = []
        self._descs: dict[str, _Desc] = {}
        self._order: list[str] | None = None
        self._shards: list[RecordWriter] = []  # all finished but the last, none published
        self._checksums: list[int] = []  # crc32c of each shard's payloads, when verifying
        self._payloads = np.empty(0, np.uint8)  # the encoder's output, reused per batch
        self._pending: list[dict] = []
        self._dir, self._base = fs.split(self.path)
        self._progress = Progress(f"writing {self.path}", enabled=progress)
        self._expected: list[tuple[list[_Column], int]] = []
        self.closed = False
        require_folder(self.path)

    # public --------------------------------------------------------------------------

    @property
    def spec(self) -> dict | Sequence:
        """The spec that reads back what was written so far: {name: FixedLen | VarLen | Raw},
        or a tn.Sequence when some columns were written as feature lists."""
        spec = {name: self._descs[name].spec() for name in sorted(self._descs)}
        if not self.sequence:
            return spec
        context = {k: v for k, v in spec.items() if k not in self.sequence}
        return Sequence(context, {k: v for k, v in spec.items() if k in self.sequence})

    def write_batch(self, columns: Mapping[str, Any]) -> None:
        """Append one record per row of the columns (a dict of equal-length columns)."""
        self._check_open()
        self._flush_examples()
        cols, n = _prepare(columns, self._encoding_for(columns), self.sequence)
        self._write_columns(cols, n)

    def write_example(self, example: Mapping[str, Any]) -> None:
        """Append one record from a dict of values (numbers, arrays, lists, bytes, str).
        Records are gathered and encoded together, so this is fast enough for loops."""
        self._check_open()
        if not isinstance(example, Mapping) or not example:
            raise TypeError("write_example takes a non-empty dict of feature name -> value")
        if self._pending and example.keys() != self._pending[0].keys():
            self._mismatched_keys(set(self._pending[0]), set(example))
        self._pending.append(example)
        if len(self._pending) >= EXAMPLE_BUFFER:
            self._flush_examples()

    def close(self) -> None:
        """Finish the files: flush, verify (if asked), move into place, write indexes."""
        if self.closed:
            return
        try:
            self._flush_examples()
            if not self._shards:
                self._open_shard()
            self._shards[-1].finish()
            self._progress.close()
            if self.verify:
                self._verify()
            self._publish()
        except BaseException:
            self.abort()
            raise
        self.closed = True

    def abort(self) -> None:
        """Drop everything written; no file appears."""
        if self.closed:
            return
        self.closed = True
        self._progress.close()
        for shard in self._shards:
            shard.abort()

    # internals -------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError(f"writer for {self.path} is closed")

    def _encoding_for(self, columns: Mapping[str, Any]) -> Any:
        if isinstance(self.encoding, Mapping):
            return {k: v for k, v in self.encoding.items() if k in columns}
        return self.encoding

    def _mismatched_keys(self, before: set, now: set) -> None:
        missing, extra = sorted(before - now), sorted(now - before)
        parts = []
        if missing:
            parts.append(f"lacks {', '.join(map(repr, missing))}")
        if extra:
            parts.append(f"adds {', '.join(map(repr, extra))}")
        raise SchemaError(
            f"this batch {' and '.join(parts)}: every record of a file needs the same "
            f"features (the first had {', '.join(map(repr, sorted(before)))})"
        )

    def _flush_examples(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        columns = {name: [ex[name] for ex in pending] for name in pending[0]}
        cols, n = _prepare(columns, self._encoding_for(columns), self.sequence)
        self._write_columns(cols, n)

    def _write_columns(self, cols: list[_Column], n: int, *, track: bool = True) -> None:
        names = [c.name for c in cols]
        if self._order is not None and set(names) != set(self._order):
            self._mismatched_keys(set(self._order), set(names))
        descs = dict(self._descs)
        for c in cols:
            descs[c.name] = descs[c.name].merge(c.desc, c.name) if c.name in descs else c.desc
        self._descs, self._order = descs, names
        row_bytes = sum(c.row_bytes for c in cols) + 16
        step = int(min(MAX_BATCH_ROWS, max(1, BATCH_BYTES // max(1.0, row_bytes))))
        a = 0
        while a < n:
            shard = self._current_shard()
            room = self.records_per_shard - shard.records if self.records_per_shard else n - a
            b = min(n, a + step, a + room)
            data, offsets = self._encode(cols, a, b)
            if self.verify:
                self._checksums[-1] = framing.crc32c(
                    data[offsets[0] : offsets[-1]], self._checksums[-1]
                )
            shard.write_batch(data, offsets)
            self.records += b - a
            self.bytes += int(offsets[-1]) + 16 * (b - a)
            for c in cols:
                c.release(a, b)
            self._progress.update(b - a, int(offsets[-1]) + 16 * (b - a))
            a = b

    def _encode(self, cols: list[_Column], a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        if self.sequence:
            lists = [c for c in cols if isinstance(c, SequenceColumn)]
            context = [c for c in cols if not isinstance(c, SequenceColumn)]
            return encode_sequence_examples(context, lists, a, b, self._encode_features)
        return self._encode_features(cols, a, b)

    def _encode_features(
        self, cols: list[_Column], a: int, b: int
    ) -> tuple[np.ndarray, np.ndarray]:
        feats = [c.feature(a, b) for c in cols]
        try:
            data, offsets = encode.encode_examples(feats, b - a, out=self._payloads)
        except encode.EncodeError as e:
            name = cols[e.feature].name
            raise SchemaError(f"feature {name!r} row {a + e.row}: {e.reason}") from None
        if data.base is None:  # a larger batch than before: keep its buffer for the next
            self._payloads = data
        return data, offsets

    def _current_shard(self) -> RecordWriter:
        if not self._shards or (
            self.records_per_shard and self._shards[-1].records >= self.records_per_shard
        ):
            self._open_shard()
        return self._shards[-1]

    def _open_shard(self) -> None:
        previous = self._shards[-1] if self._shards else None
        if previous is not None:
            previous.finish()
        path = fs.join(self._dir, self._base)  # its final name is known at close
        self._shards.append(RecordWriter(path, self.compression, index=self.index, reuse=previous))
        self._checksums.append(0)

    def _final_names(self) -> list[str]:
        if self.records_per_shard is None:
            return [self.path]
        return [shard_name(self.path, k, len(self._shards)) for k in range(len(self._shards))]

    def _publish(self) -> None:
        """Every shard under its final name, or none: a failed rename takes back the
        shards already moved, and Ctrl-C waits until all are in place."""
        names = self._final_names()
        done: list[str] = []
        with deferred_interrupt():
            try:
                for shard, name in zip(self._shards, names, strict=True):
                    done.append(shard.publish(name))
            except BaseException:
                for path in done:
                    fs.remove(path)
                    if self.index:
                        fs.remove(index_path(path))
                raise
        self.paths = done

    def _verify(self) -> None:
        """Re-read every shard: record count and payload checksum must match what was
        written; then the values, decoded with `spec`, must equal the inputs when known."""
        for k, (shard, wrote) in enumerate(zip(self._shards, self._checksums, strict=True)):
            reader = RecordReader(shard.tmp, compression=self.compression)
            count, checksum = 0, 0
            for batch in reader.batches(8192):
                count += len(batch)
                checksum = framing.crc32c(batch.data, checksum)
            if count != shard.records or checksum != wrote:
                raise TFRecordError(
                    f"verify failed for {self.path}: shard {k} reads back {format_count(count)} "
                    f"records (wrote {format_count(shard.records)})"
                    + ("" if checksum == wrote else " with different bytes")
                    + "; nothing was kept"
                )
        paths = [s.tmp for s in self._shards]
        if not self.sequence:
            for cols, n in self._expected:
                _compare_values(paths, self.spec, cols, n, self.compression)
        if (self.sequence or not self._expected) and self.records:
            _decode_all(paths, self.spec, self.compression)


# --- verify: decode what was written and compare with the inputs ---------------------------


def _compare_values(
    paths: list[str], spec: dict, cols: list[_Column], n: int, compression: str | None
) -> None:
    """Decode the files with spec and check every value against the encoder's view of the
    input columns (the float32 / int64 / bytes the records were made of)."""
    from .decode import Decoder  # imported when verifying only

    decoder = Decoder({k: f.decode_as() or f for k, f in spec.items()})  # images: their bytes
    row_bytes = sum(c.row_bytes for c in cols) + 16
    step = int(min(MAX_BATCH_ROWS, max(1, BATCH_BYTES // max(1.0, row_bytes))))
    a = 0
    for batch in RecordReader(paths, compression=compression).batches(step):
        b = a + len(batch)
        got = decoder.decode(batch)
        for c in cols:
            problem = _mismatch(c.feature(a, b), got[c.name], c.desc)
            if problem:
                raise TFRecordError(
                    f"verify failed: feature {c.name!r} in records {a}..{b - 1} reads back "
                    f"different values ({problem}); nothing was kept"
                )
            c.release(a, b)
        a = b
    if a != n:
        raise TFRecordError(f"verify failed: read back {a} records, wrote {n}")


def _decode_all(paths: list[str], spec: dict, compression: str | None) -> None:
    """Decode every record with spec (a streaming Writer keeps no inputs to compare)."""
    from .decode import Decoder  # imported when verifying only

    decoder = Decoder(spec)
    try:
        for batch in RecordReader(paths, compression=compression).batches(4096):
            decoder.decode(batch)
    except TFRecordError as e:
        raise TFRecordError(
            f"verify failed: the records do not decode with the spec written ({e}); "
            "nothing was kept"
        ) from e


def _mismatch(feature: tuple, column: Any, desc: _Desc) -> str:
    """'' when a decoded column holds what the encoder was given, else what differs."""
    _, kind, data, voff, vstride, splits, _ = feature
    if isinstance(column, Ragged):
        got_splits = np.asarray(column.row_splits, np.int64)
        size = math.prod(desc.shape) if desc.form == "varlen" and desc.dtype != "bytes" else 1
        want_splits = np.asarray(splits, np.int64) if splits is not None else None
        if want_splits is not None and not np.array_equal(got_splits * size, want_splits):
            return "row lengths"
        column = column.values
    if kind == encode.BYTES:
        if isinstance(column, np.ndarray) and column.dtype.kind not in "OSU":
            got = np.ascontiguousarray(column).reshape(-1).view(np.uint8)
            return "" if np.array_equal(got, data) else "raw bytes"
        if isinstance(column, BytesColumn):
            got_data, got_off = column.data, column.offsets
        else:
            got_data, got_off = _bytes_block("", np.asarray(column, dtype=object), _rows_of(0, 1))
        want_off = voff if voff is not None else np.arange(len(got_off)) * vstride
        lengths_same = np.array_equal(np.diff(got_off), np.diff(want_off))
        if not lengths_same:
            return "byte string lengths"
        want = data[int(want_off[0]) : int(want_off[-1])]
        return (
            ""
            if np.array_equal(got_data[int(got_off[0]) : int(got_off[-1])], want)
            else ("byte strings")
        )
    got = np.asarray(column).reshape(-1)
    if kind == encode.FLOAT:
        same = np.array_equal(got.astype(np.float32), data, equal_nan=True)
    else:
        same = np.array_equal(got.astype(np.int64), data)
    return "" if same else "values"


def write(
    path: str | os.PathLike,
    columns: Mapping[str, Any],
    *,
    encoding: str | Mapping[str, str | None] | None = None,
    compression: str | None = None,
    records_per_shard: int | None = None,
    index: bool = False,
    progress: bool = True,
    verify: bool = False,
    sequence: Iterable[str] | None = None,
    storage_options: dict | None = None,
) -> WriteResult:
    """Write columns as TFRecord files of tf.train.Example, one record per row.

    columns: dict of feature name -> column with one first dimension (np.ndarray, np.memmap,
    h5py.Dataset, zarr array, tn.Ragged, tn.BytesColumn, list of bytes / str / lists).
    encoding: None / "list" (float_list / int64_list / bytes_list) or "raw" (each record's
    array as one bytes value, read back with tn.Raw), for all columns or a dict per column.
    compression: None, "GZIP" or "ZLIB". records_per_shard: split into shards named
    ``name-00000-of-00008.tfrecord``. index: write ``.idx`` sidecars (offset length per
    record). verify: re-read the files and check count, bytes and values before they
    appear. sequence: names of columns written as feature lists, making each record a
    tf.train.SequenceExample (the other columns are its context); each is a tn.Ragged of
    steps per record, as tn.read gives for a tn.Sequence spec. path may be a URL of any
    fsspec filesystem (s3://, gs://, memory://; storage_options passed to it): shards are
    uploaded under hidden names and moved into place when complete. Returns (paths, spec);
    spec reads the files back with tn.read / tn.open.
    """
    if isinstance(sequence, str):
        raise TypeError(f"sequence takes a list of column names, not a str ({sequence!r})")
    cols, n = _prepare(columns, encoding, frozenset(sequence or ()))
    writer = Writer(
        path,
        encoding=encoding,
        compression=compression,
        records_per_shard=records_per_shard,
        index=index,
        progress=progress,
        verify=verify,
        sequence=sequence,
        storage_options=storage_options,
    )
    writer._progress.total = n
    with naming_write_errors(writer.path):
        try:
            writer._write_columns(cols, n)
            if verify:
                writer._expected.append((cols, n))
            writer.close()
        except BaseException:
            writer.abort()
            raise
    size = sum(fs.size(p) for p in writer.paths)
    return WriteResult(writer.paths, writer.spec, writer.records, size)
