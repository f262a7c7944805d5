"""A TFRecord dataset opened like a dict of NumPy columns: `tn.open(paths) -> Dataset`.

A Dataset is a view of a range of records of some files, decoded with one spec:

- ``len(ds)`` counts records from an index of frame offsets: a header-only scan that seeks
  over payloads, or the files' ``.idx`` sidecars (compressed files are decompressed once).
- ``ds[i]`` is one record (``{name: value}``); ``ds[a:b]``, ``ds[[i, j, k]]`` and
  ``ds.__getitems__([i, j, k])`` (PyTorch's batched fetch) are batches. They read just those
  records with positioned reads, so they need uncompressed files (`RandomAccessError`
  otherwise).
- ``ds.batches(n)`` serves batches as views of decoded blocks (`tfrecnp.data.blocks`): a
  background thread reads and decodes about 4 MiB at a time, ``prefetch`` blocks ahead, so
  memory is bounded by the block size times prefetch, never by the dataset. ``shuffle=True``
  permutes every record (uncompressed files); ``shuffle=N`` draws records through a pool of
  N fed from up to 8 files in turn (any file). Both are deterministic for a given seed.
- ``select``, ``shard`` and ``take`` return narrower views; ``to_numpy`` decodes everything
  after checking the size against a memory budget; ``save`` streams everything into .npy,
  .npz, HDF5 or Zarr (`tfrecnp.arrays.sinks`).

A pass over a whole dataset streams its files and needs no index; views and reads by
position use the index. Payload CRCs are checked as records are copied out of their frames,
and errors name the file, the record's number in it and its byte offset.
"""

from __future__ import annotations

import builtins
import itertools
import os
from collections import abc
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from .._util.memory import available_memory
from .._util.progress import Progress
from .._util.text import format_count, format_size
from .._util.threads import run_ahead
from ..arrays.sinks import ArraySink, output_format
from ..errors import CorruptRecordError, MemoryBudgetError, TFRecordError
from ..example.columns import BytesColumn, Column, Ragged, concat_columns
from ..example.decode import Decoder, dense_when_uniform
from ..example.infer import infer_spec
from ..example.spec import Sequence, as_spec, spec_from_json
from ..format.paths import Paths, expand_paths
from ..format.reader import RecordBatch, RecordReader
from .blocks import Block, block_records, serve, shuffle_records
from .files import (
    LOC_BITS,
    Files,
    RandomAccessError,
    read_record,
    read_rows,
    read_span,
)
from .gather import concat_batches, gather, gather_range, rebatch
from .padding import feature_names, padder

__all__ = ["Dataset", "RandomAccessError", "is_array_source", "open"]

Batch = dict[str, Column]

SAMPLE_RECORDS = 1024  # records decoded to estimate to_numpy's size ...
SAMPLE_BYTES = 32 << 20  # ... or fewer, to stay within about this many payload bytes
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
            frames = read_record(self._files, self._start + i % n)
            cols = self._decode(gather(self._files, [(frames, None)]))
            return {name: col[0] for name, col in cols.items()}
        if isinstance(index, slice):
            start, stop = self._range()
            a, b, step = index.indices(stop - start)
            if step == 1:
                self._files.require_seek(f"ds[{index.start}:{index.stop}]")
                raw = gather_range(self._files, start + a, start + max(a, b))
                return self._as_batch(self._decode(raw))
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

    def _as_batch(self, cols: Batch) -> Batch:
        """A decoded block as a user's batch: tn.Raw columns of one size per record dense."""
        dense = dense_when_uniform(self.spec)
        return dense(cols) if dense else cols

    def __getitems__(self, indices: abc.Sequence[int]) -> Records:
        """The records at these positions, read and decoded in one call: the batched fetch
        PyTorch's DataLoader uses on map-style datasets. Returns a list of records (each
        {name: value}) backed by one decoded batch, kept whole in `.columns`."""
        return Records(self[np.asarray(indices, np.int64)])

    def _read_ids(self, ids: np.ndarray, what: str) -> Batch:
        self._files.require_seek(what)
        self._files.index()
        return self._as_batch(
            self._decode(gather(self._files, [(read_rows(self._files, ids), None)]))
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
        if self._whole():  # a pass over everything needs no index: stream the files
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
        if files.seekable:
            start, stop = self._range()
            spans = (
                gather_range(self._files, a, min(stop, a + batch_size))
                for a in range(start, stop, batch_size)
            )
            yield from self._full(spans, batch_size)
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

    def _global_shuffle(self, block: int, rng: np.random.Generator) -> Iterator[RecordBatch]:
        """Blocks of a permutation of every record: each block's records are read in file
        order (neighbours in one read) and gathered into the permuted order."""
        self._files.require_seek("batches(shuffle=True)")
        start, stop = self._range()
        order = start + rng.permutation(stop - start)
        picked = (
            gather(self._files, [(read_rows(self._files, order[a : a + block]), None)])
            for a in range(0, len(order), block)
        )
        yield from self._full(picked, block)

    def _file_records(self, f: int, a: int, b: int | None, chunk: int) -> Iterator[RecordBatch]:
        """Records a..b of file f (b=None: to its end, read as a stream without an index),
        `chunk` records at a time."""
        files = self._files
        if files.kinds[f] is None and b is not None:
            for x in range(a, b, chunk):
                yield gather(files, [(read_span(files, f, x, min(b, x + chunk)), None)])
            return
        parts = self._file_parts(f, a, 1 << 62 if b is None else b, chunk)
        try:
            for part, _ in parts:
                yield part
        finally:
            parts.close()

    def _interleaved(self, block: int, rng: np.random.Generator) -> Iterator[RecordBatch]:
        """Blocks that each hold a chunk of every file being read (up to CYCLE_FILES at a
        time, the files in a random order), so that a shuffle buffer mixes records across
        files, not only within one."""
        if self._whole():
            pieces: list[tuple[int, int, int | None]] = [
                (f, 0, None) for f in range(len(self._files.paths))
            ]
        else:
            pieces = list(self._file_pieces())
        pending = [pieces[i] for i in rng.permutation(len(pieces))]
        chunk = max(1, block // min(CYCLE_FILES, len(pending)))  # one file: whole blocks
        active: list[Iterator[RecordBatch]] = []
        parts: list[RecordBatch] = []
        have = 0
        try:
            while pending or active:
                while pending and len(active) < CYCLE_FILES:
                    active.append(self._file_records(*pending.pop(0), chunk))
                for source in list(active):
                    part = next(source, None)
                    if part is None:
                        active.remove(source)
                        continue
                    parts.append(part)
                    have += len(part)
                    if have >= block:
                        yield concat_batches(parts)
                        parts, have = [], 0
            if parts:
                yield concat_batches(parts)
        finally:
            for source in active:
                source.close()

    def _full(self, batches: Iterator[RecordBatch], batch_size: int) -> Iterator[RecordBatch]:
        """The batches, except that with on_error="skip" / "warn" a batch short of damaged
        records (dropped by gather) is topped up from the next ones: only the last batch
        may be short, so drop_remainder drops no good records."""
        if self._files.on_error == "raise":
            return batches
        return rebatch(batches, batch_size)

    def _mean_record_bytes(self) -> float:
        """Mean frame size: from the index when there is one, else from the first records."""
        files = self._files
        if files.indexed or not self._whole():
            start, stop = self._range()
            return float(files.lengths[start:stop].mean()) + 16 if stop > start else 16.0
        reader = RecordReader(files.paths[0], compression=files.kinds[0], on_error="skip")
        sizes = [len(r) for r in itertools.islice(reader, 16)]  # one record at a time
        return sum(sizes) / len(sizes) + 16 if sizes else 16.0

    def _blocks(
        self,
        block: int,
        *,
        shuffle: bool | int = False,
        seed: int | None = None,
        threads: int | None = None,
        prefetch: int = 2,
        then: Callable[..., Batch] | None = None,
    ) -> Iterator[Block]:
        """Decoded blocks of `block` records (the last may be short), read, decoded, shuffled
        and finished by `then` in a background thread, `prefetch` blocks ahead (0: in the
        caller's thread)."""
        rng = np.random.default_rng(seed)
        decode = self._decode

        def produce() -> Iterator[Block]:
            if shuffle is True:
                raw = self._global_shuffle(block, rng)
            elif shuffle:
                raw = self._interleaved(block, rng)
            else:
                raw = self._stream_batches(block)
            try:
                batches: Iterable[RecordBatch] = raw
                if shuffle is not True and shuffle:  # shuffle payloads, then decode
                    batches = shuffle_records(raw, int(shuffle), rng)
                blocks = (
                    Block(decode(r, threads), len(r), int(r.offsets[-1]), r.locator())
                    for r in batches
                )
                for b in blocks:
                    yield b if then is None else Block(then(b.cols, b.where), b.n, b.nbytes)
            finally:
                raw.close()

        return run_ahead(produce(), prefetch) if prefetch else produce()

    # -- batches ---------------------------------------------------------------------------------

    def batches(
        self,
        batch_size: int,
        *,
        shuffle: bool | int = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        pad: bool | Mapping[str, Any] | None = None,
        truncate: bool = False,
        prefetch: int = 2,
        threads: int | None = None,
    ) -> Iterator[Batch]:
        """Batches of decoded columns ({name: column}).

        Records are read and decoded in blocks of about 4 MiB (a whole number of batches)
        by a background thread, `prefetch` blocks ahead (0: in the caller's thread); each
        batch is a view into a decoded block, so small batches cost little more than large
        ones. threads: decoding threads per block (default: one per core).

        shuffle: False (file order), True (a permutation of all records; uncompressed
        files), or N (records drawn at random through a buffer of N records, fed from up to
        8 files in turn; any file; holds N records plus a block in memory). Deterministic
        for a given seed. drop_remainder drops a final batch shorter than batch_size.
        pad: {"tokens": 128} makes the Ragged column "tokens" a dense [n, 128] array (rows
        cut or filled with 0) plus a column "tokens_length" holding each row's number of
        real items (min(len, 128)); {"tokens": (128, -1)} fills with -1; a length of None,
        or pad=True (every flat Ragged column), pads to the batch's longest row. A row
        longer than its pad length raises tn.SchemaError naming the record (as TensorFlow
        does), unless truncate=True cuts it.
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
        shuffle = shuffle if isinstance(shuffle, bool) else int(shuffle)
        pad_rows, per_block = padder(self.spec, pad, truncate=truncate)
        batch_size = int(batch_size)
        steps = [f for f in (None if per_block else pad_rows, dense_when_uniform(self.spec)) if f]

        def finish(cols: Batch) -> Batch:
            for step in steps:
                cols = step(cols)
            return cols

        def generate() -> Iterator[Batch]:
            block = block_records(batch_size, self._mean_record_bytes())
            blocks = self._blocks(
                block,
                shuffle=shuffle,
                seed=seed,
                threads=threads,
                prefetch=prefetch,
                then=pad_rows if per_block else None,
            )
            yield from serve(
                blocks, batch_size, drop_remainder=drop_remainder, finish=finish if steps else None
            )

        return generate()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Each record as {name: value}, in file order."""
        block = block_records(1, self._mean_record_bytes())
        for b in self._blocks(block):
            names = list(b.cols)
            rows = [_row_values(col) for col in b.cols.values()]
            for values in zip(*rows, strict=True):
                yield dict(zip(names, values, strict=True))

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
        k = min(n, SAMPLE_RECORDS, max(1, int(SAMPLE_BYTES // self._mean_record_bytes())))
        if self._files.seekable:
            picks = np.unique(np.linspace(start, stop - 1, k).astype(np.int64))
            sample = gather(self._files, [(read_rows(self._files, picks), None)])
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
        for block in self._blocks(block_records(1, self._mean_record_bytes())):
            k = block.n
            for name, col in block.cols.items():
                if isinstance(col, np.ndarray):
                    if name not in out:
                        out[name] = np.empty((n, *col.shape[1:]), col.dtype)
                    elif out[name].shape[1:] != col.shape[1:]:
                        raise TFRecordError(
                            f"feature {name!r} decodes to rows of shape {col.shape[1:]} in one "
                            f"block and {out[name].shape[1:]} in another; a spec with -1 "
                            "resolves per block: put the -1 first for a Ragged column"
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
        return self._as_batch(result)

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
        records are read, decoded and appended a block of about 4 MiB at a time (or
        `batch_size` records), so memory stays at a few blocks however large the dataset.
        The output appears only when complete. Returns its path; open it with tn.load(out)."""
        fmt = output_format(out, format)
        files = self._files
        if batch_size is not None:
            _check_batch_size(batch_size)
        total = len(self) if files.indexed or not self._whole() else None
        size = sum(os.path.getsize(p) for p in files.paths) if files.seekable else None
        sink = ArraySink(out, fmt, spec=self.spec, overwrite=overwrite)
        bar = Progress(f"saving {os.fspath(out)}", total=total, total_bytes=size, enabled=progress)
        try:
            block = int(batch_size or block_records(1, self._mean_record_bytes()))
            for b in self._blocks(block):
                sink.write(b.cols)
                bar.update(b.n, b.nbytes + 16 * b.n)  # frames, as the files' sizes count
            if not sink.records and not sink._leaves:
                sink.write(self._empty())
            path = sink.close()
        except BaseException:
            sink.abort()
            raise
        finally:
            bar.close()
        return path


class Records(abc.Sequence):
    """Records of one decoded batch as a list of {name: value} (made on access), with the
    batch itself in `.columns` for code that wants whole columns."""

    def __init__(self, columns: Batch):
        self.columns = columns
        self._n = len(next(iter(columns.values()))) if columns else 0

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self._n))]
        return {name: col[k] for name, col in self.columns.items()}

    def __repr__(self) -> str:
        return f"Records({self._n} records: {', '.join(self.columns)})"


def _row_values(col: Any) -> list:
    """A column's rows as a list, for iterating records: NumPy scalars and row views for
    arrays, bytes for bytes columns, value views for flat Ragged, per-row values else."""
    if isinstance(col, np.ndarray):
        return list(col)
    if isinstance(col, BytesColumn):
        return col.to_list()
    if isinstance(col, Ragged) and isinstance(col.values, np.ndarray):
        values, splits = col.values, col.row_splits.tolist()
        return [values[a:b] for a, b in itertools.pairwise(splits)]
    return list(col)


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
