"""ArrayRecord files as a Dataset source: the records of `format.arrayrecord`'s chunks,
decoded by the one Example decoder, on the `Source` contract.

Every record is a serialized tf.train.Example (or SequenceExample), as in a TFRecord shard;
the footers give each file's chunks and their record counts, so `len`, ``ds[i]`` and every
shuffle need no pass. Record i of a file lies in chunk ``i // group_size``; a chunk is
read with its hashes checked and decompressed whole, so:

- a pass in file order (and ``shuffle=N``, whose pieces are runs of chunks in random order)
  reads runs of chunks of about a block's records with one positioned read, and
  decompresses each chunk once, in a thread of its own while another decodes; a chunk of
  more records than a block (group_size 65 536) is decompressed piece by piece as its
  records are served, so that its decode starts before its last byte is out;
- reads by position (``ds[i]``, ``ds[list]``, ``shuffle=True``) take chunks from a cache
  of decompressed chunks (CACHE_BYTES, least recently used first out), so records of one
  big chunk (group_size 65 536) read one after another decompress it once, and a
  permutation decompresses each chunk once while the cache holds the dataset's chunks.

A damaged chunk raises `CorruptRecordError` naming the file, the chunk's byte offset and
its records; with on_error="skip" / "warn" its records are left out and listed in
`corruptions`.
"""

from __future__ import annotations

import bisect
import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .._util import fs
from .._util.text import format_count
from .._util.threads import CPUS, close_iterator, pipeline
from ..errors import CorruptRecordError
from ..example.decode import Decoder
from ..example.infer import infer_spec_of
from ..example.padding import feature_names
from ..format.arrayrecord import ArrayRecordFile, is_array_record_source, list_array_record
from ..format.damage import DamagePolicy
from ..format.payloads import LOC_BITS, Origins, RecordBatch
from .blocks import Block, shuffle_blocks
from .dataset import Batch, Dataset, column_nbytes
from .source import Shuffle, Source

__all__ = [
    "ArrayRecordDataset",
    "ArrayRecordFiles",
    "ArrayRecordSource",
    "is_array_record_source",
    "list_array_record",
    "open_array_record",
]

CACHE_BYTES = 256 << 20  # decompressed chunks kept for reads by position ...
CACHE_MIN_RECORDS = 64  # ... of at least these many records (a small one is read anew)
STREAM_BLOCKS = 1  # a chunk of more blocks than this is decompressed as it is served ...
FIRST_PIECE = 2048  # ... a pass's first piece of these many records (then doubling)
SAMPLE_RECORDS = 1024  # records sampled to infer a spec and to size records
SAMPLE_BYTES = 32 << 20
MAX_SAMPLED_FILES = 32


class ArrayRecordFiles:
    """ArrayRecord files as one run of records: each file's footer read once (in threads),
    every chunk numbered globally, a cache of decompressed chunks, the damage policy."""

    def __init__(self, paths: list[Any], on_error: str = "raise", verify: bool = True):
        self.paths = [str(p) for p in paths]
        self.files = [ArrayRecordFile(p) for p in paths]
        self.verify = verify
        self.damage = DamagePolicy(on_error)
        if len(self.files) > 1:
            with ThreadPoolExecutor(min(16, len(self.files))) as pool:
                footers = list(pool.map(lambda f: f.footer, self.files))
        else:
            footers = [f.footer for f in self.files]
        counts = np.array([f.records for f in footers], np.int64)
        self.file_starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        n = [len(f.offsets) for f in footers]
        self.chunk_file = np.repeat(np.arange(len(footers), dtype=np.int64), n)
        self.chunk_local = np.concatenate([np.arange(k, dtype=np.int64) for k in n] or [[]])
        firsts = [f.firsts[:-1] + self.file_starts[k] for k, f in enumerate(footers)]
        self.chunk_firsts = np.append(np.concatenate(firsts or [[]]), self.file_starts[-1])
        self.chunk_firsts = self.chunk_firsts.astype(np.int64)
        self.chunk_local = self.chunk_local.astype(np.int64)
        self.nbytes = int(sum(f.size for f in footers))
        # a pass's reading thread decompresses (it takes a core): blocks decode in the others
        self.compressed = any("uncompressed" not in f.writer_options.split(",") for f in footers)
        # files whose chunks all hold `group` records (each file's last, up to that): a
        # record's chunk is found by division, without a search (ds[i]'s short path)
        sizes = np.diff(self.chunk_firsts)
        g = int(sizes.max()) if len(sizes) else 0
        inner = np.ones(len(sizes), bool)
        inner[(np.cumsum(n) - 1)[np.asarray(n) > 0]] = False
        self.group = g if g > 0 and bool(np.all(sizes[inner] == g)) else 0
        self.starts_list = self.file_starts.tolist()
        self.chunk_bases = np.concatenate([[0], np.cumsum(n)]).astype(np.int64).tolist()
        self._init_cache()

    def _init_cache(self) -> None:
        self._cache: OrderedDict[int, RecordBatch | None] = OrderedDict()
        self._cached = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_cache", "_lock")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._init_cache()

    @property
    def count(self) -> int:
        return self.starts_list[-1]

    @property
    def corruptions(self) -> list[CorruptRecordError]:
        return self.damage.corruptions

    def close(self) -> None:
        for f in self.files:
            f.close()
        with self._lock:
            self._cache.clear()
            self._cached = 0

    def chunk_of(self, records: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.chunk_firsts, records, "right") - 1

    def decode(self, chunks: np.ndarray) -> list[tuple[np.ndarray, RecordBatch, np.ndarray]]:
        """Global chunks (sorted, unique), read and decoded file by file (one call each:
        `ArrayRecordFile.chunk_records`): per file, (its chunks asked for, their records,
        each one's first row in them or -1 for a damaged chunk skipped under on_error;
        raised otherwise). One thread: splitting a read by position among two measured
        slower on the shared 2-core machine (fresh pages in the helper, 341 -> 198 k/s)."""
        out = []
        files = self.chunk_file[chunks]
        cuts = np.flatnonzero(np.diff(files)) + 1
        for part in np.split(chunks, cuts):
            if not len(part):
                continue
            k = int(self.chunk_file[part[0]])
            got = self.files[k].chunk_records(self.chunk_local[part], self.verify)
            for error in got.errors:
                self.damage.report(error, stacklevel=3)
            out.append((part, got.batch, got.rows))
        return out

    def records(self, ids: np.ndarray) -> RecordBatch:
        """The records at these global numbers, in this order (repeats allowed), left in
        their chunks' buffers; records of skipped chunks are left out. Chunks of at least
        CACHE_MIN_RECORDS records are kept decompressed (CACHE_BYTES in all)."""
        ids = np.asarray(ids, np.int64)
        chunk = self.chunk_of(ids)
        wanted = np.unique(chunk)
        buffers: list[RecordBatch] = []
        slot_buf = np.full(len(wanted), -1, np.int64)
        slot_row = np.zeros(len(wanted), np.int64)
        sizes = self.chunk_firsts[wanted + 1] - self.chunk_firsts[wanted]
        big = sizes >= CACHE_MIN_RECORDS
        missing = np.ones(len(wanted), bool)
        if big.any():
            with self._lock:
                for j in np.flatnonzero(big).tolist():
                    c = int(wanted[j])
                    if c in self._cache:
                        self._cache.move_to_end(c)
                        hit = self._cache[c]
                        missing[j] = False
                        if hit is not None:
                            slot_buf[j], slot_row[j] = len(buffers), 0
                            buffers.append(hit)
        if missing.any():
            where = np.flatnonzero(missing)
            kept: list[tuple[int, RecordBatch | None]] = []
            at = 0
            for part, batch, rows in self.decode(wanted[where]):
                js = where[at : at + len(part)]
                at += len(part)
                ok = rows >= 0
                slot_buf[js[ok]] = len(buffers)
                slot_row[js[ok]] = rows[ok]
                buffers.append(batch)
                for j, row in zip(js[big[js]].tolist(), rows[big[js]].tolist(), strict=True):
                    n = int(sizes[j])
                    kept.append((int(wanted[j]), batch.slice(row, row + n) if row >= 0 else None))
            if kept:
                self._keep(kept)
        good = slot_buf >= 0
        if not good.all():
            keep = good[np.searchsorted(wanted, chunk)]
            ids, chunk = ids[keep], chunk[keep]
        j = np.searchsorted(wanted, chunk)
        which = slot_buf[j]
        if buffers:
            firsts = np.cumsum([0, *[len(b.offsets) for b in buffers]])[:-1]
            offsets = np.concatenate([b.offsets for b in buffers])
            at_row = firsts[which] + slot_row[j] + (ids - self.chunk_firsts[chunk])
            starts, ends = offsets[at_row], offsets[at_row + 1]
        else:
            starts = ends = np.empty(0, np.int64)
        return RecordBatch.spans(
            [b.data for b in buffers], starts, ends, self.origins(ids), which=which
        )

    def cached(self, c: int) -> RecordBatch | None:
        """Chunk c's records, when the cache holds them."""
        with self._lock:
            batch = self._cache.get(c)
            if batch is not None:
                self._cache.move_to_end(c)
            return batch

    def _keep(self, kept: list[tuple[int, RecordBatch | None]]) -> None:
        with self._lock:
            for c, batch in kept:
                if c in self._cache:
                    continue
                self._cache[c] = batch
                self._cached += batch.nbytes if batch is not None else 0
            while self._cached > CACHE_BYTES and len(self._cache) > 1:
                _, old = self._cache.popitem(last=False)
                self._cached -= old.nbytes if old is not None else 0

    def origins(self, ids: np.ndarray) -> Origins:
        """Each global record's file and record number in that file."""
        k = np.searchsorted(self.file_starts, ids, "right") - 1
        return Origins(
            tuple(self.paths), (k.astype(np.int64) << LOC_BITS) | (ids - self.file_starts[k])
        )

    def runs(self, a: int, b: int, block: int) -> list[tuple[int, int]]:
        """Runs of global chunks (c0, c1) covering records a..b: one file each, of about
        `block` records (a chunk holding more is a run alone)."""
        if b <= a:
            return []
        c = np.arange(
            int(self.chunk_of(np.array([a]))[0]), int(self.chunk_of(np.array([b - 1]))[0]) + 1
        )
        group = (self.chunk_firsts[c] - self.chunk_firsts[c[0]]) // max(block, 1)
        key = self.chunk_file[c] * (int(group[-1]) + 1) + group
        cuts = np.flatnonzero(np.diff(key) != 0) + 1
        bounds = [0, *cuts.tolist(), len(c)]
        return [(int(c[x]), int(c[y - 1]) + 1) for x, y in itertools.pairwise(bounds)]

    def span(self, c0: int, c1: int, a: int, b: int) -> RecordBatch:
        """Records a..b of chunks c0..c1 (one file), read together (a damaged chunk's left
        out, under on_error)."""
        kept = [self.cached(c) for c in range(c0, c1)] if self._cache else [None]
        if all(batch is not None for batch in kept):  # groups read by position before
            parts = []
            for c, batch in zip(range(c0, c1), kept, strict=True):
                first = int(self.chunk_firsts[c])
                x, y = max(a, first) - first, min(b, first + len(batch)) - first
                if x < y:
                    parts.append(batch if (x, y) == (0, len(batch)) else batch.slice(x, y))
            if parts:
                return RecordBatch.concat(parts)
        ((_, batch, _),) = self.decode(np.arange(c0, c1, dtype=np.int64))
        k = int(self.chunk_file[c0])
        first = int(self.file_starts[k])
        local = batch.origins.locs  # record numbers in the file, ascending
        x, y = np.searchsorted(local, [a - first, b - first]).tolist()
        return batch if (x, y) == (0, len(batch)) else batch.slice(x, y)

    def pieces(
        self, runs: list[tuple[int, int]], a: int, b: int, block: int
    ) -> Iterator[RecordBatch]:
        """The records a..b of these runs of chunks, in pieces of up to `block` records: a
        run read together (`span`), or a big chunk (over STREAM_BLOCKS blocks) decompressed
        piece by piece as it is served (`ArrayRecordFile.chunk_stream`; the pass's first
        piece FIRST_PIECE records, so that decoding starts soon after the first read)."""
        lead = FIRST_PIECE  # the first piece's records (0: a block)
        for c0, c1 in runs:
            first, last = self.chunk_firsts.item(c0), self.chunk_firsts.item(c1)
            rows = (max(a, first) - first, min(b, last) - first)
            stream = None
            big = c1 - c0 == 1 and last - first > STREAM_BLOCKS * block
            if big and self.cached(c0) is None:  # (a group kept from reads by position: span)
                f = self.files[self.chunk_file.item(c0)]
                k = self.chunk_local.item(c0)
                stream = f.chunk_stream(k, rows, block, self.verify, lead)
            lead = 0
            if stream is not None:
                try:
                    yield from stream
                except CorruptRecordError as error:  # the chunk's other records left out
                    self.damage.report(error, stacklevel=3)
                continue
            batch = self.span(c0, c1, a, b)
            for x in range(0, len(batch), block):
                yield batch.slice(x, min(len(batch), x + block))


class ArrayRecordSource(Source):
    """ArrayRecord files read with one spec (see the module docstring; `Source` for the
    contract)."""

    def __init__(self, files: ArrayRecordFiles, spec: Any):
        self.files = files
        self.spec = spec
        self._decoder: Decoder | None = None
        self._mean: float | None = None
        self._sized: tuple[int, int] | None = None  # (decoded bytes, records) of the sample

    def select(self, spec: Any) -> ArrayRecordSource:
        return ArrayRecordSource(self.files, spec)

    @property
    def decoder(self) -> Decoder:
        if self._decoder is None:
            self._decoder = Decoder(self.spec)
        return self._decoder

    @property
    def paths(self) -> list[str]:
        return list(self.files.paths)

    @property
    def corruptions(self) -> list[CorruptRecordError]:
        return self.files.corruptions

    @property
    def compressions(self) -> list[str | None]:
        """None for each file: no TFRecord compression wraps them (their chunks' codecs
        are in each footer's writer_options)."""
        return [None] * len(self.files.paths)

    def count(self) -> int:
        return self.files.count

    def close(self) -> None:
        self.files.close()

    def may_read_ahead(self) -> bool:
        return self.files.damage.raises

    def progress_totals(self, start: int, stop: int | None) -> tuple[int | None, int | None]:
        a, b = self.span(start, stop)
        return b - a, self.files.nbytes if self.whole(start, stop) else None

    def _decode(self, batch: RecordBatch, threads: int | None = None) -> Batch:
        return self.decoder.decode(batch, threads=threads)

    def empty(self) -> Batch:
        return self._decode(RecordBatch(np.empty(0, np.uint8), np.zeros(1, np.int64)))

    # -- by position ----------------------------------------------------------------------

    def read_span(self, a: int, b: int) -> Batch:
        return self._decode(self.files.records(np.arange(a, b, dtype=np.int64)))

    def read_ids(self, ids: np.ndarray, what: str) -> Batch:
        return self._decode(self.files.records(np.asarray(ids, np.int64)))

    def read_one(self, i: int) -> dict[str, Any]:
        files = self.files
        g = files.group
        if g:  # one group size: the chunk by division (files of one record each: no search)
            starts = files.starts_list
            k = bisect.bisect_right(starts, i) - 1 if len(starts) > 2 else 0
            local, row = divmod(i - starts[k], g)
            c = files.chunk_bases[k] + local
            first = i - row
        else:
            c = int(np.searchsorted(files.chunk_firsts, i, "right")) - 1
            first = int(files.chunk_firsts[c])
            k, local = files.chunk_file.item(c), files.chunk_local.item(c)
        if g == 1 or files.chunk_firsts.item(c + 1) - first == 1:
            # ds[i]'s short path, for chunks of one record (TFDS's group_size 1)
            try:
                data, offsets = files.files[k].one_chunk(local, files.verify)
            except CorruptRecordError:
                data = None  # the long way names it, or skips it
            if data is not None:
                record = self.decoder.decode_one(data, 0, offsets.item(1))
                if record is not None:
                    return record
        elif 0 <= c < len(files.chunk_file):  # a chunk kept decompressed, or to be kept
            batch = files.cached(c)
            if batch is None:
                files.records(np.array([i], np.int64))  # reads it, and keeps it
                batch = files.cached(c)
            if batch is not None:
                r = i - first
                a, b = batch.offsets.item(r), batch.offsets.item(r + 1)
                record = self.decoder.decode_one(batch.data, a, b)
                if record is not None:
                    return record
        cols = self.read_span(i, i + 1)
        if not len(next(iter(cols.values()), ())):
            raise IndexError(
                f"record {i} was skipped (on_error={self.files.damage.on_error!r}): its chunk "
                "is damaged; ds.corruptions says which"
            )
        return {name: col[0] for name, col in cols.items()}

    # -- blocks ---------------------------------------------------------------------------

    def blocks(
        self,
        start: int,
        stop: int | None,
        block: int,
        shuffle: Shuffle,
        *,
        threads: int | None = None,
        ahead: int = 0,
    ) -> Iterator[Block]:
        a, b = self.span(start, stop)
        rng = shuffle.rng()
        block = max(1, block)
        if shuffle.kind == "all":
            for ids, place in self.permuted(a, b, block, rng):
                batch = self.files.records(ids[place])
                yield Block(self._decode(batch, threads), len(batch), batch.nbytes, batch.origins)
            return
        runs = self.files.runs(a, b, block)
        if shuffle.kind != "none":
            runs = [runs[i] for i in rng.permutation(len(runs))]
        pieces = self.files.pieces(runs, a, b, block)
        if threads is None and ahead and self.files.compressed:
            threads = max(1, CPUS - 1)  # a core is the reading thread's, decompressing

        def decode(part: RecordBatch) -> Block:
            return Block(self._decode(part, threads), len(part), part.nbytes, part.origins)

        # chunks read, checked and decompressed in one thread, decoded in another
        blocks = pipeline(pieces, decode, ahead) if ahead else map(decode, pieces)
        try:
            if shuffle.kind == "none":
                yield from blocks
            else:
                yield from shuffle_blocks(blocks, shuffle.size, rng, block)
        finally:  # a loop left early stops the threads now
            close_iterator(blocks)
            close_iterator(pieces)

    def makes_ahead(self, start: int, stop: int | None, shuffle: Shuffle) -> bool:
        return shuffle.kind != "all"

    # -- sizes ----------------------------------------------------------------------------

    def sample(self) -> RecordBatch:
        """The first records of up to MAX_SAMPLED_FILES files (evenly chosen)."""
        files = self.files
        n = len(files.paths)
        chosen = sorted({int(i * n / MAX_SAMPLED_FILES) for i in range(min(n, MAX_SAMPLED_FILES))})
        quota = max(1, SAMPLE_RECORDS // len(chosen)) if chosen else 0
        parts = []
        for k in chosen:
            first, last = int(files.file_starts[k]), int(files.file_starts[k + 1])
            ids = np.arange(first, min(last, first + quota), dtype=np.int64)
            if len(ids):
                parts.append(files.records(ids).packed())
        if not parts:
            return RecordBatch(np.empty(0, np.uint8), np.zeros(1, np.int64))
        return RecordBatch.concat(parts)

    def mean_record_bytes(self, start: int, stop: int | None) -> float:
        if self._mean is None:
            sample = self.sample()
            self._mean = max(1.0, sample.nbytes / len(sample)) if len(sample) else 64.0
        return self._mean

    def estimate_nbytes(self, start: int, stop: int | None) -> tuple[int, int]:
        """From the sample's decoded size (the first records of up to MAX_SAMPLED_FILES
        files: a chunk or a few each, never a pass over groups spread through the files)."""
        a, b = self.span(start, stop)
        if b <= a:
            return 0, 0
        if self._sized is None:
            sample = self.sample()
            cols = self._decode(sample) if len(sample) else {}
            self._sized = (sum(column_nbytes(c) for c in cols.values()), len(sample))
        size, k = self._sized
        return (int(size / k * (b - a)) if k else 0), k


class ArrayRecordDataset(Dataset):
    """ArrayRecord files as a Dataset. Made by `tn.open`."""

    source: ArrayRecordSource

    def __repr__(self) -> str:
        names = ", ".join(feature_names(self.spec))
        files = self.source.paths
        where = files[0] if len(files) == 1 else f"{len(files)} ArrayRecord files"
        return f"Dataset({where}, {format_count(len(self))} records: {names})"


def open_array_record(
    src: Any,
    *,
    spec: Any = None,
    on_error: str = "raise",
    verify: bool = True,
    storage_options: dict | None = None,
    load_spec: Any = None,
) -> ArrayRecordDataset:
    """ArrayRecord files (a file, a folder of shards, a glob or a list) as a Dataset; the
    spec inferred from a sample of their records when not given (load_spec: how a given
    one is read, as `tn.open` reads specs)."""
    if isinstance(src, (str, os.PathLike)):
        src = fs.resolve(src, storage_options)
    elif isinstance(src, (list, tuple)):
        src = [fs.resolve(p, storage_options) for p in src]
    paths = list_array_record(src, warn=True)
    if not paths:
        raise FileNotFoundError(f"no ArrayRecord files in {src}")
    files = ArrayRecordFiles(paths, on_error, verify)
    if spec is None:
        where = paths[0] if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more files"
        spec = infer_spec_of(ArrayRecordSource(files, {}).sample(), str(where))
    elif load_spec is not None:
        spec = load_spec(spec)
    return ArrayRecordDataset(ArrayRecordSource(files, spec))
