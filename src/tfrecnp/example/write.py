"""Columns -> TFRecord files of tf.train.Example: `write` and `Writer`.

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

The parts, each in its own module: write_inputs.py (the input columns and what each is
written as), write_sequence.py (feature lists), write_shards.py (shards and publishing),
write_check.py (verify=True). Arrays -> TFRecord files is `tn.convert` (data/convert.py),
which calls `write`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from .._core import encode
from .._util import fs
from .._util.atomic import CloseOrAbort, naming_write_errors, require_folder
from .._util.progress import Progress
from ..errors import SchemaError
from ..format.arrayrecord_write import ArrayRecordWriter, parse_compression
from ..format.compression import normalize_compression
from ..format.frames import OVERHEAD_BYTES
from ..format.writer import check_index_option
from .spec import Sequence
from .write_check import check_output
from .write_inputs import (
    InputColumn,
    Written,
    arrow_stream,
    check_encoding,
    prepare,
    rows_per_slice,
)
from .write_sequence import SequenceColumn, encode_sequence_examples
from .write_shards import Shards

__all__ = ["WriteResult", "Writer", "output_format", "write"]

FORMATS = ("tfrecord", "array_record")


def output_format(path: str, format: str | None) -> str:
    """ "tfrecord" or "array_record": as given, else ArrayRecord for a path ending in
    ``.array_record``."""
    if format is None:
        return "array_record" if str(path).lower().endswith(".array_record") else "tfrecord"
    fmt = str(format).lower().replace("-", "_")
    fmt = {"arrayrecord": "array_record", "tfrecords": "tfrecord"}.get(fmt, fmt)
    if fmt not in FORMATS:
        raise ValueError(f"format {format!r}: write takes 'tfrecord' or 'array_record'")
    return fmt


EXAMPLE_BUFFER = 1024  # write_example: records gathered before they are encoded together


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


class Writer(CloseOrAbort):
    """Streams batches of columns (or single examples) into TFRecord files of
    tf.train.Example (or ArrayRecord files of them: format="array_record" or a path ending
    in ``.array_record``; group_size and compression as array-record spells them).

    Use as a context manager: files appear under their final names only when the block
    ends without an exception. With records_per_shard, shards are named like TensorFlow's
    (``data-00000-of-00008.tfrecord``; ArrayRecord: TFDS's
    ``data.array_record-00000-of-00008``), the count known at close. `spec` describes what
    was written (the spec that reads it back); `paths` lists the files after close.
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
        format: str | None = None,
        group_size: int | None = None,
    ):
        self.path = fs.resolve(path, storage_options)
        self.format = output_format(self.path, format)
        if isinstance(sequence, str):
            raise TypeError(f"sequence takes a list of column names, not a str ({sequence!r})")
        self.sequence = frozenset(sequence or ())
        if self.path.endswith(("/", os.sep)) or fs.isdir(self.path):
            raise IsADirectoryError(
                f"{self.path} is a folder; give a file name such as "
                f"{fs.join(self.path.rstrip('/' + os.sep), 'data.tfrecord')}"
            )
        array_record = None
        if self.format == "array_record":
            if index:
                raise ValueError(
                    "index=True applies to TFRecord output; ArrayRecord files carry their "
                    "own index (the footer lists every chunk and its records)"
                )
            codec, level = parse_compression(compression)
            self.compression = codec if level is None else f"{codec}:{level}"
            array_record = {"group_size": 1 if group_size is None else group_size}
            array_record["compression"] = self.compression
        else:
            if group_size is not None:
                raise ValueError("group_size applies to ArrayRecord output (format='array_record')")
            self.compression = normalize_compression(compression, allow_auto=False)
        if records_per_shard is not None and (
            not isinstance(records_per_shard, (int, np.integer)) or records_per_shard < 1
        ):
            raise ValueError(f"records_per_shard must be a positive int, not {records_per_shard!r}")
        check_index_option(index, self.compression)
        if isinstance(encoding, Mapping):
            for k, v in encoding.items():
                check_encoding(v, f"encoding[{k!r}]", images=True)
        else:
            check_encoding(encoding, "encoding")
        self.encoding = encoding
        self.records_per_shard = records_per_shard
        self.index = index
        self.verify = verify
        self.records = 0
        self.bytes = 0
        self.paths: list[str] = []
        self._descs: dict[str, Written] = {}
        self._order: list[str] | None = None
        self._shards = Shards(
            self.path,
            self.compression,
            index=index,
            records_per_shard=records_per_shard,
            checksums=verify,
            array_record=array_record,
        )
        self._payloads = np.empty(0, np.uint8)  # the encoder's output, reused per batch
        self._pending: list[dict] = []
        self._progress = Progress(f"writing {self.path}", enabled=progress)
        self._expected: list[tuple[list[InputColumn], int]] = []
        self.closed = False
        require_folder(self.path)
        if array_record is not None:  # options checked now, not at the first record
            ArrayRecordWriter.check_options(**array_record)

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
        cols, n = prepare(columns, self._encoding_for(columns), self.sequence)
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
            self._shards.finish()
            self._progress.close()
            if self.verify:
                check_output(
                    self.path,
                    self._shards,
                    self.spec,
                    self._expected,
                    sequence=bool(self.sequence),
                    records=self.records,
                )
            self.paths = self._shards.publish()
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
        self._shards.abort()

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
        cols, n = prepare(columns, self._encoding_for(columns), self.sequence)
        self._write_columns(cols, n)

    def _write_columns(self, cols: list[InputColumn], n: int) -> None:
        names = [c.name for c in cols]
        if self._order is not None and set(names) != set(self._order):
            self._mismatched_keys(set(self._order), set(names))
        descs = dict(self._descs)
        for c in cols:
            descs[c.name] = descs[c.name].merge(c.desc, c.name) if c.name in descs else c.desc
        self._descs, self._order = descs, names
        step = rows_per_slice(cols)
        a = 0
        while a < n:
            room = self._shards.room()  # the next shard begins when this one is full
            b = min(n, a + step) if room is None else min(n, a + step, a + room)
            data, offsets = self._encode(cols, a, b)
            self._shards.write_batch(data, offsets)
            framed = int(offsets[-1]) + OVERHEAD_BYTES * (b - a)
            self.records += b - a
            self.bytes += framed
            for c in cols:
                c.release(a, b)
            self._progress.update(b - a, framed)
            a = b

    def _encode(self, cols: list[InputColumn], a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        if self.sequence:
            lists = [c for c in cols if isinstance(c, SequenceColumn)]
            context = [c for c in cols if not isinstance(c, SequenceColumn)]
            return encode_sequence_examples(context, lists, a, b, self._encode_features)
        return self._encode_features(cols, a, b)

    def _encode_features(
        self, cols: list[InputColumn], a: int, b: int
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
    format: str | None = None,
    group_size: int | None = None,
) -> WriteResult:
    """Write columns as TFRecord files of tf.train.Example, one record per row.

    Nothing that looks complete is left on failure: files are written under hidden names
    and renamed when done (uploaded, for a URL).

    Parameters
    ----------
    path : str or os.PathLike
        The output file, or the shards' name stem with records_per_shard; local or a URL
        of any fsspec filesystem.
    columns : dict
        {feature: column}, every column with the same first dimension: np.ndarray,
        np.memmap, h5py.Dataset, Zarr array, tn.Ragged, tn.BytesColumn, or a list of bytes,
        str or lists. Or a pyarrow Table or a Hugging Face datasets.Dataset; or a
        pyarrow.dataset.Dataset (a Parquet file or folder opened with
        ``pyarrow.dataset.dataset``), Scanner or RecordBatchReader, read a record batch at a
        time, so memory holds a few batches, never the table.
    encoding : {None, "list", "raw", "jpeg", "jpeg:Q", "png"} or dict, optional
        For every column, or a dict per column. None / "list": float_list / int64_list /
        bytes_list; "raw": each record's array as one bytes value (read back with tn.Raw);
        "jpeg" / "png": uint8 [n, h, w, c] images (read back with tn.Image).
    compression : {None, "GZIP", "ZLIB"}, or for ArrayRecord a codec
        "zstd[:N]", "brotli[:N]", "snappy" or "uncompressed"; ArrayRecord's default (None)
        is "zstd:3", as array-record's writer and TFDS write.
    records_per_shard : int, optional
        Split into shards named ``name-00000-of-00008.tfrecord`` (ArrayRecord: TFDS's
        ``name.array_record-00000-of-00008``).
    index : bool
        Also write ``.idx`` sidecars (offset and length of each record).
    progress : bool
        Show a progress line on a terminal.
    verify : bool
        Re-read the files and check count, bytes and values before they appear.
    sequence : list of str, optional
        Columns written as feature lists, making each record a tf.train.SequenceExample
        whose context is the other columns; each is a tn.Ragged of steps per record, as
        `tn.read` gives for a tn.Sequence spec.
    storage_options : dict, optional
        For a URL: passed to its fsspec filesystem.
    format : {None, "tfrecord", "array_record"}
        The files written; None: ArrayRecord when the path ends in ``.array_record``, else
        TFRecord. ArrayRecord files hold the same serialized tf.train.Example records.
    group_size : int, optional
        ArrayRecord: records per chunk (default 1, array-record's and TFDS's: fastest
        random access; 65536 packs and compresses better).

    Returns
    -------
    WriteResult
        (paths, spec), plus records and bytes; spec reads the files back with `tn.open` /
        `tn.read`.
    """
    if isinstance(sequence, str):
        raise TypeError(f"sequence takes a list of column names, not a str ({sequence!r})")
    batches = arrow_stream(columns)
    cols, n = (
        (None, 0) if batches is not None else prepare(columns, encoding, frozenset(sequence or ()))
    )
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
        format=format,
        group_size=group_size,
    )
    if batches is not None:  # a pyarrow dataset or reader: a record batch at a time
        return _write_stream(writer, batches)
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


def _write_stream(writer: Writer, batches: Iterator[Any]) -> WriteResult:
    """`write` of Arrow record batches pulled one at a time (a pyarrow dataset or reader)."""
    with writer:
        for batch in batches:
            writer.write_batch(batch)
    size = sum(fs.size(p) for p in writer.paths)
    return WriteResult(writer.paths, writer.spec, writer.records, size)
