"""Shuffling with a buffer of N records (`batches(shuffle=N)`), over frames: memory stays
near N records whatever the dataset's size, and any file works, compressed ones included."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from ..format.reader import RecordBatch
from .files import Files, Frames, frames_of
from .gather import gather

COMPACT_SLACK = 1 << 20  # a shuffle buffer compacts when its chunks hold this much over 2x


class ShufflePool:
    """A shuffle buffer over frames: it holds `size` records (as (chunk, frame) pairs into the
    chunks read so far); each batch takes batch_size of them at random and their slots are
    refilled from the source. A chunk is dropped when none of its records remain; when the
    chunks held grow past twice the bytes of the records in the pool, the pool is compacted
    into one new chunk, so memory stays near `size` records."""

    def __init__(self, files: Files, source: Iterator[Frames], batch_size: int, size: int, rng):
        self.files, self.source = files, source
        self.batch_size, self.size, self.rng = batch_size, size, rng
        self.chunks: dict[int, Frames] = {}
        self.live: dict[int, int] = {}
        self.next_id = 0
        self.pool_c = np.empty(0, np.int64)
        self.pool_r = np.empty(0, np.int64)
        self.held = 0  # bytes of the chunks held
        self.pooled = 0  # bytes of the frames in the pool
        self.exhausted = False

    def _add(self, frames: Frames) -> tuple[np.ndarray, np.ndarray]:
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
        batch = gather(self.files, [(self.chunks[cid], rows) for cid, rows in groups])
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
        batch = gather(self.files, [(self.chunks[cid], rows) for cid, rows in groups])
        self.chunks.clear()
        self.live.clear()
        self.held = self.pooled = 0
        self.pool_c, self.pool_r = self._add(frames_of(batch, batch.locs))
