"""TFRecord files as a Dataset: records read by position through an index, or streamed.

- ``len(ds)`` counts records from an index of frame offsets: a header-only scan that seeks
  over payloads, or the files' ``.idx`` sidecars (compressed files are decompressed once).
- ``ds[i]``, ``ds[a:b]`` and ``ds[[i, j]]`` read just those records with positioned reads,
  in uncompressed files, and in GZIP / ZLIB ones through their inflate checkpoints (local
  files with the gzip extra; `RandomAccessError` otherwise).
- Blocks are read and decoded by the compiled core without the GIL. ``shuffle=True``
  permutes every record of local files (read by position, as above); over URLs it reads
  whole pieces in a random order and shuffles within a window of them (each record once,
  the bytes once: `files.shuffled_pieces`); ``shuffle=N`` draws records through a pool of N
  fed from up to 8 files in turn (any file); payloads are shuffled before they are decoded,
  as tf.data does.

A pass over a whole dataset streams its files and needs no index; views and reads by
position use the index (a view of a compressed file that has no sound checkpoints streams
it from its start). Payload CRCs are checked as records are copied out of their frames,
and errors name the file, the record's number in it and its byte offset.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from .._util import fs
from .._util.spares import Spares
from .._util.text import format_count
from .._util.threads import CPUS, close_iterator, ordered_map, run_ahead
from ..errors import CorruptRecordError
from ..example.decode import Decoder
from ..example.image import ImageDecodeError
from ..example.padding import feature_names
from ..example.spec import as_spec
from ..format.frames import FOOTER_BYTES, HEADER_BYTES, OVERHEAD_BYTES
from ..format.index import RecordIndex
from ..format.payloads import RecordBatch
from ..format.reader import mean_frame_bytes
from .blocks import (
    PIECE_BYTES,
    Block,
    Piece,
    RowBlocks,
    block_records,
    first_block_records,
    fixed_rows,
    raw_rows,
    shuffle_numbers,
    shuffle_records,
)
from .dataset import Batch, Dataset, column_nbytes
from .files import Files, read_one, read_rows, read_span, shuffled_pieces, verified_rows
from .gather import gather, gather_range, rebatch
from .source import IN_ORDER, Shuffle, Source

__all__ = ["RecordDataset", "RecordSource", "read_blocks"]

SAMPLE_RECORDS = 1024  # records decoded to estimate to_numpy's size ...
SAMPLE_BYTES = 32 << 20  # ... or fewer, to stay within about this many payload bytes
SHUFFLE_READ_BLOCKS = 16  # shuffle=True reads this many blocks' records at once, in file order
CYCLE_FILES = 8  # shuffle=N reads from up to this many files in turn
# The measurements behind the next two: benchmarks/CONSTANTS.md, under their names.
CREW = 2  # small records in file order: two threads, each reading then decoding a block
_BLOCK_SPARES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # per source
BIG_RECORD_BYTES = 4 << 10  # from here copies and CRCs weigh as much as decoding
# Shuffled big records of URLs and compressed files are drawn as record numbers and read by
# position from this size (a read per record costs less than passing the record through a
# pool in memory); local uncompressed files' records are, from any size (one core call
# reads a piece's records: `files.read_runs`).
PICKED_RECORD_BYTES = 32 << 10


class RecordDataset(Dataset):
    """Records of TFRecord files, decoded with one spec. Made by `tn.open`."""

    source: RecordSource

    def __init__(self, source: RecordSource, *, start: int = 0, stop: int | None = None):
        super().__init__(source, start=start, stop=stop)

    @property
    def _files(self) -> Files:
        return self.source.files

    @property
    def decoder(self) -> Decoder:
        return self.source.decoder

    def _by_position(self) -> bool:
        return self.source.by_position()

    def __repr__(self) -> str:
        files = self.source.files
        n = f"{format_count(len(self))} records" if files.indexed else "records not yet counted"
        names = ", ".join(feature_names(self.spec))
        return f"Dataset({len(files.paths)} file{'s' * (len(files.paths) != 1)}, {n}: {names})"

    def to_ray(self, **options: Any) -> Any:
        """A ray.data.Dataset of these records: tfrecnp.ray.read of the files with this
        spec, compression, CRC check and on_error (options: task_bytes, preserve_order,
        ray_remote_args). Whole datasets only: Ray's limit / split take parts."""
        if not self._whole():
            raise ValueError(
                "to_ray reads whole files; take the part in Ray (ds.to_ray().limit(n), "
                ".split(k)) rather than with take / shard here"
            )
        from ..adapters.ray import read

        files = self.source.files
        return read(
            files.paths,
            self.spec,
            read_part=read_blocks,
            compression=files.compression,
            verify_crc=files.verify_crc,
            on_error=files.on_error,
            **options,
        )


class RecordSource(Source):
    """TFRecord files read with one spec (see `Source` for the contract)."""

    def __init__(self, files: Files, spec: Any):
        self.files = files
        self.spec = spec
        self._decoder: Decoder | None = None
        self._means: dict[tuple[int, int | None], float] = {}  # see mean_record_bytes

    @classmethod
    def of(
        cls,
        paths: list[Any],
        spec: Any,
        *,
        compression: str | None = "auto",
        verify_crc: bool = True,
        on_error: str = "raise",
    ) -> RecordSource:
        """These files (paths already expanded) read with this spec: what `tn.read` and a
        Ray read task read through, the same blocks as a Dataset's pass."""
        return cls(Files(list(paths), compression, verify_crc, on_error), as_spec(spec))

    def select(self, spec: Any) -> RecordSource:
        return RecordSource(self.files, spec)

    @property
    def paths(self) -> list[str]:
        return list(self.files.paths)

    @property
    def compressions(self) -> list[str | None]:
        """Each file's compression ("GZIP", "ZLIB" or None), as detected when opened."""
        return list(self.files.kinds)

    @property
    def corruptions(self) -> list[CorruptRecordError]:
        return self.files.corruptions

    @property
    def decoder(self) -> Decoder:
        if self._decoder is None:
            self._decoder = Decoder(self.spec)
        return self._decoder

    def count(self) -> int:
        return self.files.count

    def close(self) -> None:
        self.files.close()

    def progress_totals(self, start: int, stop: int | None) -> tuple[int | None, int | None]:
        files = self.files
        total = None
        if files.indexed or not self.whole(start, stop):
            a, b = self.span(start, stop)
            total = b - a
        size = sum(fs.size(p) for p in files.paths) if files.seekable else None
        return total, size

    def check_random_access(self, what: str) -> None:
        self.files.require_seek(what)

    def may_read_ahead(self) -> bool:
        return self.files.damage.raises

    # -- records by position ----------------------------------------------------------------

    def _decode(self, batch: RecordBatch, threads: int | None = None, into=None) -> Batch:
        return self._decode_kept(batch, threads, into)[0]

    def _decode_kept(
        self, batch: RecordBatch, threads: int | None = None, into=None
    ) -> tuple[Batch, RecordBatch]:
        """(columns, the records they hold): with on_error="skip" / "warn", records whose
        images do not decode are dropped and listed like damaged frames. into: as
        `Decoder.decode` takes it (a batch that loses records decodes into its own)."""
        while True:
            try:
                return self.decoder.decode(batch, threads=threads, into=into), batch
            except ImageDecodeError as error:
                if self.files.damage.raises or not error.rows:
                    raise
                batch, into = self._drop_images(batch, error), None

    def _drop_images(self, batch: RecordBatch, error: ImageDecodeError) -> RecordBatch:
        for row in error.rows:
            path, record = batch.where(row)
            reason = error.reasons.get(row, error.reason)
            noted = ImageDecodeError(reason, path=path, record=record, hint=error.hint)
            self.files.damage.report(noted, stacklevel=4)  # the record is dropped whole
        keep, start = [], 0
        for row in [*error.rows, len(batch)]:
            if row > start:
                keep.append(batch.slice(start, row))
            start = row + 1
        return RecordBatch.concat(keep) if keep else batch.slice(0, 0)

    def read_one(self, i: int) -> dict[str, Any]:
        frame = read_one(self.files, i)
        if frame is not None:
            record = self.decoder.decode_one(frame, HEADER_BYTES, len(frame) - FOOTER_BYTES)
            if record is not None:
                return record
        # the long way, for what the short one refuses: errors naming the damage, images
        cols = self.read_ids(np.array([i], np.int64), "ds[i]")
        if not len(next(iter(cols.values()), ())):
            raise IndexError(
                f"record {i} was skipped (on_error={self.files.on_error!r}): it is damaged "
                "or its image does not decode; ds.corruptions says which"
            )
        return {name: col[0] for name, col in cols.items()}

    def read_span(self, a: int, b: int) -> Batch:
        self.files.require_seek(f"ds[{a}:{b}]")
        return self._decode(gather_range(self.files, a, b))

    def readable(self) -> int | None:
        return self.files.readable()

    def read_ids(self, ids: np.ndarray, what: str) -> Batch:
        self.files.require_seek(what)
        self.files.index(upto_damage=True)  # the ids were checked against len or `readable`
        return self._decode(gather(self.files, [(read_rows(self.files, ids), None)]))

    # -- blocks -----------------------------------------------------------------------------

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
        plan = self._plan(start, stop, shuffle) if ahead else "one"
        if plan == "pieces":
            yield from self._piece_blocks(start, stop, block, ahead, threads)
            return
        if plan == "picked":
            yield from self._picked_blocks(start, stop, block, shuffle, ahead, threads)
            return
        big = self.mean_record_bytes(start, stop) >= BIG_RECORD_BYTES
        pool = shuffle.kind == "buffer"  # shuffle payloads, then decode
        framed = plan == "crew" and big  # pooled in their frames
        crew = plan == "crew"
        rng = shuffle.rng()
        if shuffle.kind == "all":
            raw = self._global_shuffle(start, stop, block, rng)
        elif pool:
            raw = self._interleaved(start, stop, block, rng, framed=framed)
            if framed and self.whole(start, stop):  # the pass indexes the files it walks
                raw = self.files.learned(raw)
        else:  # big records are decoded where they were read, in their frames
            first = first_block_records(block, self.mean_record_bytes(start, stop))
            raw = self._stream_batches(start, stop, block, framed=big, first=first)
        spares = self.files.spares
        stages: list[Iterator] = [raw]
        if pool and not big:  # the pool draws in the reading thread: decoding weighs more
            stages.append(shuffle_records(stages[-1], shuffle.size, rng, block, spares))
        if ahead and not crew:  # the next block is read while this one decodes
            stages.append(run_ahead(stages[-1], 1))
            if threads is None:
                threads = max(1, CPUS - 1)  # reading is busy: decoding takes the other cores
        if pool and big:  # the pool draws in this thread (reading big records weighs more)
            # and hands rows out where it holds them: their decoding copies each anyway
            pooled = shuffle_records(stages[-1], shuffle.size, rng, block, spares, pooled=True)
            stages.append(pooled)

        def decode(r: RecordBatch) -> tuple[Block | None, CorruptRecordError | None]:
            r, damage = r.verify()  # payload CRCs left unchecked are checked here, off the
            if len(r) or damage is None:  # reading thread; the records before damage first
                cols, r = self._decode_kept(r, threads)
                return Block(cols, len(r), r.nbytes, r.origins), damage
            return None, damage

        if crew:
            threads = max(1, CPUS // CREW) if threads is None else threads
            stages.append(ordered_map(stages[-1], decode, CREW, max(CREW, ahead)))
        else:
            stages.append(map(decode, stages[-1]))
        try:
            for got, damage in stages[-1]:
                if got is not None:
                    yield got
                if damage is not None:
                    raise damage
        finally:
            for stage in reversed(stages):
                close_iterator(stage)

    def makes_ahead(self, start: int, stop: int | None, shuffle: Shuffle) -> bool:
        return self._plan(start, stop, shuffle) != "ahead"

    def _plan(self, start: int, stop: int | None, shuffle: Shuffle) -> str:
        """How blocks are made ahead of the caller (damage raising, unless said):
        "pieces": big records in file order, read, checked and decoded by the crew a piece
        at a time (`_piece_blocks`); "picked": big records shuffled in indexed files, the
        crew taking each block's records by position (`_picked_blocks`: shuffle=True, and
        shuffle=N in local uncompressed files, indexed first, or else from
        PICKED_RECORD_BYTES); "crew": small records in file order (any damage policy), or
        big ones of uncompressed URLs pooled in their frames, two threads each reading
        then decoding a block (see CREW); "ahead": one thread reads, the caller's decodes."""
        mean = self.mean_record_bytes(start, stop)
        raises = self.files.damage.raises
        if mean < BIG_RECORD_BYTES:
            return "crew" if shuffle.kind == "none" else "ahead"
        if not raises:
            return "ahead"
        if shuffle.kind == "none":
            return "pieces"
        if shuffle.kind == "all":
            self.files.require_seek("batches(shuffle=True)")
        local = self.files.local_plain
        if shuffle.kind == "all" or local:  # read by position: index the files now (for
            self.files.index()  # shuffle=N in local files: a pool of numbers, not records)
        if self.files.remote and shuffle.kind == "all":  # whole windows of pieces, each
            return "ahead"  # read once (_global_shuffle); picked pieces would read it twice
        if self.by_position() and (shuffle.kind == "all" or local or mean >= PICKED_RECORD_BYTES):
            return "picked"
        # pooled in their frames; compressed streams keep a reading thread of their own
        return "crew" if shuffle.kind == "buffer" and self.files.seekable else "ahead"

    def _piece_blocks(
        self, start: int, stop: int | None, block: int, ahead: int, threads: int | None
    ) -> Iterator[Block]:
        """Blocks of big records in file order, read, checked and decoded by the crew a
        piece at a time (`_in_pieces`): by position in indexed files, each member reading
        its own piece; else from the stream, read under the crew's lock."""

        def pieces(piece: int) -> Iterator[Any]:
            if self.by_position():
                yield from self._spans(start, stop, piece)
                return
            try:  # damage the stream meets comes as a piece of its own, after the good ones
                yield from self._stream_batches(start, stop, piece, framed=True)
            except CorruptRecordError as damage:
                yield damage

        def read(got: Any) -> tuple[RecordBatch, CorruptRecordError | None]:
            if isinstance(got, CorruptRecordError):
                return RecordBatch(np.empty(0, np.uint8), np.zeros(1, np.int64)), got
            if not isinstance(got, tuple):
                return got.verify()
            return self._frames_at(*got).verify()  # a span: (file, first, stop)

        def size(got: Any) -> int:  # a span's (file, first, stop), a RecordBatch, damage
            if isinstance(got, tuple):
                return got[2] - got[1]
            return 0 if isinstance(got, CorruptRecordError) else len(got)

        mean = self.mean_record_bytes(start, stop)
        yield from self._in_pieces(block, mean, pieces, size, read, ahead, threads)

    def _picked_blocks(
        self,
        start: int,
        stop: int | None,
        block: int,
        shuffle: Shuffle,
        ahead: int,
        threads: int | None,
    ) -> Iterator[Block]:
        """Shuffled blocks of big records in indexed files: the shuffle draws record
        numbers (shuffle=N through the pool as `_interleaved` would feed it records: the
        same order for a seed, and a pool of numbers, not of records), and the crew takes
        each block's records by position (`verified_rows`), checks and decodes them a
        piece at a time."""
        rng = shuffle.rng()
        if shuffle.kind == "all":
            a, b = self.span(start, stop)
            order = a + rng.permutation(b - a)
            picks: Iterator[np.ndarray] = (
                order[x : x + block] for x in range(0, len(order), block)
            )
        else:
            numbers = self._interleaved(start, stop, block, rng, numbers=True)
            picks = shuffle_numbers(numbers, shuffle.size, rng, block)

        def pieces(piece: int) -> Iterator[np.ndarray]:  # the picks, `piece` at a time
            rest = np.empty(0, np.int64)
            for ids in picks:
                rest = np.concatenate([rest, ids])
                while len(rest) >= piece:
                    yield rest[:piece]
                    rest = rest[piece:]
            if len(rest):
                yield rest

        def read(ids: np.ndarray) -> tuple[RecordBatch, CorruptRecordError | None]:
            return verified_rows(self.files, ids)

        mean = self.mean_record_bytes(start, stop)
        yield from self._in_pieces(block, mean, pieces, len, read, ahead, threads)

    def _in_pieces(
        self,
        block: int,
        mean: float,
        pieces: Callable[[int], Iterable[Any]],
        size: Callable[[Any], int],
        read: Callable[[Any], tuple[RecordBatch, CorruptRecordError | None]],
        ahead: int,
        threads: int | None,
    ) -> Iterator[Block]:
        """Blocks of big records put together by the crew from pieces of about
        PIECE_BYTES, `pieces(rows per piece)` in order (`size` counts a piece's rows,
        `read` gives its checked records), each member decoding its piece's fixed-shape
        columns into their rows of the block (`RowBlocks`). So a large batch neither waits
        for one thread to read and decode its whole block nor holds a thread's worth of
        such blocks, and a pass reads into a few buffers of a piece, not one of each
        block's size (fresh pages, which a new dataset's first pass pays for, cost a fault
        each). Blocks with bytes or ragged columns stay whole (their pieces would be
        joined by a copy). Blocks smaller than a piece (small batches) are decoded a few
        at a time, a piece of whole blocks: each block's work has a fixed cost."""
        threads = max(1, CPUS // CREW) if threads is None else threads  # per member
        fixed = fixed_rows(self.spec)
        whole = len(fixed) < len(feature_names(self.spec))
        per_piece = max(1, round(PIECE_BYTES / mean))  # records
        if block < per_piece:  # small blocks: a piece of whole blocks, served as views
            piece = block * (per_piece // block)
        else:
            piece = -(-block // (1 if whole else round(block / per_piece)))
        spares = _BLOCK_SPARES.get(self)
        if spares is None:  # blocks' pages apart from read buffers: sizes differ, and
            spares = _BLOCK_SPARES[self] = Spares(limit=8)  # a Spares drops smaller ones
        rows = RowBlocks(block, fixed, spares, raw_rows(self.spec))

        def work(item: tuple[int, Any]) -> tuple[Piece, CorruptRecordError | None]:
            first, got = item
            r, damage = read(got)
            into = rows.target(first, len(r))  # tn.Raw rows decoded where they belong
            cols = self._decode(r, threads, into) if len(r) else {}
            return rows.place(first, cols, r.nbytes, r.origins, into), damage

        depth = max(2 * CREW, ahead * -(-block // piece))  # pieces: up to `ahead` blocks
        done = ordered_map(rows.numbered(pieces(piece), size), work, CREW, depth)
        try:
            yield from rows.blocks(done)
        finally:
            done.close()

    def by_position(self) -> bool:
        """Whether blocks may be read by position, each in the thread that decodes it:
        files already indexed that read in place (uncompressed, or compressed with sound
        checkpoints), damage raising (skipping it needs the stream's resynchronising walk)."""
        files = self.files
        if not (files.indexed and files.damage.raises):
            return False
        return files.seekable or all(files.reads_in_place(f) for f in range(len(files.paths)))

    def _spans(self, start: int, stop: int | None, block: int) -> Iterator[tuple[int, int, int]]:
        """(file, first, stop) record numbers within each file, a block at a time (a
        file's last block may be short)."""
        for f, a, b in self._file_pieces(start, stop):
            for x in range(a, b, block):
                yield f, x, min(b, x + block)

    def _frames_at(self, f: int, a: int, b: int) -> RecordBatch:
        """Records a..b of file f, read by position and left in their frames (their
        headers checked against the index; payload CRCs left to RecordBatch.verify)."""
        frames = read_span(self.files, f, a, b)
        off, ln = self.files.file_index(f)
        if b > a and int(off[b - 1] + ln[b - 1]) + OVERHEAD_BYTES - int(off[a]) == len(frames.data):
            frames.offset = int(off[a])  # as in the file: a CRC error names the frame's offset
        return frames

    def _file_pieces(self, start: int, stop: int | None) -> list[tuple[int, int, int]]:
        """(file, first, last) record numbers within each file for this view's range."""
        files = self.files.index()
        start, stop = self.span(start, stop)
        out = []
        for f in range(len(files.paths)):
            lo, hi = int(files.firsts[f]), int(files.firsts[f + 1])
            a, b = max(lo, start), min(hi, stop)
            if a < b:
                out.append((f, a - lo, b - lo))
        return out

    def _stream_batches(
        self,
        start: int,
        stop: int | None,
        batch_size: int,
        framed: bool = False,
        first: int | None = None,
    ) -> Iterator[RecordBatch]:
        """Sequential batches of payloads (any compression), exactly batch_size records
        except the last. framed: a whole pass leaves records in their frames (decoded
        there, without a copy), and a file's last batch may be short. first: a whole
        pass's first batch_size records come in growing batches from this many
        (RecordReader.batches)."""
        files = self.files
        if self.whole(start, stop):  # a pass over everything needs no index: stream
            reader = files.reader()
            if framed:  # a whole pass indexes the files it walks (Files.learned)
                batches = reader.frame_batches(batch_size, defer_crc=True, first=first)
                yield from files.learned(batches)
            else:
                yield from reader.batches(batch_size, first=first)
            return
        files.index()  # a view: its records are numbered
        if files.seekable or all(
            files.reads_in_place(f) for f, _, _ in self._file_pieces(start, stop)
        ):
            start, stop = self.span(start, stop)  # read by position, not from each file's start
            spans = (
                gather_range(self.files, a, min(stop, a + batch_size))
                for a in range(start, stop, batch_size)
            )
            yield from self._full(spans, batch_size)
            return
        parts = (
            part
            for piece in self._file_pieces(start, stop)
            for part in self._file_parts(*piece, batch_size)
        )
        yield from rebatch(parts, batch_size)

    def _file_parts(
        self, f: int, a: int, b: int, block: int, framed: bool = False
    ) -> Iterator[RecordBatch]:
        """Records a..b of file f, streamed (framed: left in their frames, not copied)."""
        reader = self.files.reader(f)
        seen = 0
        parts = reader.frame_batches(block) if framed else reader.batches(block)
        for part in parts:
            size = len(part)
            lo, hi = max(a - seen, 0), min(b - seen, size)
            if lo < hi:
                yield part if (lo, hi) == (0, size) else part.slice(lo, hi)
            seen += size
            if seen >= b:
                break

    def _global_shuffle(
        self, start: int, stop: int | None, block: int, rng: np.random.Generator
    ) -> Iterator[RecordBatch]:
        """Blocks of a permutation of every record: each block's records are read in file
        order (neighbours in one read) and gathered into the permuted order."""
        self.files.require_seek("batches(shuffle=True)")
        start, stop = self.span(start, stop)
        if self.files.remote:  # whole pieces in a random order (files.shuffled_pieces)
            groups = shuffled_pieces(self.files, start, stop, rng)
        else:
            order = start + rng.permutation(stop - start)
            reads = block * SHUFFLE_READ_BLOCKS  # a denser pick reads fewer bytes per record
            groups = (order[a : a + reads] for a in range(0, len(order), reads))

        def picked() -> Iterator[RecordBatch]:
            for ids in groups:
                frames = read_rows(self.files, ids)
                for b in range(0, len(frames), block):
                    sel = np.arange(b, min(b + block, len(frames)))
                    yield gather(self.files, [(frames, sel)])

        yield from self._full(picked(), block)

    def _file_records(
        self, f: int, a: int, b: int | None, chunk: int, framed: bool = False
    ) -> Iterator[RecordBatch]:
        """Records a..b of file f (b=None: to its end, read as a stream without an index),
        `chunk` records at a time; framed: left in their frames, not copied (CRCs checked
        as they are read, while the bytes are in the cache)."""
        files = self.files
        if b is not None and files.reads_in_place(f):
            for x in range(a, b, chunk):
                y = min(b, x + chunk)
                yield (
                    self._frames_at(f, x, y).checked()
                    if framed
                    else gather(files, [(read_span(files, f, x, y), None)])
                )
            return
        parts = self._file_parts(f, a, 1 << 62 if b is None else b, chunk, framed)
        try:
            yield from parts
        finally:
            parts.close()

    def _file_numbers(self, f: int, a: int, b: int | None, chunk: int) -> Iterator[np.ndarray]:
        """The global numbers of records a..b of file f (b=None: to its end), `chunk` at
        a time, as `_file_records` reads them."""
        files = self.files.index()
        first = int(files.firsts[f])
        b = int(files.firsts[f + 1]) - first if b is None else b
        for x in range(a, b, chunk):
            yield np.arange(first + x, first + min(b, x + chunk), dtype=np.int64)

    def _interleaved(
        self,
        start: int,
        stop: int | None,
        block: int,
        rng: np.random.Generator,
        framed: bool = False,
        numbers: bool = False,
    ) -> Iterator[Any]:
        """Blocks that each hold a chunk of every file being read (up to CYCLE_FILES at a
        time, the files in a random order), so that a shuffle buffer mixes records across
        files, not only within one. framed: the chunks themselves, left in their frames,
        not joined by a copy; numbers: the chunks' global record numbers (indexed files),
        none read."""
        if self.whole(start, stop):
            pieces: list[tuple[int, int, int | None]] = [
                (f, 0, None) for f in range(len(self.files.paths))
            ]
        else:
            pieces = list(self._file_pieces(start, stop))
        pending = [pieces[i] for i in rng.permutation(len(pieces))]
        chunk = max(1, block // min(CYCLE_FILES, len(pending)))  # one file: whole blocks
        active: list[Iterator[RecordBatch]] = []
        parts: list[RecordBatch] = []
        have = 0
        try:
            while pending or active:
                while pending and len(active) < CYCLE_FILES:
                    piece = pending.pop(0)
                    active.append(
                        self._file_numbers(*piece, chunk)
                        if numbers
                        else self._file_records(*piece, chunk, framed)
                    )
                for source in list(active):
                    part = next(source, None)
                    if part is None:
                        active.remove(source)
                        continue
                    if framed or numbers:
                        yield part
                        continue
                    parts.append(part)
                    have += len(part)
                    if have >= block:
                        yield RecordBatch.concat(parts)
                        parts, have = [], 0
            if parts:
                yield RecordBatch.concat(parts)
        finally:
            for source in active:
                source.close()

    def _full(self, batches: Iterator[RecordBatch], batch_size: int) -> Iterator[RecordBatch]:
        """The batches, except that with on_error="skip" / "warn" a batch short of damaged
        records (dropped by gather) is topped up from the next ones: only the last batch
        may be short, so drop_remainder drops no good records."""
        if self.files.damage.raises:
            return batches
        return rebatch(batches, batch_size)

    def mean_record_bytes(self, start: int, stop: int | None) -> float:
        """Mean frame size, worked out once per range: from the index when there is one,
        else from the first records (a pass asks several times; on an object store each
        read is a request, and the index of a large dataset is long)."""
        mean = self._means.get((start, stop))
        if mean is None:
            files = self.files
            if files.indexed or not self.whole(start, stop):
                a, b = self.span(start, stop)
                mean = float(files.lengths[a:b].mean()) + OVERHEAD_BYTES if b > a else 0.0
            else:
                mean = mean_frame_bytes(files.paths[0], compression=files.kinds[0]) or 0.0
            mean = self._means[start, stop] = max(mean, OVERHEAD_BYTES)
        return mean

    def empty(self) -> Batch:
        return self._decode(RecordBatch(np.empty(0, np.uint8), np.zeros(1, np.int64)))

    def estimate_nbytes(self, start: int, stop: int | None) -> tuple[int, int]:
        """(estimated bytes of to_numpy's result, records sampled): exact for fixed-size
        columns; variable ones scaled from a sample of up to 1024 records by payload size."""
        mean = self.mean_record_bytes(start, stop)
        start, stop = self.span(start, stop)
        n = stop - start
        if n == 0:
            return 0, 0
        k = min(n, SAMPLE_RECORDS, max(1, int(SAMPLE_BYTES // mean)))
        if self.files.seekable:
            picks = np.unique(np.linspace(start, stop - 1, k).astype(np.int64))
            sample = gather(self.files, [(read_rows(self.files, picks), None)])
        else:
            sample = next(iter(self._stream_batches(start, start + k, k)), None)
        if sample is None or len(sample) == 0:
            return 0, 0
        cols = self._decode(sample)
        payload = sample.nbytes
        total_payload = int(self.files.lengths[start:stop].sum())
        est = 0.0
        for col in cols.values():
            if isinstance(col, np.ndarray) and not col.dtype.hasobject:
                est += col.nbytes / len(sample) * n
                continue
            size = column_nbytes(col)
            if payload:
                est += size / payload * total_payload
            else:
                est += size / len(sample) * n
        return int(est), len(sample)


def read_blocks(
    paths: list[str],
    spec: Any,
    *,
    compression: str | None = "auto",
    verify_crc: bool = True,
    on_error: str = "raise",
    first: int = 0,
    rows: int | None = None,
    index: RecordIndex | None = None,
    block: int | None = None,
    threads: int | None = None,
) -> Iterator[Batch]:
    """Decoded blocks of the records of these files (paths expanded), in order: all of
    them (rows None: streamed, no index needed), or records first..first + rows of one
    file, whose RecordIndex the caller may hand in (a Ray task gets its file's from the
    driver rather than scanning the file again). block: records per block (default:
    about 4 MiB of payload)."""
    source = RecordSource.of(
        paths, spec, compression=compression, verify_crc=verify_crc, on_error=on_error
    )
    if index is not None:
        source.files.adopt(0, index)
    stop = None if rows is None else first + rows
    try:
        block = block or block_records(1, source.mean_record_bytes(first, stop))
        blocks = source.blocks(first, stop, block, IN_ORDER, threads=threads, ahead=1)
        try:
            for b in blocks:
                yield b.cols
        finally:
            blocks.close()
    finally:
        source.close()
