"""The files of a dataset and reads by position: an index of every record (frame offsets
and payload lengths, from header-only scans or `.idx` sidecars), positioned reads of runs
of frames (`os.preadv`, no shared file position; for URLs, ranged requests sent together
through fsspec's cat_ranges), and a check that what was read is what the index promised.

Remote reads by position merge neighbouring runs across gaps, smallest gaps first, while
the bytes read stay within three times those asked for plus REMOTE_SLACK: a request costs
about as much as a few MiB of transfer, so a dense selection (a slice, a shard, a shuffled
block of a small dataset) costs a few requests per file rather than one per record. A
sparse one (a shuffled block of a dataset many times the block) still costs about a request
per run of records: streamed shuffling (shuffle=N) is the remote-friendly way.

GZIP / ZLIB files are read by position through inflate checkpoints (format/inflate_index.py,
the `gzip` extra): byte ranges of the decompressed stream, which the index's offsets count.

Records read by position stay in their TFRecord frames (a `RecordBatch` of spans, CRCs
unchecked) until a batch is gathered from them; each row's origin is its location in the
dataset's table of files (`Origins`), so errors in any batch, shuffled or not, name the
right file and record.
"""

from __future__ import annotations

import bisect
import builtins
import contextlib
import itertools
import mmap
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._core import framing
from .._util import fs
from .._util.offsets import offsets_of
from .._util.spares import Spares
from .._util.text import format_count
from ..errors import SALVAGE_HINT, CorruptRecordError, RandomAccessError
from ..format import inflate_index
from ..format.damage import DamagePolicy
from ..format.frames import HEADER_BYTES, OVERHEAD_BYTES, length_crc_mismatch
from ..format.index import RecordIndex
from ..format.inflate_index import Checkpoints, Inflated, SpanCache
from ..format.payloads import LOC_BITS, LOC_MASK, Origins, RecordBatch
from ..format.reader import RecordReader, file_compression, scan_file

RUN_GAP = 4096  # read_rows reads records this close together (in bytes) in one read
OPEN_FILES = 64  # file handles a dataset keeps open for positioned reads, at most
# The mapped pages of a dataset's files are dropped from its RSS (MADV_DONTNEED: the page
# cache keeps them) each time about this many bytes have been touched through its maps.
MAPPED_BYTES = 512 << 20
FAULT_AROUND_BYTES = 64 << 10  # what a page fault may map around a record read at random
MAPS_PER_READ = 16  # a read spanning more files is read the long way (a map holds an fd)
REMOTE_SLACK = 32 << 20  # bytes a remote read by position may read beyond 3x what it needs


# --- the index of all files ---------------------------------------------------------------


class Files:
    """The files of a dataset, their compression, and (built on first need) the index of
    every record: frame offsets and payload lengths, per file and as global arrays. damage:
    the on_error policy that every read of these files reports to."""

    def __init__(self, paths: list[str], compression: str | None, verify_crc: bool, on_error):
        self.paths = paths
        self.compression = compression
        self.verify_crc = verify_crc
        self.damage = DamagePolicy(on_error)
        self.kinds = _compressions(paths, compression)
        self.seekable = all(k is None for k in self.kinds)
        self.remote = any(fs.is_url(p) for p in paths)
        self._indexed = False
        self._file_index: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(paths)
        self._checkpoints: list[Checkpoints | None] = [None] * len(paths)  # compressed files
        self._fresh()

    # -- process state: a lock and open file handles, made anew after pickle and fork ----------

    def _fresh(self) -> None:
        self._pid = os.getpid()
        self._lock_ = threading.Lock()
        self._handles: OrderedDict[int, Any] = OrderedDict()
        self._busy: dict[int, int] = {}
        self._maps: OrderedDict[int, tuple[mmap.mmap, np.ndarray]] = OrderedDict()  # `mapped`
        self._mapped_bytes = 0  # touched through the maps since their pages were dropped
        self.spares = Spares()  # the read buffers of a pass, reused by the next
        self._inflated: dict[int, Inflated] = {}  # compressed files read by position
        self._spans = SpanCache()  # their decoded spans

    def __getstate__(self) -> dict:
        """Pickles paths, options and the index built so far (so workers need not rescan);
        not the lock or the open files, which belong to this process. Inflate checkpoints
        travel only when no sidecar holds them (the receiver reads and checks the sidecar)."""
        state = self.__dict__.copy()
        for name in (
            "_pid",
            "_lock_",
            "_handles",
            "_busy",
            "_maps",
            "_mapped_bytes",
            "spares",
            "_inflated",
            "_spans",
        ):
            del state[name]
        state["_checkpoints"] = [None if c is None or c.stored else c for c in self._checkpoints]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._fresh()

    @property
    def _lock(self) -> threading.Lock:
        if self._pid != os.getpid():  # forked: the parent's lock and handles are not ours
            self._fresh()
        return self._lock_

    @contextlib.contextmanager
    def opened(self, f: int) -> Iterator[Any]:
        """An open, unbuffered handle on file f for positioned reads. With os.preadv
        (no file position) one handle per file is kept and shared by threads; past
        OPEN_FILES, handles no thread is using are closed. Without preadv each read gets
        its own handle. Remote files are read through `read_runs`, not handles."""
        if _PREADV is None:
            with builtins.open(self.paths[f], "rb", buffering=0) as fh:
                yield fh
            return
        fh = self.acquire(f)
        try:
            yield fh
        finally:
            self.release(f)

    def acquire(self, f: int) -> Any:
        """`opened` without the context manager (ds[i] reads a record in a few µs): the
        kept handle of file f, marked busy until `release(f)`. Needs os.preadv."""
        with self._lock:
            handles, busy = self._handles, self._busy
            fh = handles.get(f)
            if fh is None:
                fh = handles[f] = builtins.open(self.paths[f], "rb", buffering=0)  # noqa: SIM115
                idle = [k for k in handles if not busy.get(k) and k != f]
                for k in idle[: max(0, len(handles) - OPEN_FILES)]:
                    handles.pop(k).close()
            handles.move_to_end(f)
            busy[f] = busy.get(f, 0) + 1
        return fh

    @property
    def mappable(self) -> bool:
        """Whether every file is local and uncompressed: read through maps (`mapped`)."""
        return self.seekable and not self.remote

    def mapped(self, f: int, taken: int = 0) -> np.ndarray | None:
        """File f's bytes, a read-only array over a memory map of the file kept for later
        calls (up to OPEN_FILES maps), or None: a URL, a compressed file, an empty one, no
        map to be had. Big records are checked and decoded straight out of the page cache
        through it, with no read into a buffer of ours (`mapped_rows`, `walked`). The
        pages a pass touches count in RSS while mapped: they are the page cache, which the
        kernel reclaims as it would the cache of a read. Reading a mapped page past the
        end of a file that shrank would raise SIGBUS, not an error, so every call checks
        the file's size first: a file now shorter than its map gets None (its records are
        read the long way, which names what is missing). `taken`: the bytes the caller
        will touch through it; past MAPPED_BYTES touched since the last time, maps larger
        than that together drop their pages (MADV_DONTNEED: a later read faults them back
        in from the page cache), so RSS stays bounded however large the files. A file
        truncated by another process while a piece of it is being checked or decoded
        still raises SIGBUS, as it would under np.memmap: rewrite files by renaming a new
        one over them."""
        if self.kinds[f] is not None or fs.is_url(self.paths[f]):
            return None
        with self._lock:
            maps = self._maps
            self._mapped_bytes += taken
            if self._mapped_bytes > MAPPED_BYTES:  # RSS <= what was touched, and the maps
                if sum(len(data) for _, data in maps.values()) > MAPPED_BYTES:
                    for whole, _ in maps.values():
                        _drop_pages(whole)
                self._mapped_bytes = taken
            kept = maps.get(f)
            try:
                if kept is not None and kept[0].size() < len(kept[1]):
                    del maps[f]  # the file shrank (mmap.size() is the file's size now)
                    return None
                if kept is None:
                    with builtins.open(self.paths[f], "rb") as fh:
                        if not os.fstat(fh.fileno()).st_size:
                            return None
                        whole = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                    kept = maps[f] = (whole, np.frombuffer(whole, np.uint8))
                    while len(maps) > OPEN_FILES:
                        maps.popitem(last=False)  # unmapped once no batch reads from it
            except (OSError, ValueError):
                return None
            maps.move_to_end(f)
            return kept[1]

    def reader(self, f: int | None = None) -> RecordReader:
        """A stream of file f (of every file when None), read with these files' options."""
        return RecordReader(
            self.paths if f is None else self.paths[f],
            compression=self.compression if f is None else self.kinds[f],
            verify_crc=self.verify_crc,
            damage=self.damage,
            spares=self.spares,
        )

    def release(self, f: int) -> None:
        with self._lock_:
            self._busy[f] -= 1

    def close(self) -> None:
        """Close the kept file handles (they reopen on the next read) and let the kept read
        buffers go."""
        with self._lock:
            while self._handles:
                self._handles.popitem()[1].close()
            while self._inflated:
                self._inflated.popitem()[1].close()
            self._maps.clear()
        self.spares.clear()
        self._spans.clear()

    def file_index(self, f: int) -> tuple[np.ndarray, np.ndarray]:
        """(frame offsets, payload lengths) of file f, scanned on first need (or read from
        its .idx sidecar); a compressed file is decompressed once for this."""
        found = self._file_index[f]
        if found is None:
            with self._lock:
                found = self._file_index[f]
                if found is None:
                    found = self._file_index[f] = self._scan(f)
        return found

    def adopt(self, f: int, index: RecordIndex) -> None:
        """Take file f's index as given (by a caller that has it already, such as a Ray
        driver handing each read task its file's), instead of scanning for it."""
        with self._lock:
            self._file_index[f] = (index.offsets, index.lengths)

    def learned(self, batches: Iterator[RecordBatch]) -> Iterator[RecordBatch]:
        """The frame batches of a whole pass over these files, in file order, passed
        through. When the pass ends whole and the files are local and uncompressed, they
        are indexed from the batches' frame offsets: later passes read by position (the
        crew side by side) without a scan of their own. A stale index fails its reads
        with a clear error, as a scanned one does."""
        if self._indexed or self.remote or not self.seekable or not self.damage.raises:
            yield from batches
            return
        where = {path: f for f, path in enumerate(self.paths)}
        parts: list[list[tuple[np.ndarray, np.ndarray]]] | None = [[] for _ in self.paths]
        counts = [0] * len(self.paths)
        for batch in batches:
            if parts is not None and len(batch):
                path, record = batch.where(0)
                f = where.get(path, -1)
                if f < 0 or record != counts[f] or batch.which is not None:
                    parts = None  # not a plain walk of the files: learn nothing
                else:
                    frames = batch.offset + batch.starts - HEADER_BYTES
                    parts[f].append((frames, batch.ends - batch.starts))
                    counts[f] += len(batch)
            yield batch
        if parts is not None:
            self._adopt_walked(parts)

    def _adopt_walked(self, parts: list[list[tuple[np.ndarray, np.ndarray]]]) -> None:
        """Index the files from the frames a whole pass walked, if they cover each file
        to its end."""
        found = []
        for f, got in enumerate(parts):
            empty = np.empty(0, np.int64)
            offsets = np.concatenate([o for o, _ in got]) if got else empty
            lengths = np.concatenate([n for _, n in got]) if got else empty
            end = int(offsets[-1] + lengths[-1]) + OVERHEAD_BYTES if len(got) else 0
            try:
                size = os.path.getsize(self.paths[f])
            except OSError:  # gone since it was read: the pass stands, nothing is learned
                return
            if end != size:
                return
            found.append((offsets, lengths))
        with self._lock:
            for f, index in enumerate(found):
                if self._file_index[f] is None:
                    self._file_index[f] = index
        self.index()

    def _scan(self, f: int) -> tuple[np.ndarray, np.ndarray]:
        path, kind = self.paths[f], self.kinds[f]
        if kind is not None and self.inflatable and self.damage.raises:
            # one pass makes the checkpoints and walks the frames (unless sidecars hold them)
            # (and writes both sidecars, which the next open reads instead of inflating)
            cp, walked = inflate_index.checkpoints_and_frames(path, kind)
            self._checkpoints[f] = cp
            if walked is not None:
                return walked
        if self.damage.raises:  # a sidecar may stand in for the scan
            index = scan_file(path, compression=kind)
        else:
            index = next(RecordReader(path, compression=kind, damage=self.damage).indexes())
        if kind is not None and self.inflatable:  # counted to be read by position: before
            self._checkpoints_of(f)  # workers fork, the checkpoints are made once, here
        return index.offsets, index.lengths

    @property
    def inflatable(self) -> bool:
        """Whether the compressed files can be read by position: local, with the `gzip`
        extra's rapidgzip installed."""
        return not self.remote and inflate_index.have_rapidgzip()

    def _checkpoints_of(self, f: int) -> Checkpoints:
        cp = self._checkpoints[f]
        if cp is None:
            cp = inflate_index.checkpoints_for(self.paths[f], self.kinds[f])
            self._checkpoints[f] = cp
        return cp

    def reads_in_place(self, f: int) -> bool:
        """Whether file f reads by position at the cost of the records read: uncompressed,
        or compressed with checkpoints through its whole stream (in a damaged stream, a
        read by position inflates from the start: fine for a record, not for every block)."""
        if self.kinds[f] is None:
            return True
        return self.inflatable and bool(self._checkpoints_of(f).index)

    def inflated(self, f: int) -> Inflated:
        """Positioned reads of compressed file f's decompressed stream (this process's;
        checkpoints read from the sidecar, or built, on first need)."""
        found = self._inflated.get(f)
        if found is None or self._pid != os.getpid():
            cp = self._checkpoints_of(f)
            with self._lock:
                found = self._inflated.get(f)
                if found is None:
                    found = self._inflated[f] = Inflated(cp, self._spans)
        return found

    def index(self) -> Files:
        """Index every file; then firsts (each file's first global record number), offsets
        and lengths (global arrays) are set."""
        if not self._indexed:
            parts = [self.file_index(f) for f in range(len(self.paths))]
            with self._lock:
                if not self._indexed:
                    counts = np.array([len(o) for o, _ in parts], np.int64)
                    self.firsts = np.zeros(len(counts) + 1, np.int64)
                    np.cumsum(counts, out=self.firsts[1:])
                    self.first_list = self.firsts.tolist()
                    empty = np.empty(0, np.int64)
                    self.offsets = np.concatenate([o for o, _ in parts]) if parts else empty
                    self.lengths = np.concatenate([n for _, n in parts]) if parts else empty
                    for f in range(len(parts)):  # one copy of the index: views per file
                        a, b = int(self.firsts[f]), int(self.firsts[f + 1])
                        self._file_index[f] = (self.offsets[a:b], self.lengths[a:b])
                    self._indexed = True
        return self

    @property
    def indexed(self) -> bool:
        return self._indexed

    @property
    def count(self) -> int:
        return int(self.index().firsts[-1])

    def locate(self, ids: np.ndarray) -> np.ndarray:
        """The file number of each global record number."""
        return np.searchsorted(self.firsts, ids, side="right") - 1

    def locs(self, ids: np.ndarray) -> np.ndarray:
        """Locations (file << LOC_BITS | record in file) of global record numbers."""
        which = self.locate(ids)
        return (which << LOC_BITS) | (ids - self.firsts[which])

    def place(self, loc: int) -> tuple[str, int, int]:
        """(path, record number in the file, byte offset or -1) of a location."""
        f, record = loc >> LOC_BITS, loc & LOC_MASK
        known = self._file_index[f]
        offset = int(known[0][record]) if known is not None and record < len(known[0]) else -1
        return self.paths[f], record, offset

    @property
    def on_error(self) -> str:
        return self.damage.on_error

    @property
    def corruptions(self) -> list[CorruptRecordError]:
        """Damage skipped so far, each place once."""
        return self.damage.corruptions

    def require_seek(self, what: str) -> None:
        if self.seekable or self.inflatable:
            return
        f = next(i for i, k in enumerate(self.kinds) if k is not None)
        path = self.paths[f]
        if self.remote:
            need = "local files (copy them here first)"
        else:
            need = f"the gzip extra ({inflate_index.PIP_LINE}), which reads them through inflate "
            need += "checkpoints"
        raise RandomAccessError(
            f"{what} reads records by position, which in {self.kinds[f]}-compressed files "
            f"such as {path} needs {need}; or decompress it (e.g. `gunzip -c {path} > "
            f"{os.path.splitext(path)[0]}`), or convert the dataset once (tn.convert(src, "
            "'out/')) and read rows from tn.load('out/'). Iteration, batches() and "
            "batches(shuffle=N) work on compressed files"
        )


def _compressions(paths: list[str], compression: str | None) -> list[str | None]:
    """Each file's compression; remote files are asked about 32 at a time (a request
    each), local ones in turn."""
    if not any(fs.is_url(p) for p in paths) or len(paths) < 2:
        return [file_compression(p, compression) for p in paths]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(32) as pool:
        return list(pool.map(lambda p: file_compression(p, compression), paths))


def read_at(fh, view: memoryview, offset: int) -> int:
    """Read into view from byte `offset` of the open file fh: os.preadv where the system has
    it (no file position, no copy), else seek + readinto (fh is never shared)."""
    if _PREADV is not None:
        return _PREADV(fh.fileno(), [view], offset)
    fh.seek(offset)
    return fh.readinto(view) or 0


_PREADV = getattr(os, "preadv", None)


def pread_into(fh, view: memoryview, offset: int, path: str) -> None:
    got = 0
    while got < len(view):
        n = read_at(fh, view[got:], offset + got)
        if n <= 0:
            _short_read(path, offset + got, offset, len(view))
        got += n


def _short_read(path: str, end: int, offset: int, size: int) -> None:
    raise CorruptRecordError(
        f"the file ends at byte {format_count(end)}, before the "
        f"{format_count(size)} bytes its index lists at byte {format_count(offset)}",
        path=path,
        record=-1,
        offset=offset,
        hint="the file changed after it was indexed; delete its .idx and open it again",
    )


def check_frames(files: Files, frames: RecordBatch) -> None:
    """Walk the frame headers of a freshly read buffer: every length CRC must check and
    every length must equal the index's (a stale .idx or a rewritten file fails here)."""
    n = len(frames)
    starts = np.empty(n, np.int64)
    lengths = np.empty(n, np.int64)
    buf = frames.data
    status, pos, got, _ = framing.scan_frames(buf, 0, len(buf), starts, lengths)
    expect_s = frames.starts[:got] - HEADER_BYTES
    expect_l = frames.lengths[:got]
    wrong = np.flatnonzero((starts[:got] != expect_s) | (lengths[:got] != expect_l))
    if got == n and not len(wrong):
        return
    k = int(wrong[0]) if len(wrong) else got
    path, record, offset = files.place(int(frames.origins.locs[min(k, n - 1)]))
    if status == framing.BAD_LENGTH_CRC and k == got:
        reason = length_crc_mismatch(buf, pos)
    else:
        found = int(lengths[k]) if k < got else -1
        reason = (
            f"record length {format_count(found)} differs from the index's "
            f"{format_count(int(frames.lengths[k]))}"
            if found >= 0
            else "the frame at the indexed offset does not parse"
        )
    raise CorruptRecordError(
        reason,
        path=path,
        record=record,
        offset=offset,
        hint="if the file changed after it was indexed, delete its .idx and open it again; "
        "otherwise " + SALVAGE_HINT,
    )


def _read_frames(files: Files, f: int, a: int, b: int, view: memoryview) -> np.ndarray:
    """Read the frames of records a..b of file f back to back into view (exactly their
    total size), one read per run of adjacent frames; returns the n + 1 frame starts in
    view. The frames are adjacent unless on_error="skip" / "warn" indexed around damaged
    bytes; those are never read (nor walked into by check_frames)."""
    off, ln = files.file_index(f)
    offsets, sizes = off[a:b], ln[a:b] + OVERHEAD_BYTES
    starts = offsets_of(sizes)
    gaps = np.flatnonzero(offsets[:-1] + sizes[:-1] != offsets[1:]) + 1
    cuts = [0, *gaps.tolist(), len(sizes)]
    parts = [view[int(starts[lo]) : int(starts[hi])] for lo, hi in itertools.pairwise(cuts)]
    read_runs(files, f, parts, [int(offsets[lo]) for lo in cuts[:-1]])
    return starts


def read_runs(files: Files, f: int, parts: list[memoryview], offsets: list[int]) -> None:
    """Fill each view in `parts` from its byte offset in file f: positioned reads of a kept
    handle, or, for a URL, one cat_ranges call for all of them (concurrent requests); for a
    compressed file, offsets in its decompressed stream, read through its checkpoints."""
    path = files.paths[f]
    if files.kinds[f] is not None:
        inflated = files.inflated(f)
        for part, offset in zip(parts, offsets, strict=True):
            got = inflated.read_into(part, offset)
            if got != len(part):
                _short_read(path, offset + got, offset, len(part))
        return
    if fs.is_url(path):
        if not parts:
            return
        stops = [o + len(p) for o, p in zip(offsets, parts, strict=True)]
        got = fs.read_ranges(path, offsets, stops)
        for part, data, offset in zip(parts, got, offsets, strict=True):
            if len(data) != len(part):
                _short_read(path, offset + len(data), offset, len(part))
            part[:] = data
        return
    with files.opened(f) as fh:  # one read per run, in a tight loop
        for part, offset in zip(parts, offsets, strict=True):
            if read_at(fh, part, offset) != len(part):
                pread_into(fh, part, offset, path)


def in_frames(
    files: Files, buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, locs: np.ndarray
) -> RecordBatch:
    """The payloads of the frames at buf[starts[k]:], of lengths[k] bytes, records locs[k]
    of the files: CRCs unchecked (unless the files skip them)."""
    first = starts + HEADER_BYTES
    origins = Origins(files.paths, locs)
    return RecordBatch.spans(buf, first, first + lengths, origins, verified=not files.verify_crc)


def read_span(files: Files, f: int, a: int, b: int) -> RecordBatch:
    """Records a..b (numbers within file f), their frames laid back to back."""
    _, ln = files.file_index(f)
    buf = files.spares.empty(int(ln[a:b].sum()) + OVERHEAD_BYTES * (b - a))
    starts = _read_frames(files, f, a, b, memoryview(buf))
    locs = (f << LOC_BITS) + np.arange(a, b, dtype=np.int64)
    frames = in_frames(files, buf, starts[:-1], ln[a:b], locs)
    check_frames(files, frames)
    return frames


def read_rows(files: Files, ids: np.ndarray) -> RecordBatch:
    """The records with these global numbers (duplicates allowed), as frames in the given
    order. Files are read in offset order, and records less than RUN_GAP bytes apart in
    one read (the records between them are read and checked too, then left out), so a
    dense selection, a shuffled block or a run of neighbours costs few system calls."""
    ids = np.asarray(ids, np.int64)
    uniq, inverse = np.unique(ids, return_inverse=True)
    if not len(uniq):
        empty = np.empty(0, np.int64)
        return in_frames(files, np.empty(0, np.uint8), empty, empty, empty)
    which = files.locate(uniq)
    ends = files.offsets[uniq[:-1]] + files.lengths[uniq[:-1]] + OVERHEAD_BYTES
    gap = files.offsets[uniq[1:]] - ends
    same = which[1:] == which[:-1]
    if files.remote:
        first, count = _runs(uniq, _cheap_joins(gap, same, files.lengths[uniq].sum()))
    else:
        first, count = _runs(uniq, same & (gap >= 0) & (gap <= RUN_GAP))
        if files.lengths[_ranges(first, count)].sum() > 2 * files.lengths[uniq].sum() + (1 << 20):
            first, count = _runs(uniq, same & (gap == 0))  # sparse: read only what was asked
    every = _ranges(first, count)
    sizes = files.lengths[every] + OVERHEAD_BYTES
    buf = files.spares.empty(int(sizes.sum()))
    view = memoryview(buf)
    starts = offsets_of(sizes)
    heads = np.cumsum(count) - count  # each run's first position in `every`
    offsets = files.offsets[every]
    inner = offsets[1:] != offsets[:-1] + sizes[:-1]  # index gaps (skip mode) inside runs
    inner[heads[1:] - 1] = False
    gapped = set(np.searchsorted(heads, np.flatnonzero(inner), side="right") - 1)
    run_files = files.locate(first).tolist()
    run_offsets = offsets[heads].tolist()
    bounds = [*starts[heads].tolist(), int(starts[-1])]
    done = 0
    for f, group in itertools.groupby(run_files):
        end = done + len(list(group))
        plain = [r for r in range(done, end) if r not in gapped]
        parts = [view[bounds[r] : bounds[r + 1]] for r in plain]
        read_runs(files, f, parts, [run_offsets[r] for r in plain])
        for r in range(done, end):
            if r in gapped:
                a = int(first[r] - files.firsts[f])
                _read_frames(files, f, a, a + int(count[r]), view[bounds[r] : bounds[r + 1]])
        done = end
    whole = in_frames(files, buf, starts[:-1], sizes - OVERHEAD_BYTES, files.locs(every))
    check_frames(files, whole)
    pick = np.searchsorted(every, uniq)[inverse]
    return RecordBatch.spans(
        buf, whole.starts[pick], whole.ends[pick], whole.origins.take(pick), verified=whole.verified
    )


def verified_rows(files: Files, ids: np.ndarray) -> tuple[RecordBatch, CorruptRecordError | None]:
    """`read_rows`, payload CRCs checked: (the rows before the first that fails; the
    error naming that record and its frame's offset in the file, or None). Records of
    mapped files are left where they lie (`mapped_rows`) when every frame checks."""
    mapped = mapped_rows(files, ids)
    if mapped is not None:
        return mapped, None
    rows = read_rows(files, ids)
    good, damage = rows.verify()
    if damage is None:
        return good, None
    path, record, offset = files.place(int(rows.origins.locs[len(good)]))
    error = CorruptRecordError(
        damage.reason, path=path, record=record, offset=offset, hint=damage.hint
    )
    return good, error


def _drop_pages(whole: mmap.mmap) -> None:
    """Drop a map's pages from this process (a shared file map's data stays in the page
    cache, and a later read faults it back in); without madvise, nothing."""
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if advice is not None:
        whole.madvise(advice)


def mapped_rows(files: Files, ids: np.ndarray) -> RecordBatch | None:
    """The records with these global numbers (any order, duplicates allowed) as spans of
    their files' maps (`Files.mapped`): each frame's header checked against the index and
    its payload CRC checked (unless the files skip it), with no read and no copy. None
    when a file has no map or any frame does not check: the caller reads the long way,
    which names the damage."""
    ids = np.asarray(ids, np.int64)
    if not len(ids):
        return None
    which = files.locate(ids)
    used = np.unique(which)
    if len(used) > MAPS_PER_READ:
        return None
    at = np.searchsorted(used, which)  # each record's map
    frames = files.offsets[ids]
    lengths = files.lengths[ids]
    touched = np.maximum(lengths + OVERHEAD_BYTES, FAULT_AROUND_BYTES)
    taken = np.bincount(at, touched, minlength=len(used)).astype(np.int64).tolist()
    maps = [files.mapped(int(f), n) for f, n in zip(used, taken, strict=True)]
    if any(data is None for data in maps):
        return None
    for k, data in enumerate(maps):
        mine = slice(None) if len(maps) == 1 else at == k
        head, length = frames[mine], lengths[mine]
        if int((head + length).max()) + OVERHEAD_BYTES > len(data):  # type: ignore[arg-type]
            return None
        stored = data[head[:, None] + np.arange(8)].view("<u8")[:, 0]  # type: ignore[index]
        if (stored != length).any() or framing.check_payloads(data, head, head + 8) >= 0:
            return None  # the length or its CRC (which follows it as a payload's does)
        first = head + HEADER_BYTES
        if files.verify_crc and framing.check_payloads(data, first, first + length) >= 0:
            return None
    starts = frames + HEADER_BYTES
    origins = Origins(files.paths, files.locs(ids))
    if len(maps) == 1:
        return RecordBatch.spans(maps[0], starts, starts + lengths, origins)  # type: ignore[arg-type]
    return RecordBatch.spans(maps, starts, starts + lengths, origins, which=at)  # type: ignore[arg-type]


def walked(files: Files, count: int) -> Iterator[RecordBatch]:
    """Every record of the files in order, `count` at a time (a file's last batch may be
    short), as a stream's framed batches (payload CRCs left to `RecordBatch.verify`): out
    of each file's map, its headers walked by the core (length CRCs checked), with no
    read into a buffer of ours; a file with no map is streamed. A frame that does not
    walk (a file cut short, a bad length CRC) is named by streaming its file, which
    raises the reader's own error."""
    starts = np.empty(count, np.int64)
    lengths = np.empty(count, np.int64)
    for f, path in enumerate(files.paths):
        pos = record = 0
        data = files.mapped(f)
        if data is None:
            yield from _streamed(files, f, count)
            continue
        while pos < len(data):
            status, end, n, _ = framing.scan_frames(data, pos, len(data), starts, lengths)
            if n:
                locs = (f << LOC_BITS) | np.arange(record, record + n, dtype=np.int64)
                yield in_frames(files, data, starts[:n], lengths[:n], locs)
                record += n
            taken, pos = end - pos, end
            if status != framing.LIMIT and pos < len(data):
                for _ in _streamed(files, f, count):  # the damage, named as a stream names it
                    pass
                reason = "the frame here did not walk, but the file read whole after"
                raise _changed(reason, path, record, pos)
            data = files.mapped(f, taken)
            if data is None:
                raise _changed("the file shrank while it was read", path, record, pos)


def _changed(reason: str, path: str, record: int, offset: int) -> CorruptRecordError:
    hint = "the file changed while it was read; read it again"
    return CorruptRecordError(reason, path=path, record=record, offset=offset, hint=hint)


def _streamed(files: Files, f: int, count: int) -> Iterator[RecordBatch]:
    return files.reader(f).frame_batches(count, defer_crc=True)


def read_one(files: Files, g: int) -> np.ndarray | None:
    """Record number g's frame, read with one positioned read and checked (length, both
    CRCs) in one core call: `ds[i]`'s short path. None when the frame does not check or
    the read comes up short; the caller then reads it the long way (`read_rows`), which
    names the damage."""
    f = bisect.bisect_right(files.first_list, g) - 1
    offset, length = int(files.offsets[g]), int(files.lengths[g])
    buf = np.empty(length + OVERHEAD_BYTES, np.uint8)
    if files.remote or _PREADV is None or files.kinds[f] is not None:
        read_runs(files, f, [memoryview(buf)], [offset])
    else:
        fh = files.acquire(f)
        try:
            if _PREADV(fh.fileno(), [buf], offset) != len(buf):
                return None
        finally:
            files.release(f)
    return buf if framing.frame_ok(buf, length, files.verify_crc) else None


def _cheap_joins(gap: np.ndarray, same: np.ndarray, asked: int) -> np.ndarray:
    """Which neighbours a remote read joins: the smallest gaps first (a gap is the bytes
    read in between), while their total stays within 2 x asked + REMOTE_SLACK bytes."""
    joins = np.zeros(len(gap), bool)
    candidates = np.flatnonzero(same & (gap >= 0))
    order = candidates[np.argsort(gap[candidates], kind="stable")]
    affordable = np.cumsum(gap[order]) <= 2 * asked + REMOTE_SLACK
    joins[order[affordable]] = True
    return joins


def _runs(uniq: np.ndarray, joins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first record, record count) of each run, where joins[k] says uniq[k] and uniq[k + 1]
    share a read."""
    heads = np.flatnonzero(np.concatenate([[True], ~joins]))
    tails = np.concatenate([heads[1:], [len(uniq)]]) - 1
    return uniq[heads], uniq[tails] - uniq[heads] + 1


def _ranges(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Concatenated aranges first[k] .. first[k] + count[k]."""
    total = int(count.sum())
    shift = np.repeat(first - (np.cumsum(count) - count), count)
    return np.arange(total, dtype=np.int64) + shift
