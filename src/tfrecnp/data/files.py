"""The files of a dataset and reads by position: an index of every record (frame offsets
and payload lengths, from header-only scans or `.idx` sidecars), positioned reads of runs
of frames (`os.preadv`, no shared file position; for URLs, ranged requests sent together
through fsspec's cat_ranges), and a check that what was read is what the index promised.

Remote reads by position move what they read: the records are grouped by file and sorted,
and neighbours share a ranged GET only across a gap of at most REMOTE_GAP bytes, smallest
gaps first, while the gaps stay within twice the bytes asked for (so a read moves at most
3x what it asks for); the ranges of every file go out together,
fs.RANGES_IN_FLIGHT at a time. A dense selection (a slice, a window of shuffled pieces)
costs a request per run; a sparse one (a 1 % sample) a request per record or two.
Shuffled passes over remote files (`shuffled_pieces`) read whole pieces of PIECE_BYTES in
a random order, shuffled within a window of SHUFFLE_WINDOW pieces: an epoch moves the
dataset's bytes about once.

Remote files are indexed together (`Files.index`: their `.idx` sidecars, and a GZIP /
ZLIB file's `.zran.idx` checkpoints, as the listing found them, fetched INDEX_THREADS at a
time), and each is kept in a local cache by the file's URL, size and ETag (format/index.py
`cached_index`); a remote file without sidecars is read whole to index it, with a warning
that says so (the bucket is not written: `tfrecnp index` does that).

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
from ..errors import (
    SALVAGE_HINT,
    CorruptRecordError,
    RandomAccessError,
    file_changed,
)
from ..format import inflate_index
from ..format.damage import DamagePolicy
from ..format.frames import HEADER_BYTES, OVERHEAD_BYTES, length_crc_mismatch
from ..format.index import RecordIndex, cached_index, index_path, remember_index
from ..format.inflate_index import Checkpoints, Inflated, SpanCache
from ..format.payloads import LOC_BITS, LOC_MASK, Origins, RecordBatch
from ..format.reader import RecordReader, file_compression, scan_file, scan_until_damage

RUN_GAP = 4096  # read_rows reads records this close together (in bytes) in one read
OPEN_FILES = 64  # file handles a dataset keeps open for positioned reads, at most
# A remote read by position joins neighbours across gaps of at most REMOTE_GAP bytes (about
# what a link carries in a round trip, 20 ms at 50 MB/s), while all gaps joined stay within
# twice the bytes asked for: a read moves at most 3x what it asks for (a 1 % sample, 3 %).
REMOTE_GAP = 1 << 20
FREE_GAP = 1 << 10  # ... and across any gap this small (a request's own headers weigh more)
# a shuffled pass over remote files reads pieces of this size (more than REMOTE_GAP: a
# window's read never joins pieces across one it does not hold, which another reads) ...
PIECE_BYTES = 4 << 20
SHUFFLE_WINDOW = 16  # ... in a random order, records shuffled within this many pieces
INDEX_THREADS = 16  # remote files' indexes fetched this many at once


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
        # the damage that ends a compressed file's index (damage raising): its records
        # before it are indexed and read by position; counting past it raises it
        self._cuts: dict[int, CorruptRecordError] = {}
        self._fresh()

    # -- process state: a lock and open file handles, made anew after pickle and fork ----------

    def _fresh(self) -> None:
        self._pid = os.getpid()
        self._lock_ = threading.Lock()
        self._handles: OrderedDict[int, Any] = OrderedDict()
        self._busy: dict[int, int] = {}
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
        """An open, unbuffered handle on file f for positioned reads (`read_runs`: no file
        position, so one handle per file is kept and shared by threads); past OPEN_FILES,
        handles no thread is using are closed. Remote files are read through `read_runs`,
        not handles."""
        fh = self.acquire(f)
        try:
            yield fh
        finally:
            self.release(f)

    def acquire(self, f: int) -> Any:
        """`opened` without the context manager (ds[i] reads a record in a few µs): the
        kept handle of file f, marked busy until `release(f)`."""
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
    def local_plain(self) -> bool:
        """Whether every file is local and uncompressed: records picked by number are read
        by the core's positioned reads, a call per piece (`read_runs`)."""
        return self.seekable and not self.remote

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
        cp = self._checkpoints[f]
        if self.damage.raises and cp is not None and not cp.index:  # a damaged stream:
            index, cut = scan_until_damage(path, kind)  # indexed up to it, in one walk
            if cut is not None:
                self._cuts[f] = cut
        elif self.damage.raises:  # a sidecar may stand in for the scan
            try:
                index = scan_file(path, compression=kind)
            except CorruptRecordError:
                if kind is None:
                    raise
                index, cut = scan_until_damage(path, kind)
                if cut is None:  # it changed since: the walk's error stands
                    raise
                self._cuts[f] = cut
        else:
            index = next(RecordReader(path, compression=kind, damage=self.damage).indexes())
        if kind is not None and self.inflatable:  # counted to be read by position: before
            self._checkpoints_of(f)  # workers fork, the checkpoints are made once, here
        return index.offsets, index.lengths

    @property
    def inflatable(self) -> bool:
        """Whether the compressed files can be read by position: with the `gzip` extra's
        rapidgzip installed (remote ones through their pieces between checkpoints)."""
        return inflate_index.have_rapidgzip()

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

    def index(self, upto_damage: bool = False) -> Files:
        """Index every file; then firsts (each file's first global record number), offsets
        and lengths (global arrays) are set. A damaged compressed stream is indexed up to
        its damage, which is raised here unless upto_damage (reads of records before it:
        `readable`)."""
        if not self._indexed:
            if self.remote:
                self._index_remote()
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
        if self._cuts and not upto_damage:
            raise self._cuts[min(self._cuts)]
        return self

    def _index_remote(self) -> None:
        """Index the remote uncompressed files not yet indexed, INDEX_THREADS at a time:
        from the local cache (no request), else their sidecars (a GET each, and one for a
        few frame headers to check it), else read whole (warned: `tfrecnp index` writes
        sidecars). Each index found is cached by URL, size and ETag."""
        todo = [
            f
            for f in range(len(self.paths))
            if self._file_index[f] is None
            and fs.is_url(self.paths[f])
            and (self.kinds[f] is None or self.inflatable)
        ]
        if not todo or not self.damage.raises:
            return
        from concurrent.futures import ThreadPoolExecutor

        packed = [f for f in todo if self.kinds[f] is not None]  # (their checkpoints too)
        todo = [f for f in todo if self.kinds[f] is None]
        for f in list(todo):  # from the local cache first: no request
            index = cached_index(self.paths[f])
            if index is not None:
                with self._lock:
                    self._file_index[f] = (index.offsets, index.lengths)
                todo.remove(f)
        todo += packed
        if not todo:
            return
        unsided = [  # (an empty file has nothing to index)
            f
            for f in todo
            if fs.size(self.paths[f])
            and (
                not fs.exists(index_path(self.paths[f]))
                if self.kinds[f] is None
                else not inflate_index.checkpoints_known(self.paths[f])
            )
        ]

        def one(f: int) -> None:
            path = self.paths[f]
            if self.kinds[f] is None:
                index = scan_file(path, compression=None)
                remember_index(index)
                found = (index.offsets, index.lengths)
            else:  # checkpoints (sidecar, cache, or built) and the index beside them
                found = self._scan(f)
                if cached_index(path) is None:
                    remember_index(RecordIndex(path, *found))
            with self._lock:
                if self._file_index[f] is None:
                    self._file_index[f] = found

        if unsided:
            _warn_unsided([self.paths[f] for f in unsided], [self.kinds[f] for f in unsided])
        with ThreadPoolExecutor(min(INDEX_THREADS, len(todo))) as pool:
            list(pool.map(one, todo))

    @property
    def indexed(self) -> bool:
        """Whether every record is indexed (not so when damage cut a file's index short)."""
        return self._indexed and not self._cuts

    def readable(self) -> int | None:
        """When damage cut the index short (`index`), the global number of records before
        it, which reads by position may take (the records after it cannot be numbered);
        else None."""
        self.index(upto_damage=True)
        return int(self.firsts[min(self._cuts) + 1]) if self._cuts else None

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

    def cut_short(self, f: int, at: int) -> CorruptRecordError:
        """The error for a read by position of file f that came up short at byte `at` (of
        its decompressed stream, for a compressed file): the file is shorter than when it
        was indexed. Names the record whose frame holds that byte."""
        off, _ = self.file_index(f)
        record = max(0, int(np.searchsorted(off, at, side="right")) - 1)
        frame = int(off[record]) if len(off) else 0
        path = self.paths[f]
        if self.kinds[f] is None and not fs.is_url(path):
            return file_changed(path, record, frame, self._indexed_end(f), indexed=True)
        stream = "file" if self.kinds[f] is None else "decompressed stream"
        return CorruptRecordError(
            f"the {stream} ends before byte {format_count(at)}, which its index lists",
            path=path,
            record=record,
            offset=frame,
            hint="the file changed after it was indexed; delete its .idx and open it again",
        )

    def indexed_size(self, f: int) -> int | None:
        """The size local uncompressed file f had when it was indexed (the end of its last
        frame), when its size now differs (it changed since); else None."""
        path = self.paths[f]
        if self.kinds[f] is not None or fs.is_url(path):
            return None
        try:
            size = os.path.getsize(path)
        except OSError:
            size = -1
        expected = self._indexed_end(f)
        return None if size == expected else expected

    def _indexed_end(self, f: int) -> int:
        """The end of file f's last indexed frame: its size when it was indexed."""
        off, ln = self.file_index(f)
        return int(off[-1] + ln[-1]) + OVERHEAD_BYTES if len(off) else 0

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
        need = f"the gzip extra ({inflate_index.PIP_LINE}), which reads them through inflate "
        need += "checkpoints"
        raise RandomAccessError(
            f"{what} reads records by position, which in {self.kinds[f]}-compressed files "
            f"such as {path} needs {need}; or decompress it (e.g. `gunzip -c {path} > "
            f"{os.path.splitext(path)[0]}`), or convert the dataset once (tn.convert(src, "
            "'out/')) and read rows from tn.load('out/'). Iteration, batches() and "
            "batches(shuffle=N) work on compressed files"
        )


def _warn_unsided(paths: list[Any], kinds: list[str | None]) -> None:
    """Say which remote files a read by position must read whole first, and how to spare
    the next open that (`tfrecnp index` writes sidecars beside them)."""
    import warnings

    names = ", ".join(fs.basename(p) for p in paths[:4])
    more = f" and {len(paths) - 4} more" if len(paths) > 4 else ""
    packed = any(k is not None for k in kinds)
    sidecar = ".idx sidecar" + (" or .zran.idx checkpoint sidecar" if packed else "")
    warnings.warn(
        f"{len(paths)} remote file{'s' * (len(paths) != 1)} ({names}{more}) "
        f"{'has' if len(paths) == 1 else 'have'} no {sidecar}: each is read "
        "whole once to index it (the index then cached locally); "
        f"`tfrecnp index {fs.split(paths[0])[0]}/` writes the sidecars",
        stacklevel=6,
    )


def _compressions(paths: list[str], compression: str | None) -> list[str | None]:
    """Each file's compression; remote files are asked about 32 at a time (a request
    each), the first bytes of the first fs.HEADS_KEPT kept for the spec's inference and
    the first batch (64 KiB each); local ones in turn."""
    if not any(fs.is_url(p) for p in paths):
        return [file_compression(p, compression) for p in paths]
    from concurrent.futures import ThreadPoolExecutor

    def one(k: int) -> str | None:
        return file_compression(paths[k], compression, keep=k < fs.HEADS_KEPT)

    with ThreadPoolExecutor(max(1, min(32, len(paths)))) as pool:
        return list(pool.map(one, range(len(paths))))


_PREADV = getattr(os, "preadv", None)  # ds[i] reads its one frame with it


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
    loc = int(frames.origins.locs[min(k, n - 1)])
    path, record, offset = files.place(loc)
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
    expected = files.indexed_size(loc >> LOC_BITS)
    if expected is not None:
        raise file_changed(path, record, offset, expected, reason, indexed=True)
    raise CorruptRecordError(
        reason,
        path=path,
        record=record,
        offset=offset,
        hint="if the file changed after it was indexed, delete its .idx and open it again; "
        "otherwise " + SALVAGE_HINT,
    )


def _read_frames(files: Files, f: int, a: int, b: int, buf: np.ndarray) -> np.ndarray:
    """Read the frames of records a..b of file f back to back into buf (exactly their
    total size), one read per run of adjacent frames; returns the n + 1 frame starts in
    buf. The frames are adjacent unless on_error="skip" / "warn" indexed around damaged
    bytes; those are never read (nor walked into by check_frames)."""
    off, ln = files.file_index(f)
    offsets, sizes = off[a:b], ln[a:b] + OVERHEAD_BYTES
    starts = offsets_of(sizes)
    heads = np.flatnonzero(np.concatenate([[True], offsets[:-1] + sizes[:-1] != offsets[1:]]))
    run_sizes = np.diff(starts[np.append(heads, len(sizes))])
    read_runs(files, f, buf, starts[heads], run_sizes, offsets[heads])
    return starts


def read_runs(
    files: Files, f: int, buf: np.ndarray, at: np.ndarray, sizes: np.ndarray, offsets: np.ndarray
) -> None:
    """Fill buf[at[k] : at[k] + sizes[k]] from byte offsets[k] of file f, for every k: the
    core's positioned reads of a kept handle, all in one call without the GIL; for a URL,
    one cat_ranges call for all of them (concurrent requests); for a compressed file,
    offsets in its decompressed stream, read through its checkpoints. A file shorter than
    its index raises (`Files.cut_short`)."""
    path = files.paths[f]
    if files.kinds[f] is not None or fs.is_url(path):
        runs = list(zip(at.tolist(), sizes.tolist(), offsets.tolist(), strict=True))
        view = memoryview(buf)
        if files.kinds[f] is not None:
            short = files.inflated(f).read_all(view, runs)
            if short is not None:
                raise files.cut_short(f, short)
        elif runs:
            got = fs.read_ranges(path, offsets.tolist(), (offsets + sizes).tolist())
            for (a, n, offset), data in zip(runs, got, strict=True):
                if len(data) != n:
                    raise files.cut_short(f, offset + len(data))
                view[a : a + n] = data
        return
    with files.opened(f) as fh:
        k, got = framing.pread_runs(fh.fileno(), offsets, sizes, buf, at)
    if k >= 0:
        raise files.cut_short(f, int(offsets[k]) + got)


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
    starts = _read_frames(files, f, a, b, buf)
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
        first, count = _runs(uniq, _cheap_joins(gap, same, int(files.lengths[uniq].sum())))
    else:
        first, count = _runs(uniq, same & (gap >= 0) & (gap <= RUN_GAP))
        if files.lengths[_ranges(first, count)].sum() > 2 * files.lengths[uniq].sum() + (1 << 20):
            first, count = _runs(uniq, same & (gap == 0))  # sparse: read only what was asked
    every = _ranges(first, count)
    sizes = files.lengths[every] + OVERHEAD_BYTES
    buf = files.spares.empty(int(sizes.sum()))
    starts = offsets_of(sizes)
    heads = np.cumsum(count) - count  # each run's first position in `every`
    offsets = files.offsets[every]
    inner = offsets[1:] != offsets[:-1] + sizes[:-1]  # index gaps (skip mode) inside runs
    inner[heads[1:] - 1] = False
    gapped = np.zeros(len(first), bool)
    gapped[np.searchsorted(heads, np.flatnonzero(inner), side="right") - 1] = True
    run_files = files.locate(first)
    bounds = starts[np.append(heads, len(every))]
    run_sizes = np.diff(bounds)
    if files.remote and files.seekable:  # every file's ranges sent together
        plain = np.flatnonzero(~gapped)
        _read_remote(
            files, run_files[plain], buf, bounds[plain], run_sizes[plain], offsets[heads[plain]]
        )
        run_files = np.where(gapped, run_files, -1)
    for f in np.unique(run_files[run_files >= 0]).tolist():  # a call per file, its runs at once
        plain = np.flatnonzero((run_files == f) & ~gapped)
        read_runs(files, f, buf, bounds[plain], run_sizes[plain], offsets[heads[plain]])
    for r in np.flatnonzero(gapped).tolist():
        f = int(run_files[r])
        a = int(first[r] - files.firsts[f])
        _read_frames(files, f, a, a + int(count[r]), buf[bounds[r] : bounds[r + 1]])
    whole = in_frames(files, buf, starts[:-1], sizes - OVERHEAD_BYTES, files.locs(every))
    check_frames(files, whole)
    pick = np.searchsorted(every, uniq)[inverse]
    return RecordBatch.spans(
        buf, whole.starts[pick], whole.ends[pick], whole.origins.take(pick), verified=whole.verified
    )


def verified_rows(files: Files, ids: np.ndarray) -> tuple[RecordBatch, CorruptRecordError | None]:
    """`read_rows`, payload CRCs checked: (the rows before the first that fails; the
    error naming that record and its frame's offset in the file, or None)."""
    rows = read_rows(files, ids)
    good, damage = rows.verify()
    if damage is None:
        return good, None
    path, record, offset = files.place(int(rows.origins.locs[len(good)]))
    error = CorruptRecordError(
        damage.reason, path=path, record=record, offset=offset, hint=damage.hint
    )
    return good, error


def read_one(files: Files, g: int) -> np.ndarray | None:
    """Record number g's frame, read with one positioned read and checked (length, both
    CRCs) in one core call: `ds[i]`'s short path. None when the frame does not check or
    the read comes up short; the caller then reads it the long way (`read_rows`), which
    names the damage."""
    f = bisect.bisect_right(files.first_list, g) - 1
    offset, length = int(files.offsets[g]), int(files.lengths[g])
    buf = np.empty(length + OVERHEAD_BYTES, np.uint8)
    if files.remote or _PREADV is None or files.kinds[f] is not None:
        one = np.array([0], np.int64)
        read_runs(files, f, buf, one, one + len(buf), one + offset)
    else:
        fh = files.acquire(f)
        try:
            if _PREADV(fh.fileno(), [buf], offset) != len(buf):
                return None
        finally:
            files.release(f)
    return buf if framing.frame_ok(buf, length, files.verify_crc) else None


def _cheap_joins(gap: np.ndarray, same: np.ndarray, asked: int) -> np.ndarray:
    """Which neighbours a remote read joins: across gaps of at most FREE_GAP bytes (a
    gap is the bytes read in between), and of at most REMOTE_GAP, the smallest first,
    while all gaps joined stay within twice the bytes asked for."""
    joins = same & (gap >= 0) & (gap <= FREE_GAP)
    candidates = np.flatnonzero(same & (gap > FREE_GAP) & (gap <= REMOTE_GAP))
    order = candidates[np.argsort(gap[candidates], kind="stable")]
    affordable = np.cumsum(gap[order]) <= 2 * asked - int(gap[joins].sum())
    joins[order[affordable]] = True
    return joins


def _read_remote(
    files: Files,
    which: np.ndarray,
    buf: np.ndarray,
    at: np.ndarray,
    sizes: np.ndarray,
    offsets: np.ndarray,
) -> None:
    """`read_runs` for runs of several remote uncompressed files (run k of file which[k]):
    one batch of ranged GETs for all of them, fs.RANGES_IN_FLIGHT in flight."""
    view = memoryview(buf)
    order = np.argsort(which, kind="stable")
    for f in np.unique(which).tolist():
        files.file_index(f)  # indexed before any GET: cut_short names records by it
    urls = [files.paths[f] for f in which[order].tolist()]
    got = fs.read_many(urls, offsets[order].tolist(), (offsets + sizes)[order].tolist())
    for k, data in zip(order.tolist(), got, strict=True):
        a, n = int(at[k]), int(sizes[k])
        if len(data) != n:
            raise files.cut_short(int(which[k]), int(offsets[k]) + len(data))
        view[a : a + n] = data


def shuffled_pieces(
    files: Files, start: int, stop: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """Global record numbers start..stop for a shuffled pass over remote files, a window
    at a time: each file cut into pieces of about PIECE_BYTES of whole records, the
    pieces in a random order, the records of SHUFFLE_WINDOW pieces at a time shuffled
    together. Every record comes once; `read_rows` of a window sends a GET per piece."""
    files.index()
    bounds = []
    for f in range(len(files.paths)):
        lo, hi = max(start, int(files.firsts[f])), min(stop, int(files.firsts[f + 1]))
        if lo >= hi:
            continue
        ends = np.cumsum(files.lengths[lo:hi] + OVERHEAD_BYTES)
        cuts = np.searchsorted(ends, np.arange(PIECE_BYTES, int(ends[-1]), PIECE_BYTES))
        edges = np.unique(np.concatenate([[0], cuts + 1, [hi - lo]]).clip(0, hi - lo))
        pairs = zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True)
        bounds += [(lo + a, lo + b) for a, b in pairs]
    order = rng.permutation(len(bounds))
    for w in range(0, len(order), SHUFFLE_WINDOW):
        ids = np.concatenate(
            [np.arange(*bounds[k], dtype=np.int64) for k in order[w : w + SHUFFLE_WINDOW]]
        )
        yield ids[rng.permutation(len(ids))]


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
