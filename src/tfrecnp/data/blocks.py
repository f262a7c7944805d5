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
where the pool holds them, a PooledBatch the decoder reads there), and is decoded as a
block. Every record is emitted once, the order is a pure function of the seed, and memory
is the pool plus a block or two.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core import framing
from .._util.sizing import records_per_batch
from .._util.spares import Spares
from ..example.columns import BytesColumn, Column, concat_columns, slice_column, take_column
from ..format.reader import PooledBatch, RecordBatch

Batch = dict[str, Column]

BLOCK_BYTES = 4 << 20  # payload bytes read and decoded together
BLOCK_RECORDS = (1, 1 << 16)  # ... but at least / at most this many records per block


@dataclass(frozen=True)
class Block:
    """Decoded records: `cols` holds `n` rows of each feature; `nbytes`, the payload bytes
    they were decoded from (for progress lines); where(row), the row's (file, record
    number), for messages."""

    cols: Batch
    n: int
    nbytes: int = 0
    where: Callable[[int], tuple[str, int]] | None = None

    def rows(self, a: int, b: int) -> Batch:
        return {name: slice_column(col, a, b) for name, col in self.cols.items()}


def block_records(batch_size: int, mean_record_bytes: float) -> int:
    """Records per block: about BLOCK_BYTES of payload, within BLOCK_RECORDS, rounded to a
    whole number of batches (at least one)."""
    return records_per_batch(BLOCK_BYTES, mean_record_bytes, BLOCK_RECORDS, multiple=batch_size)


def concat_blocks(blocks: list[Block]) -> Block:
    if len(blocks) == 1:
        return blocks[0]
    names = blocks[0].cols
    cols = {name: concat_columns([b.cols[name] for b in blocks]) for name in names}
    firsts = np.cumsum([0, *[b.n for b in blocks]])
    wheres = [b.where for b in blocks]

    def where(r: int) -> tuple[str, int]:
        k = int(np.searchsorted(firsts, r, side="right")) - 1
        return wheres[k](r - int(firsts[k]))  # type: ignore[misc]

    known = all(w is not None for w in wheres)
    return Block(cols, int(firsts[-1]), sum(b.nbytes for b in blocks), where if known else None)


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


def shuffle_blocks(
    blocks: Iterable[Block],
    buffer: int,
    rng: np.random.Generator,
    align: int = 1,
    spares: Spares | None = None,
    take: Callable[[dict[int, Block], np.ndarray, np.ndarray], Any] | None = None,
) -> Iterator[Any]:
    """The rows of `blocks` in a random order drawn through a pool of `buffer` rows: each
    block joins the pool, and once it holds more than `buffer` rows, a multiple of `align`
    of them leave it (as many as the blocks brought, rounded down: the pool holds up to
    buffer + align rows), picked uniformly from the whole pool, gathered per column from
    the blocks that hold them and put in a random order. The rest of the pool leaves,
    shuffled, at the end, in blocks as large as the largest that came in. With `align` the
    block size (a whole number of batches), no batch straddles two blocks, so none is
    copied together from two.

    The pool is a list of blocks plus the (block, row) of every row still in it; a block is
    dropped once none of its rows remain. When the blocks held grow past twice what the
    pool needs, the rows left in mostly emptied blocks are copied into one new block, so a
    row is copied about twice however large the buffer. Bytes columns are gathered into
    buffers from `spares` when given (the pages of blocks already dropped). take(held,
    blocks, rows), when given, hands out the rows leaving instead of a gathered Block."""
    gather = functools.partial(_gather, spares=spares)

    def gathered(held: dict[int, Block], ids: np.ndarray, rows: np.ndarray) -> Block:
        return gather(held, ids, rows, np.arange(len(ids)))

    take = take or gathered
    held: dict[int, Block] = {}
    size = align  # rows per block leaving at the end: the largest block that came in
    live_b = np.empty(0, np.int64)  # block id of each row in the pool
    live_r = np.empty(0, np.int64)  # its row in that block
    next_id = 0
    for block in blocks:
        if not block.n:
            continue
        held[next_id] = block
        size = max(size, block.n)
        live_b = np.concatenate([live_b, np.full(block.n, next_id, np.int64)])
        live_r = np.concatenate([live_r, np.arange(block.n, dtype=np.int64)])
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
        held = {int(i): held[int(i)] for i in ids}  # blocks emptied are dropped
        if sum(b.n for b in held.values()) > 2 * (buffer + align) + block.n:  # compact the pool
            sizes = np.array([held[int(i)].n for i in ids])
            sparse = ids[counts * 2 < sizes]  # blocks less than half full
            if not len(sparse):
                continue
            move = np.isin(live_b, sparse)
            kept = int(move.sum())
            merged = gather(held, live_b[move], live_r[move], np.arange(kept))
            for i in sparse.tolist():
                del held[i]
            held[next_id] = merged
            live_b[move] = next_id
            live_r[move] = np.arange(kept)
            next_id += 1
    rest = rng.permutation(len(live_b))  # a block at a time: never the whole pool at once
    for a in range(0, len(rest), size):
        picks = rest[a : a + size]
        yield take(held, live_b[picks], live_r[picks])


def shuffle_records(
    batches: Iterable[RecordBatch],
    buffer: int,
    rng: np.random.Generator,
    align: int = 1,
    spares: Spares | None = None,
    pooled: bool = False,
) -> Iterator[RecordBatch | PooledBatch]:
    """Record payloads in a random order drawn through a pool of `buffer` records (see
    shuffle_blocks): records are shuffled before they are decoded, as tf.data shuffles
    serialized records, so each is copied once in the pool and decoded once. pooled: the
    records leaving are handed out where the pool holds them (PooledBatch), not copied
    together: for big records, whose decoding copies each once anyway."""
    blocks = (
        Block(
            {"": BytesColumn.from_offsets(b.data, b.offsets, validate=False)},
            len(b),
            where=b.locator(),
        )
        for b in batches
    )
    if not pooled:
        for block in shuffle_blocks(blocks, buffer, rng, align, spares):
            payloads = block.cols[""]
            yield PlacedBatch(payloads.data, payloads.offsets, place=block.where)
        return
    yield from shuffle_blocks(blocks, buffer, rng, align, spares, take=_pooled)


def _pooled(held: dict[int, Block], ids: np.ndarray, rows: np.ndarray) -> PooledBatch:
    """Rows (ids[k], rows[k]) of the held payload blocks, left where they are."""
    parts, which, starts, ends = _spans(held, "", ids, rows)
    wheres = [b.where for b in held.values()]

    def place(r: int) -> tuple[str, int]:
        return wheres[int(which[r])](int(rows[r]))  # type: ignore[misc]

    return PooledBatch(parts, which, starts, ends, place)


@dataclass(frozen=True)
class PlacedBatch(RecordBatch):
    """Payloads drawn from many batches: place(row) names each row's file and record."""

    place: Callable[[int], tuple[str, int]] | None = None

    def where(self, row: int) -> tuple[str, int]:
        return self.place(row) if self.place is not None else super().where(row)

    def locator(self) -> Callable[[int], tuple[str, int]]:
        return self.place if self.place is not None else super().locator()


def _gather(
    held: dict[int, Block],
    ids: np.ndarray,
    rows: np.ndarray,
    place: np.ndarray,
    spares: Spares | None = None,
) -> Block:
    """The rows (ids[k], rows[k]) of the held blocks, row k at place[k] of the output.
    Bytes columns (the payloads of a shuffle pool) are copied from every block in one core
    call, straight into place; dense columns per block, straight into place; the others
    are gathered per block, joined, and put in order."""
    n = len(ids)
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
    wheres = {bid: b.where for bid, b in held.items()}
    known = all(w is not None for w in wheres.values())

    def where(r: int) -> tuple[str, int]:
        k = int(np.flatnonzero(place == r)[0])  # which pick went to row r (for messages)
        return wheres[int(ids[k])](int(rows[k]))  # type: ignore[misc]

    return Block(cols, n, where=where if known else None)


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
    keys = np.fromiter(held, np.int64, len(held))
    sorter = np.argsort(keys)
    which = sorter[np.searchsorted(keys, ids, sorter=sorter)]  # the part of each pick
    firsts = np.cumsum([0, *[len(c.offsets) for c in columns]])
    offsets = np.concatenate([c.offsets for c in columns])
    at = firsts[which] + rows
    return [c.data for c in columns], which, offsets[at], offsets[at + 1]
