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

A shard in a bucket is stamped by its size and first bytes (an upload has an mtime of its
own). Its sidecar, as its listing found it, is fetched with one GET and kept in the local
cache (`fs.cache_file`) by the shard's URL, size and ETag; without one, a
build reads the shard once through the ranged GETs of a pass and keeps the checkpoints in
that cache only: a user's bucket is not written without asking (`tfrecnp index` does).
Reads by position fetch the compressed pieces between checkpoints that a read needs (the
checkpoints' byte offsets, from rapidgzip's export) together, and rapidgzip inflates them
from memory (`_Pieces`).

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
import struct
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
    "checkpoints_known",
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
PIECES_KEPT = 64 << 20  # compressed pieces of remote shards a process keeps, at most
PIECE_SLOP = 64  # a piece runs this far past the next checkpoint (its last bits)
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
    if fs.is_url(path):  # (an upload's mtime is its own: size and first bytes say which)
        head = fs.read_head(path, HEAD_BYTES)
        return {"size": fs.size(path), "mtime_ns": None, "head_crc32": zlib.crc32(head)}
    st = os.stat(path)
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "head_crc32": zlib.crc32(head)}


def _same_shard(stamp: dict, path: str) -> bool:
    """Whether a sidecar's stamp is the shard's (a remote shard's: size and first bytes)."""
    now = _stamp(path)
    if now["mtime_ns"] is None:
        return stamp["size"] == now["size"] and stamp["head_crc32"] == now["head_crc32"]
    return stamp == now


def _open(path: Any, parallelization: int) -> Any:
    """A rapidgzip handle on a local shard's path, or on a file object (a remote shard's)."""
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
    stream = _Raw(fs.open_read(path)) if fs.is_url(path) else None  # front to back, ahead
    try:
        handle = _open(path if stream is None else stream, BUILD_THREADS)
    except BaseException:
        if stream is not None:
            stream.close()
        raise
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
        if stream is not None:
            stream.close()
    return Checkpoints(path, compression, stamp, np.array(starts, np.int64), exported.getvalue())


class _Raw(io.RawIOBase):
    """A remote file read front to back (fs.open_read's), as the file object rapidgzip
    takes (it asks for the io methods a raw file has)."""

    def __init__(self, file: Any):
        self.file = file

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, out: Any) -> int:
        return self.file.readinto(out)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.file.seek(offset, whence)

    def tell(self) -> int:
        return self.file.tell()

    def close(self) -> None:
        self.file.close()
        super().close()


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
    with fs.open_read(path) as raw:
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
    with atomic_output(out) as tmp, fs.open_write(tmp) as f:
        f.write(MAGIC + json.dumps(meta, separators=(",", ":")).encode() + b"\n" + body)
    cp.stored = True
    return out


def _sidecar_bytes(path: Any) -> bytes | None:
    """The bytes of a shard's checkpoint sidecar, or None. A remote shard's: from the local
    cache (no request), else the sidecar its listing found (one GET, then cached)."""
    sidecar = checkpoint_path(path)
    if not fs.is_url(path):
        try:
            with open(sidecar, "rb") as f:
                return f.read()
        except OSError:
            return None
    cached = fs.cache_file(path, "checkpoints", CHECKPOINT_SUFFIX)
    if cached is not None and os.path.exists(cached):
        with contextlib.suppress(OSError), open(cached, "rb") as f:
            return f.read()
    if not fs.exists(sidecar):
        return None
    try:
        data = fs.read_bytes(sidecar)
    except FileNotFoundError:
        return None
    if cached is not None:
        fs.keep_cached(cached, data)
    return data


def checkpoints_known(path: Any) -> bool:
    """Whether a remote shard's checkpoints are cached locally or its listing found their
    sidecar (no request either way, for a listed shard)."""
    cached = fs.cache_file(path, "checkpoints", CHECKPOINT_SUFFIX)
    return (cached is not None and os.path.exists(cached)) or fs.exists(checkpoint_path(path))


def read_checkpoints(path: str, compression: str) -> Checkpoints | None:
    """The shard's checkpoints from its sidecar (a remote shard's: cached locally, or
    fetched and cached), or None when there is none, or it does not parse, or its stamp is
    not the shard's (then it is rebuilt, never trusted)."""
    data = _sidecar_bytes(path)
    if data is None:
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
        if not sound or not _same_shard(stamp, path):
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
    remote = fs.is_url(path)
    lines = _IndexLines(path) if write and not remote else None
    try:
        walk = _FrameWalk(lines)
        cp = build_checkpoints(path, compression, progress=progress, frames=walk)
        walked = walk.result(cp.inflated_size) if cp.index else None
        if write and cp.index and remote:  # the local cache, not the user's bucket
            cached = fs.cache_file(path, "checkpoints", CHECKPOINT_SUFFIX)
            if cached is not None:
                with contextlib.suppress(OSError):
                    os.makedirs(os.path.dirname(cached), exist_ok=True)
                    write_checkpoints(cp, cached)
                cp.stored = False  # (another machine has no such cache: pickled along)
        elif write and cp.index:
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
    if not have_rapidgzip():
        raise RandomAccessError(
            f"{path} is {compression}-compressed: indexing it for reads by position needs "
            f"the gzip extra ({PIP_LINE}); or decompress it first (e.g. `gunzip`) and index that"
        )
    remote = fs.is_url(path)  # (written beside it below, as asked, not only cached)
    cp, walked = checkpoints_and_frames(path, compression, rebuild=True, progress=False)
    if remote and cp.index:
        write_checkpoints(cp)
        if walked is not None:  # (format/index.py's write_index, which imports this module)
            with atomic_output(fs.suffixed(path, INDEX_SUFFIX)) as tmp, fs.open_write(tmp) as f:
                f.write(encode.index_lines(walked[0], walked[1] + OVERHEAD_BYTES))
        return checkpoint_path(path)
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


def _points(index: bytes) -> tuple[list[int], list[int]] | None:
    """(decompressed offsets, compressed byte offsets) of the checkpoints in rapidgzip's
    export (indexed_gzip's format: a header, then per point its compressed byte offset,
    decompressed offset and the bits it starts before that byte); None if it does not
    parse."""
    head = struct.Struct("<5sBBQQIII")
    if len(index) < head.size or not index.startswith(b"GZIDX"):
        return None
    _, version, _, _, _, _, _, count = head.unpack_from(index, 0)
    point = struct.Struct("<QQB" + "B" * (version >= 1))
    if len(index) < head.size + count * point.size:
        return None
    dec, comp = [], []
    for k in range(count):
        fields = point.unpack_from(index, head.size + k * point.size)
        dec.append(fields[1])
        comp.append(fields[0] - (1 if fields[2] else 0))
    return dec, comp


class _Pieces:
    """A remote shard's compressed bytes as rapidgzip reads them: the pieces between its
    checkpoints (each a little past the next, which it reads into), fetched together
    ahead of a read (`want`) or one at a time when a read finds one missing, kept in a
    process-wide LRU of PIECES_KEPT bytes."""

    def __init__(self, cp: Checkpoints):
        self.url, self.size = cp.path, int(cp.stamp["size"])
        self.key = (str(cp.path), self.size, fs.etag(cp.path), cp.stamp["head_crc32"])
        found = _points(cp.index)
        self.dec, cuts = found if found else ([0], [0])
        self.cuts = [0, *cuts[1:], self.size] if cuts else [0, self.size]

    def _piece(self, pos: int) -> tuple[int, int]:
        k = max(0, bisect.bisect_right(self.cuts, pos) - 1)
        return self.cuts[k], min(self.size, self.cuts[min(k + 1, len(self.cuts) - 1)] + PIECE_SLOP)

    def wanted(self, offset: int, n: int) -> set[tuple[int, int]]:
        """The pieces that decompressed bytes offset..offset + n are inflated from."""
        k0 = max(0, bisect.bisect_right(self.dec, offset) - 1)
        k1 = max(k0, bisect.bisect_left(self.dec, offset + n) - 1)
        return {self._piece(self.cuts[min(k, len(self.cuts) - 1)]) for k in range(k0, k1 + 1)}

    def want(self, pieces: set[tuple[int, int]]) -> None:
        """Fetch the pieces not held, in one batch of ranged GETs."""
        missing = sorted(p for p in pieces if _PIECES.get((self.key, p)) is None)
        if missing:
            got = fs.read_ranges(self.url, [a for a, _ in missing], [b for _, b in missing])
            for p, data in zip(missing, got, strict=True):
                _PIECES.put((self.key, p), np.frombuffer(data, np.uint8))

    def read_into(self, pos: int, out: memoryview) -> int:
        """Bytes pos.. of the shard into out, from the pieces held (a missing one fetched)."""
        got = 0
        while got < len(out) and pos < self.size:
            piece = self._piece(pos)
            data = _PIECES.get((self.key, piece))
            if data is None and pos < fs.HEAD_BYTES and not got:  # a new handle's look at
                head = fs.read_head(self.url, fs.HEAD_BYTES)  # the gzip header: the head
                n = min(len(out), len(head) - pos)  # kept at open (a short read)
                out[:n] = head[pos : pos + n]
                return n
            if data is None and got:  # a short read: rapidgzip reads ahead in blocks of
                break  # 128 KiB; a piece not held is fetched when it is asked for itself
            if data is None:
                self.want({piece})
                data = _PIECES.get((self.key, piece))
                if data is None:  # (larger than the whole budget: read it through)
                    data = np.frombuffer(
                        fs.read_ranges(self.url, [piece[0]], [piece[1]])[0], np.uint8
                    )
            n = min(len(out) - got, piece[0] + len(data) - pos)
            if n <= 0:
                break
            out[got : got + n] = data[pos - piece[0] : pos - piece[0] + n]
            got += n
            pos += n
        return got


class _PieceFile(io.RawIOBase):
    """A remote shard as the file object one rapidgzip handle reads (its own position)."""

    def __init__(self, pieces: _Pieces):
        self.pieces, self.pos = pieces, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.pieces.size}[whence]
        self.pos = base + offset
        return self.pos

    def tell(self) -> int:
        return self.pos

    def readinto(self, out: Any) -> int:
        got = self.pieces.read_into(self.pos, memoryview(out).cast("B"))
        self.pos += got
        return got


_PIECES = SpanCache(PIECES_KEPT)  # the compressed pieces of remote shards, by (shard, range)
if hasattr(os, "register_at_fork"):  # a forked child's own (its lock may be held at the fork)
    os.register_at_fork(after_in_child=lambda: _PIECES.__init__(PIECES_KEPT))


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
        self.pieces = _Pieces(cp) if fs.is_url(cp.path) and cp.index else None

    def read_all(self, view: memoryview, runs: list[tuple[int, int, int]]) -> int | None:
        """view[a : a + n] from decompressed byte `offset` on, for each (a, n, offset) of
        runs; a remote shard's pieces for several runs fetched together, within half of
        PIECES_KEPT at a time. Returns the stream offset where a run came up short, or None."""
        k = 0
        while k < len(runs):
            group, want, held = [], set(), 0
            while k < len(runs):
                a, n, offset = runs[k]
                if self.pieces is not None:  # (a span read in part is decoded whole)
                    starts = self._starts
                    lo = starts[max(0, bisect.bisect_right(starts, offset) - 1)]
                    hi = starts[min(len(starts) - 1, bisect.bisect_left(starts, offset + n))]
                    more = self.pieces.wanted(lo, hi - lo) - want
                    held += sum(b - a_ for a_, b in more)
                    if group and held > PIECES_KEPT // 2:
                        break
                    want |= more
                group.append(runs[k])
                k += 1
            if self.pieces is not None:
                self.pieces.want(want)
            for a, n, offset in group:
                got = self.read_into(view[a : a + n], offset)
                if got != n:
                    return offset + got
        return None

    def _take(self) -> Any:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        handle = _open(self.cp.path if self.pieces is None else _PieceFile(self.pieces), 1)
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

        with fs.open_read(self.cp.path) as raw:
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
