"""Reading TFRecord files as records: payloads in batches, header-only scans, counts.

The byte work (CRC32C, header walks, payload copies) happens in `tfrecnp._core.framing`
with the GIL released; this module owns files, buffers, compression and error reports.

A batch of records is one contiguous uint8 buffer plus n + 1 int64 offsets: record i is
``data[offsets[i]:offsets[i + 1]]``. Memory is bounded by the read chunk (1 MiB), the
largest record and four batches (the one being filled and up to three earlier ones kept
for reuse once the consumer lets them go), never by the file. Payloads go from the read
buffer straight into their batch, in one pass that also walks headers and checks CRCs.

Damage is reported as `CorruptRecordError` naming file, record index and byte offset, to
the reader's `DamagePolicy` (format/damage.py). With ``on_error="skip"`` (or ``"warn"``) the
reader resynchronises on the next offset where a whole frame checks (length CRC and payload
CRC) and the policy lists what was skipped (``RecordReader.corruptions``). The frame's
geometry comes from format/frames.py.
"""

from __future__ import annotations

import functools
import itertools
import os
import zlib
from collections.abc import Iterator

import numpy as np

from .._core import framing
from .._util import fs
from .._util.sizing import records_per_batch
from .._util.spares import Spares
from .._util.text import format_count, format_size
from ..errors import SALVAGE_HINT, CorruptRecordError, file_changed
from .compression import DecompressingReader, detect_compression, normalize_compression
from .damage import DamagePolicy, OnError
from .frames import (
    FOOTER_BYTES,
    HEADER_BYTES,
    LENGTH_BYTES,
    OVERHEAD_BYTES,
    is_frame_header,
    length_crc_mismatch,
    payload_crc_mismatch,
)
from .index import RecordIndex, cached_index, index_path, read_index, remember_index
from .paths import PathLike, Paths, expand_paths
from .payloads import Origins, RecordBatch
from .sniff import what_is

__all__ = [
    "RecordBatch",
    "RecordReader",
    "count_records",
    "file_compression",
    "iter_records",
    "mean_frame_bytes",
    "scan_file",
]

CHUNK_BYTES = 1 << 20  # read-buffer size; grows only to hold one larger record
STREAM_BYTES = 8 << 20  # batches this large bypass the caches when filled (see gather)
REMOTE_FIRST_READ = 64 << 10  # a remote stream's first read (see _Stream.read_size)
SEEK_READ_BYTES = 4096  # a header-only scan reads this much after each jump over a payload
SEEK_GAP = 64 << 10  # ... over payloads this long; shorter ones are read through, in chunks
ITER_BYTES = 4 << 20  # iterating records reads batches of about this many bytes ...
ITER_RECORDS = (1, 1024)  # ... within these many records
PROBE_RECORDS = 16  # a mean record size is judged from this many first records
MAX_PLAUSIBLE_LENGTH = 1 << 31  # protobuf messages stop at 2 GiB; past this a length is nonsense
# The largest record a reader takes by default. Uncompressed files bound a length by the bytes
# left in the file; a compressed stream cannot, so without a limit a header claiming 2^60
# bytes over a decompression bomb would inflate the whole stream into memory.
MAX_RECORD_BYTES = 1 << 30


def file_compression(
    path: PathLike, compression: str | None = "auto", *, keep: bool = True
) -> str | None:
    """The compression of one file: as given, or detected from its first bytes for "auto"
    (keep: a remote file's first bytes kept for the readers that follow, fs.read_head)."""
    compression = normalize_compression(compression)
    if compression != "auto":
        return compression
    return detect_compression(fs.read_head(path, HEADER_BYTES, keep=keep))


class _Stream:
    """A window on one file's byte stream: buf[start:end] holds stream bytes base+start...

    Uncompressed files can seek (header-only scans jump over payloads); compressed ones are
    read front to back through a decompressor.
    """

    def __init__(self, path: str, compression: str | None, spares: Spares | None = None, raw=None):
        self.path = path
        # closed by close(); remote files are read by ranged GETs sent ahead (fs.Prefetch)
        self.raw = fs.open_read(path) if raw is None else raw
        self.remote = fs.is_url(path)
        self.compression = compression
        if compression is not None:
            self.size = None
        else:
            self.size = fs.size(path) if self.remote else os.fstat(self.raw.fileno()).st_size
        self.source = (
            self.raw if compression is None else DecompressingReader(self.raw, compression)
        )
        self.buf = np.empty(CHUNK_BYTES, np.uint8)
        self.view = memoryview(self.buf)
        self.base = self.start = self.end = 0
        self.eof = False
        # Frames walked in place (_FrameBuilder): buf[keep:start] holds the frames of the
        # batch being walked, kept when the buffer moves; once that batch is handed out
        # (lent), the stream continues in another buffer, from spares.
        self.keep: int | None = None
        self.lent = False
        # bytes read at a time, past what is needed; a remote stream starts small and
        # doubles them with each read (a probe of a few records moves little of the file)
        self.read_size = REMOTE_FIRST_READ if self.remote else CHUNK_BYTES
        self.spares = spares
        self.damage: Exception | None = None  # why a compressed stream stopped early

    def close(self) -> None:
        self.view.release()
        self.source.close()

    def head(self) -> bytes:
        """The first bytes of the stream still in the buffer (up to a frame header)."""
        return bytes(self.view[self.start : min(self.end, self.start + HEADER_BYTES)])

    def fill(self, need: int, read_size: int | None = None) -> None:
        """Make buf[start:] hold at least `need` bytes, or reach the end of the stream.

        The buffer grows at most to twice the data actually read, so a corrupt length can
        never make it allocate more than the bytes that remain.
        """
        want = max(need, self.read_size if read_size is None else read_size)
        if self.remote and read_size is None:
            self.read_size = min(CHUNK_BYTES, 2 * self.read_size)
        if self.size is not None:  # never read past the end of the file
            want = min(want, self.size - self.base - self.start)
        if self.lent or self.start + want > len(self.buf):  # drop what was walked
            self._move(self.start if self.keep is None else self.keep, len(self.buf))
        goal = self.start + want
        while self.end < goal and not self.eof:
            if self.end == len(self.buf):  # full of what was read: it may double
                self._move(0, 2 * len(self.buf))
            try:
                got = self.source.readinto(self.view[self.end : min(len(self.buf), goal)])
            except (EOFError, zlib.error) as e:
                self.damage, got = e, 0  # reported when the bytes decoded before it run out
            if not got:
                self.eof = True
                if self.size is not None and self.base + self.end < self.size:
                    raise _Shrank  # cut while read: its records past here are gone
            self.end += got
        if self.size is not None and self.end >= self.size - self.base:
            self.eof = True

    def _move(self, keep: int, size: int) -> None:
        """Drop the bytes before buf[keep], into a buffer of `size` bytes: this one, unless
        it is lent or too small."""
        kept = self.end - keep
        if self.lent or size > len(self.buf):
            size = -(-size // CHUNK_BYTES) * CHUNK_BYTES  # whole MiBs: spares fit the next
            spare = self.spares.take(size) if self.spares is not None else None
            buf = spare if spare is not None else np.empty(size, np.uint8)
            buf[:kept] = self.buf[keep : self.end]
            self.view.release()
            self.buf, self.view, self.lent = buf, memoryview(buf), False
        elif keep:
            self.buf[:kept] = self.buf[keep : self.end]
        self.base += keep
        self.start -= keep
        self.end = kept
        if self.keep is not None:
            self.keep -= keep

    def reserve(self, nbytes: int) -> None:
        """Make buf[start:] able to take nbytes without moving (a batch walked in place)."""
        if self.size is not None:  # no more than the file still holds
            nbytes = min(nbytes, self.size - self.base - self.start)
        if self.lent or self.start + nbytes > len(self.buf):
            keep = self.start if self.keep is None else self.keep
            self._move(keep, self.start - keep + max(nbytes, self.end - self.start))

    def lend(self, stop: int) -> np.ndarray:
        """buf[keep:stop], handed out: the stream reads on into another buffer."""
        if self.spares is not None:
            self.spares.lend(self.buf)
        self.lent = True
        data = self.buf[self.keep : stop]
        self.keep = None
        return data

    def jump(self, offset: int) -> None:
        """Continue at stream offset `offset` (uncompressed files only), discarding the buffer."""
        self.raw.seek(offset)
        self.base, self.start, self.end, self.eof = offset, 0, 0, False


class RecordReader:
    """Reads the records of TFRecord files: `batches()` of payloads, or `bytes` per record.

    `paths` is a path, a glob, a directory or a list; local, or URLs of any fsspec
    filesystem (s3://, gs://, memory://, ...; storage_options passed to it), read in
    requests of several MiB. compression="auto" detects GZIP and
    ZLIB per file. verify_crc=False skips payload CRCs (length CRCs are always checked,
    since an unchecked length cannot be trusted). on_error="skip" / "warn" resynchronises
    past damage; what was skipped is listed in `corruptions`. max_record_bytes (default
    1 GiB) bounds the memory one record may take: a header claiming more is damage, refused
    before its bytes are fetched (records within the 1 MiB read buffer are taken as they
    are); raise it for larger records. spares: where batch buffers are lent from and come
    back to (a Dataset passes its own, so that a pass reuses the pages of the last).
    damage: the DamagePolicy to report to, instead of one made from on_error (a Dataset's
    readers share its own, so that its list names each damaged place once). expect_bytes:
    about how many bytes a pass will read, when the reader knows (a sample of the first
    records): a remote pass sends no ranges ahead past them, and past them reads one range
    at a time (fs.Prefetch).
    """

    def __init__(
        self,
        paths: Paths,
        *,
        compression: str | None = "auto",
        verify_crc: bool = True,
        on_error: OnError = "raise",
        storage_options: dict | None = None,
        max_record_bytes: int = MAX_RECORD_BYTES,
        spares: Spares | None = None,
        damage: DamagePolicy | None = None,
        expect_bytes: int | None = None,
    ):
        self.paths = expand_paths(paths, storage_options)
        self.compression = normalize_compression(compression)
        self.verify_crc = verify_crc
        self.damage = damage if damage is not None else DamagePolicy(on_error)
        if max_record_bytes < 0:
            raise ValueError(f"max_record_bytes must be >= 0, not {max_record_bytes}")
        self.max_record_bytes = max_record_bytes
        self.spares = spares
        if expect_bytes is not None and expect_bytes < 0:
            raise ValueError(f"expect_bytes must be >= 0 (or None: not known), not {expect_bytes}")
        self.expect_bytes = expect_bytes

    @property
    def on_error(self) -> str:
        return self.damage.on_error

    @property
    def corruptions(self) -> list[CorruptRecordError]:
        """Damage skipped so far (on_error="skip" / "warn"), each place once."""
        return self.damage.corruptions

    def __iter__(self) -> Iterator[bytes]:
        # sized by the first file's records: large ones must not come a thousand at a time
        mean = None
        if self.paths:
            mean = mean_frame_bytes(
                self.paths[0], compression=self.compression, max_record_bytes=self.max_record_bytes
            )
        size = records_per_batch(ITER_BYTES, mean or OVERHEAD_BYTES, ITER_RECORDS)
        for batch in self.batches(size):
            yield from batch

    def batches(self, batch_size: int = 1024, *, first: int | None = None) -> Iterator[RecordBatch]:
        """Batches of exactly batch_size records (the last may be short), across files.
        first: the first batch_size records come in batches of first, first, then as many
        as came before, so the pass's first records come after one short read, not a whole
        batch's (a bucket's round trips, a cold disk); the batches after them are whole."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        yield from self._filled(_BatchBuilder(batch_size, self.spares), first)

    def frame_batches(
        self, batch_size: int = 1024, *, defer_crc: bool = False, first: int | None = None
    ) -> Iterator[RecordBatch]:
        """Batches of batch_size records left in their frames (RecordBatch.spans): no
        payload is copied. A batch does not span files: the last of each file may be short.
        defer_crc: with on_error="raise", payload CRCs are left to the consumer
        (RecordBatch.verify), which may have a thread with more time for them than this
        one; damaged records to be skipped are found here, where the walk resynchronises.
        first: as in `batches`."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        defer = defer_crc and self.verify_crc and self.on_error == "raise"
        yield from self._filled(_FrameBuilder(batch_size, self.spares, defer), first)

    def _filled(self, batch: _BatchBuilder | _FrameBuilder, first: int | None = None) -> Iterator:
        """The batches `batch` is filled with, over every file (a _FrameBuilder's end with
        each file: its frames lie in that file's buffers); the builder's first batch in
        pieces from `first` records (see `batches`)."""
        full, done = batch.size, 0
        batch.size = max(1, min(first or full, full))

        def grow(n: int) -> None:  # after a batch of n records
            nonlocal done
            if batch.size < full:
                done += n
                batch.size = full if done >= full else min(done, full - done)

        copied = isinstance(batch, _BatchBuilder)
        if copied:  # bytes the files after each one hold, to size batch buffers by
            later = np.cumsum([_size_or_zero(p) for p in reversed(self.paths)])[::-1].tolist()
        prefetch = self._prefetch()
        try:
            for k, path in enumerate(self.paths):
                if copied:
                    batch.later_bytes = later[k + 1] if k + 1 < len(later) else 0
                for got in self._walk(path, batch, prefetch):
                    yield got
                    grow(len(got))
                if not copied and batch.n:
                    got = batch.take()
                    yield got
                    grow(len(got))
        except CorruptRecordError:
            if batch.n:  # the good records before the damage come out first, as in TensorFlow
                yield batch.take()
            raise
        finally:
            if prefetch is not None:
                prefetch.close()
        if batch.n:
            yield batch.take()

    def _prefetch(self) -> fs.Prefetch | None:
        """The ranged GETs of a pass over these files, when they are remote: sent ahead of
        the walk, across files (see fs.Prefetch)."""
        remote = [p for p in self.paths if fs.is_url(p)]
        return fs.Prefetch(remote, expect=self.expect_bytes) if remote else None

    def indexes(self) -> Iterator[RecordIndex]:
        """One RecordIndex per file, from a scan that reads only frame headers where it can."""
        prefetch = self._prefetch()
        try:
            for path in self.paths:
                heads = _Headers(1 << 16)
                for _ in self._walk(path, heads, prefetch):
                    pass
                yield RecordIndex(path, *heads.arrays())
        finally:
            if prefetch is not None:
                prefetch.close()

    def _walk(
        self,
        path: str,
        sink: _BatchBuilder | _FrameBuilder | _Headers,
        prefetch: fs.Prefetch | None = None,
    ):
        """For one file: fills the batch `sink`, yielding it whenever it is full, or
        collects frame offsets and lengths into `sink` from a header-only walk. A remote
        file's compression is judged from the first bytes its stream reads (no request
        of its own)."""
        compression, raw = self.compression, None
        if compression == "auto" and fs.is_url(path):
            raw = fs.open_read(path, prefetch=prefetch)
            compression = detect_compression(raw.read(HEADER_BYTES))
            raw.seek(0)
        elif compression == "auto":
            compression = file_compression(path, compression)
        elif fs.is_url(path):
            raw = fs.open_read(path, prefetch=prefetch)
        stream = _Stream(
            path,
            compression,
            spares=sink.spares if isinstance(sink, _FrameBuilder) else None,
            raw=raw,
        )
        try:
            yield from _walk_stream(self, stream, sink)
        finally:
            stream.close()

    def _damage(
        self, reason: str, stream: _Stream, record: int, at: int, skipped: int | None = None
    ) -> None:
        """Report damage at stream.buf[at], record `record` of the file: the policy raises,
        or the walk steps past it, to the next whole frame (resynchronising), or over
        `skipped` bytes when given (the end of a damaged compressed stream)."""
        offset = stream.base + at
        hint = SALVAGE_HINT
        if record == 0 and offset == 0 and not is_frame_header(stream.head()):
            what = what_is(stream.path)  # a file of another kind: not damage at all
            if what is not None:
                reason, hint = "not a TFRecord file", what
        error = CorruptRecordError(
            reason, path=stream.path, record=record, offset=offset, hint=hint
        )
        step = functools.partial(_resync, stream, at + 1, at) if skipped is None else skipped
        self.damage.report(error, step, stacklevel=3)


def _size_or_zero(path: str) -> int:
    try:
        return fs.size(path)
    except OSError:  # reported when the file is opened
        return 0


class _Rows:
    """What a batch builder counts: its rows, the files and records they come from
    (origins), and the records and bytes seen so far, which size the next buffers."""

    n: int
    origins: list[tuple[int, str, int]]
    follows: tuple[str, int] | None  # (path, record) that continues origins[-1]
    seen_records: int
    seen_bytes: int

    def _added(self, path: str, record: int, n: int, nbytes: int) -> None:
        """n rows of nbytes were added: records record.. of path."""
        if self.follows != (path, record):
            self.origins.append((self.n, path, record))
        self.n += n
        self.follows = (path, record + n)
        self.seen_records += n
        self.seen_bytes += nbytes


class _BatchBuilder(_Rows):
    """The batch being filled: payloads are gathered straight into its final buffer, chunk
    after chunk and file after file, so no batch is ever sliced or concatenated.

    The buffer is sized from the records seen so far (average payload x records still to
    come, plus 1/16), never beyond the bytes left in the files for uncompressed input; a
    wrong guess costs one copy when it grows. A full batch is handed out and the builder
    starts another buffer. Buffers handed out are lent from `spares` and reused only once
    nothing else refers to them (the consumer dropped the batch and every view of it), so
    nothing a consumer can see is written again, and the steady state allocates nothing:
    fresh pages would cost a page fault and zeroing each.
    """

    def __init__(self, size: int, spares: Spares | None = None):
        self.size = size
        self.later_bytes = 0  # bytes of the files after the current one
        self.seen_records = self.seen_bytes = 0
        self.spares = spares if spares is not None else Spares(limit=3)
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
                self._added(s.path, record + good, n, used - self.used)
                good += n
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
        if self.data is not None:  # growing: at least by half
            capacity = max(capacity, len(self.data) * 3 // 2)
        reused = self.spares.take(max(need, capacity * 16 // 17))
        grown = reused if reused is not None else np.empty(capacity, np.uint8)
        if self.data is not None:
            grown[: self.used] = self.data[: self.used]
        self.data = grown

    def take(self) -> RecordBatch:
        """The batch so far (the builder starts afresh)."""
        if self.data is not None:
            self.spares.lend(self.data)
        data = self.data[: self.used] if self.data is not None else np.empty(0, np.uint8)
        origins = Origins.from_runs(self.origins, self.n)
        batch = RecordBatch(data, self.offsets[: self.n + 1], origins)
        self._start()
        return batch


class _FrameBuilder(_Rows):
    """The batch being walked in place: its frames stay in the stream's buffer, checked
    (unless deferred) as they come, and are handed out with it; the stream goes on in
    another buffer, from the reader's spares, so nothing a consumer holds is written again.
    Whenever the buffered frames run out, the buffer is made room for the rest of the batch
    by the records seen so far (for a compressed stream, at most 8x the batch so far), so
    it moves about once per batch. Record positions are kept as stream offsets, which do
    not change when the buffer moves."""

    def __init__(self, size: int, spares: Spares | None = None, defer: bool = False):
        self.size = size
        self.spares = spares if spares is not None else Spares(limit=3)
        self.defer = defer  # payload CRCs left to RecordBatch.verify
        self.seen_records = self.seen_bytes = 0
        self.starts = np.empty(min(size, 1 << 16), np.int64)
        self.ends = np.empty(len(self.starts), np.int64)
        self.stream: _Stream | None = None
        self.n = 0
        self.origins: list[tuple[int, str, int]] = []
        self.follows: tuple[str, int] | None = None  # (path, record) that continues origins[-1]

    def gather(self, s: _Stream, verify: bool, record: int) -> tuple[int, int, int, int, int]:
        """Walk the whole frames buffered in s from s.start, until the batch is full or
        they end; returns as _BatchBuilder.gather does."""
        if self.n == 0:
            s.keep = s.start
            self.stream = s
        pos, good = s.start, 0
        while True:
            if self.n == len(self.starts):
                grown = min(self.size, 2 * self.n)
                self.starts = np.resize(self.starts, grown)
                self.ends = np.resize(self.ends, grown)
            want = min(self.size, len(self.starts)) - self.n
            status, end, n, length, bad_at = framing.check_frames(
                s.view[: s.end],
                pos,
                want,
                self.starts,
                self.ends,
                self.n,
                s.base,
                verify and not self.defer,
            )
            if n:
                self._added(s.path, record + good, n, end - pos)
                good += n
            pos = end
            if bad_at >= 0 or status != framing.LIMIT or self.n == self.size:
                if status == framing.NEED_MORE and bad_at < 0 and self.seen_records:
                    # room for the rest of the batch by the records seen, and reads that
                    # stop near its end: what they bring past it moves to the next buffer
                    left = self.seen_bytes * (self.size - self.n) // self.seen_records
                    if s.size is None:  # no bound from the file: from what was read
                        left = min(left, 8 * (pos - s.keep))
                    s.start = pos  # the buffer may move: positions go with it
                    s.reserve(left * 17 // 16 + (64 << 10))
                    s.read_size = min(CHUNK_BYTES, left + (64 << 10))
                    pos = s.start
                return status, pos, good, length, bad_at

    def take(self) -> RecordBatch:
        """The batch so far (the builder starts afresh)."""
        s, n = self.stream, self.n
        stop = int(self.ends[n - 1]) + FOOTER_BYTES - s.base
        first = s.base + s.keep
        data = s.lend(stop)
        starts, ends = self.starts[:n] - first, self.ends[:n] - first
        origins = Origins.from_runs(self.origins, n)
        batch = RecordBatch.spans(
            data, starts, ends, origins, offset=first, verified=not self.defer
        )
        self.n = 0
        self.origins = []
        self.follows = self.stream = None
        return batch


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


def _walk_stream(
    reader: RecordReader,
    s: _Stream,
    sink: _BatchBuilder | _FrameBuilder | _Headers,
):
    record = 0
    try:
        batch = None if isinstance(sink, _Headers) else sink
        # a local header-only walk seeks over payloads; a remote one reads through (a request
        # per seek would cost more than the bytes it saves)
        seek_headers = batch is None and s.compression is None and not s.remote
        s.fill(HEADER_BYTES)
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
                    size = int.from_bytes(s.view[at : at + LENGTH_BYTES], "little")
                    reader._damage(payload_crc_mismatch(s.view, at, size), s, record, at)
                    record += 1  # its header checked: it was one record, the next is +1
                    continue
            record += n
            s.start = pos
            if status == framing.LIMIT and pos <= s.end:  # else a header-only walk stepped past
                continue
            if status == framing.BAD_LENGTH_CRC:
                reader._damage(length_crc_mismatch(s.view, pos), s, record, pos)
                continue
            # NEED_MORE: the frame at pos is not whole in the buffer.
            if seek_headers and s.start >= s.end and s.base + s.start < s.size:
                gap = s.start - s.end
                s.jump(s.base + s.start)
                s.fill(HEADER_BYTES, SEEK_READ_BYTES if gap >= SEEK_GAP else CHUNK_BYTES)
                continue
            need = HEADER_BYTES if length < 0 else length + OVERHEAD_BYTES
            left = (s.size - s.base - s.start) if s.size is not None else None
            if length > reader.max_record_bytes and (left is None or need <= left):
                reason = (
                    f"length {format_count(length)} exceeds max_record_bytes "
                    f"({format_size(reader.max_record_bytes)}); if records this large are real, "
                    "pass a larger max_record_bytes"
                )
                reader._damage(reason, s, record, s.start)
                continue
            if left is not None and need > left:
                if left == 0:
                    return
                reader._damage(_short_reason(left, length), s, record, s.start)
                continue
            s.fill(need)
            if s.end - s.start < need:
                left = s.end - s.start
                if s.damage is not None:  # nothing after it can be decoded: end the file here
                    reason = f"compressed stream is damaged ({s.damage})"
                    reader._damage(reason, s, record, s.start, skipped=left)
                    return
                if left == 0:
                    return
                reader._damage(_short_reason(left, length), s, record, s.start)
    except _Shrank:  # the size at open told how much there was: none of it is silently lost
        raise file_changed(s.path, record, s.base + s.start, s.size or 0) from None


class _Shrank(Exception):
    """A local file ended before the size it had when its stream opened."""


def _resync(s: _Stream, pos: int, damaged_at: int) -> int:
    """Move s.start to the next whole valid frame at or after pos, or to the end; returns
    the bytes stepped over from damaged_at."""
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
    return s.base + pos - origin


def _short_reason(left: int, length: int) -> str:
    if length < 0:
        return (
            f"truncated: the file ends {format_count(left)} bytes into a "
            f"{HEADER_BYTES}-byte record header"
        )
    if length >= MAX_PLAUSIBLE_LENGTH and length + OVERHEAD_BYTES > left:
        return f"length {format_count(length)} exceeds the {format_size(left)} left in the file"
    return (
        f"truncated: the file ends {format_count(left)} bytes into a record of "
        f"{format_count(length + OVERHEAD_BYTES)} bytes"
    )


def iter_records(
    paths: Paths,
    *,
    compression: str | None = "auto",
    verify_crc: bool = True,
    on_error: OnError = "raise",
) -> Iterator[bytes]:
    """Each record's payload as bytes: the equivalent of tf.data.TFRecordDataset. on_error
    as for RecordReader ("skip" / "warn" resynchronise past damage)."""
    reader = RecordReader(paths, compression=compression, verify_crc=verify_crc, on_error=on_error)
    return iter(reader)


def scan_file(
    path: PathLike, *, compression: str | None = "auto", use_index: bool = True
) -> RecordIndex:
    """Where each record of one file lies. Uses a matching .idx sidecar when present;
    otherwise walks the frame headers, seeking over payloads in uncompressed files. A
    remote file's index is kept in a local cache by its URL, size and ETag
    (format/index.py), and taken from there when kept."""
    path = fs.resolve(path)
    cached = cached_index(path) if use_index and fs.is_url(path) else None
    if cached is not None:
        return cached
    sidecar = index_path(path)
    index = None
    if use_index and fs.exists(sidecar):
        index = read_index(sidecar, path)
    if index is None:
        index = next(RecordReader(path, compression=compression).indexes())
    if use_index:
        remember_index(index)
    return index


def scan_until_damage(
    path: str, compression: str | None
) -> tuple[RecordIndex, CorruptRecordError | None]:
    """Where each record of one file lies, walked up to its first damage (no sidecar):
    (the frames before it, the damage's CorruptRecordError or None when the file is whole).
    A damaged compressed stream is read by position up to its damage this way."""
    heads = _Headers(1 << 16)
    damage = None
    try:
        for _ in RecordReader(path, compression=compression)._walk(path, heads):
            pass
    except CorruptRecordError as error:
        damage = error
    return RecordIndex(path, *heads.arrays()), damage


def count_records(
    paths: Paths, *, compression: str | None = "auto", storage_options: dict | None = None
) -> int:
    """Number of records in all the files, from header-only scans (or .idx sidecars);
    remote files 16 at a time, each sidecar as the listing found it."""
    files = expand_paths(paths, storage_options)
    if len(files) < 2 or not any(fs.is_url(p) for p in files):
        return sum(len(scan_file(p, compression=compression)) for p in files)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(16) as pool:
        return sum(pool.map(lambda p: len(scan_file(p, compression=compression)), files))


def _remote_index(path: fs.URL) -> RecordIndex | None:
    """A remote file's index from the local cache, or from its `.idx` when its listing
    says it is no larger than a head (checked against the file, then cached); else None."""
    known = cached_index(path)
    sidecar = index_path(path)
    if known is None and fs.size_known(sidecar) and fs.size(sidecar) <= fs.HEAD_BYTES:
        known = read_index(sidecar, path)
        if known is not None:
            remember_index(known)
    return known


def mean_frame_bytes(
    paths: Paths,
    *,
    compression: str | None = "auto",
    records: int = PROBE_RECORDS,
    max_record_bytes: int = MAX_RECORD_BYTES,
) -> float | None:
    """The mean frame size (payload + OVERHEAD_BYTES) of the first `records` records, or
    None when there are none: what a reader sizes its batches by before an index says
    more. Records are read one at a time, so a file of large ones reads no more than
    needed; damage is skipped, for the reading that follows to report under its own
    on_error. A remote file whose index is cached locally is not read at all; nor one whose
    listing holds a small `.idx` (a head's worth: large records), which is read instead (and
    cached): the first records would cost more, and a read ahead of them more still."""
    plain = isinstance(paths, fs.URL) and file_compression(paths, compression) is None
    known = _remote_index(paths) if plain else None
    if known is not None:
        lengths = known.lengths[:records]
        return float(lengths.mean()) + OVERHEAD_BYTES if len(lengths) else None
    probe = RecordReader(  # (a first range's worth, not a pass's read-ahead of 4 MiB)
        paths,
        compression=compression,
        on_error="skip",
        max_record_bytes=max_record_bytes,
        expect_bytes=fs.START_BYTES,
    )
    sizes = [len(b.data) for b in itertools.islice(probe.batches(1), records)]
    return sum(sizes) / len(sizes) + OVERHEAD_BYTES if sizes else None
