"""Records copied between containers, byte for byte: TFRecord files -> ArrayRecord files and
back (and ArrayRecord -> ArrayRecord with other options). Each record is the same serialized
tf.train.Example in either container, so nothing is decoded: payloads are read a few MiB at
a time (TFRecord frames checked, ArrayRecord chunk hashes checked) and written by the
writer `tn.write` uses (`Shards`: hidden names, sharding, renamed into place when complete,
removed on an exception)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._util import fs
from .._util.atomic import naming_write_errors, require_folder
from .._util.progress import Progress
from ..example.write import WriteResult, output_format
from ..example.write_check import check_output
from ..example.write_shards import Shards
from ..format.arrayrecord import (
    ArrayRecordFile,
    file_batches,
    is_array_record_source,
    list_array_record,
)
from ..format.arrayrecord_write import ArrayRecordWriter, parse_compression
from ..format.compression import normalize_compression
from ..format.paths import Paths
from ..format.payloads import RecordBatch
from ..format.reader import RecordReader
from .opener import open

__all__ = ["copy_records", "is_records_conversion"]

TFRECORD_SUFFIXES = (".tfrecord", ".tfrecords", ".tfr")
BATCH_RECORDS = 4096  # TFRecord records read at a time


def _names_array_record(dst: Any, fmt: str | None) -> bool:
    return fmt in ("array_record", "arrayrecord") or (
        fmt is None and str(dst).lower().rstrip("/").endswith(".array_record")
    )


def _names_tfrecord(dst: Any, fmt: str | None) -> bool:
    return fmt in ("tfrecord", "tfrecords") or (
        fmt is None and str(dst).lower().endswith(TFRECORD_SUFFIXES)
    )


def is_records_conversion(src: Paths, dst: Any, options: dict) -> bool:
    """Whether `tn.convert(src, dst, **options)` copies records between containers: to an
    ArrayRecord output from TFRecord or ArrayRecord files, or from ArrayRecord files to a
    TFRecord output."""
    fmt = options.get("format")
    storage = options.get("storage_options")
    if _names_array_record(dst, fmt):
        return True  # the caller sends arrays and Parquet to their own converters first
    return _names_tfrecord(dst, fmt) and is_array_record_source(src, storage)


def copy_records(
    src: Paths,
    dst: str | os.PathLike,
    *,
    format: str | None = None,
    compression: str | None = None,
    group_size: int | None = None,
    records_per_shard: int | None = None,
    index: bool = False,
    progress: bool = True,
    verify: bool = False,
    on_error: str = "raise",
    verify_crc: bool = True,
    spec: Any = None,
    storage_options: dict | None = None,
) -> WriteResult:
    """Copy the records of TFRecord or ArrayRecord files to `dst` as ArrayRecord files
    (format="array_record" or a ``.array_record`` path; group_size default 1, compression
    default "zstd:3") or TFRecord files (format="tfrecord" or a .tfrecord path;
    compression None / "GZIP" / "ZLIB", index), byte for byte, in bounded memory. The
    source's compression is detected. records_per_shard splits the output as `tn.write`
    does; verify reads every shard back before it appears (count and CRC32C of the
    payloads against what was written). Returns the files written, their spec (`spec`,
    or inferred from the source) and counts."""
    path = fs.resolve(dst, storage_options)
    fmt = output_format(path, format)
    array_record = None
    if fmt == "array_record":
        if index:
            raise ValueError(
                "index=True applies to TFRecord output; ArrayRecord files carry their own "
                "index (the footer lists every chunk and its records)"
            )
        codec, level = parse_compression(compression)
        array_record = {
            "group_size": 1 if group_size is None else group_size,
            "compression": codec if level is None else f"{codec}:{level}",
        }
        ArrayRecordWriter.check_options(**array_record)
        out_compression = None
    else:
        if group_size is not None:
            raise ValueError("group_size applies to ArrayRecord output (format='array_record')")
        out_compression = normalize_compression(compression, allow_auto=False)
    if records_per_shard is not None and (
        not isinstance(records_per_shard, (int, np.integer)) or records_per_shard < 1
    ):
        raise ValueError(f"records_per_shard must be a positive int, not {records_per_shard!r}")
    require_folder(path)
    batches, total, source_spec = _source(src, on_error, verify_crc, spec, storage_options)
    shards = Shards(
        path,
        out_compression,
        index=index,
        records_per_shard=records_per_shard,
        checksums=verify,
        array_record=array_record,
    )
    bar = Progress(f"writing {path}", total=total, enabled=progress)
    records = 0
    with naming_write_errors(path):
        try:
            for batch in batches:
                data, offsets = batch.data, batch.offsets
                a, n = 0, len(offsets) - 1
                while a < n:
                    room = shards.room()
                    b = n if room is None else min(n, a + room)
                    shards.write_batch(data, offsets[a : b + 1])
                    a = b
                records += n
                bar.update(n, int(offsets[-1] - offsets[0]))
            shards.finish()
            if verify:  # every record read back (hashes or CRCs checked), count and bytes
                check_output(path, shards, {}, [], sequence=False, records=0)
            paths = shards.publish()
        except BaseException:
            shards.abort()
            raise
        finally:
            bar.close()
    size = sum(fs.size(p) for p in paths)
    return WriteResult(paths, source_spec() if callable(source_spec) else {}, records, size)


def _source(
    src: Paths, on_error: str, verify_crc: bool, spec: Any, storage_options: dict | None
) -> tuple[Iterator[RecordBatch], int | None, Any]:
    """(batches of the source's payloads, their count if known, a function giving the
    spec that reads them)."""

    def spec_of() -> Any:
        if spec is not None:
            return open(src, spec, storage_options=storage_options).spec
        try:
            return open(src, storage_options=storage_options).spec
        except Exception:  # records that are not Examples: copied all the same
            return {}

    if is_array_record_source(src, storage_options):
        if isinstance(src, (str, os.PathLike)):
            resolved: Any = fs.resolve(src, storage_options)
        else:
            resolved = [fs.resolve(p, storage_options) for p in src]
        files = [ArrayRecordFile(p) for p in list_array_record(resolved, warn=True)]
        total = sum(f.footer.records for f in files)
        return file_batches(files, check=verify_crc, on_error=on_error), total, spec_of
    reader = RecordReader(
        src, verify_crc=verify_crc, on_error=on_error, storage_options=storage_options
    )
    return reader.batches(BATCH_RECORDS), None, spec_of
