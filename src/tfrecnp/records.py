"""TFRecord files as records: read payloads in batches, scan and index frames, write frames.

The byte work (CRC32C, header walks, payload copies) happens in `tfrecnp._core.framing`
with the GIL released; this module owns files, buffers, compression and error reports.

A batch of records is one contiguous uint8 buffer plus n + 1 int64 offsets: record i is
``data[offsets[i]:offsets[i + 1]]``. Memory is bounded by the read chunk (4 MiB), the
largest record and the batch, never by the file.

Damage is reported as `CorruptRecordError` naming file, record index and byte offset. With
``on_error="skip"`` (or ``"warn"``) the reader resynchronises on the next offset where a
whole frame checks (length CRC and payload CRC) and records what it skipped in
``RecordReader.corruptions``.
"""

from __future__ import annotations

import glob
import itertools
import os
import uuid
import warnings
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ._core import framing
from .compression import (
    CompressingWriter,
    DecompressingReader,
    detect_compression,
    normalize_compression,
)
from .errors import CorruptRecordError, CorruptRecordWarning, format_count, format_size

__all__ = [
    "RecordBatch",
    "RecordIndex",
    "RecordReader",
    "RecordWriter",
    "count_records",
    "expand_paths",
    "file_compression",
    "index_path",
    "iter_records",
    "read_index",
    "scan_file",
    "write_index",
]

PathLike = str | os.PathLike
Paths = PathLike | Iterable[PathLike]
OnError = Literal["raise", "skip", "warn"]

CHUNK_BYTES = 1 << 20  # read-buffer size; grows only to hold one larger record
SEEK_READ_BYTES = 4096  # a header-only scan reads this much after each jump over a payload
MAX_PLAUSIBLE_LENGTH = 1 << 31  # protobuf messages stop at 2 GiB; past this a length is nonsense
INDEX_SUFFIX = ".idx"
SALVAGE_HINT = (
    "run `tfrecnp verify --salvage OUT` to copy the good records, or pass on_error='skip'"
)


def expand_paths(paths: Paths) -> list[str]:
    """A path, a glob, a directory (its non-hidden files) or a list of those -> the list of
    files, in order; .idx sidecars in directories and glob matches are left out. Raises
    FileNotFoundError naming what matched nothing."""
    if isinstance(paths, (str, os.PathLike)):
        path = os.fspath(paths)
        if os.path.isdir(path):
            names = sorted(
                n
                for n in os.listdir(path)
                if not n.startswith(".") and not n.endswith(INDEX_SUFFIX)
            )
            files = [os.path.join(path, n) for n in names if os.path.isfile(os.path.join(path, n))]
            if not files:
                raise FileNotFoundError(f"directory {path} holds no files")
            return files
        if glob.has_magic(path):
            files = sorted(
                f for f in glob.glob(path) if os.path.isfile(f) and not f.endswith(INDEX_SUFFIX)
            )
            if not files:
                raise FileNotFoundError(f"no files match {path}")
            return files
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such file: {path}")
        return [path]
    files = [f for p in paths for f in expand_paths(p)]
    if not files:
        raise FileNotFoundError("the list of paths is empty")
    return files


def _check_on_error(on_error: str) -> str:
    if on_error not in ("raise", "skip", "warn"):
        raise ValueError(f'on_error must be "raise", "skip" or "warn", not {on_error!r}')
    return on_error


def file_compression(path: PathLike, compression: str | None = "auto") -> str | None:
    """The compression of one file: as given, or detected from its first bytes for "auto"."""
    compression = normalize_compression(compression)
    if compression != "auto":
        return compression
    with open(path, "rb") as f:
        return detect_compression(f.read(12))


@dataclass(frozen=True)
class RecordBatch:
    """Payloads of consecutive records: record i is data[offsets[i]:offsets[i + 1]].

    origins lists (first row, path, record index in that file) for each file the batch
    draws on, so later stages can name where a record came from.
    """

    data: np.ndarray
    offsets: np.ndarray
    origins: tuple[tuple[int, str, int], ...] = ()

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> bytes:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"record {i} out of range for a batch of {n}")
        i %= n
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()

    def __iter__(self) -> Iterator[bytes]:
        data, offsets = self.data, self.offsets.tolist()
        for a, b in itertools.pairwise(offsets):
            yield data[a:b].tobytes()

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def where(self, row: int) -> tuple[str, int]:
        """(path, record index in that file) of row `row` of this batch."""
        for first, path, record in reversed(self.origins):
            if row >= first:
                return path, record + row - first
        return "<memory>", row

    def slice(self, start: int, stop: int) -> RecordBatch:
        """Rows start..stop as a view on the same buffer (no copy)."""
        offsets = self.offsets[start : stop + 1]
        origins = []
        for k, (first, path, record) in enumerate(self.origins):
            end = self.origins[k + 1][0] if k + 1 < len(self.origins) else len(self)
            lo, hi = max(first, start), min(end, stop)
            if lo < hi:
                origins.append((lo - start, path, record + lo - first))
        data = self.data[offsets[0] : offsets[-1]]
        return RecordBatch(data, offsets - offsets[0], tuple(origins))

    @classmethod
    def concat(cls, batches: list[RecordBatch]) -> RecordBatch:
        if len(batches) == 1:
            return batches[0]
        data = np.concatenate([b.data for b in batches]) if batches else np.empty(0, np.uint8)
        offsets = [np.zeros(1, np.int64)]
        origins = []
        rows = base = 0
        for b in batches:
            offsets.append(b.offsets[1:] + base)
            origins += [(first + rows, path, record) for first, path, record in b.origins]
            rows += len(b)
            base += int(b.offsets[-1])
        return cls(data, np.concatenate(offsets), tuple(origins))


@dataclass(frozen=True)
class RecordIndex:
    """Where each record of one file lies: frame offsets and payload lengths (int64)."""

    path: str
    offsets: np.ndarray
    lengths: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def frame_lengths(self) -> np.ndarray:
        """Whole-frame lengths (payload + 16), as index files store them."""
        return self.lengths + 16


class _Stream:
    """A window on one file's byte stream: buf[start:end] holds stream bytes base+start...

    Uncompressed files can seek (header-only scans jump over payloads); compressed ones are
    read front to back through a decompressor.
    """

    def __init__(self, path: str, compression: str | None):
        self.path = path
        self.raw = open(path, "rb", buffering=0)  # noqa: SIM115 (closed by close())
        self.compression = compression
        self.size = os.fstat(self.raw.fileno()).st_size if compression is None else None
        self.source = (
            self.raw if compression is None else DecompressingReader(self.raw, compression)
        )
        self.buf = bytearray(CHUNK_BYTES)
        self.view = memoryview(self.buf)
        self.base = self.start = self.end = 0
        self.eof = False
        self.damage: Exception | None = None  # why a compressed stream stopped early

    def close(self) -> None:
        self.view.release()
        self.source.close()

    def fill(self, need: int, read_size: int = CHUNK_BYTES) -> None:
        """Make buf[start:] hold at least `need` bytes, or reach the end of the stream.

        The buffer grows at most to twice the data actually read, so a corrupt length can
        never make it allocate more than the bytes that remain.
        """
        if self.start:
            kept = self.end - self.start
            self.buf[:kept] = self.view[self.start : self.end]
            self.base += self.start
            self.start, self.end = 0, kept
        goal = max(need, read_size)
        while self.end < goal and not self.eof:
            if self.end == len(self.buf):
                self.view.release()
                self.buf.extend(bytes(min(len(self.buf), goal - self.end)))
                self.view = memoryview(self.buf)
            try:
                got = self.source.readinto(self.view[self.end : min(len(self.buf), goal)])
            except (EOFError, zlib.error) as e:
                self.damage, got = e, 0  # reported when the bytes decoded before it run out
            if not got:
                self.eof = True
            self.end += got

    def jump(self, offset: int) -> None:
        """Continue at stream offset `offset` (uncompressed files only), discarding the buffer."""
        self.raw.seek(offset)
        self.base, self.start, self.end, self.eof = offset, 0, 0, False


class RecordReader:
    """Reads the records of TFRecord files: `batches()` of payloads, or `bytes` per record.

    `paths` is a path, a glob, a directory or a list. compression="auto" detects GZIP and
    ZLIB per file. verify_crc=False skips payload CRCs (length CRCs are always checked,
    since an unchecked length cannot be trusted). on_error="skip" / "warn" resynchronises
    past damage; what was skipped is listed in `corruptions`.
    """

    def __init__(
        self,
        paths: Paths,
        *,
        compression: str | None = "auto",
        verify_crc: bool = True,
        on_error: OnError = "raise",
    ):
        self.paths = expand_paths(paths)
        self.compression = normalize_compression(compression)
        self.verify_crc = verify_crc
        self.on_error = _check_on_error(on_error)
        self.corruptions: list[CorruptRecordError] = []

    def __iter__(self) -> Iterator[bytes]:
        for batch in self.batches(1024):
            yield from batch

    def batches(self, batch_size: int = 1024) -> Iterator[RecordBatch]:
        """Batches of exactly batch_size records (the last may be short), across files."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        batch = _BatchBuilder(batch_size)
        later = np.cumsum([_size_or_zero(p) for p in reversed(self.paths)])[::-1].tolist()
        try:
            for k, path in enumerate(self.paths):
                batch.later_bytes = later[k + 1] if k + 1 < len(later) else 0
                yield from self._walk(path, batch_size, batch)
        except CorruptRecordError:
            if batch.n:  # the good records before the damage come out first, as in TensorFlow
                yield batch.take()
            raise
        if batch.n:
            yield batch.take()

    def indexes(self) -> Iterator[RecordIndex]:
        """One RecordIndex per file, from a scan that reads only frame headers where it can."""
        for path in self.paths:
            parts = list(self._walk(path, 1 << 16))
            offsets = [p[0] for p in parts] or [np.empty(0, np.int64)]
            lengths = [p[1] for p in parts] or [np.empty(0, np.int64)]
            yield RecordIndex(path, np.concatenate(offsets), np.concatenate(lengths))

    def _walk(self, path: str, limit: int, batch: _BatchBuilder | None = None):
        """For one file: fills `batch`, yielding it whenever it is full, or (without a
        batch) yields (offsets, lengths) pairs from a header-only walk."""
        compression = (
            file_compression(path, self.compression)
            if self.compression == "auto"
            else self.compression
        )
        stream = _Stream(path, compression)
        try:
            yield from _walk_stream(self, stream, limit, batch)
        finally:
            stream.close()

    def _damage(self, reason: str, stream: _Stream, record: int, offset: int) -> None:
        error = CorruptRecordError(
            reason, path=stream.path, record=record, offset=offset, hint=SALVAGE_HINT
        )
        if self.on_error == "raise":
            raise error
        error.skipped = 0
        self.corruptions.append(error)

    def _report_skip(self, skipped: int) -> None:
        error = self.corruptions[-1]
        error.skipped = skipped
        if self.on_error == "warn":
            warnings.warn(
                f"{error.reason} at {error.path} record {error.record} "
                f"(byte {format_count(error.offset)}); skipped {format_count(skipped)} bytes",
                CorruptRecordWarning,
                stacklevel=4,
            )


def _size_or_zero(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:  # reported when the file is opened
        return 0


class _BatchBuilder:
    """The batch being filled: payloads are gathered straight into its final buffer, chunk
    after chunk and file after file, so no batch is ever sliced or concatenated.

    The buffer is sized from the records seen so far (average payload x records still to
    come, plus 1/16), never beyond the bytes left in the files for uncompressed input; a
    wrong guess costs one copy when it grows. A full batch is handed out and the builder
    starts a fresh buffer, so nothing handed out is written again.
    """

    def __init__(self, size: int):
        self.size = size
        self.later_bytes = 0  # bytes of the files after the current one
        self.seen_records = self.seen_bytes = 0
        self._start()

    def _start(self) -> None:
        self.data: np.ndarray | None = None
        self.offsets = np.zeros(min(self.size, 1 << 16) + 1, np.int64)
        self.n = self.used = 0
        self.origins: list[tuple[int, str, int]] = []
        self.follows: tuple[str, int] | None = None  # (path, record) that continues origins[-1]

    def gather(self, s: _Stream, starts, lengths, total: int, verify: bool, record: int) -> int:
        """Append the payloads of the n frames at starts (total payload bytes); returns the
        index of the first whose CRC fails, or -1 (the good ones before it are kept)."""
        n = len(starts)
        need = self.used + total
        if self.data is None or len(self.data) < need:
            self._reserve(need, n, total, s)
        if len(self.offsets) <= self.n + n:
            grown = np.zeros(min(self.size, 2 * (self.n + n)) + 1, np.int64)
            grown[: self.n + 1] = self.offsets[: self.n + 1]
            self.offsets = grown
        bad = framing.gather_payloads(
            s.view[: s.end],
            starts,
            lengths,
            self.data[self.used :],
            self.offsets[self.n : self.n + n + 1],
            verify,
            self.used,
        )
        good = n if bad < 0 else bad
        if good:
            if self.follows != (s.path, record):
                self.origins.append((self.n, s.path, record))
            self.follows = (s.path, record + good)
            self.n += good
            used = int(self.offsets[self.n])
            self.seen_records += good
            self.seen_bytes += used - self.used
            self.used = used
        return bad

    def _reserve(self, need: int, n: int, total: int, s: _Stream) -> None:
        rest = self.size - self.n - n  # records this batch takes after these
        average = (self.seen_bytes + total) / (self.seen_records + n)
        guess = int(average * rest * 17 / 16) + 64 if rest else 0
        if s.size is not None:  # uncompressed: at most what the files still hold
            guess = min(guess, s.size - s.base - s.start - total + self.later_bytes)
        else:
            guess = min(guess, 8 * need + CHUNK_BYTES)
        capacity = need + max(guess, 0)
        if self.data is None:
            self.data = np.empty(capacity, np.uint8)
            return
        grown = np.empty(max(capacity, len(self.data) * 3 // 2), np.uint8)
        grown[: self.used] = self.data[: self.used]
        self.data = grown

    def take(self) -> RecordBatch:
        """The batch so far (the builder starts afresh)."""
        data = self.data[: self.used] if self.data is not None else np.empty(0, np.uint8)
        batch = RecordBatch(data, self.offsets[: self.n + 1], tuple(self.origins))
        self._start()
        return batch


def _walk_stream(reader: RecordReader, s: _Stream, limit: int, batch: _BatchBuilder | None):
    seek_headers = batch is None and s.compression is None
    # Payload walks scan every frame of a chunk in one call, while the chunk is in cache;
    # a chunk holds at most CHUNK_BYTES // 16 frames (a batch_size of 10**9 must not
    # allocate 16 GB), unless it grew to hold one larger record.
    limit = CHUNK_BYTES // 16 if batch is not None else min(limit, CHUNK_BYTES // 16)
    starts = np.empty(limit, np.int64)
    lengths = np.empty(limit, np.int64)
    record = 0
    s.fill(12)
    while True:
        scan_limit = s.size - s.base if seek_headers else s.end
        status, pos, n, length = framing.scan_frames(
            s.view[: s.end], s.start, scan_limit, starts, lengths
        )
        if n and batch is None:
            yield starts[:n] + s.base, lengths[:n].copy()
        elif n:
            i = 0
            while i < n:  # gather the chunk's frames into batches
                k = min(n - i, batch.size - batch.n)
                # frames lie back to back: their payloads total (bytes spanned) - 16 k
                end = pos if i + k == n else int(starts[i + k])
                total = end - int(starts[i]) - 16 * k
                bad = batch.gather(
                    s, starts[i : i + k], lengths[i : i + k], total, reader.verify_crc, record
                )
                good = k if bad < 0 else bad
                if batch.n == batch.size:
                    yield batch.take()
                if bad >= 0:
                    break
                record += k
                i += k
            if bad >= 0:
                at = int(starts[i + bad])
                reason = _payload_crc_reason(s.view, at, int(lengths[i + bad]))
                reader._damage(reason, s, record + good, s.base + at)
                record += good + 1  # its header checked: it was one record, the next is +1
                _resync(reader, s, at + 1, at)
                continue
            n = 0  # counted above
        record += n
        s.start = pos
        if status == framing.LIMIT:
            continue
        if status == framing.BAD_LENGTH_CRC:
            reason = _length_crc_reason(s.view, pos)
            reader._damage(reason, s, record, s.base + pos)
            _resync(reader, s, pos + 1, pos)
            continue
        # NEED_MORE: the frame at pos is not whole in the buffer.
        if seek_headers and s.start >= s.end and s.base + s.start < s.size:
            s.jump(s.base + s.start)
            s.fill(12, SEEK_READ_BYTES)
            continue
        need = 12 if length < 0 else length + 16
        left = (s.size - s.base - s.start) if s.size is not None else None
        if left is not None and need > left:
            if left == 0:
                return
            reader._damage(_short_reason(left, length), s, record, s.base + s.start)
            _resync(reader, s, s.start + 1, s.start)
            continue
        s.fill(need)
        if s.end - s.start < need:
            left = s.end - s.start
            if s.damage is not None:  # nothing after it can be decoded: end the file here
                reason = f"compressed stream is damaged ({s.damage})"
                reader._damage(reason, s, record, s.base + s.start)
                reader._report_skip(left)
                return
            if left == 0:
                return
            reader._damage(_short_reason(left, length), s, record, s.base + s.start)
            _resync(reader, s, s.start + 1, s.start)


def _resync(reader: RecordReader, s: _Stream, pos: int, damaged_at: int) -> None:
    """Move s.start to the next whole valid frame at or after pos, or to the end."""
    origin = s.base + damaged_at
    while True:
        status, pos = framing.find_frame(s.view[: s.end], pos)
        if status == framing.FOUND:
            break
        if status == framing.NEED_MORE and s.eof:
            pos += 1
            continue
        if s.eof:  # NOT_FOUND: nothing valid before the end
            pos = s.end
            break
        s.start = pos
        s.fill(s.end - s.start + CHUNK_BYTES)
        pos = s.start
    s.start = pos
    reader._report_skip(s.base + pos - origin)


def _length_crc_reason(view, pos: int) -> str:
    stored = int.from_bytes(view[pos + 8 : pos + 12], "little")
    computed = framing.mask_crc(framing.crc32c(view[pos : pos + 8]))
    return f"length CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})"


def _payload_crc_reason(view, pos: int, length: int) -> str:
    payload = view[pos + 12 : pos + 12 + length]
    stored = int.from_bytes(view[pos + 12 + length : pos + 16 + length], "little")
    computed = framing.mask_crc(framing.crc32c(payload))
    return f"payload CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})"


def _short_reason(left: int, length: int) -> str:
    if length < 0:
        return f"truncated: the file ends {format_count(left)} bytes into a 12-byte record header"
    if length >= MAX_PLAUSIBLE_LENGTH and length + 16 > left:
        return f"length {format_count(length)} exceeds the {format_size(left)} left in the file"
    return (
        f"truncated: the file ends {format_count(left)} bytes into a record of "
        f"{format_count(length + 16)} bytes"
    )


def iter_records(
    paths: Paths, *, compression: str | None = "auto", verify_crc: bool = True
) -> Iterator[bytes]:
    """Each record's payload as bytes: the equivalent of tf.data.TFRecordDataset."""
    return iter(RecordReader(paths, compression=compression, verify_crc=verify_crc))


def index_path(path: PathLike) -> str:
    """The sidecar index of a TFRecord file: the same name with .idx appended."""
    return os.fspath(path) + INDEX_SUFFIX


def scan_file(
    path: PathLike, *, compression: str | None = "auto", use_index: bool = True
) -> RecordIndex:
    """Where each record of one file lies. Uses a matching .idx sidecar when present;
    otherwise walks the frame headers, seeking over payloads in uncompressed files."""
    path = os.fspath(path)
    sidecar = index_path(path)
    if use_index and os.path.exists(sidecar):
        index = read_index(sidecar, path)
        if index is not None:
            return index
    return next(RecordReader(path, compression=compression).indexes())


def count_records(paths: Paths, *, compression: str | None = "auto") -> int:
    """Number of records in all the files, from header-only scans (or .idx sidecars)."""
    return sum(len(scan_file(p, compression=compression)) for p in expand_paths(paths))


def write_index(index: RecordIndex, out: PathLike | None = None) -> str:
    """Write `offset length` lines (length = whole frame), the format of NVIDIA DALI's
    tfrecord2idx and vahidk/tfrecord. Returns the index file's path."""
    out = os.fspath(out) if out is not None else index_path(index.path)
    table = np.stack([index.offsets, index.frame_lengths], axis=1)
    with atomic_output(out) as tmp:
        np.savetxt(tmp, table, fmt="%d", delimiter=" ")
    return out


def read_index(index_file: PathLike, data_file: PathLike | None = None) -> RecordIndex | None:
    """Read an `offset length` index. With data_file given, returns None (and warns) when
    the index does not describe that file (stale or foreign), so callers rescan."""
    index_file = os.fspath(index_file)
    path = os.fspath(data_file) if data_file is not None else index_file[: -len(INDEX_SUFFIX)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an empty index is a valid index of an empty file
            table = np.loadtxt(index_file, dtype=np.int64, ndmin=2)
        if table.size and table.shape[1] != 2:
            raise ValueError("expected two columns (offset length) per line")
    except ValueError as e:
        if data_file is None:
            raise ValueError(f"{index_file}: {e}") from e
        return _ignore_index(index_file, path)
    table = table.reshape(-1, 2)
    offsets, frames = table[:, 0].copy(), table[:, 1].copy()
    consistent = bool(
        np.all(frames >= 16) and np.all(offsets[1:] == offsets[:-1] + frames[:-1])
    ) and (len(offsets) == 0 or offsets[0] == 0)
    if data_file is not None:
        end = int(offsets[-1] + frames[-1]) if len(offsets) else 0
        if not (
            consistent and end == os.path.getsize(path) and _headers_agree(path, offsets, frames)
        ):
            return _ignore_index(index_file, path)
    elif not consistent:
        raise ValueError(f"{index_file}: offsets and lengths do not tile a file")
    return RecordIndex(path, offsets, frames - 16)


def _ignore_index(index_file: str, path: str) -> None:
    warnings.warn(
        f"ignoring index {index_file}: it does not describe {path} (stale or foreign); rescanning",
        stacklevel=4,
    )


def _headers_agree(path: str, offsets: np.ndarray, frames: np.ndarray) -> bool:
    """Spot-check an index against its file (a few 12-byte reads): the first, middle and last
    indexed frames must start with a header whose length CRC checks and whose length agrees."""
    with open(path, "rb") as f:
        for i in sorted({0, len(offsets) // 2, len(offsets) - 1}) if len(offsets) else ():
            f.seek(int(offsets[i]))
            head = f.read(12)
            if len(head) < 12 or int.from_bytes(head[:8], "little") != frames[i] - 16:
                return False
            if framing.mask_crc(framing.crc32c(head[:8])) != int.from_bytes(head[8:], "little"):
                return False
    return True


class atomic_output:
    """Context manager giving a temporary path beside `path`; renamed onto it only when the
    block finishes without an exception, deleted otherwise."""

    def __init__(self, path: PathLike):
        self.path = os.fspath(path)
        folder, name = os.path.split(self.path)
        self.tmp = os.path.join(folder, f".{name}.tmp-{uuid.uuid4().hex[:8]}")

    def __enter__(self) -> str:
        return self.tmp

    def __exit__(self, kind, value, traceback) -> None:
        try:
            if kind is None:
                os.replace(self.tmp, self.path)
        finally:
            if os.path.exists(self.tmp):  # the block raised, or the rename itself failed
                os.unlink(self.tmp)


class RecordWriter:
    """Writes TFRecord frames to `path` under a temporary name, renamed on a clean close.

    Use as a context manager. `write(payload)` appends one record; `write_batch(data,
    offsets)` appends many from one buffer. If the block raises, or the writer is dropped
    unclosed, the temporary file is deleted and nothing appears at `path`.
    """

    FLUSH_BYTES = 4 << 20

    def __init__(self, path: PathLike, compression: str | None = None):
        self.path = os.fspath(path)
        self.compression = normalize_compression(compression, allow_auto=False)
        self._target = atomic_output(self.path)
        folder = os.path.dirname(self.path) or "."
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"cannot write {self.path}: no such directory {folder}")
        self._raw = open(self._target.tmp, "wb")  # noqa: SIM115 (closed by close/abort)
        self._sink = (
            CompressingWriter(self._raw, self.compression) if self.compression else self._raw
        )
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self.records = 0
        self.closed = False

    def write(self, payload: bytes | bytearray | memoryview) -> None:
        payload = bytes(payload)
        self._pending.append(payload)
        self._pending_bytes += len(payload)
        if self._pending_bytes >= self.FLUSH_BYTES:
            self._flush()

    def write_batch(self, data, offsets) -> None:
        """Append records data[offsets[i]:offsets[i + 1]] (a uint8 buffer, n + 1 offsets)."""
        self._flush()
        data = np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) else data
        data = np.ascontiguousarray(data.reshape(-1).view(np.uint8))
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self._write_frames(data, offsets)

    def _flush(self) -> None:
        if not self._pending:
            return
        lengths = np.fromiter(map(len, self._pending), np.int64, len(self._pending))
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        data = np.frombuffer(b"".join(self._pending), np.uint8)
        self._pending, self._pending_bytes = [], 0
        self._write_frames(data, offsets)

    def _write_frames(self, data: np.ndarray, offsets: np.ndarray) -> None:
        self._check_open()
        n = len(offsets) - 1
        if n <= 0:
            return
        size = int(offsets[-1] - offsets[0]) + 16 * n
        out = np.empty(size, np.uint8)
        framing.frame_payloads(data, offsets, out)
        self._sink.write(out)
        self.records += n

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError(f"writer for {self.path} is closed")

    def close(self) -> None:
        """Flush, then move the finished file into place."""
        if self.closed:
            return
        try:
            self._flush()
            if self.compression:
                self._sink.finish()
            self._raw.close()
        except BaseException:
            self.abort()
            raise
        self.closed = True
        self._target.__exit__(None, None, None)

    def abort(self) -> None:
        """Drop everything written: the temporary file is deleted."""
        if self.closed:
            return
        self.closed = True
        self._raw.close()
        self._target.__exit__(RuntimeError, None, None)

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
            self.abort()
