"""verify=True for `write` / `Writer`: the files read back before they are published.

Each shard must hold as many records as were written to it, with the same payload bytes
(a CRC32C kept while writing). Then the values: decoded with the spec that was written,
they must equal what the encoder was given (the float32 / int64 / bytes the records were
made of) when the inputs are at hand (`write`); a streaming Writer keeps no inputs, and
its records must decode with that spec. Any difference raises TFRecordError, and the
Writer then removes every shard: nothing was kept.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._core import encode, framing
from .._util.text import format_count
from ..errors import TFRecordError
from ..format.payloads import RecordBatch
from ..format.reader import RecordReader
from .columns import BytesColumn, Ragged
from .write_inputs import InputColumn, Written, bytes_block, rows_of, rows_per_slice
from .write_shards import Shards

__all__ = ["check_output"]

READ_RECORDS = 8192  # records read back at a time to count and checksum a shard


def check_output(
    path: str,
    shards: Shards,
    spec: Any,
    expected: list[tuple[list[InputColumn], int]],
    *,
    sequence: bool,
    records: int,
) -> None:
    """Read back the shards (finished, not yet published) of the output `path`: counts and
    payload bytes, then values against `expected` (columns and their rows, as written),
    or, without them, a decode of every record with `spec`."""
    if shards.checksums is None:
        raise ValueError("check_output needs shards that kept checksums (checksums=True)")
    for k, (shard, wrote) in enumerate(zip(shards.writers, shards.checksums, strict=True)):
        count, checksum = 0, 0
        for batch in read_back([shard.tmp], shards, READ_RECORDS):
            count += len(batch)
            checksum = framing.crc32c(batch.data, checksum)
        if count != shard.records or checksum != wrote:
            raise TFRecordError(
                f"verify failed for {path}: shard {k} reads back {format_count(count)} "
                f"records (wrote {format_count(shard.records)})"
                + ("" if checksum == wrote else " with different bytes")
                + "; nothing was kept"
            )
    paths = [s.tmp for s in shards.writers]
    if not sequence:
        for cols, n in expected:
            compare_values(paths, spec, cols, n, shards)
    if (sequence or not expected) and records:
        decode_all(paths, spec, shards)


def read_back(paths: list[str], shards: Shards, records: int) -> Iterator[RecordBatch]:
    """The payloads of finished shards, `records` at a time, from their container
    (TFRecord frames, CRCs checked; ArrayRecord chunks, hashes checked)."""
    if shards.array_record is not None:
        from ..format.arrayrecord import ArrayRecordFile, file_batches, rebatch

        return rebatch(file_batches([ArrayRecordFile(p) for p in paths]), records)
    return RecordReader(paths, compression=shards.compression).batches(records)


def compare_values(
    paths: list[str], spec: dict, cols: list[InputColumn], n: int, shards: Shards
) -> None:
    """Decode the files with spec and check every value against the encoder's view of the
    input columns (the float32 / int64 / bytes the records were made of)."""
    from .decode import Decoder  # imported when verifying only

    decoder = Decoder({k: f.decode_as() or f for k, f in spec.items()})  # images: their bytes
    step = rows_per_slice(cols)
    a = 0
    for batch in read_back(paths, shards, step):
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


def decode_all(paths: list[str], spec: dict, shards: Shards) -> None:
    """Decode every record with spec (a streaming Writer keeps no inputs to compare)."""
    from .decode import Decoder  # imported when verifying only

    decoder = Decoder(spec)
    try:
        for batch in read_back(paths, shards, 4096):
            decoder.decode(batch)
    except TFRecordError as e:
        raise TFRecordError(
            f"verify failed: the records do not decode with the spec written ({e}); "
            "nothing was kept"
        ) from e


def _mismatch(feature: tuple, column: Any, desc: Written) -> str:
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
            got_data, got_off = bytes_block("", np.asarray(column, dtype=object), rows_of(0, 1))
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
