"""Columns <-> Apache Arrow arrays, in plain Arrow types, and spec <-> Arrow schema.

The mapping (tfrecnp column -> Arrow type; `from_arrow` reads each back):

- ndarray [n] of numbers -> the primitive type (int64, float32, ...); [n, *shape] ->
  nested ``fixed_size_list`` of that type, one level per axis (a tensor per row);
- Ragged -> ``large_list`` built from ``row_splits`` (Arrow's int64 offsets) around the
  values' array (values of an inner shape: a list of fixed-size lists; Ragged of Ragged:
  lists of lists);
- BytesColumn -> ``large_binary`` (int64 offsets + data), or ``large_string`` for the
  features named in ``text=`` (checked to be UTF-8);
- ndarrays of bytes (FixedLen bytes with a shape) -> fixed-size lists of binary;
- tn.Text columns (ndarrays of str) -> ``large_string`` (fixed-size lists / large lists of
  it); back, ``string`` / ``large_string`` / ``string_view`` read as tn.Text (`spec_of_arrow`).

Zero-copy where Arrow's layout is NumPy's: numbers, fixed-size lists of numbers, Ragged
offsets and values, bytes data and offsets are wrapped, not copied (the Arrow buffers keep
the NumPy arrays alive). Copied: bool (Arrow packs bits), arrays not C-contiguous, row
splits of another dtype than int64, bytes held as NumPy object / S arrays. Back, numbers
without nulls and large binary / large list offsets are views; bool, 32-bit offsets (binary,
string, list), view types, dictionaries and chunked columns are copied once.

Nulls read as TensorFlow reads a missing feature and pandas a missing float (NaN; see
`tfrecnp.interop.arrow_nulls`). What TFRecord cannot hold is refused by name: structs, maps,
unions, dates, times, timestamps, durations, decimals (see `_why`).
pyarrow is imported on first use (``pip install 'tfrecnp[arrow]'``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from .._util.optional import require
from .._util.sizing import records_per_batch
from ..errors import SchemaError
from ..example.columns import BytesColumn, LazyBytes, LazyRagged, Ragged
from ..example.image import Image
from ..example.spec import FixedLen, Raw, VarLen
from ..example.text import Text, as_text
from .arrow_nulls import _NullError, fill_row_nulls, fill_value_nulls, null_message

__all__ = [
    "arrow_type",
    "column_from_arrow",
    "from_arrow",
    "pyarrow",
    "record_batches",
    "spec_of_arrow",
    "to_arrow",
    "to_arrow_array",
]


def pyarrow() -> Any:
    """The pyarrow module, or ImportError naming the extra (looked up in sys.modules
    first: batches call this per column)."""
    return sys.modules.get("pyarrow") or require("pyarrow", "arrow")


# --- columns -> Arrow ----------------------------------------------------------------------


def to_arrow(columns: Mapping[str, Any], *, text: Iterable[str] | bool = ()) -> Any:
    """Decoded columns as a ``pyarrow.RecordBatch`` (see the module docstring for types).

    Parameters
    ----------
    columns : dict
        {name: ndarray, tn.Ragged or tn.BytesColumn}, all of one length.
    text : list of str or bool
        Bytes features to give as UTF-8 strings (True: every bytes feature).
    """
    pa = pyarrow()
    names = list(columns)
    strings = set(names) if text is True else set(text or ())
    arrays = [to_arrow_array(columns[n], name=n, text=n in strings) for n in names]
    return pa.RecordBatch.from_arrays(arrays, names=names)


def to_arrow_array(col: Any, *, name: str = "", text: bool = False) -> Any:
    """One column as an Arrow array (its buffers wrapped, not copied, where the layouts
    agree: see the module docstring)."""
    pa = pyarrow()
    if type(col) is np.ndarray and col.dtype.kind in "iuf":
        # The common case first, in few calls: per-batch Python work is what this door costs.
        return _fixed_lists(_wrap(col.reshape(-1)), col.shape)
    if isinstance(col, (LazyRagged, LazyBytes)):
        col = col[0 : len(col)]
    if isinstance(col, Ragged):
        splits = col.row_splits
        if type(splits) is not np.ndarray or splits.dtype != np.int64:
            splits = np.asarray(splits, np.int64)
        values = to_arrow_array(col.values, name=name, text=text)
        # Arrow's large-list offsets are int64 row splits: wrapped, not copied.
        return pa.Array.from_buffers(
            pa.large_list(values.type),
            len(splits) - 1,
            [None, pa.py_buffer(np.ascontiguousarray(splits))],
            children=[values],
        )
    if isinstance(col, BytesColumn):
        data = pa.py_buffer(np.ascontiguousarray(col.data))
        offsets = pa.py_buffer(np.ascontiguousarray(col.offsets, np.int64))
        kind = pa.large_string() if text else pa.large_binary()
        arr = pa.Array.from_buffers(kind, len(col), [None, offsets, data])
        if text:
            try:
                arr.validate(full=True)
            except pa.ArrowInvalid:
                raise SchemaError(
                    f"feature {name!r} was asked for as text, but some of its values are not "
                    "UTF-8; leave it out of text= to get it as binary"
                ) from None
        return arr
    arr = np.asarray(col)
    if arr.dtype.kind in "UT" or (
        arr.dtype.hasobject and arr.size and isinstance(arr.flat[0], str)
    ):
        try:  # str values (tn.Text): Arrow encodes them itself, no loop here
            flat = pa.array(arr.reshape(-1).astype(object), pa.large_string())
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            flat = None  # str mixed with bytes: the long way, checked as UTF-8
        if flat is not None:
            return _fixed_lists(flat, arr.shape)
        text = True
    if arr.dtype.hasobject or arr.dtype.kind in "SU":
        flat = BytesColumn.from_list(arr.reshape(-1).tolist())
        out = to_arrow_array(flat, name=name, text=text)
        return _fixed_lists(out, arr.shape)
    if arr.dtype.kind not in "biuf":
        raise SchemaError(
            f"feature {name!r} has dtype {arr.dtype}; Arrow columns here hold numbers and bytes"
        )
    return _fixed_lists(_wrap(arr.reshape(-1)), arr.shape)


_ARROW_TYPES: dict[np.dtype, Any] = {}


def _wrap(flat: np.ndarray) -> Any:
    """A 1-D array of numbers as an Arrow array, without a copy when the layouts agree."""
    pa = pyarrow()
    if flat.dtype == np.bool_:
        return pa.array(flat, pa.bool_())  # Arrow packs bits: a copy
    if not flat.flags.c_contiguous:
        flat = np.ascontiguousarray(flat)
    if not flat.dtype.isnative:
        flat = flat.astype(flat.dtype.newbyteorder("="))
    kind = _ARROW_TYPES.get(flat.dtype)
    if kind is None:
        kind = _ARROW_TYPES[flat.dtype] = pa.from_numpy_dtype(flat.dtype)
    return pa.Array.from_buffers(kind, len(flat), [None, pa.py_buffer(flat)])


def _fixed_lists(values: Any, shape: tuple[int, ...]) -> Any:
    """Flat values as nested fixed-size lists: rows of `shape[1:]`, the innermost axis
    first (row counts given, so an axis of size 0 is no puzzle)."""
    pa = pyarrow()
    for axis in range(len(shape) - 1, 0, -1):
        kind = pa.list_(values.type, int(shape[axis]))
        rows = math.prod(shape[:axis])
        values = pa.Array.from_buffers(kind, rows, [None], children=[values])
    return values


# --- Arrow -> columns ----------------------------------------------------------------------


class _Refused(ValueError):
    """An Arrow type with no TFRecord equivalent; the caller names the column."""


def from_arrow(
    table: Any, spec: Any = None, *, where: Callable[[int], str] | None = None
) -> dict[str, Any]:
    """A ``pyarrow.Table`` or ``RecordBatch`` as columns the Writer and batches hold:
    primitives -> ndarrays, fixed-size lists -> ndarrays [n, *shape], lists -> Ragged,
    binary / string -> BytesColumn. With a spec (a dict), list columns of a FixedLen or
    Raw feature become dense arrays of its shape. Nulls read as missing values
    (`tfrecnp.interop.arrow_nulls`: NaN for floats, empty VarLen rows, FixedLen defaults).
    Raises SchemaError naming the column for types TFRecord cannot hold, and the column and
    row (``where(row)``, e.g. "row 7 of x.parquet") for a null it has no value for.
    """
    pa = pyarrow()
    features = spec if isinstance(spec, Mapping) else {}
    out = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        text = features.get(name)
        feature = text.decode_as() if isinstance(text, Text) else text  # text: read as bytes
        try:
            col = column_from_arrow(column, feature)
        except _NullError as error:
            place = where(error.row) if where is not None else f"row {error.row}"
            raise SchemaError(null_message(name, error, feature, place)) from None
        except _Refused as why:
            raise SchemaError(f"column {name!r} {why}") from None
        if isinstance(col, Ragged) and isinstance(feature, (FixedLen, Raw)):
            shape = feature.shape if isinstance(feature, FixedLen) else feature.row_shape
            col = _dense_rows(name, col, shape, where)
        if isinstance(text, Text):  # then its bytes as str, a batch at a time
            col = as_text(col, errors=text.errors, name=name, where=where)
        out[name] = col
    return out


def _dense_rows(name: str, col: Ragged, shape: Any, where: Callable[[int], str] | None) -> Any:
    """A Ragged read for a FixedLen or Raw feature as its dense [n, *shape] array; a row of
    another length is a SchemaError naming it."""
    values = np.asarray(col.values)
    per_value = math.prod(values.shape[1:])
    counts = np.diff(np.asarray(col.row_splits, np.int64)) * per_value
    bad = np.flatnonzero(counts != math.prod(shape))
    if len(bad):
        row = int(bad[0])
        place = where(row) if where is not None else f"row {row}"
        raise SchemaError(
            f"column {name!r} {place} holds {int(counts[row])} values where the spec's "
            f"shape {tuple(shape)} takes {math.prod(shape)}; read it as tn.VarLen"
        )
    return values.reshape(len(col), *shape)


def column_from_arrow(arr: Any, feature: Any = None) -> Any:
    """One Arrow array as a column (raises _Refused, naming what is wrong, or _NullError
    for a null the feature has no value for: see `tfrecnp.interop.arrow_nulls`)."""
    return _column(arr, feature, inside=False)


def _column(arr: Any, feature: Any, *, inside: bool) -> Any:
    pa = pyarrow()
    kind = arr.type
    default = None if inside or not isinstance(feature, FixedLen) else feature.default
    if isinstance(kind, pa.ExtensionType):
        return _column(arr.storage, feature, inside=inside)
    if pa.types.is_dictionary(kind):
        return _column(arr.dictionary_decode(), feature, inside=inside)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_list_view(kind):
        if pa.types.is_list_view(kind):
            arr = arr.cast(pa.large_list(kind.value_type))
        if not inside:  # a null row: a missing feature; inside, a null list is an empty one
            arr = fill_row_nulls(arr, default, dense=isinstance(feature, (FixedLen, Raw)))
        offsets = np.asarray(arr.offsets, np.int64)
        if arr.null_count:  # a null list inside a list: an empty one
            arr = require("pyarrow.compute", "arrow").fill_null(arr, pa.scalar([], arr.type))
            offsets = np.asarray(arr.offsets, np.int64)
        first, last = int(offsets[0]), int(offsets[-1])
        try:
            values = _column(arr.values.slice(first, last - first), None, inside=True)
        except _NullError as error:
            row = int(np.searchsorted(offsets - first, error.row, "right")) - 1
            raise _NullError(row, inside=True, kind=error.kind) from None
        return Ragged.from_row_splits(values, offsets - first, validate=False)
    if pa.types.is_fixed_size_list(kind):
        if inside and arr.null_count:
            raise _NullError(int(np.argmin(np.asarray(arr.is_valid()))), inside=True, kind=kind)
        arr = fill_row_nulls(arr, default, dense=True)
        size = kind.list_size
        flat = arr.values.slice(arr.offset * size, len(arr) * size)
        try:
            values = _column(flat, None, inside=True)
        except _NullError as error:
            raise _NullError(error.row // max(size, 1), inside=True, kind=error.kind) from None
        if isinstance(values, BytesColumn):
            values = np.array(values.to_list(), dtype=object)
        return np.asarray(values).reshape(len(arr), kind.list_size, *np.shape(values)[1:])
    if (
        pa.types.is_binary(kind)
        or pa.types.is_string(kind)
        or pa.types.is_binary_view(kind)
        or pa.types.is_string_view(kind)
        or pa.types.is_fixed_size_binary(kind)
    ):
        arr = arr.cast(pa.large_binary())
        kind = arr.type
    if pa.types.is_large_binary(kind) or pa.types.is_large_string(kind):
        arr = fill_value_nulls(arr, default, inside=inside)
        _, offsets, data = arr.buffers()
        offsets = np.frombuffer(offsets, np.int64, len(arr) + 1, arr.offset * 8)
        data = np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)
        first, last = int(offsets[0]), int(offsets[-1])
        return BytesColumn.from_offsets(data[first:last], offsets - first, validate=False)
    if pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind):
        arr = fill_value_nulls(arr, default, inside=inside)
        return arr.to_numpy(zero_copy_only=False)
    if pa.types.is_null(kind):
        raise _Refused("holds only nulls (type null), which no TFRecord feature holds")
    raise _Refused(f"has Arrow type {kind}, {_why(kind)}")


def _why(kind: Any) -> str:
    """What to do with an Arrow type TFRecord cannot hold."""
    pa = pyarrow()
    if pa.types.is_struct(kind):
        return (
            "a struct, which one tf.train.Example feature cannot hold: flatten it into one "
            "column per field (table.flatten()) or write its fields as separate columns"
        )
    if pa.types.is_map(kind):
        return "a map, which no Example feature holds: write keys and values as two list columns"
    if pa.types.is_union(kind):
        return "a union, which no Example feature holds: split it into one column per kind"
    if pa.types.is_decimal(kind):
        return "a decimal, which no Example feature holds: cast it to float64 or to string"
    if pa.types.is_temporal(kind):
        return (
            "a date / time, which no Example feature holds: cast it to int64 "
            "(table.column(name).cast('int64')) or format it as a string"
        )
    return "which no TFRecord feature holds: cast it to numbers, bytes or string"


# --- datasets, a record batch at a time ---------------------------------------------------

STREAM_BYTES = 8 << 20  # a streamed dataset's record batches: about this much Arrow data
STREAM_ROWS = 4096  # ... or this many rows, when no Parquet metadata says a row's size
STREAM_ROW_BOUNDS = (64, 1 << 17)


def record_batches(source: Any) -> Iterator[Any] | None:
    """The record batches of a ``pyarrow.RecordBatchReader`` or ``pyarrow.dataset.Dataset``
    (a Parquet / Feather / CSV file or folder opened with ``pyarrow.dataset.dataset``,
    hive partitions included) in the dataset's schema, pulled one at a time; None for
    anything else.

    A dataset of files is read a file at a time, in order (Parquet by ``iter_batches``, IPC
    a record batch at a time), not by ``Dataset.to_batches``: Arrow's scanner reads ahead
    of a slow consumer without bound, so a writer slower than the decoder would end up
    holding the table. Memory: a row group or an IPC batch, and a batch of about
    STREAM_BYTES.
    """
    pa = pyarrow()
    if isinstance(source, pa.RecordBatchReader):
        return iter(source)
    pds = require("pyarrow.dataset", "arrow")
    if isinstance(source, pds.Dataset):
        return _dataset_batches(source, _stream_rows(source, pds), pds)
    return None


def _dataset_batches(dataset: Any, rows: int, pds: Any) -> Iterator[Any]:
    if isinstance(dataset, pds.UnionDataset):
        for child in dataset.children:
            for batch in _dataset_batches(child, rows, pds):
                yield _conform(batch, dataset.schema, {})
        return
    if not isinstance(dataset, pds.FileSystemDataset):  # in memory already
        yield from dataset.to_batches(batch_size=rows)
        return
    schema = dataset.schema
    for fragment in dataset.get_fragments():
        keys = pds.get_partition_keys(fragment.partition_expression)
        names = [n for n in schema.names if n not in keys]
        for batch in _fragment_batches(fragment, names, rows, pds):
            yield _conform(batch, schema, keys)


def _fragment_batches(fragment: Any, names: list[str], rows: int, pds: Any) -> Iterator[Any]:
    """One file's record batches, these columns (those it has), read as they are asked."""
    pa = pyarrow()
    if isinstance(fragment.format, pds.ParquetFileFormat):
        pq = require("pyarrow.parquet", "arrow")
        with fragment.filesystem.open_input_file(fragment.path) as f:
            file = pq.ParquetFile(f)
            have = [n for n in names if n in file.schema_arrow.names]
            yield from file.iter_batches(rows, columns=have)
    elif isinstance(fragment.format, pds.IpcFileFormat):
        with fragment.filesystem.open_input_file(fragment.path) as f:
            file = pa.ipc.open_file(f)
            for k in range(file.num_record_batches):
                batch = file.get_batch(k)
                have = [n for n in names if n in batch.schema.names]
                yield batch.select(have)
    else:  # CSV, JSON: the scanner, bounded by one file
        yield from fragment.to_batches(
            columns=[n for n in names if n in fragment.physical_schema.names],
            batch_size=rows,
            batch_readahead=1,
        )


def _conform(batch: Any, schema: Any, keys: Mapping[str, Any]) -> Any:
    """A file's batch in the dataset's schema: its partition keys as columns, a column the
    file lacks as nulls (read later as missing features: `tfrecnp.interop.arrow_nulls`),
    types cast."""
    pa = pyarrow()
    if not keys and batch.schema.equals(schema):
        return batch
    n, have = batch.num_rows, batch.schema.names
    arrays = []
    for field in schema:
        if field.name in keys:
            arrays.append(pa.array([keys[field.name]] * n, field.type))
        elif field.name in have:
            column = batch.column(field.name)
            arrays.append(column if column.type == field.type else column.cast(field.type))
        else:
            arrays.append(pa.nulls(n, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _stream_rows(dataset: Any, pds: Any) -> int:
    """Rows per streamed batch: about STREAM_BYTES of Arrow data, the row's size made of its
    fixed-width columns' widths (Parquet's encodings say little of those: a repeated value
    takes a few bits) and, for the other columns, their uncompressed bytes in the first
    Parquet row group; STREAM_ROWS when a variable column has no such metadata."""
    fixed, variable = 0, []
    for field in dataset.schema:
        width = _row_width(field.type)
        if width is None:
            variable.append(field.name)
        else:
            fixed += width
    if not variable:
        return records_per_batch(STREAM_BYTES, fixed, STREAM_ROW_BOUNDS)
    if isinstance(dataset, pds.FileSystemDataset):
        for fragment in dataset.get_fragments():
            meta = getattr(fragment, "metadata", None)
            if meta is None or not meta.num_row_groups:
                break
            group = meta.row_group(0)
            sizes = (group.column(i) for i in range(group.num_columns))
            rest = sum(
                c.total_uncompressed_size
                for c in sizes
                if c.path_in_schema.split(".")[0] in variable
            )
            row = fixed + rest / max(group.num_rows, 1)
            return records_per_batch(STREAM_BYTES, row, STREAM_ROW_BOUNDS)
    return STREAM_ROWS


def _row_width(kind: Any) -> int | None:
    """Bytes per row of an Arrow type of fixed width (fixed-size lists of numbers included),
    else None."""
    n = 1
    while hasattr(kind, "list_size") and kind.list_size >= 0:  # a fixed-size list
        n, kind = n * kind.list_size, kind.value_type
    try:
        return n * max(kind.bit_width // 8, 1)
    except ValueError:  # not of fixed width
        return None


# --- schema -> spec ------------------------------------------------------------------------


def spec_of_arrow(schema: Any) -> dict[str, Any]:
    """The spec whose batches hold what `from_arrow` makes of a table of this schema:
    primitives -> FixedLen((), dtype), fixed-size lists -> FixedLen(shape, dtype), lists
    -> VarLen(dtype, inner_shape), binary / string -> bytes. Raises SchemaError naming the
    column for what has no TFRecord feature (lists of lists included)."""
    spec = {}
    for field in schema:
        try:
            spec[field.name] = _feature_of(field.type)
        except _Refused as why:
            raise SchemaError(f"column {field.name!r} {why}") from None
    return spec


def _feature_of(kind: Any) -> Any:
    pa = pyarrow()
    if isinstance(kind, pa.ExtensionType):
        return _feature_of(kind.storage_type)
    if pa.types.is_dictionary(kind):
        return _feature_of(kind.value_type)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_list_view(kind):
        inner = _feature_of(kind.value_type)
        if isinstance(inner, FixedLen):
            return VarLen(inner.dtype, inner.shape)
        if isinstance(inner, Text) and not inner.ragged:
            return Text((-1, *inner.shape))
        raise _Refused(
            f"has Arrow type {kind}: lists of lists (ragged inside ragged) have no Example "
            "feature; write it with tn.write(..., sequence=[name]) as a SequenceExample, or "
            "flatten the inner lists"
        )
    if pa.types.is_fixed_size_list(kind):
        inner = _feature_of(kind.value_type)
        if isinstance(inner, FixedLen):
            return FixedLen((kind.list_size, *inner.shape), inner.dtype)
        if isinstance(inner, Text) and not inner.ragged:
            return Text((kind.list_size, *inner.shape))
        raise _Refused(f"has Arrow type {kind}: a fixed-size list of variable lists")
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return Text()
    if (
        pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_binary_view(kind)
        or pa.types.is_fixed_size_binary(kind)
    ):
        return FixedLen((), "bytes")
    if pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return FixedLen((), np.dtype(kind.to_pandas_dtype()).name)
    if pa.types.is_null(kind):
        raise _Refused("holds only nulls (type null), which no TFRecord feature holds")
    raise _Refused(f"has Arrow type {kind}, {_why(kind)}")


def arrow_type(feature: Any, *, text: bool = False) -> Any:
    """The Arrow type of a feature's column in `to_arrow`'s batches, when it is fixed by
    the spec (None for tn.Image without size= and Raw without a shape: they are known from
    the first batch)."""
    pa = pyarrow()
    if isinstance(feature, Image):
        if feature.size is None:
            return None
        h, w = feature.size
        shape: tuple = (h, w, feature.channels)
        base = pa.from_numpy_dtype(np.dtype(feature.dtype))
    elif isinstance(feature, Raw):
        return None
    elif isinstance(feature, Text):
        return arrow_type(feature.decode_as(), text=True)
    elif isinstance(feature, (FixedLen, VarLen)):
        if feature.dtype == "bytes":
            base = pa.large_string() if text else pa.large_binary()
        else:
            base = pa.from_numpy_dtype(np.dtype(feature.dtype))
        if isinstance(feature, VarLen):
            if feature.ragged_rank != 1:
                return None
            out = base
            for size in reversed(tuple(feature.inner_shape or ())):
                out = pa.list_(out, size)
            return pa.large_list(out)
        shape = feature.shape
    else:
        return None
    for size in reversed(shape):
        base = pa.list_(base, size)
    return base
