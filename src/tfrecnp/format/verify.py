"""Checking TFRecord files whole, and copying out their good records: `verify`.

Every frame of every file is read and checked (length CRC, payload CRC; GZIP / ZLIB streams
decompressed). Damage does not stop the check: the reader steps past it as
``on_error="skip"`` does, and each damaged stretch is reported with its file, record index,
byte offset, reason and the bytes stepped over. With ``salvage=OUT`` the good records of
all files are copied, in order, into one new uncompressed TFRecord file, written by
`RecordWriter`: it appears at OUT only when complete.

This is the library side of ``tfrecnp verify [--salvage OUT]``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .._util import fs
from .._util.progress import Progress
from ..errors import CorruptRecordError
from .compression import normalize_compression
from .frames import OVERHEAD_BYTES
from .paths import PathLike, Paths, expand_paths
from .reader import RecordReader, file_compression
from .writer import RecordWriter

__all__ = ["FileReport", "VerifyReport", "verify"]

BATCH_RECORDS = 4096  # records read (and salvaged) at a time


@dataclass(frozen=True)
class FileReport:
    """One file checked: its good records and their payload bytes, the seconds the check
    took, and each damaged stretch, in file order: a CorruptRecordError with `path`,
    `record` (its index in the file), `offset` (byte of the damaged frame; in the
    decompressed stream for compressed files), `reason` and `skipped` (bytes stepped
    over)."""

    path: str
    records: int
    payload_bytes: int
    seconds: float
    damage: tuple[CorruptRecordError, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.damage


@dataclass(frozen=True)
class VerifyReport:
    """What `verify` found: a FileReport per file, in reading order; with salvage, where
    the good records went (`salvaged`, the path as given) and how many (`salvaged_records`)."""

    files: tuple[FileReport, ...]
    salvaged: str | None = None
    salvaged_records: int = 0

    @property
    def damage(self) -> list[CorruptRecordError]:
        """Every damaged stretch of every file, in reading order."""
        return [e for f in self.files for e in f.damage]

    @property
    def ok(self) -> bool:
        """Whether no file holds damage."""
        return all(f.ok for f in self.files)

    @property
    def records(self) -> int:
        """Good records in all files."""
        return sum(f.records for f in self.files)


def verify(
    paths: Paths,
    *,
    salvage: PathLike | None = None,
    compression: str | None = "auto",
    storage_options: dict | None = None,
    progress: bool = True,
) -> VerifyReport:
    """Read every record of TFRecord files, checking every CRC, and report the damage.

    Parameters
    ----------
    paths
        A file, a glob, a directory or a list of them; local or fsspec URLs.
    salvage
        A new TFRecord file to copy every good record of all files into, in order
        (uncompressed; it appears only when complete). Salvaging undamaged files
        reproduces their bytes.
    compression
        "auto" (detected per file), None, "GZIP" or "ZLIB".
    storage_options
        Passed to fsspec for URLs.
    progress
        Show a progress line on a terminal (stderr).

    Notes
    -----
    Damage never raises: it is in the report (``report.ok``, ``report.damage``). Files
    that cannot be read at all (missing, unreadable) and a salvage file that cannot be
    written raise as anywhere else.
    """
    compression = normalize_compression(compression)
    files = expand_paths(paths, storage_options)
    writer = RecordWriter(salvage, storage_options=storage_options) if salvage else None
    total = _stream_bytes(files, compression) if progress else None
    bar = Progress("verify", total_bytes=total, enabled=progress)
    reports = []
    try:
        for path in files:
            reports.append(_check(path, compression, writer, bar))
    except BaseException:
        if writer:
            writer.abort()
        raise
    finally:
        bar.close()
    if writer is None:
        return VerifyReport(tuple(reports))
    writer.close()
    return VerifyReport(tuple(reports), str(salvage), writer.records)


def _check(
    path: str, compression: str | None, writer: RecordWriter | None, bar: Progress
) -> FileReport:
    """One file read whole, stepping past damage; its good records copied to `writer`."""
    reader = RecordReader(path, compression=compression, on_error="skip")
    records = size = 0
    started = time.perf_counter()
    for batch in reader.batches(BATCH_RECORDS):
        records += len(batch)
        size += batch.nbytes
        bar.update(len(batch), batch.nbytes + OVERHEAD_BYTES * len(batch))
        if writer:
            writer.write_batch(batch.data, batch.offsets)
    seconds = time.perf_counter() - started
    return FileReport(path, records, size, seconds, tuple(reader.corruptions))


def _stream_bytes(files: list[str], compression: str | None) -> int | None:
    """The bytes a pass reads, for the progress line: known only when no file is
    compressed (a compressed file's frames outnumber its bytes)."""
    if any(file_compression(p, compression) is not None for p in files):
        return None
    return sum(fs.size(p) for p in files)
