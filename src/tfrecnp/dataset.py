"""A TFRecord dataset opened like a dict of NumPy columns: `tn.open(paths) -> Dataset`.

A Dataset is a view of a range of records of some files, decoded with one spec:

- ``len(ds)`` counts records from an index of frame offsets: a header-only scan that seeks
  over payloads, or the files' ``.idx`` sidecars (compressed files are decompressed once).
- ``ds[i]`` is one record (``{name: value}``); ``ds[a:b]`` and ``ds[[i, j, k]]`` are batches
  (``{name: column}``). They read just those records with ``os.preadv``, so they need
  uncompressed files (`RandomAccessError` otherwise).
- ``ds.batches(n)`` streams batches; reading and decoding run ahead in two background
  threads, at most ``prefetch`` batches deep each, so memory is bounded by batch size times
  prefetch, never by the dataset. ``shuffle=True`` permutes the whole index (uncompressed
  files); ``shuffle=N`` draws each batch from a buffer of N records fed from the files in
  turn (any file). Both are deterministic for a given seed.
- ``select``, ``shard`` and ``take`` return narrower views; ``to_numpy`` decodes everything
  after checking the size against a memory budget; ``save`` streams everything into .npy,
  .npz, HDF5 or Zarr (`tfrecnp.sinks`).

Records stay in their TFRecord frames until a batch is formed: a batch is gathered from
frame buffers by the compiled core, which checks each payload's CRC in the same pass as the
copy. Errors name the file, the record's number in it and its byte offset.
"""

from __future__ import annotations

import builtins
import dataclasses
import itertools
import os
import queue
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._core import framing
from .columns import BytesColumn, Column, Ragged, take_column
from .errors import (
    CorruptRecordError,
    CorruptRecordWarning,
    MemoryBudgetError,
    TFRecordError,
    format_count,
    format_size,
)
from .progress import Progress
from .records import (
    Paths,
    RecordBatch,
    RecordReader,
    expand_paths,
    file_compression,
    scan_file,
)
from .spec import Raw, Sequence, VarLen, as_spec, spec_from_json

__all__ = ["Dataset", "RandomAccessError", "available_memory", "convert", "open"]

Batch = dict[str, Column]

SAMPLE_RECORDS = 1024  # records decoded to estimate to_numpy's size
SAVE_BATCH_BYTES = 8 << 20  # save() reads about this many payload bytes per batch
SAVE_BATCH_RECORDS = (256, 32768)
DEFAULT_SAVE_BATCH = 4096
READ_BATCH = 4096  # iteration and to_numpy read this many records per batch
CYCLE_FILES = 8  # shuffle=N reads from up to this many files in turn
COMPACT_SLACK = 1 << 20  # a shuffle buffer compacts when its chunks hold this much over 2x
LOC_BITS = 40  # a record's location: file number << LOC_BITS | record number in the file
LOC_MASK = (1 << LOC_BITS) - 1
LENGTH_SUFFIX = "_length"
_DONE, _ITEM, _ERROR = 0, 1, 2
SALVAGE_HINT = (
    "run `tfrecnp verify --salvage OUT` to copy the good records, or pass on_error='skip'"
)


class RandomAccessError(TFRecordError, ValueError):
    """Reading records by position needs uncompressed files."""


# --- the index of all files ---------------------------------------------------------------


class _Files:
    """The files of a dataset, their compression, and (built on first need) the index of
    every record: frame offsets and payload lengths, per file and as global arrays."""

    def __init__(self, paths: list[str], compression: str | None, verify_crc: bool, on_error):
        self.paths = paths
        self.compression = compression
        self.verify_crc = verify_crc
        self.on_error = on_error
        self.kinds = [file_compression(p, compression) for p in paths]
        self.seekable = all(k is None for k in self.kinds)
        self.corruptions: list[CorruptRecordError] = []
        self._lock = threading.Lock()
        self._indexed = False
        self._file_index: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(paths)

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

    def _scan(self, f: int) -> tuple[np.ndarray, np.ndarray]:
        path, kind = self.paths[f], self.kinds[f]
        if self.on_error == "raise":
            index = scan_file(path, compression=kind)
        else:
            reader = RecordReader(path, compression=kind, on_error=self.on_error)
            index = next(reader.indexes())
            self.corruptions += reader.corruptions  # under the lock of file_index
        return index.offsets, index.lengths

    def index(self) -> _Files:
        """Index every file; then firsts (each file's first global record number), offsets
        and lengths (global arrays) are set."""
        if not self._indexed:
            parts = [self.file_index(f) for f in range(len(self.paths))]
            with self._lock:
                if not self._indexed:
                    counts = np.array([len(o) for o, _ in parts], np.int64)
                    self.firsts = np.zeros(len(counts) + 1, np.int64)
                    np.cumsum(counts, out=self.firsts[1:])
                    empty = np.empty(0, np.int64)
                    self.offsets = np.concatenate([o for o, _ in parts]) if parts else empty
                    self.lengths = np.concatenate([n for _, n in parts]) if parts else empty
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

    def where(self, loc: int) -> tuple[str, int, int]:
        """(path, record number in the file, byte offset or -1) of a location."""
        f, record = loc >> LOC_BITS, loc & LOC_MASK
        known = self._file_index[f]
        offset = int(known[0][record]) if known is not None and record < len(known[0]) else -1
        return self.paths[f], record, offset

    def note(self, error: CorruptRecordError) -> bool:
        """List skipped damage once per place; False if it was listed already."""
        key = (error.path, error.record, error.offset)
        with self._lock:
            if any((e.path, e.record, e.offset) == key for e in self.corruptions):
                return False
            self.corruptions.append(error)
            return True

    def require_seek(self, what: str) -> None:
        if self.seekable:
            return
        f = next(i for i, k in enumerate(self.kinds) if k is not None)
        path = self.paths[f]
        raise RandomAccessError(
            f"{what} reads records by position, which needs uncompressed files, but {path} "
            f"is {self.kinds[f]}-compressed; decompress it (e.g. `gunzip -c {path} > "
            f"{os.path.splitext(path)[0]}`), or convert the dataset once (tn.convert(src, "
            "'out/')) and read rows from tn.load('out/'). Iteration, batches() and "
            "batches(shuffle=N) work on compressed files"
        )


# --- frames: records still in their TFRecord framing -------------------------------------------


@dataclass(frozen=True)
class _Frames:
    """Whole TFRecord frames in one buffer: frame k starts at buf[starts[k]] and holds a
    payload of lengths[k] bytes; locs[k] is its location (file << LOC_BITS | record).
    checked: the payload CRCs were verified already."""

    buf: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    locs: np.ndarray
    checked: bool = False

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def nbytes(self) -> int:
        return int(self.buf.nbytes)


@dataclass(frozen=True)
class _Batch(RecordBatch):
    """A RecordBatch whose rows carry their locations, so an error in any row (say, of a
    shuffled batch) names the right file and record."""

    locs: np.ndarray | None = None
    files: _Files | None = None
    order: np.ndarray | None = None  # rows to take after decoding (shuffle=N mixes within)

    def where(self, row: int) -> tuple[str, int]:
        if self.locs is None or self.files is None:
            return super().where(row)
        path, record, _ = self.files.where(int(self.locs[row]))
        return path, record


def _read_at(fh, view: memoryview, offset: int) -> int:
    """Read into view from byte `offset` of the open file fh: os.preadv where the system has
    it (no file position, no copy), else seek + readinto (fh is never shared)."""
    if _PREADV is not None:
        return _PREADV(fh.fileno(), [view], offset)
    fh.seek(offset)
    return fh.readinto(view) or 0


_PREADV = getattr(os, "preadv", None)


def _pread_into(fh, view: memoryview, offset: int, path: str) -> None:
    got = 0
    while got < len(view):
        n = _read_at(fh, view[got:], offset + got)
        if n <= 0:
            raise CorruptRecordError(
                f"the file ends at byte {format_count(offset + got)}, before the "
                f"{format_count(len(view))} bytes its index lists at byte {format_count(offset)}",
                path=path,
                record=-1,
                offset=offset,
                hint="the file changed after it was indexed; delete its .idx and open it again",
            )
        got += n


def _check_frames(files: _Files, frames: _Frames) -> None:
    """Walk the frame headers of a freshly read buffer: every length CRC must check and
    every length must equal the index's (a stale .idx or a rewritten file fails here)."""
    n = len(frames)
    starts = np.empty(n, np.int64)
    lengths = np.empty(n, np.int64)
    status, pos, got, _ = framing.scan_frames(frames.buf, 0, len(frames.buf), starts, lengths)
    expect_s, expect_l = frames.starts[:got], frames.lengths[:got]
    wrong = np.flatnonzero((starts[:got] != expect_s) | (lengths[:got] != expect_l))
    if got == n and not len(wrong):
        return
    k = int(wrong[0]) if len(wrong) else got
    path, record, offset = files.where(int(frames.locs[min(k, n - 1)]))
    if status == framing.BAD_LENGTH_CRC and k == got:
        stored = int.from_bytes(frames.buf[pos + 8 : pos + 12].tobytes(), "little")
        computed = framing.mask_crc(framing.crc32c(frames.buf[pos : pos + 8]))
        reason = f"length CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})"
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


def _read_span(files: _Files, f: int, a: int, b: int) -> _Frames:
    """Records a..b (numbers within file f), one read per run of adjacent frames, laid
    back to back. The frames are adjacent unless on_error="skip" / "warn" indexed around
    damaged bytes; those are never read (nor walked into by _check_frames)."""
    off, ln = files.file_index(f)
    offsets, lengths = off[a:b], ln[a:b].copy()
    sizes = lengths + 16
    starts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    buf = np.empty(int(starts[-1]), np.uint8)
    view = memoryview(buf)
    gaps = np.flatnonzero(offsets[:-1] + sizes[:-1] != offsets[1:]) + 1
    cuts = [0, *gaps.tolist(), len(sizes)]
    path = files.paths[f]
    with builtins.open(path, "rb", buffering=0) as fh:
        for lo, hi in itertools.pairwise(cuts):
            s, e = int(starts[lo]), int(starts[hi])
            _pread_into(fh, view[s:e], int(offsets[lo]), path)
    locs = (f << LOC_BITS) + np.arange(a, b, dtype=np.int64)
    frames = _Frames(buf, starts[:-1], lengths, locs)
    _check_frames(files, frames)
    return frames


def _read_records(files: _Files, ids: np.ndarray) -> _Frames:
    """The records with these global numbers, their frames laid back to back in the given
    order (duplicates allowed). One read per record, files visited in offset order."""
    ids = np.asarray(ids, np.int64)
    n = len(ids)
    sizes = files.lengths[ids] + 16
    slots = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=slots[1:])
    buf = np.empty(int(slots[-1]), np.uint8)
    view = memoryview(buf)
    which = files.locate(ids)
    offsets = files.offsets[ids]
    order = np.lexsort((offsets, which))
    slot_list, size_list, off_list = slots.tolist(), sizes.tolist(), offsets.tolist()
    which_sorted = which[order]
    cuts = np.flatnonzero(np.diff(which_sorted)) + 1
    for group in np.split(order, cuts) if n else []:
        path = files.paths[int(which[group[0]])]
        with builtins.open(path, "rb", buffering=0) as fh:
            for k in group.tolist():
                s, size = slot_list[k], size_list[k]
                if _read_at(fh, view[s : s + size], off_list[k]) != size:
                    _pread_into(fh, view[s : s + size], off_list[k], path)
    frames = _Frames(buf, slots[:-1].copy(), sizes - 16, files.locs(ids))
    _check_frames(files, frames)
    return frames


def _frames_of(batch: RecordBatch, locs: np.ndarray) -> _Frames:
    """Payloads (already CRC-checked by the reader) framed again, so stream reads and
    file reads meet in one form."""
    n = len(batch)
    offsets = batch.offsets - batch.offsets[0]
    data = batch.data[batch.offsets[0] : batch.offsets[-1]]
    out = np.empty(int(offsets[-1]) + 16 * n, np.uint8)
    framing.frame_payloads(np.ascontiguousarray(data), np.ascontiguousarray(offsets), out)
    starts = offsets[:-1] + 16 * np.arange(n, dtype=np.int64)
    return _Frames(out, starts, np.diff(offsets), locs, checked=True)


# --- the dataset ---------------------------------------------------------------------------


def _feature_names(spec: Any) -> list[str]:
    if isinstance(spec, Sequence):
        return [*spec.context, *spec.sequence]
    return list(spec)


def _ragged_features(spec: Any) -> dict[str, bool]:
    """name -> True when the feature decodes to a flat Ragged (paddable), False when to a
    Ragged of Ragged; features that decode to fixed-shape columns are left out."""

    def example(features: Mapping[str, Any]) -> dict[str, bool]:
        return {
            n: True
            for n, f in features.items()
            if isinstance(f, VarLen) or (isinstance(f, Raw) and f.ragged)
        }

    if isinstance(spec, Sequence):
        return example(spec.context) | {
            n: not isinstance(f, VarLen) for n, f in spec.sequence.items()
        }
    return example(spec)


def _load_spec(spec: Any) -> Any:
    if isinstance(spec, (str, os.PathLike)) and not str(spec).lstrip().startswith("{"):
        path = os.fspath(spec)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such spec file: {path}")
        with builtins.open(path, encoding="utf-8") as f:
            return spec_from_json(f.read())
    return as_spec(spec)


class Dataset:
    """Records of TFRecord files, decoded with one spec. Made by `tn.open`; see the module
    docstring for what it does."""

    def __init__(
        self,
        files: _Files,
        spec: Any,
        *,
        start: int = 0,
        stop: int | None = None,
    ):
        self._files = files
        self.spec = spec
        self._start = start
        self._stop = stop
        self._decoder = None

    # -- views ------------------------------------------------------------------------------

    def _view(self, *, spec: Any = None, start: int | None = None, stop: Any = ...) -> Dataset:
        ds = Dataset(
            self._files,
            self.spec if spec is None else spec,
            start=self._start if start is None else start,
            stop=self._stop if stop is ... else stop,
        )
        if spec is None:
            ds._decoder = self._decoder
        return ds

    @property
    def paths(self) -> list[str]:
        """The files, in reading order."""
        return list(self._files.paths)

    @property
    def corruptions(self) -> list[CorruptRecordError]:
        """Damage skipped so far with on_error="skip" / "warn"."""
        return self._files.corruptions

    @property
    def decoder(self):
        if self._decoder is None:
            from .decode import Decoder

            self._decoder = Decoder(self.spec)
        return self._decoder

    def _range(self) -> tuple[int, int]:
        """(start, stop) as global record numbers; needs the index."""
        count = self._files.count
        stop = count if self._stop is None else min(self._stop, count)
        return min(self._start, stop), stop

    def __len__(self) -> int:
        start, stop = self._range()
        return stop - start

    def __repr__(self) -> str:
        files = self._files
        n = f"{format_count(len(self))} records" if files.indexed else "records not yet counted"
        names = ", ".join(_feature_names(self.spec))
        return f"Dataset({len(files.paths)} file{'s' * (len(files.paths) != 1)}, {n}: {names})"

    def select(self, names: str | Iterable[str]) -> Dataset:
        """The same records with only these features (only they are decoded)."""
        names = [names] if isinstance(names, str) else list(names)
        known = _feature_names(self.spec)
        missing = [n for n in names if n not in known]
        if missing:
            raise KeyError(
                f"no feature {missing[0]!r} in the spec; features: {', '.join(map(repr, known))}"
            )
        if isinstance(self.spec, Sequence):
            spec: Any = Sequence(
                {n: f for n, f in self.spec.context.items() if n in names},
                {n: f for n, f in self.spec.sequence.items() if n in names},
            )
        else:
            spec = {n: self.spec[n] for n in names}
        return self._view(spec=spec)

    def take(self, n: int) -> Dataset:
        """The first n records (fewer if there are fewer)."""
        if n < 0:
            raise ValueError(f"take needs n >= 0, not {n}")
        end = self._start + n
        return self._view(stop=end if self._stop is None else min(self._stop, end))

    def shard(self, num_shards: int, index: int) -> Dataset:
        """Shard `index` of `num_shards`: a contiguous run of about len/num_shards records.
        The shards partition the records: each record is in exactly one."""
        if num_shards < 1 or not 0 <= index < num_shards:
            raise ValueError(
                f"shard needs num_shards >= 1 and 0 <= index < num_shards, got "
                f"num_shards={num_shards}, index={index}"
            )
        start, stop = self._range()
        n = stop - start
        return self._view(
            start=start + index * n // num_shards, stop=start + (index + 1) * n // num_shards
        )

    # -- random access ---------------------------------------------------------------------------

    def _decode(self, batch: RecordBatch, threads: int | None = None) -> Batch:
        return self.decoder.decode(batch, threads=threads)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, str):
            raise TypeError(
                f"ds[{index!r}]: index records by number, slice or list; for one feature "
                f"use ds.select([{index!r}])"
            )
        self._files.require_seek("ds[...]")
        if isinstance(index, (int, np.integer)):
            n = len(self)
            i = int(index)
            if not -n <= i < n:
                raise IndexError(f"record {i} out of range for a dataset of {n} records")
            cols = self._read_ids(np.asarray([self._start + i % n], np.int64), f"ds[{i}]")
            return {name: col[0] for name, col in cols.items()}
        if isinstance(index, slice):
            start, stop = self._range()
            a, b, step = index.indices(stop - start)
            if step == 1:
                self._files.require_seek(f"ds[{index.start}:{index.stop}]")
                return self._decode(self._gather_range(start + a, start + max(a, b)))
            return self._read_ids(start + np.arange(a, b, step, dtype=np.int64), "ds[a:b:step]")
        idx = np.asarray(index)
        n = len(self)
        if idx.dtype == bool:
            if idx.shape != (n,):
                raise IndexError(f"boolean index of shape {idx.shape} for {n} records")
            idx = np.flatnonzero(idx)
        elif idx.size == 0:
            idx = np.empty(0, np.int64)
        elif idx.dtype.kind not in "iu" or idx.ndim != 1:
            raise IndexError(
                f"records are picked by an int, a slice or a 1-D list of ints, not {index!r}"
            )
        idx = idx.astype(np.int64)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            bad = int(idx[(idx < -n) | (idx >= n)][0])
            raise IndexError(f"record {bad} out of range for a dataset of {n} records")
        idx = np.where(idx < 0, idx + n, idx)
        return self._read_ids(self._start + idx, "ds[[...]]")

    def _read_ids(self, ids: np.ndarray, what: str) -> Batch:
        self._files.require_seek(what)
        self._files.index()
        return self._decode(self._gather([(_read_records(self._files, ids), None)]))

    def _gather_range(self, a: int, b: int) -> RecordBatch:
        """Records a..b (global numbers) read file piece by piece and gathered."""
        return self._gather([(fr, None) for fr in self._spans(a, b)])

    def _spans(self, a: int, b: int) -> Iterator[_Frames]:
        files = self._files.index()
        while a < b:
            f = int(files.locate(np.asarray([a]))[0])
            end = min(b, int(files.firsts[f + 1]))
            first = int(files.firsts[f])
            if end > a:
                yield _read_span(files, f, a - first, end - first)
            a = max(end, a + (end <= a))

    # -- gathering payloads out of frames ----------------------------------------------------

    def _gather(self, parts: list[tuple[_Frames, np.ndarray | None]]) -> RecordBatch:
        """One batch of payloads from the selected frames of each part, in order, checking
        payload CRCs as they are copied. Damaged records raise, or are dropped (and listed in
        corruptions) with on_error="skip" / "warn"."""
        files = self._files
        picks = []
        for frames, sel in parts:
            sel = np.arange(len(frames)) if sel is None else np.asarray(sel, np.int64)
            picks.append((frames, sel))
        total = sum(int(fr.lengths[s].sum()) for fr, s in picks)
        rows = sum(len(s) for _, s in picks)
        data = np.empty(total, np.uint8)
        offsets = np.empty(rows + 1, np.int64)
        offsets[0] = 0
        locs = np.empty(rows, np.int64)
        row = pos = 0
        for frames, sel in picks:
            while len(sel):
                starts, lengths = frames.starts[sel], frames.lengths[sel]
                k = len(sel)
                size = int(lengths.sum())
                bad = framing.gather_payloads(
                    frames.buf,
                    starts,
                    lengths,
                    data[pos : pos + size],
                    offsets[row : row + k + 1],
                    files.verify_crc and not frames.checked,
                    pos,
                )
                good = k if bad < 0 else bad
                locs[row : row + good] = frames.locs[sel[:good]]
                row += good
                pos = int(offsets[row])
                if bad < 0:
                    break
                self._damaged(frames, int(sel[bad]))
                sel = sel[bad + 1 :]
        return _Batch(data[:pos], offsets[: row + 1], (), locs[:row], files)

    def _damaged(self, frames: _Frames, k: int) -> None:
        start = int(frames.starts[k])
        length = int(frames.lengths[k])
        buf = frames.buf
        stored = int.from_bytes(buf[start + 12 + length : start + 16 + length].tobytes(), "little")
        computed = framing.mask_crc(framing.crc32c(buf[start + 12 : start + 12 + length]))
        reason = f"payload CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})"
        path, record, offset = self._files.where(int(frames.locs[k]))
        error = CorruptRecordError(
            reason, path=path, record=record, offset=offset, hint=SALVAGE_HINT
        )
        if self._files.on_error == "raise":
            raise error
        error.skipped = length + 16
        if not self._files.note(error):
            return  # reported when this record was read before
        if self._files.on_error == "warn":
            warnings.warn(
                f"{reason} at {path} record {record} (byte {format_count(offset)}); skipped "
                f"{format_count(length + 16)} bytes",
                CorruptRecordWarning,
                stacklevel=3,
            )

    # -- record sources ------------------------------------------------------------------------

    def _file_pieces(self) -> list[tuple[int, int, int]]:
        """(file, first, last) record numbers within each file for this view's range."""
        files = self._files.index()
        start, stop = self._range()
        out = []
        for f in range(len(files.paths)):
            lo, hi = int(files.firsts[f]), int(files.firsts[f + 1])
            a, b = max(lo, start), min(hi, stop)
            if a < b:
                out.append((f, a - lo, b - lo))
        return out

    def _whole(self) -> bool:
        """True when this view covers every record (so streams need no index)."""
        return self._start == 0 and self._stop is None

    def _stream_batches(self, batch_size: int) -> Iterator[RecordBatch]:
        """Sequential batches of payloads (any compression), exactly batch_size records
        except the last."""
        files = self._files
        if files.seekable:
            start, stop = self._range()
            spans = (
                self._gather_range(a, min(stop, a + batch_size))
                for a in range(start, stop, batch_size)
            )
            yield from self._full(spans, batch_size)
            return
        if self._whole():
            reader = RecordReader(
                files.paths,
                compression=files.compression,
                verify_crc=files.verify_crc,
                on_error=files.on_error,
            )
            try:
                yield from reader.batches(batch_size)
            finally:
                for c in reader.corruptions:
                    files.note(c)
            return
        parts = (
            part
            for piece in self._file_pieces()
            for part, _ in self._file_parts(*piece, batch_size)
        )
        yield from _rebatch(parts, batch_size)

    def _file_parts(
        self, f: int, a: int, b: int, block: int
    ) -> Iterator[tuple[RecordBatch, np.ndarray]]:
        """Records a..b of compressed file f as (payloads, locations), streamed."""
        files = self._files
        reader = RecordReader(
            files.paths[f],
            compression=files.kinds[f],
            verify_crc=files.verify_crc,
            on_error=files.on_error,
        )
        seen = 0
        try:
            for part in reader.batches(block):
                size = len(part)
                lo, hi = max(a - seen, 0), min(b - seen, size)
                if lo < hi:
                    piece = part if (lo, hi) == (0, size) else part.slice(lo, hi)
                    local = np.arange(seen + lo, seen + hi, dtype=np.int64)
                    yield piece, (f << LOC_BITS) + local
                seen += size
                if seen >= b:
                    break
        finally:
            for c in reader.corruptions:
                files.note(c)

    def _file_frames(self, f: int, a: int, b: int, block: int) -> Iterator[_Frames]:
        """Records a..b of file f as frames, `block` records at a time."""
        files = self._files
        if files.kinds[f] is None:
            b = min(b, len(files.file_index(f)[0]))
            for x in range(a, b, block):
                yield _read_span(files, f, x, min(b, x + block))
            return
        parts = self._file_parts(f, a, b, block)
        try:
            for part, locs in parts:
                yield _frames_of(part, locs)
        finally:
            parts.close()

    def _stream_frames(
        self, pieces: list[tuple[int, int, int]], block: int, cycle: int = 1
    ) -> Iterator[_Frames]:
        """Frames of the pieces, `block` records at a time, taking turns between up to
        `cycle` files (interleaving)."""
        pending = list(pieces)
        active: list[Iterator[_Frames]] = []
        try:
            while pending or active:
                while pending and len(active) < cycle:
                    active.append(self._file_frames(*pending.pop(0), block))
                k = 0
                while k < len(active):
                    item = next(active[k], None)
                    if item is None:
                        active.pop(k)
                        if pending:
                            active.insert(k, self._file_frames(*pending.pop(0), block))
                        continue
                    yield item
                    k += 1
        finally:
            for gen in active:
                gen.close()

    def _global_shuffle(self, batch_size: int, rng: np.random.Generator) -> Iterator[RecordBatch]:
        self._files.require_seek("batches(shuffle=True)")
        start, stop = self._range()
        order = start + rng.permutation(stop - start)
        picked = (
            self._gather([(_read_records(self._files, order[a : a + batch_size]), None)])
            for a in range(0, len(order), batch_size)
        )
        yield from self._full(picked, batch_size)

    def _buffer_shuffle(
        self, batch_size: int, buffer: int, rng: np.random.Generator
    ) -> Iterator[RecordBatch]:
        pieces = self._file_pieces() if (self._files.seekable or not self._whole()) else None
        if pieces is None:  # a whole compressed dataset: no index needed
            files = self._files
            pieces = [(f, 0, 1 << 62) for f in range(len(files.paths))]
        pieces = [pieces[i] for i in rng.permutation(len(pieces))]
        block = max(1, min(batch_size, buffer))
        source = self._stream_frames(pieces, block, cycle=CYCLE_FILES)
        try:
            pool = _ShufflePool(self, source, batch_size, max(buffer, batch_size), rng)
            yield from self._full(iter(pool), batch_size)
        finally:
            source.close()

    def _full(self, batches: Iterator[RecordBatch], batch_size: int) -> Iterator[RecordBatch]:
        """The batches, except that with on_error="skip" / "warn" a batch short of damaged
        records (dropped by _gather) is topped up from the next ones: only the last batch
        may be short, so drop_remainder drops no good records."""
        if self._files.on_error == "raise":
            return batches
        return _rebatch(batches, batch_size)

    def _raw_batches(self, batch_size: int, shuffle: Any, seed: Any) -> Iterator[RecordBatch]:
        if shuffle is False or shuffle is None or shuffle == 0:
            return self._stream_batches(batch_size)
        rng = np.random.default_rng(seed)
        if shuffle is True:
            return self._global_shuffle(batch_size, rng)
        return self._buffer_shuffle(batch_size, int(shuffle), rng)

    # -- batches ---------------------------------------------------------------------------------

    def batches(
        self,
        batch_size: int,
        *,
        shuffle: bool | int = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        pad: bool | Mapping[str, Any] | None = None,
        prefetch: int = 2,
        threads: int | None = None,
    ) -> Iterator[Batch]:
        """Batches of decoded columns ({name: column}), read and decoded ahead in background
        threads (`prefetch` batches deep; 0 reads in the caller's thread).

        shuffle: False (file order), True (a permutation of all records; uncompressed
        files), or N (each batch drawn at random from a buffer of N records, fed from up to
        8 files in turn; any file; holds N records in memory). Deterministic for a given
        seed. drop_remainder drops a final batch shorter than batch_size.
        pad: {"tokens": 128} makes the Ragged column "tokens" a dense [n, 128] array (rows
        cut or filled with 0) plus a column "tokens_length" holding each row's number of
        real items (min(len, 128)); {"tokens": (128, -1)} fills with -1; a length of None,
        or pad=True (every flat Ragged column), pads to the batch's longest row.
        """
        _check_batch_size(batch_size)
        if not isinstance(shuffle, (bool, int, np.integer)) or (
            not isinstance(shuffle, bool) and shuffle < 0
        ):
            raise ValueError(f"shuffle must be False, True or a buffer size >= 0, not {shuffle!r}")
        if prefetch < 0:
            raise ValueError(f"prefetch must be >= 0, not {prefetch}")
        if shuffle is True:
            self._files.require_seek("batches(shuffle=True)")
        padder = _padder(self.spec, pad)
        decode = self._decode

        def finish(raw: RecordBatch) -> Batch:
            cols = decode(raw, threads)
            order = getattr(raw, "order", None)
            if order is not None:
                cols = {name: take_column(col, order) for name, col in cols.items()}
            return padder(cols) if padder else cols

        def generate() -> Iterator[Batch]:
            raw = self._raw_batches(int(batch_size), shuffle, seed)
            if drop_remainder:
                raw = (b for b in raw if len(b) == batch_size)
            yield from _pipeline(raw, finish, prefetch)

        return generate()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Each record as {name: value}, in file order."""
        for cols in self.batches(READ_BATCH):
            values = list(cols.values())
            names = list(cols)
            n = len(values[0]) if values else 0
            for i in range(n):
                yield {name: col[i] for name, col in zip(names, values, strict=True)}

    # -- whole-dataset calls ---------------------------------------------------------------------

    def _empty(self) -> Batch:
        return self._decode(RecordBatch(np.empty(0, np.uint8), np.zeros(1, np.int64)))

    def estimate_nbytes(self) -> tuple[int, int]:
        """(estimated bytes of to_numpy's result, records sampled): exact for fixed-size
        columns; variable ones scaled from a sample of up to 1024 records by payload size."""
        start, stop = self._range()
        n = stop - start
        if n == 0:
            return 0, 0
        k = min(n, SAMPLE_RECORDS)
        if self._files.seekable:
            picks = np.unique(np.linspace(start, stop - 1, k).astype(np.int64))
            sample = self._gather([(_read_records(self._files, picks), None)])
        else:
            sample = next(iter(self.take(k)._stream_batches(k)), None)
        if sample is None or len(sample) == 0:
            return 0, 0
        cols = self._decode(sample)
        payload = int(sample.offsets[-1])
        total_payload = int(self._files.lengths[start:stop].sum())
        est = 0.0
        for col in cols.values():
            if isinstance(col, np.ndarray) and not col.dtype.hasobject:
                est += col.nbytes / len(sample) * n
                continue
            size = _nbytes(col)
            if payload:
                est += size / payload * total_payload
            else:
                est += size / len(sample) * n
        return int(est), len(sample)

    def to_numpy(self, *, max_bytes: int | None = None) -> Batch:
        """Every record decoded into one dict of columns, held in memory.

        First the size is estimated (index + a decoded sample); above max_bytes (default:
        half of the memory available now) it raises tn.MemoryBudgetError naming the
        streaming alternatives, batches() and save().
        """
        estimate, sampled = self.estimate_nbytes()
        available = available_memory()
        budget = max_bytes if max_bytes is not None else (available // 2 if available else None)
        if budget is not None and estimate > budget:
            n = len(self)
            why = (
                f"max_bytes={format_count(budget)}"
                if max_bytes is not None
                else f"half of the {format_size(available)} of memory available"
            )
            error = MemoryBudgetError(
                f"to_numpy() would need about {format_size(estimate)} for "
                f"{format_count(n)} records (estimated from {format_count(sampled)} decoded "
                f"records), over the budget of {format_size(budget)} ({why}). Stream it "
                "instead: `for batch in ds.batches(1024): ...`, or write it to disk with "
                "ds.save('out/') and open that memory-mapped with tn.load('out/'); or pass "
                "a larger max_bytes="
            )
            error.estimate, error.budget = estimate, budget
            raise error
        n = len(self)
        out: dict[str, Any] = {}
        parts: dict[str, list] = {}
        row = 0
        for cols in self.batches(READ_BATCH):
            k = len(next(iter(cols.values()))) if cols else 0
            for name, col in cols.items():
                if isinstance(col, np.ndarray):
                    if name not in out:
                        out[name] = np.empty((n, *col.shape[1:]), col.dtype)
                    elif out[name].shape[1:] != col.shape[1:]:
                        raise TFRecordError(
                            f"feature {name!r} decodes to rows of shape {col.shape[1:]} in one "
                            f"batch and {out[name].shape[1:]} in another; a spec with -1 "
                            "resolves per batch: put the -1 first for a Ragged column"
                        )
                    out[name][row : row + k] = col
                else:
                    parts.setdefault(name, []).append(col)
            row += k
        if row == 0 and not out and not parts:
            return self._empty()
        result = {}
        for name in self._column_order(out, parts):
            if name in out:
                result[name] = out[name][:row]
            else:
                from .columns import concat_columns

                result[name] = concat_columns(parts[name])
        return result

    def _column_order(self, out: dict, parts: dict) -> list[str]:
        names = [n for n in _feature_names(self.spec) if n in out or n in parts]
        return names + [n for n in [*out, *parts] if n not in names]

    def save(
        self,
        out: str | os.PathLike,
        format: str | None = None,
        *,
        progress: bool = True,
        overwrite: bool = False,
        batch_size: int | None = None,
    ) -> str:
        """Write every record to `out` as "npy" (a folder of .npy files), "npz", "hdf5" or
        "zarr" (format from the argument or the extension; no extension: npy). Streams:
        memory stays at a few batches however large the dataset. The output appears only
        when complete. Returns its path; open it with tn.load(out)."""
        from .sinks import ArraySink, output_format

        fmt = output_format(out, format)
        files = self._files
        if batch_size is None:
            batch_size = self._save_batch_size()
        _check_batch_size(batch_size)
        batch_size = int(batch_size)
        total = len(self) if (files.seekable or files.indexed) else None
        sink = ArraySink(out, fmt, spec=self.spec, overwrite=overwrite)
        bar = Progress(f"saving {os.fspath(out)}", total=total, enabled=progress)
        try:
            for cols, raw in self._decoded(batch_size):
                sink.write(cols)
                bar.update(len(raw), int(raw.offsets[-1]))
            if not sink.records and not sink._leaves:
                sink.write(self._empty())
            path = sink.close()
        except BaseException:
            sink.abort()
            raise
        finally:
            bar.close()
        return path

    def _save_batch_size(self) -> int:
        files = self._files
        if not files.seekable:
            return DEFAULT_SAVE_BATCH
        start, stop = self._range()
        if stop <= start:
            return DEFAULT_SAVE_BATCH
        mean = float(files.lengths[start:stop].mean()) + 16
        lo, hi = SAVE_BATCH_RECORDS
        return int(min(hi, max(lo, SAVE_BATCH_BYTES // max(mean, 1))))

    def _decoded(self, batch_size: int, prefetch: int = 2) -> Iterator[tuple[Batch, RecordBatch]]:
        """(columns, raw batch) pairs in file order, read and decoded ahead."""
        return _pipeline(
            self._stream_batches(batch_size), lambda raw: (self._decode(raw), raw), prefetch
        )


def _check_batch_size(batch_size: Any) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise TypeError(f"batch_size must be an int, not {batch_size!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")


def _nbytes(col: Any) -> int:
    if isinstance(col, np.ndarray):
        if col.dtype.hasobject:
            return int(col.size * 8 + sum(len(v) + 33 for v in col.reshape(-1).tolist()))
        return int(col.nbytes)
    if isinstance(col, Ragged):
        return _nbytes(col.values) + int(col.row_splits.nbytes)
    if isinstance(col, BytesColumn):
        return int(col.data.nbytes + col.offsets.nbytes)
    return 0


def _rebatch(parts: Iterable[RecordBatch], batch_size: int) -> Iterator[RecordBatch]:
    """Batches of exactly batch_size records (the last may be short) from parts of any size.
    A part of exactly batch_size with nothing pending passes through untouched; the others
    are cut and joined keeping each row's location (_Batch.locs)."""
    pending: list[RecordBatch] = []
    count = 0
    for part in parts:
        if count or len(part) != batch_size:
            part = _in_order(part)
        while len(part):
            take = min(batch_size - count, len(part))
            pending.append(_slice(part, 0, take) if take < len(part) else part)
            part = _slice(part, take, len(part)) if take < len(part) else _slice(part, 0, 0)
            count += take
            if count == batch_size:
                yield _concat(pending)
                pending, count = [], 0
    if pending:
        yield _concat(pending)


def _in_order(batch: RecordBatch) -> RecordBatch:
    """A shuffle pool's batch (rows grouped by chunk, `order` to apply after decoding) with
    its rows moved into that order, so it can be cut; other batches as they are."""
    order = getattr(batch, "order", None)
    if order is None:
        return batch
    frames = _frames_of(batch, batch.locs)
    lengths = frames.lengths[order]
    data = np.empty(int(lengths.sum()), np.uint8)
    offsets = np.empty(len(order) + 1, np.int64)
    framing.gather_payloads(frames.buf, frames.starts[order], lengths, data, offsets, False, 0)
    return _Batch(data, offsets, (), frames.locs[order], batch.files)


def _slice(batch: RecordBatch, start: int, stop: int) -> RecordBatch:
    part = batch.slice(start, stop)
    if isinstance(batch, _Batch) and batch.locs is not None:
        return _Batch(part.data, part.offsets, part.origins, batch.locs[start:stop], batch.files)
    return part


def _concat(batches: list[RecordBatch]) -> RecordBatch:
    joined = RecordBatch.concat(batches)
    if len(batches) < 2 or not all(isinstance(b, _Batch) and b.locs is not None for b in batches):
        return joined
    locs = np.concatenate([b.locs for b in batches])
    return _Batch(joined.data, joined.offsets, joined.origins, locs, batches[0].files)


class _ShufflePool:
    """A shuffle buffer over frames: it holds `size` records (as (chunk, frame) pairs into the
    chunks read so far); each batch takes batch_size of them at random and their slots are
    refilled from the source. A chunk is dropped when none of its records remain; when the
    chunks held grow past twice the bytes of the records in the pool, the pool is compacted
    into one new chunk, so memory stays near `size` records."""

    def __init__(self, ds: Dataset, source: Iterator[_Frames], batch_size: int, size: int, rng):
        self.ds, self.source = ds, source
        self.batch_size, self.size, self.rng = batch_size, size, rng
        self.chunks: dict[int, _Frames] = {}
        self.live: dict[int, int] = {}
        self.next_id = 0
        self.pool_c = np.empty(0, np.int64)
        self.pool_r = np.empty(0, np.int64)
        self.held = 0  # bytes of the chunks held
        self.pooled = 0  # bytes of the frames in the pool
        self.exhausted = False

    def _add(self, frames: _Frames) -> tuple[np.ndarray, np.ndarray]:
        cid = self.next_id
        self.next_id += 1
        self.chunks[cid] = frames
        self.live[cid] = len(frames)
        self.held += frames.nbytes
        self.pooled += int(frames.lengths.sum()) + 16 * len(frames)
        return np.full(len(frames), cid, np.int64), np.arange(len(frames), dtype=np.int64)

    def _pull(self, need: int) -> tuple[np.ndarray, np.ndarray]:
        cs, rs, got = [], [], 0
        while got < need and not self.exhausted:
            frames = next(self.source, None)
            if frames is None:
                self.exhausted = True
            elif len(frames):
                c, r = self._add(frames)
                cs.append(c)
                rs.append(r)
                got += len(frames)
        if not cs:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return np.concatenate(cs), np.concatenate(rs)

    def __iter__(self) -> Iterator[RecordBatch]:
        b = self.batch_size
        self.pool_c, self.pool_r = self._pull(self.size)
        while not self.exhausted:
            pos = self.rng.choice(len(self.pool_c), size=b, replace=False)
            out_c, out_r = self.pool_c[pos], self.pool_r[pos]
            new_c, new_r = self._pull(b)
            k = min(b, len(new_c))
            self.pool_c[pos[:k]] = new_c[:k]
            self.pool_r[pos[:k]] = new_r[:k]
            if k < b:
                keep = np.ones(len(self.pool_c), bool)
                keep[pos[k:]] = False
                self.pool_c, self.pool_r = self.pool_c[keep], self.pool_r[keep]
            if len(new_c) > k:
                self.pool_c = np.concatenate([self.pool_c, new_c[k:]])
                self.pool_r = np.concatenate([self.pool_r, new_r[k:]])
            yield self._emit(out_c, out_r)
            if len(self.chunks) > 4 and self.held > 2 * self.pooled + COMPACT_SLACK:
                self._compact()
        order = self.rng.permutation(len(self.pool_c))
        for a in range(0, len(order), b):
            sel = order[a : a + b]
            yield self._emit(self.pool_c[sel], self.pool_r[sel])
        self.chunks.clear()

    def _groups(self, cs: np.ndarray, rs: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """(chunk, its rows) for the records (cs, rs), chunks in random order."""
        ids, counts = np.unique(cs, return_counts=True)
        order = np.argsort(cs, kind="stable")
        groups = np.split(rs[order], np.cumsum(counts)[:-1])
        turn = self.rng.permutation(len(ids))
        return [(int(ids[t]), groups[t]) for t in turn]

    def _emit(self, cs: np.ndarray, rs: np.ndarray) -> RecordBatch:
        groups = self._groups(cs, rs)
        batch = self.ds._gather([(self.chunks[cid], rows) for cid, rows in groups])
        for cid, rows in groups:
            frames = self.chunks[cid]
            self.pooled -= int(frames.lengths[rows].sum()) + 16 * len(rows)
            self.live[cid] -= len(rows)
            if self.live[cid] == 0:
                self.held -= frames.nbytes
                del self.live[cid], self.chunks[cid]
        # Gathering groups rows by chunk; a fresh permutation makes the order random too.
        return dataclasses.replace(batch, order=self.rng.permutation(len(batch)))

    def _compact(self) -> None:
        groups = self._groups(self.pool_c, self.pool_r)
        batch = self.ds._gather([(self.chunks[cid], rows) for cid, rows in groups])
        self.chunks.clear()
        self.live.clear()
        self.held = self.pooled = 0
        self.pool_c, self.pool_r = self._add(_frames_of(batch, batch.locs))


# --- padding -------------------------------------------------------------------------------------


def _padder(spec: Any, pad: Any) -> Callable[[Batch], Batch] | None:
    if pad is None or pad is False:
        return None
    flat = _ragged_features(spec)
    if pad is True:
        wanted = {name: (None, 0) for name, ok in flat.items() if ok}
    elif isinstance(pad, Mapping):
        wanted = {}
        for name, how in pad.items():
            if name not in _feature_names(spec):
                raise KeyError(
                    f"pad names {name!r}, which is not in the spec; features: "
                    f"{', '.join(map(repr, _feature_names(spec)))}"
                )
            if name not in flat:
                raise ValueError(
                    f"pad: feature {name!r} decodes to a fixed-shape array already; pad applies "
                    "to variable-length (Ragged) features"
                )
            if not flat[name]:
                raise ValueError(
                    f"pad: feature {name!r} decodes to rows of rows (a Ragged of Ragged); "
                    "pad its inner rows yourself with tn.Ragged.to_padded"
                )
            if isinstance(how, tuple):
                if len(how) != 2:
                    raise ValueError(f"pad[{name!r}] must be a length or (length, value)")
                length, value = how
            else:
                length, value = how, 0
            if length is not None and (not isinstance(length, (int, np.integer)) or length < 0):
                raise ValueError(f"pad[{name!r}]: the length must be an int >= 0 or None")
            wanted[name] = (length, value)
    else:
        raise TypeError(f"pad must be None, True or a dict of name -> length, not {pad!r}")
    names = set(_feature_names(spec))
    for name in wanted:
        if name + LENGTH_SUFFIX in names:
            raise ValueError(
                f"pad: the lengths column {name + LENGTH_SUFFIX!r} would replace the feature "
                "of that name; select it away or rename one of them"
            )

    def apply(cols: Batch) -> Batch:
        out: dict[str, Any] = {}
        for name, col in cols.items():
            if name in wanted and isinstance(col, Ragged):
                length, value = wanted[name]
                out[name] = col.to_padded(length, value)
                lens = col.lengths
                out[name + LENGTH_SUFFIX] = lens if length is None else np.minimum(lens, length)
            else:
                out[name] = col
        return out

    return apply


# --- running ahead in threads -------------------------------------------------------------------


def _ahead(items: Iterator, depth: int, fn: Callable | None = None) -> Iterator:
    """Iterate `items` (applying fn) in a background thread, at most `depth` results ahead.
    Exceptions surface in the caller; closing the returned generator stops the thread and
    closes `items`."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: tuple) -> bool:
        while not stop.is_set():
            try:
                q.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in items:
                if not put((_ITEM, fn(item) if fn is not None else item)):
                    return
            put((_DONE, None))
        except BaseException as e:  # handed to the consumer, raised there
            put((_ERROR, e))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    def consume() -> Iterator:
        thread = threading.Thread(target=run, name="tfrecnp-prefetch", daemon=True)
        thread.start()
        try:
            while True:
                kind, value = q.get()
                if kind == _DONE:
                    return
                if kind == _ERROR:
                    raise value
                yield value
        finally:
            stop.set()
            thread.join(timeout=5)

    return consume()


def _pipeline(raw: Iterator, fn: Callable, prefetch: int) -> Iterator:
    """fn over raw items: reading in one thread, fn in another, each `prefetch` ahead."""
    if prefetch == 0:
        return map(fn, raw)
    return _ahead(_ahead(raw, prefetch), prefetch, fn)


# --- memory ---------------------------------------------------------------------------------------


def available_memory() -> int | None:
    """Bytes of memory available to this process now: MemAvailable, lowered to the cgroup's
    remaining limit when there is one; None when the system does not say."""
    found = None
    try:
        with builtins.open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if found is None:
        try:
            found = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            found = None
    try:
        with builtins.open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with builtins.open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read().strip())
        if limit != "max":
            room = max(0, int(limit) - used)
            found = room if found is None else min(found, room)
    except (OSError, ValueError):
        pass
    return found


# --- entry points ---------------------------------------------------------------------------------


def open(
    paths: Paths,
    spec: Any = None,
    *,
    compression: str | None = "auto",
    verify_crc: bool = True,
    on_error: str = "raise",
) -> Dataset:
    """Open TFRecord files as a Dataset (nothing is read until asked for).

    paths: a file, a glob, a directory or a list of them. spec: a dict of features, a
    tn.Sequence, TensorFlow feature specs, spec JSON or a spec.json path; None infers one
    from a sample. compression: "auto" (per file, from its first bytes), None, "GZIP",
    "ZLIB". verify_crc=False skips payload CRCs. on_error="skip" / "warn" skips damaged
    records (listed in ds.corruptions) instead of raising.
    """
    if on_error not in ("raise", "skip", "warn"):
        raise ValueError(f'on_error must be "raise", "skip" or "warn", not {on_error!r}')
    if _is_array_source(paths):
        raise TFRecordError(
            f"{os.fspath(paths)} holds NumPy arrays, not TFRecords: tn.open reads TFRecord "
            "files. Read what Dataset.save wrote with tn.load(path); write TFRecords from "
            "arrays with tn.convert(path, 'out.tfrecord')"
        )
    files = _Files(expand_paths(paths), compression, verify_crc, on_error)
    if spec is None:
        try:
            from .infer import infer_spec
        except ImportError:
            raise NotImplementedError(
                "spec inference is not available yet; pass spec={...} (or --spec spec.json)"
            ) from None
        spec = infer_spec(files.paths, compression=compression)
    return Dataset(files, _load_spec(spec))


def _is_array_source(src: Any) -> bool:
    if not isinstance(src, (str, os.PathLike)):
        return False
    from .arrays import array_format

    return os.path.exists(src) and array_format(src) is not None


def convert(src: Paths, dst: str | os.PathLike, **options: Any) -> Any:
    """Convert between TFRecord files and arrays, choosing the direction from `src`.

    TFRecord files (a path, glob, directory or list) -> arrays at dst: the same as
    ``tn.open(src, spec, compression=, verify_crc=, on_error=).select(select).save(dst,
    format=, progress=, overwrite=, batch_size=)``; returns the output path.
    An array file (.npy, .npz, HDF5, Zarr, a folder of .npy) -> TFRecord files at dst:
    tfrecnp.writer.convert with its options (feature, key, encoding, compression,
    records_per_shard, index, progress, verify); returns what it returns.
    """
    if _is_array_source(src):
        from .writer import convert as convert_arrays

        return convert_arrays(src, dst, **options)
    open_options = {
        k: options.pop(k) for k in ("spec", "compression", "verify_crc", "on_error") if k in options
    }
    select = options.pop("select", None)
    ds = open(src, **open_options)
    if select is not None:
        ds = ds.select(select)
    return ds.save(dst, **options)
