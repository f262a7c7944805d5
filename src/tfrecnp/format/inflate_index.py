"""Reads by position of a GZIP / ZLIB shard's decompressed stream, through checkpoints of
the inflate state (the approach of zlib's zran.c: every ~1-4 MiB of output, the bit offset
and the 32 KiB window that let inflate start there).

The checkpoints are made and used by `rapidgzip` (the `gzip` extra): of the libraries
considered it is the one that reads both GZIP and ZLIB streams (indexed_gzip refuses zlib
streams) and concatenated gzip members, and exports and imports its checkpoints. A build
inflates on one thread (rapidgzip's parallel mode decodes each chunk twice, before and after
its window is known, which was slower on two cores) while this one walks the frames in
what it inflated (and writes them as the shard's `.idx` as it goes, in the time it would
spend waiting). They are kept in a sidecar beside the shard's `.idx`, ``<shard>.zran.idx``:

    TFRECNP-ZRAN 1\\n
    one line of JSON: the shard's size, mtime_ns and the CRC-32 of its first HEAD_BYTES
      (its stamp), its compression, the decompressed size, each checkpoint's offset in the
      decompressed stream, the byte count and CRC-32 of what follows
    rapidgzip's exported index (indexed_gzip's format), zlib-compressed

A sidecar whose stamp differs from its shard's (size, mtime or first bytes), or that does not
parse, is rebuilt, never trusted. A shard whose stream is damaged gets checkpoints only up to
the damage (kept in memory, not written).

`Inflated` reads a byte range of one shard's decompressed stream from any thread: each read
borrows a rapidgzip handle from a small pool (a handle is not thread-safe), and the decoded
spans between checkpoints that a read only partly needs are kept in an LRU cache shared by a
dataset's files, so reads of neighbouring records, in any order, decode each span once.
Handles belong to the process that opened them (rapidgzip runs threads): `close_all` runs at
exit, since an interpreter that ends with one open aborts.
"""

from __future__ import annotations

import atexit
import bisect
import contextlib
import io
import json
import os
import sys
import threading
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core import encode, framing
from .._util import fs
from .._util.atomic import atomic_output, hidden_sibling
from .._util.optional import import_module
from .._util.progress import Progress
from .._util.threads import run_ahead
from ..errors import CorruptRecordError, RandomAccessError
from .frames import OVERHEAD_BYTES
from .paths import INDEX_SUFFIX

__all__ = [
    "CHECKPOINT_SUFFIX",
    "Checkpoints",
    "Inflated",
    "SpanCache",
    "build_checkpoints",
    "checkpoint_path",
    "checkpoints_and_frames",
    "checkpoints_for",
    "have_rapidgzip",
    "index_checkpoints",
    "read_checkpoints",
    "write_checkpoints",
]

CHECKPOINT_SUFFIX = ".zran.idx"  # ends in .idx: folder listings pass over it as a sidecar
MAGIC = b"TFRECNP-ZRAN 1\n"
SPACING = 4 << 20  # compressed bytes between checkpoints (rapidgzip's chunk size)
HEAD_BYTES = 1 << 16  # the stamp's checksum covers this many first bytes of the shard
READ_BYTES = 4 << 20  # a build decompresses this much at a time
PROGRESS_BYTES = 64 << 20  # a build of a shard this large shows a progress bar
CACHE_BYTES = 128 << 20  # decoded spans a dataset keeps for reads by position, at most
IDLE_HANDLES = 4  # rapidgzip handles kept per shard for the next read, at most
BUILD_THREADS = 1  # rapidgzip's threads in a build (see the module docstring)
EXTRA = "gzip"
PIP_LINE = f"pip install 'tfrecnp[{EXTRA}]'"


def have_rapidgzip() -> bool:
    """Whether the `gzip` extra's rapidgzip is installed (reads by position need it)."""
    if "rapidgzip" in sys.modules:  # ds[i] asks on every call: once imported, a look-up
        return sys.modules["rapidgzip"] is not None
    try:
        import_module("rapidgzip")
    except ImportError:
        return False
    return True


def checkpoint_path(path: Any) -> str:
    """The checkpoint sidecar of a compressed shard: its name with .zran.idx appended."""
    return fs.suffixed(path, CHECKPOINT_SUFFIX)


# --- the checkpoints and their sidecar --------------------------------------------------------


@dataclass
class Checkpoints:
    """One shard's inflate checkpoints: `starts` are their offsets in the decompressed
    stream, followed by its size; `index` is rapidgzip's export of them; `stamp` the shard
    they were made from (size, mtime_ns, head_crc32). stored: a sidecar holds them."""

    path: str
    compression: str
    stamp: dict
    starts: np.ndarray
    index: bytes
    stored: bool = False

    @property
    def inflated_size(self) -> int:
        return int(self.starts[-1])


def _stamp(path: str) -> dict:
    st = os.stat(path)
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "head_crc32": zlib.crc32(head)}


def _open(path: str, parallelization: int) -> Any:
    rapidgzip = import_module("rapidgzip")
    handle = rapidgzip.RapidgzipFile(path, parallelization=parallelization, chunk_size=SPACING)
    _LIVE.add(handle)
    return handle


def build_checkpoints(
    path: str, compression: str, *, progress: bool = True, frames: _FrameWalk | None = None
) -> Checkpoints:
    """Decompress the shard once and keep rapidgzip's checkpoints. A damaged stream keeps
    those before the damage, enough for the records before it.
    frames: a walk of the frame headers fed the same decompressed bytes (one pass for both)."""
    stamp = _stamp(path)
    size = stamp["size"]
    show = progress and size >= PROGRESS_BYTES
    label = f"checkpoints for reads by position of {fs.basename(path)}"
    handle = _open(path, BUILD_THREADS)
    pieces = run_ahead(_pieces(handle), 1)  # inflated in a thread, walked in this one
    try:
        exported = io.BytesIO()
        try:
            with Progress(label, total_bytes=size, enabled=show, unit="MiB") as bar:
                done = 0
                for buf, n, read in pieces:
                    if frames is not None:
                        frames.feed(buf, n)
                    bar.update(n >> 20, read - done)
                    done = read
            handle.export_index(exported)
        except (RuntimeError, ValueError):  # rapidgzip's words for a damaged stream
            if frames is not None:
                frames.failed = True
            return _damaged_checkpoints(path, compression, stamp)
        starts = sorted({*handle.block_offsets().values(), handle.tell()})
    finally:
        pieces.close()
        close(handle)
    return Checkpoints(path, compression, stamp, np.array(starts, np.int64), exported.getvalue())


def _pieces(handle: Any) -> Iterator[tuple[bytearray, int, int]]:
    """(buffer, bytes in it, compressed bytes read so far) of a handle's stream, READ_BYTES
    at a time; three buffers in turn (one filling, one queued, one being walked)."""
    bufs = [bytearray(READ_BYTES) for _ in range(3)]
    k = 0
    while n := handle.readinto(bufs[k]):
        yield bufs[k], n, handle.tell_compressed()
        k = (k + 1) % 3


class _FrameWalk:
    """Frame offsets and payload lengths from a header-only walk of decompressed bytes fed
    in pieces (headers may straddle two). `result()` is None when the stream did not end
    where a frame does, or a length CRC failed: the caller then scans the usual way, which
    names the damage."""

    def __init__(self, lines: _IndexLines | None = None):
        self.lines = lines  # where the frames go as `.idx` lines while they are walked
        self.pos = 0  # stream offset of the next frame header
        self.base = 0  # stream offset of the next piece
        self.carry = b""  # bytes pos.. of a header cut by the end of the last piece
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.failed = False

    def feed(self, buf: bytearray, n: int) -> None:
        """Walk the headers in buf[:n], stream bytes base..base + n."""
        start, end = self.base, self.base + n
        self.base = end
        if self.failed or (not self.carry and self.pos >= end):  # inside a long payload
            return
        if self.carry:  # the cut header's first bytes, then this piece
            win = np.frombuffer(self.carry + bytes(buf[:n]), np.uint8)
        else:
            win = np.frombuffer(buf, np.uint8, n - (self.pos - start), self.pos - start)
        win_base, at = self.pos, 0
        starts = np.empty(len(win) // OVERHEAD_BYTES + 1, np.int64)
        lengths = np.empty_like(starts)
        while True:
            status, at, k, _ = framing.scan_frames(win, at, 1 << 62, starts, lengths)
            if k:
                self.parts.append((starts[:k] + win_base, lengths[:k].copy()))
                if self.lines is not None:
                    self.lines.write(*self.parts[-1])
            if status == framing.BAD_LENGTH_CRC:
                self.failed = True
                return
            if status != framing.LIMIT or at >= len(win):  # the arrays were full: on
                break
        self.pos = win_base + at
        self.carry = win[at:].tobytes() if at < len(win) else b""

    def result(self, size: int) -> tuple[np.ndarray, np.ndarray] | None:
        if self.failed or self.carry or self.pos != size:
            return None
        if not self.parts:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        offsets, lengths = zip(*self.parts, strict=True)
        return np.concatenate(offsets), np.concatenate(lengths)


class _IndexLines:
    """A shard's `.idx`, written while its frames are walked (this thread waits on the
    inflate anyway): a hidden file beside it, renamed into place by `publish`, else dropped.
    A storage that refuses it leaves no `.idx`, as files.py's own write would."""

    def __init__(self, path: str):
        self.target = fs.suffixed(path, INDEX_SUFFIX)  # format/index.py's index_path
        self.tmp = hidden_sibling(self.target)
        try:
            self.file: Any = open(self.tmp, "wb")  # noqa: SIM115 (closed by publish / drop)
        except OSError:
            self.file = None

    def write(self, offsets: np.ndarray, lengths: np.ndarray) -> None:
        if self.file is None:
            return
        try:
            self.file.write(encode.index_lines(offsets, lengths + OVERHEAD_BYTES))
        except OSError:
            self.drop()

    def publish(self) -> bool:
        if self.file is None:
            return False
        try:
            self.file.close()
            os.replace(self.tmp, self.target)
        except OSError:
            self.drop()
            return False
        self.file = None
        return True

    def drop(self) -> None:
        if self.file is not None:
            with contextlib.suppress(OSError):
                self.file.close()
            with contextlib.suppress(OSError):
                os.remove(self.tmp)
            self.file = None


def _damaged_checkpoints(path: str, compression: str, stamp: dict) -> Checkpoints:
    """A damaged stream: no rapidgzip checkpoints, only its decodable length (reads by
    position then decompress from the start, with zlib: slow, but the records before the
    damage stay readable)."""
    from .compression import DecompressingReader

    good = 0
    with open(path, "rb") as raw:
        reader = DecompressingReader(raw, compression)
        buf = bytearray(READ_BYTES)
        try:
            while n := reader.readinto(buf):
                good += n
        except (EOFError, zlib.error):
            pass
    return Checkpoints(path, compression, stamp, np.array([0, good], np.int64), b"")


def write_checkpoints(cp: Checkpoints, out: str | None = None) -> str:
    """Write the sidecar (write-then-rename); returns its path."""
    out = out or checkpoint_path(cp.path)
    body = zlib.compress(cp.index, 6)
    meta = {
        "compression": cp.compression,
        **cp.stamp,
        "starts": cp.starts.tolist(),
        "index_bytes": len(body),
        "index_crc32": zlib.crc32(body),
    }
    with atomic_output(out) as tmp, open(tmp, "wb") as f:
        f.write(MAGIC + json.dumps(meta, separators=(",", ":")).encode() + b"\n" + body)
    cp.stored = True
    return out


def read_checkpoints(path: str, compression: str) -> Checkpoints | None:
    """The shard's checkpoints from its sidecar, or None when there is none, or it does
    not parse, or its stamp is not the shard's (then it is rebuilt, never trusted)."""
    sidecar = checkpoint_path(path)
    try:
        with open(sidecar, "rb") as f:
            data = f.read()
    except OSError:
        return None
    try:
        if not data.startswith(MAGIC):
            return None
        line_end = data.index(b"\n", len(MAGIC))
        meta = json.loads(data[len(MAGIC) : line_end])
        body = data[line_end + 1 :]
        stamp = {k: meta[k] for k in ("size", "mtime_ns", "head_crc32")}
        starts = np.array(meta["starts"], np.int64)
        sound = (
            meta["compression"] == compression
            and len(body) == meta["index_bytes"]
            and zlib.crc32(body) == meta["index_crc32"]
            and len(starts) >= 2
            and bool(np.all(np.diff(starts) > 0))
            and starts[0] == 0
        )
        if not sound or stamp != _stamp(path):
            return None
        index = zlib.decompress(body)
    except (ValueError, KeyError, TypeError, zlib.error, OSError):
        return None
    return Checkpoints(path, compression, stamp, starts, index, stored=True)


def checkpoints_for(path: str, compression: str, *, write: bool = True) -> Checkpoints:
    """The shard's checkpoints: from a sidecar that matches it, or built (and written
    beside it, unless the folder is read-only: then they live in memory only)."""
    return checkpoints_and_frames(path, compression, write=write)[0]


def checkpoints_and_frames(
    path: str, compression: str, *, write: bool = True, rebuild: bool = False, progress: bool = True
) -> tuple[Checkpoints, tuple[np.ndarray, np.ndarray] | None]:
    """`checkpoints_for` (rebuild: built even when a sidecar holds them), and, when they
    were built, the (frame offsets, payload lengths) of the shard walked in the same pass:
    None when read from the sidecar, or when the walk met damage (the caller's own scan
    then says where).

    write: write the checkpoint sidecar, and the walked frames as the shard's `.idx` (the
    format of format/index.py's write_index) as they are walked, while the inflate runs in
    the other thread; the `.idx` is put in place once the checkpoints are (an `.idx` of a
    compressed shard is trusted only beside them), and not when the walk met damage."""
    cp = None if rebuild else read_checkpoints(path, compression)
    if cp is not None:
        return cp, None
    lines = _IndexLines(path) if write else None
    try:
        walk = _FrameWalk(lines)
        cp = build_checkpoints(path, compression, progress=progress, frames=walk)
        walked = walk.result(cp.inflated_size) if cp.index else None
        if write and cp.index:
            with contextlib.suppress(OSError):  # read-only storage: kept (and pickled) in memory
                write_checkpoints(cp)
        if lines is not None and cp.stored and walked is not None:
            lines.publish()
    finally:
        if lines is not None:
            lines.drop()
    return cp, walked


def index_checkpoints(path: str, compression: str) -> str:
    """`tfrecnp index` for a compressed shard: build its checkpoints and write the sidecar
    (and the `.idx`, from the same pass); returns the sidecar's path. Needs a local file
    and the gzip extra."""
    if fs.is_url(path) or not have_rapidgzip():
        need = "a local file" if fs.is_url(path) else f"the gzip extra ({PIP_LINE})"
        raise RandomAccessError(
            f"{path} is {compression}-compressed: indexing it for reads by position needs "
            f"{need}; or decompress it first (e.g. `gunzip`) and index that"
        )
    cp, _ = checkpoints_and_frames(path, compression, rebuild=True, progress=False)
    if not cp.index:
        raise CorruptRecordError(
            f"the {compression} stream is damaged at decompressed byte {cp.inflated_size}",
            path=path,
            record=-1,
            offset=cp.inflated_size,
            hint="run `tfrecnp verify --salvage` to copy the good records",
        )
    return checkpoint_path(path) if cp.stored else write_checkpoints(cp)  # its error, if any


# --- reads by position -------------------------------------------------------------------------


class SpanCache:
    """Decoded spans between checkpoints, least recently used dropped first, within a
    byte budget; shared by the threads and files of one dataset."""

    def __init__(self, budget: int = CACHE_BYTES):
        self.budget = budget
        self._spans: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> np.ndarray | None:
        with self._lock:
            span = self._spans.get(key)
            if span is not None:
                self._spans.move_to_end(key)
            return span

    def put(self, key: tuple, span: np.ndarray) -> None:
        if span.nbytes > self.budget:
            return
        with self._lock:
            if key in self._spans:
                return
            self._spans[key] = span
            self._bytes += span.nbytes
            while self._bytes > self.budget:
                self._bytes -= self._spans.popitem(last=False)[1].nbytes

    def clear(self) -> None:
        with self._lock:
            self._spans.clear()
            self._bytes = 0


class Inflated:
    """Positioned reads of one compressed shard's decompressed stream, from any thread of
    the process that made it."""

    def __init__(self, cp: Checkpoints, cache: SpanCache):
        self.cp = cp
        self.cache = cache
        self.key = (cp.path, cp.stamp["size"], cp.stamp["mtime_ns"])  # spans of this shard
        self._starts = cp.starts.tolist()  # bisected per read: a list's items are cheaper
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._decoding: dict[int, threading.Lock] = {}  # spans being decoded, by number
        self._closed = False

    def _take(self) -> Any:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        handle = _open(self.cp.path, 1)
        try:
            handle.import_index(io.BytesIO(self.cp.index))
        except BaseException:
            close(handle)
            raise
        return handle

    def _give(self, handle: Any) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < IDLE_HANDLES:
                self._idle.append(handle)
                return
        close(handle)

    def _decode(self, a: int, out: memoryview) -> None:
        """Fill out with the stream from byte a on (a is a checkpoint)."""
        if not self.cp.index:
            return self._decode_from_start(a, out)
        handle = self._take()
        try:
            handle.seek(a)
            got = 0
            while got < len(out):
                n = handle.readinto(out[got:])
                if not n:
                    break
                got += n
        except (RuntimeError, ValueError) as e:  # rapidgzip's words for a damaged stream
            close(handle)
            raise self._damage(a + got, f" ({e})") from None
        except BaseException:
            close(handle)
            raise
        self._give(handle)
        if got < len(out):
            raise self._damage(a + got)

    def _decode_from_start(self, a: int, out: memoryview) -> None:
        from .compression import DecompressingReader

        with open(self.cp.path, "rb") as raw:
            reader = DecompressingReader(raw, self.cp.compression)
            skip = bytearray(READ_BYTES)
            pos = 0
            while pos < a:
                n = reader.readinto(memoryview(skip)[: min(READ_BYTES, a - pos)])
                if not n:
                    raise self._damage(pos)
                pos += n
            got = 0
            while got < len(out):
                n = reader.readinto(out[got:])
                if not n:
                    raise self._damage(a + got)
                got += n

    def _damage(self, at: int, why: str = "") -> CorruptRecordError:
        return CorruptRecordError(
            f"the decompressed stream ends at byte {at}, before the checkpoints say it does" + why,
            path=self.cp.path,
            record=-1,
            offset=at,
            hint=f"the file changed after it was indexed; delete {checkpoint_path(self.cp.path)} "
            "and its .idx and open it again",
        )

    def read_into(self, view: memoryview, offset: int) -> int:
        """Fill view from byte `offset` of the decompressed stream; returns the bytes read
        (fewer at the end of the stream). Spans the read covers whole are decoded straight
        into view; the ends of a read go through the cache."""
        starts = self._starts
        end = min(offset + len(view), starts[-1])
        if offset >= end:
            return 0
        k = bisect.bisect_right(starts, offset) - 1
        pos = offset
        while pos < end:
            a, b = starts[k], starts[k + 1]
            hi = min(end, b)
            target = view[pos - offset : hi - offset]
            span = self.cache.get((self.key, k))
            if span is not None:
                target[:] = span[pos - a : hi - a]
            elif pos == a and hi == b:
                self._decode(a, target)
            else:
                target[:] = self._span(k, a, b)[pos - a : hi - a]
            pos = hi
            k += 1
        return end - offset

    def _span(self, k: int, a: int, b: int) -> np.ndarray:
        """Span k (stream bytes a..b), decoded into the cache unless it is there: one thread
        decodes it while the others that need it wait (threads reading neighbouring records
        would otherwise each decode it)."""
        with self._lock:
            busy = self._decoding.setdefault(k, threading.Lock())
        with busy:
            span = self.cache.get((self.key, k))
            if span is None:
                span = np.empty(b - a, np.uint8)
                self._decode(a, memoryview(span))
                self.cache.put((self.key, k), span)
        with self._lock:
            self._decoding.pop(k, None)
        return span

    def close(self) -> None:
        with self._lock:
            idle, self._idle, self._closed = self._idle, [], True
        for handle in idle:
            close(handle)


# Every rapidgzip handle this process opened and has not closed: an interpreter that exits
# while one is open aborts, so they are closed at exit.
_LIVE: weakref.WeakSet = weakref.WeakSet()


def close(handle: Any) -> None:
    _LIVE.discard(handle)
    handle.close()


@atexit.register
def close_all() -> None:
    for handle in list(_LIVE):
        with contextlib.suppress(Exception):  # exiting: nothing left to report to
            close(handle)
