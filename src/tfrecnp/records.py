"""TFRecord files as records: read payloads in batches, scan and index frames, write frames.

The byte work (CRC32C, header walks, payload copies) happens in `tfrecnp._core.framing`
with the GIL released; this module owns files, buffers, compression and error reports.

A batch of records is one contiguous uint8 buffer plus n + 1 int64 offsets: record i is
``data[offsets[i]:offsets[i + 1]]``. Memory is bounded by the read chunk (1 MiB), the
largest record and four batches (the one being filled and up to three earlier ones kept
for reuse once the consumer lets them go), never by the file. Payloads go from the read
buffer straight into their batch, in one pass that also walks headers and checks CRCs.

Damage is reported as `CorruptRecordError` naming file, record index and byte offset. With
``on_error="skip"`` (or ``"warn"``) the reader resynchronises on the next offset where a
whole frame checks (length CRC and payload CRC) and records what it skipped in
``RecordReader.corruptions``.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import sys
import uuid
import warnings
import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, TypeVar

import numpy as np

from ._core import encode, framing
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
STREAM_BYTES = 8 << 20  # batches this large bypass the caches when filled (see gather)
SEEK_READ_BYTES = 4096  # a header-only scan reads this much after each jump over a payload
SEEK_GAP = 64 << 10  # ... over payloads this long; shorter ones are read through, in chunks
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
        if len(offsets) > 1 and offsets[-1] - offsets[0] < 2048 * (len(offsets) - 1):
            # short records: one copy of the batch, then bytes slices, a third faster
            raw = data.tobytes()
            return map(raw.__getitem__, map(slice, offsets[:-1], offsets[1:]))
        return (data[a:b].tobytes() for a, b in itertools.pairwise(offsets))

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
                yield from self._walk(path, batch)
        except CorruptRecordError:
            if batch.n:  # the good records before the damage come out first, as in TensorFlow
                yield batch.take()
            raise
        if batch.n:
            yield batch.take()

    def indexes(self) -> Iterator[RecordIndex]:
        """One RecordIndex per file, from a scan that reads only frame headers where it can."""
        for path in self.paths:
            heads = _Headers(1 << 16)
            for _ in self._walk(path, heads):
                pass
            yield RecordIndex(path, *heads.arrays())

    def _walk(self, path: str, sink: _BatchBuilder | _Headers):
        """For one file: fills the batch `sink`, yielding it whenever it is full, or
        collects frame offsets and lengths into `sink` from a header-only walk."""
        compression = (
            file_compression(path, self.compression)
            if self.compression == "auto"
            else self.compression
        )
        stream = _Stream(path, compression)
        try:
            yield from _walk_stream(self, stream, sink)
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
    starts another buffer. Buffers handed out are kept in a small pool and reused only
    once nothing else refers to them (the consumer dropped the batch and every view of
    it), so nothing a consumer can see is written again, and the steady state allocates
    nothing: fresh pages would cost a page fault and zeroing each.
    """

    POOL = 3  # earlier batch buffers kept for reuse (a consumer often holds one or two)

    def __init__(self, size: int):
        self.size = size
        self.later_bytes = 0  # bytes of the files after the current one
        self.seen_records = self.seen_bytes = 0
        self.pool: list[np.ndarray] = []
        self._start()

    def _start(self) -> None:
        self.data: np.ndarray | None = None
        self.offsets = np.empty(min(self.size, 1 << 16) + 1, np.int64)  # gather_frames fills it
        self.n = self.used = 0
        self.origins: list[tuple[int, str, int]] = []
        self.follows: tuple[str, int] | None = None  # (path, record) that continues origins[-1]

    def gather(self, s: _Stream, verify: bool, record: int) -> tuple[int, int, int, int, int]:
        """Copy the whole frames buffered in s from s.start into the batch, until it is full
        or they end (one pass in the core: headers, payload CRCs, copies).

        Returns (status, pos, good, length, bad_at): `good` records were added and the
        walk stopped at pos with the status and length of framing.gather_frames; bad_at is
        the frame start of the first payload whose CRC failed, or -1.
        """
        view, pos, good = s.view[: s.end], s.start, 0
        while True:
            if self.data is None:
                self._reserve(s, pos, 0)
            want = min(self.size, len(self.offsets) - 1) - self.n
            status, pos, n, length, bad, bad_at, used = framing.gather_frames(
                view,
                pos,
                want,
                self.data,
                self.used,
                self.offsets,
                self.n,
                verify,
                len(self.data) >= STREAM_BYTES,  # it would not stay in cache anyway
            )
            if bad >= 0:
                n = bad
            if n:
                if self.follows != (s.path, record + good):
                    self.origins.append((self.n, s.path, record + good))
                self.n += n
                good += n
                self.follows = (s.path, record + good)
                self.seen_records += n
                self.seen_bytes += used - self.used
                self.used = used
            if bad >= 0:
                return status, pos, good, length, bad_at
            if status == framing.OUT_FULL:
                self._reserve(s, pos, length)
            elif status == framing.LIMIT and self.n < self.size:
                grown = np.empty(min(self.size, 2 * self.n) + 1, np.int64)
                grown[: self.n + 1] = self.offsets[: self.n + 1]
                self.offsets = grown
            else:
                return status, pos, good, length, -1

    def _reserve(self, s: _Stream, pos: int, length: int) -> None:
        """Make room for the next payload (`length` bytes, 0 when unknown) and, by the
        average so far, for the rest of the batch; uncompressed input bounds the guess
        by the bytes left in the files."""
        rest = self.size - self.n - 1  # records after the next one
        if self.seen_records:
            guess = int(self.seen_bytes / self.seen_records * rest * 17 / 16) + 64
        else:
            guess = CHUNK_BYTES
        if s.size is not None:  # at most what the files still hold
            guess = min(guess, s.size - s.base - pos - length + self.later_bytes)
        else:
            guess = min(guess, 8 * (self.used + length) + CHUNK_BYTES)
        need = self.used + length
        capacity = need + max(guess, 0)
        if self.data is None:
            reused = self._recycle(need, need + guess * 16 // 17)
            self.data = reused if reused is not None else np.empty(capacity, np.uint8)
            return
        grown = np.empty(max(capacity, len(self.data) * 3 // 2), np.uint8)
        grown[: self.used] = self.data[: self.used]
        self.data = grown

    def _recycle(self, need: int, expect: int) -> np.ndarray | None:
        """A pooled buffer nobody else refers to, when one holds `expect` bytes (`need`
        at least); a free one that is too small is let go."""
        for k in range(len(self.pool) if _POOLING else 0):
            if _references(self.pool, k) == _FREE_REFERENCES:
                buffer = self.pool.pop(k)
                return buffer if len(buffer) >= max(need, expect) else None
        return None

    def take(self) -> RecordBatch:
        """The batch so far (the builder starts afresh)."""
        if self.data is not None:
            self.pool.append(self.data)
            if len(self.pool) > self.POOL:
                del self.pool[0]
        data = self.data[: self.used] if self.data is not None else np.empty(0, np.uint8)
        batch = RecordBatch(data, self.offsets[: self.n + 1], tuple(self.origins))
        self._start()
        return batch


def _references(pool: list, k: int) -> int:
    return sys.getrefcount(pool[k])


# A pooled buffer is free when only the pool refers to it; the count that means "free" is
# measured here rather than assumed. Builds without the GIL do not pool.
_FREE_REFERENCES = _references([np.empty(1, np.uint8)], 0)
_POOLING = getattr(sys, "_is_gil_enabled", lambda: True)()


class _Headers:
    """Frame offsets and payload lengths from a header-only walk, gathered in blocks."""

    def __init__(self, block: int):
        self.starts = np.empty(block, np.int64)
        self.lengths = np.empty(block, np.int64)
        self.filled = 0
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []

    def add(self, n: int, base: int) -> None:
        """The last scan wrote n frames after the filled ones, at offsets relative to base."""
        self.starts[self.filled : self.filled + n] += base
        self.filled += n
        if self.filled == len(self.starts):
            self._flush()

    def _flush(self) -> None:
        if self.filled:
            k = self.filled
            self.parts.append((self.starts[:k].copy(), self.lengths[:k].copy()))
            self.filled = 0

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        self._flush()
        if not self.parts:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return np.concatenate([p[0] for p in self.parts]), np.concatenate(
            [p[1] for p in self.parts]
        )


def _walk_stream(reader: RecordReader, s: _Stream, sink: _BatchBuilder | _Headers):
    batch = sink if isinstance(sink, _BatchBuilder) else None
    seek_headers = batch is None and s.compression is None
    record = 0
    s.fill(12)
    while True:
        if batch is None:
            # header-only: frames are collected into the sink's arrays, no Python per frame
            heads, k = sink, sink.filled
            scan_limit = s.size - s.base if seek_headers else s.end
            status, pos, n, length = framing.scan_frames(
                s.view[: s.end], s.start, scan_limit, heads.starts[k:], heads.lengths[k:]
            )
            if n:
                heads.add(n, s.base)
        else:
            status, pos, n, length, at = batch.gather(s, reader.verify_crc, record)
            if batch.n == batch.size:
                yield batch.take()
            if at >= 0:
                record += n
                size = int.from_bytes(s.view[at : at + 8], "little")
                reason = _payload_crc_reason(s.view, at, size)
                reader._damage(reason, s, record, s.base + at)
                record += 1  # its header checked: it was one record, the next is +1
                _resync(reader, s, at + 1, at)
                continue
        record += n
        s.start = pos
        if status == framing.LIMIT and pos <= s.end:  # else a header-only walk stepped past
            continue
        if status == framing.BAD_LENGTH_CRC:
            reason = _length_crc_reason(s.view, pos)
            reader._damage(reason, s, record, s.base + pos)
            _resync(reader, s, pos + 1, pos)
            continue
        # NEED_MORE: the frame at pos is not whole in the buffer.
        if seek_headers and s.start >= s.end and s.base + s.start < s.size:
            gap = s.start - s.end
            s.jump(s.base + s.start)
            s.fill(12, SEEK_READ_BYTES if gap >= SEEK_GAP else CHUNK_BYTES)
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
    starts = np.ascontiguousarray(index.offsets, np.int64)
    frames = np.ascontiguousarray(index.frame_lengths, np.int64)
    with atomic_output(out) as tmp, open(tmp, "wb") as f:
        f.write(encode.index_lines(starts, frames))
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


def hidden_sibling(path: PathLike, tag: str = "tmp") -> str:
    """A hidden, unique name beside `path` (``.name.tmp-1a2b3c4d``): where an output is
    built before it is renamed into place, on the same file system so the rename is atomic."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.{tag}-{uuid.uuid4().hex[:8]}")


class atomic_output:
    """Context manager giving a temporary path beside `path`; renamed onto it only when the
    block finishes without an exception, deleted otherwise."""

    def __init__(self, path: PathLike):
        self.path = os.fspath(path)
        self.tmp = hidden_sibling(self.path)

    def __enter__(self) -> str:
        return self.tmp

    def __exit__(self, kind, value, traceback) -> None:
        try:
            if kind is None:
                os.replace(self.tmp, self.path)
        finally:
            if os.path.exists(self.tmp):  # the block raised, or the rename itself failed
                os.unlink(self.tmp)


_Output = TypeVar("_Output", bound="CloseOrAbort")


class CloseOrAbort:
    """The life cycle of an output that appears whole or not at all (RecordWriter,
    tn.Writer, the array sinks): `close()` when a ``with`` block ends cleanly, `abort()` when
    it raises, and `abort()` when the object is garbage-collected unclosed, so a forgotten
    or crashed writer leaves nothing that looks complete.

    Subclasses define close() and abort() (both harmless once ``closed``) and set
    ``self.closed = False`` as soon as they hold something abort() must clean up.
    """

    closed = True  # until a subclass's __init__ has opened something

    def close(self) -> object:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Output) -> _Output:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()

    def __del__(self) -> None:
        if not self.closed:
            self.abort()


def check_index_option(index: bool, compression: str | None) -> None:
    """An index holds byte offsets of frames, which only an uncompressed file has."""
    if index and compression:
        raise ValueError(
            f"index=True needs uncompressed output: byte offsets in a {compression} "
            "file do not point at records; drop compression or the index"
        )


def require_folder(path: str) -> None:
    """Outputs go into folders that exist: a typo in a path fails here, before any work,
    rather than creating folders nobody asked for."""
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot write {path}: no such directory {folder}")


def _check_offsets(offsets: np.ndarray, size: int) -> None:
    """Offsets fit for write_batch: checked before they size a buffer, so that wrong ones
    raise instead of asking for exabytes or framing bytes from outside the data."""
    if offsets.ndim != 1 or len(offsets) == 0:
        raise ValueError(
            f"write_batch offsets must be a 1-D array of n + 1 record boundaries, not an array "
            f"of shape {offsets.shape}"
        )
    if offsets[0] < 0:
        raise ValueError(f"write_batch offsets start at {offsets[0]}, expected >= 0")
    if len(offsets) > 1:
        down = np.flatnonzero(offsets[1:] < offsets[:-1])
        if len(down):
            i = int(down[0])
            raise ValueError(
                f"write_batch offsets go down at record {i}: {offsets[i]} then "
                f"{offsets[i + 1]}; offsets must be non-decreasing"
            )
    if offsets[-1] > size:
        raise ValueError(
            f"write_batch offsets end at {offsets[-1]}, past the end of the {size} bytes of data"
        )


class RecordWriter(CloseOrAbort):
    """Writes TFRecord frames to `path` under a hidden temporary name, renamed on a clean close.

    Use as a context manager. `write(payload)` appends one record; `write_batch(data,
    offsets)` appends many from one buffer. If the block raises, or the writer is dropped
    unclosed, the temporary file is deleted and nothing appears at `path`.

    Frames are built in the caller's thread into a few reused buffers (fresh pages would
    cost a page fault each) and written, and compressed, by one background thread, so the
    caller's next batch overlaps this one's I/O. An error in that thread is raised by a
    later write or by close; abort waits for writes in flight, then deletes.

    index=True also streams the ``path.idx`` sidecar (``offset length`` per record, as
    `write_index` writes it) beside the temporary file, renamed with it; it needs
    uncompressed output.

    `close()` is `finish()` then `publish()`. A caller writing several files that must
    appear together (or after a check) calls finish() on each, which completes the file
    under its temporary name `tmp`, reads them back if it likes, then publish(name) on
    each; abort() still deletes a finished file that was not published. Such a caller
    passes reuse=the previous, finished writer: the new one takes over its idle thread and
    buffers, saving a thread start and fresh pages per file.
    """

    FLUSH_BYTES = 4 << 20  # write(): payloads gathered before they are framed together
    BUFFERS = 3  # frame buffers circulating: one being filled, the others queued or writing

    def __init__(
        self,
        path: PathLike,
        compression: str | None = None,
        *,
        index: bool = False,
        reuse: RecordWriter | None = None,
    ):
        self.path = os.fspath(path)
        self.compression = normalize_compression(compression, allow_auto=False)
        check_index_option(index, self.compression)
        require_folder(self.path)
        self.index = bool(index)
        self.tmp = hidden_sibling(self.path)
        self.index_tmp = self.tmp + INDEX_SUFFIX if index else None
        self.records = 0
        self.position = 0  # bytes of frames written: the uncompressed stream's length
        self.finished = False
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._inflight: deque = deque()  # (future of one sink.write, its buffer), in order
        if reuse is not None and reuse.finished and reuse._pool is not None:
            self._pool, self._free = reuse._pool, reuse._free
            reuse._pool, reuse._free = None, []
        else:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="tfrecnp-writer")
            self._free = [np.empty(0, np.uint8) for _ in range(self.BUFFERS)]
        self._index_file = None
        # Buffered: large writes go straight through, and partial writes are retried.
        self._raw = open(self.tmp, "wb")  # noqa: SIM115 (closed by finish/abort)
        self.closed = False
        try:
            self._sink = (
                CompressingWriter(self._raw, self.compression) if self.compression else self._raw
            )
            if index:
                self._index_file = open(self.index_tmp, "wb")  # noqa: SIM115
        except BaseException:
            self.abort()
            raise

    def write(self, payload: bytes | bytearray | memoryview) -> None:
        self._check_open()
        payload = bytes(payload)
        self._pending.append(payload)
        self._pending_bytes += len(payload)
        if self._pending_bytes >= self.FLUSH_BYTES:
            self._flush()

    def write_batch(self, data, offsets) -> None:
        """Append records data[offsets[i]:offsets[i + 1]] (a uint8 buffer, n + 1 offsets).
        The data is copied before this returns: the caller may reuse its buffer."""
        self._flush()
        data = np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) else data
        data = np.ascontiguousarray(data.reshape(-1).view(np.uint8))
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        _check_offsets(offsets, len(data))
        self._write_frames(data, offsets)

    def finish(self) -> None:
        """Write everything out and close the file, still under its temporary name `tmp`."""
        if self.finished or self.closed:
            return
        try:
            self._flush()
            self._drain()
            if self.compression:
                self._sink.finish()
            self._raw.close()
            if self._index_file is not None:
                self._index_file.close()
        except BaseException:
            self.abort()
            raise
        self.finished = True

    def publish(self, path: PathLike | None = None) -> str:
        """Finish if need be, then move the file (and its index) to `path`, by default the
        path the writer was made for. Returns where the file is now."""
        if self.closed:
            raise ValueError(f"writer for {self.path} is closed")
        self.finish()
        self._stop_thread()
        target = os.fspath(path) if path is not None else self.path
        try:
            os.replace(self.tmp, target)
            if self.index_tmp is not None:
                os.replace(self.index_tmp, index_path(target))
        except BaseException:
            self.abort()
            raise
        self.closed = True
        self.path = target
        return target

    def close(self) -> None:
        """Flush, then move the finished file into place."""
        if not self.closed:
            self.publish()

    def abort(self) -> None:
        """Drop everything written: wait for writes in flight, then delete the temporary
        file (and index)."""
        if self.closed:
            return
        self.closed = True
        self._pending.clear()
        try:
            for future, _ in self._inflight:
                future.exception()  # wait, and drop the error: we are failing already
            self._inflight.clear()
            self._stop_thread()
            for f in (self._raw, self._index_file):
                if f is not None:
                    with contextlib.suppress(OSError):
                        f.close()
        finally:
            for p in (self.tmp, self.index_tmp):
                if p is not None and os.path.exists(p):
                    os.unlink(p)

    # internals -------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed or self.finished:
            raise ValueError(f"writer for {self.path} is closed")

    def _flush(self) -> None:
        if not self._pending:
            return
        lengths = np.fromiter(map(len, self._pending), np.int64, len(self._pending))
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        data = np.frombuffer(b"".join(self._pending), np.uint8)
        self._pending, self._pending_bytes = [], 0
        self._write_frames(data, offsets)

    def _write_frames(self, data: np.ndarray, offsets: np.ndarray) -> None:
        """Frame the records into a free buffer and queue it for the background thread."""
        self._check_open()
        n = len(offsets) - 1
        if n <= 0:
            return
        size = int(offsets[-1] - offsets[0]) + 16 * n
        # Take back the buffers already written (raising their errors), waiting for the
        # oldest when none is free.
        while self._inflight and (not self._free or self._inflight[0][0].done()):
            self._wait_one()
        buf = self._free.pop()
        if len(buf) < size:
            buf = np.empty(size + size // 4, np.uint8)
        framing.frame_payloads(data, offsets, buf[:size])
        if self._index_file is not None:
            frames = np.diff(offsets) + 16
            starts = np.empty(n, np.int64)
            starts[0] = self.position
            np.cumsum(frames[:-1], out=starts[1:])
            starts[1:] += self.position
            self._index_file.write(encode.index_lines(starts, frames))
        self._inflight.append((self._pool.submit(self._sink.write, buf[:size]), buf))
        self.records += n
        self.position += size

    def _stop_thread(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _wait_one(self) -> None:
        future, buf = self._inflight.popleft()
        self._free.append(buf)
        future.result()

    def _drain(self) -> None:
        """Wait until everything queued is written; raises the first write error."""
        while self._inflight:
            self._wait_one()
