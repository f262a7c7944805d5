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
  .npz, HDF5 or Zarr (`tfrecnp.arrays.sinks`).

Records stay in their TFRecord frames until a batch is formed: a batch is gathered from
frame buffers by the compiled core, which checks each payload's CRC in the same pass as the
copy. Errors name the file, the record's number in it and its byte offset.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from .._util.memory import available_memory
from .._util.progress import Progress
from .._util.text import format_count, format_size
from .._util.threads import pipeline
from ..arrays.sinks import ArraySink, output_format
from ..errors import CorruptRecordError, MemoryBudgetError, TFRecordError
from ..example.columns import BytesColumn, Column, Ragged, concat_columns, take_column
from ..example.decode import Decoder
from ..example.infer import infer_spec
from ..example.spec import Sequence, as_spec, spec_from_json
from ..format.paths import Paths, expand_paths
from ..format.reader import RecordBatch, RecordReader
from .files import LOC_BITS, Files, Frames, RandomAccessError, frames_of, read_records, read_span
from .gather import gather, gather_range, rebatch
from .padding import feature_names, padder
from .shuffle import ShufflePool

__all__ = ["Dataset", "RandomAccessError", "is_array_source", "open"]

Batch = dict[str, Column]

SAMPLE_RECORDS = 1024  # records decoded to estimate to_numpy's size
SAVE_BATCH_BYTES = 8 << 20  # save() reads about this many payload bytes per batch
SAVE_BATCH_RECORDS = (256, 32768)
DEFAULT_SAVE_BATCH = 4096
READ_BATCH = 4096  # iteration and to_numpy read this many records per batch
CYCLE_FILES = 8  # shuffle=N reads from up to this many files in turn


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
        files: Files,
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

    def close(self) -> None:
        """Close the file handles kept for reads by position (the next read reopens them).
        A Dataset pickles without them, and after a fork reopens its own."""
        self._files.close()

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        files = self._files
        n = f"{format_count(len(self))} records" if files.indexed else "records not yet counted"
        names = ", ".join(feature_names(self.spec))
        return f"Dataset({len(files.paths)} file{'s' * (len(files.paths) != 1)}, {n}: {names})"

    def select(self, names: str | Iterable[str]) -> Dataset:
        """The same records with only these features (only they are decoded)."""
        names = [names] if isinstance(names, str) else list(names)
        known = feature_names(self.spec)
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
                return self._decode(gather_range(self._files, start + a, start + max(a, b)))
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
        return self._decode(gather(self._files, [(read_records(self._files, ids), None)]))

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
                gather_range(self._files, a, min(stop, a + batch_size))
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
        yield from rebatch(parts, batch_size)

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

    def _file_frames(self, f: int, a: int, b: int, block: int) -> Iterator[Frames]:
        """Records a..b of file f as frames, `block` records at a time."""
        files = self._files
        if files.kinds[f] is None:
            b = min(b, len(files.file_index(f)[0]))
            for x in range(a, b, block):
                yield read_span(files, f, x, min(b, x + block))
            return
        parts = self._file_parts(f, a, b, block)
        try:
            for part, locs in parts:
                yield frames_of(part, locs)
        finally:
            parts.close()

    def _stream_frames(
        self, pieces: list[tuple[int, int, int]], block: int, cycle: int = 1
    ) -> Iterator[Frames]:
        """Frames of the pieces, `block` records at a time, taking turns between up to
        `cycle` files (interleaving)."""
        pending = list(pieces)
        active: list[Iterator[Frames]] = []
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
            gather(self._files, [(read_records(self._files, order[a : a + batch_size]), None)])
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
            pool = ShufflePool(self._files, source, batch_size, max(buffer, batch_size), rng)
            yield from self._full(iter(pool), batch_size)
        finally:
            source.close()

    def _full(self, batches: Iterator[RecordBatch], batch_size: int) -> Iterator[RecordBatch]:
        """The batches, except that with on_error="skip" / "warn" a batch short of damaged
        records (dropped by _gather) is topped up from the next ones: only the last batch
        may be short, so drop_remainder drops no good records."""
        if self._files.on_error == "raise":
            return batches
        return rebatch(batches, batch_size)

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
        pad_batch = padder(self.spec, pad)
        decode = self._decode

        def finish(raw: RecordBatch) -> Batch:
            cols = decode(raw, threads)
            order = getattr(raw, "order", None)
            if order is not None:
                cols = {name: take_column(col, order) for name, col in cols.items()}
            return pad_batch(cols) if pad_batch else cols

        def generate() -> Iterator[Batch]:
            raw = self._raw_batches(int(batch_size), shuffle, seed)
            if drop_remainder:
                raw = (b for b in raw if len(b) == batch_size)
            yield from pipeline(raw, finish, prefetch)

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
            sample = gather(self._files, [(read_records(self._files, picks), None)])
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
                result[name] = concat_columns(parts[name])
        return result

    def _column_order(self, out: dict, parts: dict) -> list[str]:
        names = [n for n in feature_names(self.spec) if n in out or n in parts]
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
        return pipeline(
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
    if is_array_source(paths):
        raise TFRecordError(
            f"{os.fspath(paths)} holds NumPy arrays, not TFRecords: tn.open reads TFRecord "
            "files. Read what Dataset.save wrote with tn.load(path); write TFRecords from "
            "arrays with tn.convert(path, 'out.tfrecord')"
        )
    files = Files(expand_paths(paths), compression, verify_crc, on_error)
    if spec is None:
        spec = infer_spec(files.paths, compression=compression)
    return Dataset(files, _load_spec(spec))


def is_array_source(src: Any) -> bool:
    if not isinstance(src, (str, os.PathLike)):
        return False
    from ..arrays.sources import array_format

    return os.path.exists(src) and array_format(src) is not None
