"""Decoded blocks, and the user's batches served as slices of them.

The hot path of `Dataset.batches`: records are read and decoded a *block* at a time (about
BLOCK_BYTES of payload, thousands of small records, a whole multiple of the batch size)
by the compiled core without the GIL, in a background thread. The caller's thread only
cuts batches out of decoded blocks: dense columns as views, `Ragged` and `BytesColumn` as
views of their values plus rebased offsets. Only a batch that straddles two blocks is
copied (blocks are multiples of the batch size, so that happens only where damaged
records were skipped or a file of a compressed stream ended). Python work is per block,
not per batch, and never per record; the hand-off between threads is one queue item per
block.

Shuffling with a buffer (`shuffle=N`) works on blocks of serialized records, as tf.data's
buffer does: each incoming block joins a pool of N records, a block's worth leaves, drawn
uniformly from the whole pool and copied once into place by the core (big records: left
where the pool holds them, a RecordBatch of spans the decoder reads there), and is decoded
as a block. Every record is emitted once, the order is a pure function of the seed, and
memory is the pool plus a block or two. One pool (`shuffle_pool`) serves payloads and
decoded blocks alike.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core import framing
from .._util.sizing import records_per_batch
from .._util.spares import Spares
from ..example.columns import BytesColumn, Column, concat_columns, slice_column, take_column
from ..example.spec import FixedLen, Raw
from ..format.payloads import Origins, RecordBatch

Batch = dict[str, Column]

BLOCK_BYTES = 4 << 20  # payload bytes read and decoded together
BLOCK_RECORDS = (1, 1 << 16)  # ... but at least / at most this many records per block
# A pass in file order starts with a block of about this much payload, the next ones as large
# as those before, until a whole block's records came: its first batch waits for one short
# read (a bucket's first range, a cold disk), not a whole block's (RecordReader.batches).
FIRST_BLOCK_BYTES = 256 << 10
# Large blocks of big records are read, checked and decoded this many payload bytes at a
# time (`RowBlocks`): pieces decode side by side, each copied into place while in cache.
PIECE_BYTES = 8 << 20


@dataclass(frozen=True)
class Block:
    """Decoded records: `cols` holds `n` rows of each feature; `nbytes`, the payload bytes
    they were decoded from (for progress lines); `origins`, each row's file and record,
    for messages (None where rows have none to name)."""

    cols: Batch
    n: int
    nbytes: int = 0
    origins: Origins | None = None

    def __len__(self) -> int:
        return self.n

    @property
    def where(self) -> Callable[[int], tuple[str, int]] | None:
        """where(row) -> (path, record), or None."""
        return self.origins.where if self.origins is not None else None

    def rows(self, a: int, b: int) -> Batch:
        return {name: slice_column(col, a, b) for name, col in self.cols.items()}


def block_records(batch_size: int, mean_record_bytes: float) -> int:
    """Records per block: about BLOCK_BYTES of payload, within BLOCK_RECORDS, rounded to a
    whole number of batches (at least one)."""
    return records_per_batch(BLOCK_BYTES, mean_record_bytes, BLOCK_RECORDS, multiple=batch_size)


def first_block_records(block: int, mean_record_bytes: float) -> int:
    """Records of a pass's first block (see FIRST_BLOCK_BYTES), at most a whole block's."""
    return min(block, records_per_batch(FIRST_BLOCK_BYTES, mean_record_bytes, BLOCK_RECORDS))


def concat_blocks(blocks: list[Block]) -> Block:
    if len(blocks) == 1:
        return blocks[0]
    names = blocks[0].cols
    cols = {name: concat_columns([b.cols[name] for b in blocks]) for name in names}
    known = [b.origins for b in blocks if b.origins is not None]
    origins = Origins.concat(known) if len(known) == len(blocks) else None
    return Block(cols, sum(b.n for b in blocks), sum(b.nbytes for b in blocks), origins)


def serve(
    blocks: Iterable[Block],
    batch_size: int,
    *,
    drop_remainder: bool = False,
    finish: Callable[[Batch], Batch] | None = None,
) -> Iterator[Batch]:
    """Batches of exactly batch_size rows (the last may be short, or dropped) cut from the
    blocks in order; `finish` is applied to each batch."""
    pending: list[Block] = []  # rows that did not fill a batch, waiting for the next block
    have = 0
    for block in blocks:
        a = 0
        if pending:
            a = min(batch_size - have, block.n)
            pending.append(Block(block.rows(0, a), a))
            have += a
            if have < batch_size:
                continue
            cols = concat_blocks(pending).cols
            pending, have = [], 0
            yield finish(cols) if finish else cols
        n = block.n
        end = a + (n - a) // batch_size * batch_size
        rows = block.rows
        if finish is None:
            for s in range(a, end, batch_size):
                yield rows(s, s + batch_size)
        else:
            for s in range(a, end, batch_size):
                yield finish(rows(s, s + batch_size))
        if end < n:
            pending, have = [Block(rows(end, n), n - end)], n - end
    if pending and not drop_remainder:
        cols = concat_blocks(pending).cols
        yield finish(cols) if finish else cols


def shuffle_pool(
    items: Iterable[Any],
    buffer: int,
    rng: np.random.Generator,
    align: int,
    take: Callable[[dict[int, Any], np.ndarray, np.ndarray], Any],
    compact: Callable[[dict[int, Any], np.ndarray, np.ndarray], Any],
) -> Iterator[Any]:
    """The rows of `items` (blocks, or batches of payloads) in a random order drawn through
    a pool of `buffer` rows: each item joins the pool, and once it holds more than `buffer`
    rows, a multiple of `align` of them leave it (as many as the items brought, rounded
    down: the pool holds up to buffer + align rows), picked uniformly from the whole pool,
    as take(held, item ids, rows) puts them together, in a random order. The rest of the
    pool leaves, shuffled, at the end, as large as the largest item that came in. With
    `align` the block size (a whole number of batches), no batch straddles two blocks.

    The pool is a dict of items plus the (item, row) of every row still in it; an item is
    dropped once none of its rows remain. When the items held grow past twice what the
    pool needs, the rows left in mostly emptied ones are copied into one new item by
    `compact`, so a row is copied about twice however large the buffer."""
    held: dict[int, Any] = {}
    size = align  # rows per item leaving at the end: the largest that came in
    live_b = np.empty(0, np.int64)  # item id of each row in the pool
    live_r = np.empty(0, np.int64)  # its row in that item
    next_id = 0
    for item in items:
        n = len(item)
        if not n:
            continue
        held[next_id] = item
        size = max(size, n)
        live_b = np.concatenate([live_b, np.full(n, next_id, np.int64)])
        live_r = np.concatenate([live_r, np.arange(n, dtype=np.int64)])
        next_id += 1
        going = (len(live_b) - buffer) // align * align
        if going <= 0:
            continue
        out = rng.choice(len(live_b), going, replace=False)  # in a random order
        yield take(held, live_b[out], live_r[out])
        keep = np.ones(len(live_b), bool)
        keep[out] = False
        live_b, live_r = live_b[keep], live_r[keep]
        counts = np.bincount(live_b, minlength=next_id)
        ids = np.flatnonzero(counts)
        counts = counts[ids]
        held = {int(i): held[int(i)] for i in ids}  # items emptied are dropped
        if sum(map(len, held.values())) > 2 * (buffer + align) + n:  # compact the pool
            sizes = np.array([len(held[int(i)]) for i in ids])
            sparse = ids[counts * 2 < sizes]  # items less than half full
            if not len(sparse):
                continue
            move = np.isin(live_b, sparse)
            kept = int(move.sum())
            merged = compact(held, live_b[move], live_r[move])
            for i in sparse.tolist():
                del held[i]
            held[next_id] = merged
            live_b[move] = next_id
            live_r[move] = np.arange(kept)
            next_id += 1
    rest = rng.permutation(len(live_b))  # an item at a time: never the whole pool at once
    for a in range(0, len(rest), size):
        picks = rest[a : a + size]
        yield take(held, live_b[picks], live_r[picks])


def shuffle_blocks(
    blocks: Iterable[Block],
    buffer: int,
    rng: np.random.Generator,
    align: int = 1,
    spares: Spares | None = None,
) -> Iterator[Block]:
    """Decoded rows through the pool (`shuffle_pool`): each leaving block gathered per
    column from the blocks that hold its rows; bytes columns into buffers from `spares`
    when given (the pages of blocks already dropped)."""
    gather = functools.partial(_gather, spares=spares)
    return shuffle_pool(blocks, buffer, rng, align, gather, gather)


def shuffle_records(
    batches: Iterable[RecordBatch],
    buffer: int,
    rng: np.random.Generator,
    align: int = 1,
    spares: Spares | None = None,
    pooled: bool = False,
) -> Iterator[RecordBatch]:
    """Record payloads through the pool (`shuffle_pool`): records are shuffled before they
    are decoded, as tf.data shuffles serialized records, so each is copied once in the pool
    and decoded once. The records leaving are copied together into a buffer from `spares`,
    or, pooled, handed out where the pool holds them (their decoding copies big records
    once anyway)."""

    def rows(held: dict[int, RecordBatch], ids: np.ndarray, picked: np.ndarray) -> RecordBatch:
        return RecordBatch.pool(list(held.values()), _positions(held, ids), picked)

    def copied(held: dict[int, RecordBatch], ids: np.ndarray, picked: np.ndarray) -> RecordBatch:
        return rows(held, ids, picked).packed(spares)

    return shuffle_pool(batches, buffer, rng, align, rows if pooled else copied, copied)


def shuffle_numbers(
    numbers: Iterable[np.ndarray], buffer: int, rng: np.random.Generator, align: int = 1
) -> Iterator[np.ndarray]:
    """Record numbers drawn as `shuffle_pool` would draw the records they number: the
    same calls on the rng over the pool's rows in the same order, so the same order for
    a seed. A pool of numbers stands in for a pool of records that can be read by
    position (big records: the pool holds no payloads, and each block is read where it
    is decoded); being one array, not items and their rows, a draw costs a few passes
    over it, whatever the items."""
    live = np.empty(0, np.int64)
    size = align  # numbers per draw at the end: the most that came in at once
    for ids in numbers:
        if not len(ids):
            continue
        size = max(size, len(ids))
        live = np.concatenate([live, ids])
        going = (len(live) - buffer) // align * align
        if going <= 0:
            continue
        out = rng.choice(len(live), going, replace=False)  # in a random order
        yield live[out]
        keep = np.ones(len(live), bool)
        keep[out] = False
        live = live[keep]
    rest = rng.permutation(len(live))
    for a in range(0, len(rest), size):
        yield live[rest[a : a + size]]


def _positions(held: dict[int, Any], ids: np.ndarray) -> np.ndarray:
    """The position in `held` (in its order) of each item id."""
    keys = np.fromiter(held, np.int64, len(held))
    sorter = np.argsort(keys)
    return sorter[np.searchsorted(keys, ids, sorter=sorter)]


def _gather(
    held: dict[int, Block], ids: np.ndarray, rows: np.ndarray, spares: Spares | None = None
) -> Block:
    """Row k of the output is row rows[k] of held block ids[k]. Bytes columns are copied
    from every block in one core call, straight into place; dense columns per block,
    straight into place; the others are gathered per block, joined, and put in order."""
    n = len(ids)
    place = np.arange(n)
    first = held[int(ids[0])].cols if n else {}
    cols: Batch = {}
    groups = None
    for name, sample in first.items():
        if isinstance(sample, BytesColumn):
            cols[name] = _gather_bytes(held, name, ids, rows, place, spares)
            continue
        if groups is None:
            groups = _groups(ids, rows, place)
        if isinstance(sample, np.ndarray):
            out = np.empty((n, *sample.shape[1:]), sample.dtype)
            for bid, r, p in groups:
                out[p] = held[bid].cols[name][r]
            cols[name] = out
        else:
            joined = concat_columns([take_column(held[bid].cols[name], r) for bid, r, _ in groups])
            placed = np.concatenate([p for _, _, p in groups])
            cols[name] = take_column(joined, np.argsort(placed))
    origins = None
    if all(b.origins is not None for b in held.values()):
        firsts = np.cumsum([0, *[b.n for b in held.values()]])
        joined = Origins.concat([b.origins for b in held.values()])  # type: ignore[misc]
        origins = joined.take(firsts[_positions(held, ids)] + rows)
    return Block(cols, n, origins=origins)


def _groups(ids: np.ndarray, rows: np.ndarray, place: np.ndarray) -> list:
    """(block id, its rows, their places) for each block the picks come from."""
    keys = ids - (int(ids.min()) if len(ids) else 0)
    if len(ids) and int(keys.max()) < 1 << 16:  # numpy sorts 16-bit keys stably by radix sort
        keys = keys.astype(np.uint16)
    order = np.argsort(keys, kind="stable")
    cuts = np.flatnonzero(np.diff(ids[order])) + 1
    return [(int(ids[g[0]]), rows[g], place[g]) for g in np.split(order, cuts) if len(g)]


def _gather_bytes(
    held: dict[int, Block],
    name: str,
    ids: np.ndarray,
    rows: np.ndarray,
    place: np.ndarray,
    spares: Spares | None = None,
) -> BytesColumn:
    """Bytes column `name`: row rows[k] of block ids[k] to row place[k], in one core call."""
    parts, which, starts, ends = _spans(held, name, ids, rows)
    lengths = ends - starts
    out_offsets = np.zeros(len(ids) + 1, np.int64)
    out_offsets[place + 1] = lengths
    np.cumsum(out_offsets, out=out_offsets)
    size = int(out_offsets[-1])
    data = spares.empty(size) if spares is not None else np.empty(size, np.uint8)
    framing.gather_parts(parts, which, starts, lengths, data, out_offsets[place])
    return BytesColumn.from_offsets(data, out_offsets, validate=False)


def _spans(
    held: dict[int, Block], name: str, ids: np.ndarray, rows: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """Where row rows[k] of block ids[k] of bytes column `name` lies: (the held blocks'
    data buffers, in the order of `held`; the buffer of each row; its start and end)."""
    columns = [b.cols[name] for b in held.values()]
    which = _positions(held, ids)  # the part of each pick
    firsts = np.cumsum([0, *[len(c.offsets) for c in columns]])
    offsets = np.concatenate([c.offsets for c in columns])
    at = firsts[which] + rows
    return [c.data for c in columns], which, offsets[at], offsets[at + 1]


def fixed_rows(spec: Any) -> frozenset[str]:
    """The columns of a spec whose rows have one shape and dtype in every batch (FixedLen
    numbers, tn.Raw with a known shape): the ones `RowBlocks` writes into place."""
    if not isinstance(spec, dict):
        return frozenset()
    fixed = set(raw_rows(spec))
    for name, feature in spec.items():
        if isinstance(feature, FixedLen) and feature.dtype != "bytes":
            fixed.add(name)
    return frozenset(fixed)


def raw_rows(spec: Any) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """{name: (row shape, dtype)} of the spec's tn.Raw columns of a known shape: the ones
    the decoder writes straight into a block's rows (`Decoder.decode(into=...)`)."""
    if not isinstance(spec, dict):
        return {}
    return {
        name: (tuple(f.shape), np.dtype(f.dtype))
        for name, f in spec.items()
        if isinstance(f, Raw) and f.shape is not None and -1 not in f.shape
    }


@dataclass(frozen=True)
class Piece:
    """A piece's decoded rows, where they go: rows first..first + n of the pass; `rest`
    holds its columns not yet in place (None for those `RowBlocks.place` copied)."""

    first: int
    n: int
    rest: dict[str, Any]
    nbytes: int
    origins: Origins | None

    def rows(self, a: int, b: int) -> Piece:
        rest = {k: None if c is None else slice_column(c, a, b) for k, c in self.rest.items()}
        origins = self.origins.slice(a, b) if self.origins is not None else None
        return Piece(self.first + a, b - a, rest, self.nbytes * (b - a) // max(self.n, 1), origins)


class RowBlocks:
    """Blocks of `block` rows put together from pieces decoded by several threads: each
    thread copies its piece's fixed-shape columns (`names`) straight into their rows of
    the block while they are still in its cache (`place`), so those columns of a block are
    written once, by the decoding threads, in parallel; `blocks` then hands the blocks out
    in order, the other columns of their pieces joined.

    Pieces are numbered in the order they are read (`numbered`); a block's arrays come from
    `spares` (the pages of blocks whose batches were dropped), made by whichever thread
    places the first of its rows."""

    def __init__(self, block: int, names: frozenset[str], spares: Spares, raw: dict | None = None):
        self.block = block
        self.names = names
        self.spares = spares
        self.raw = raw or {}  # columns a piece may be decoded into (`target`)
        self._arrays: dict[int, dict[str, np.ndarray]] = {}
        self._lock = threading.Lock()

    def numbered(self, pieces: Iterable[Any], size: Callable[[Any], int] = len) -> Iterator:
        """(first row, piece) for each piece, rows counted by `size`."""
        first = 0
        for piece in pieces:
            yield first, piece
            first += size(piece)

    def _array(self, k: int, name: str, row_shape: tuple, dtype: np.dtype) -> np.ndarray:
        with self._lock:
            arrays = self._arrays.setdefault(k, {})
            out = arrays.get(name)
            if out is None:
                shape = (self.block, *row_shape)
                size = math.prod(shape) * dtype.itemsize
                out = arrays[name] = self.spares.empty(size).view(dtype).reshape(shape)
        if out.shape[1:] != tuple(row_shape) or out.dtype != dtype:
            raise RuntimeError(f"column {name!r} changed shape between pieces")
        return out

    def target(self, first: int, n: int) -> dict[str, np.ndarray]:
        """Rows first..first + n of the blocks' tn.Raw arrays, for the decoder to write
        into, when they lie in one block that is not the piece itself (else {})."""
        k, r = divmod(first, self.block)
        if not n or r + n > self.block or n == self.block:
            return {}
        return {
            name: self._array(k, name, shape, dtype)[r : r + n]
            for name, (shape, dtype) in self.raw.items()
        }

    def place(
        self,
        first: int,
        cols: Batch,
        nbytes: int,
        origins: Origins | None,
        placed: dict[str, np.ndarray] | None = None,
    ) -> Piece:
        """Copy the piece's columns in `names` to rows first.. of their blocks (but those
        decoded into `placed`, the `target` they were given); the Piece that `blocks`
        takes (the other columns as they are)."""
        placed = placed or {}
        n = len(next(iter(cols.values()))) if cols else 0
        whole = n and n % self.block == 0 and first % self.block == 0  # whole blocks: no copy
        rest: dict[str, Any] = {}
        for name, col in cols.items():
            if whole or name not in self.names or not isinstance(col, np.ndarray):
                rest[name] = col
                continue
            if col is placed.get(name):  # decoded where it belongs
                rest[name] = None
                continue
            a = 0
            while a < n:
                k, r = divmod(first + a, self.block)
                m = min(n - a, self.block - r)
                out = self._array(k, name, col.shape[1:], col.dtype)
                np.copyto(out[r : r + m], col[a : a + m])
                a += m
            rest[name] = None
        return Piece(first, n, rest, nbytes, origins)

    def blocks(self, pieces: Iterable[tuple[Piece, BaseException | None]]) -> Iterator[Block]:
        """The blocks, in order, from the pieces in order (each already placed). A piece
        that comes with an error ends the pass: the rows before it, then the error."""
        parts: list[Piece] = []
        have = 0
        k = 0
        for piece, error in pieces:
            a = 0
            while a < piece.n:
                m = min(piece.n - a, self.block - have)
                parts.append(piece if m == piece.n else piece.rows(a, a + m))
                have += m
                a += m
                if have == self.block:
                    yield self._join(k, parts, have)
                    parts, have, k = [], 0, k + 1
            if error is not None:
                if have:
                    yield self._join(k, parts, have)
                raise error
        if have:
            yield self._join(k, parts, have)

    def _join(self, k: int, parts: list[Piece], n: int) -> Block:
        with self._lock:
            arrays = self._arrays.pop(k, {})
        cols: Batch = {}
        for name, col in parts[0].rest.items():
            if col is None:
                cols[name] = arrays[name][:n]
            else:
                cols[name] = concat_columns([p.rest[name] for p in parts])
        known = [p.origins for p in parts if p.origins is not None]
        origins = Origins.concat(known) if len(known) == len(parts) else None
        return Block(cols, n, sum(p.nbytes for p in parts), origins)
