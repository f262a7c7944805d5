"""Batches of payloads gathered out of frames: the compiled core copies each selected
payload into the batch's buffer and checks its CRC in the same pass. Damaged records raise,
or are dropped and listed with on_error="skip" / "warn"; `rebatch` then tops batches up so
that only the last one is short."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from .._core import framing
from ..errors import SALVAGE_HINT, CorruptRecordError
from ..format.frames import OVERHEAD_BYTES, payload_crc_mismatch
from ..format.reader import RecordBatch
from .files import Files, Frames, LocatedBatch, read_span


def gather_range(files: Files, a: int, b: int) -> RecordBatch:
    """Records a..b (global numbers) read file piece by piece and gathered."""
    return gather(files, [(fr, None) for fr in spans(files, a, b)])


def spans(files: Files, a: int, b: int) -> Iterator[Frames]:
    files.index()
    while a < b:
        f = int(files.locate(np.asarray([a]))[0])
        end = min(b, int(files.firsts[f + 1]))
        first = int(files.firsts[f])
        if end > a:
            yield read_span(files, f, a - first, end - first)
        a = max(end, a + (end <= a))


def gather(files: Files, parts: list[tuple[Frames, np.ndarray | None]]) -> RecordBatch:
    """One batch of payloads from the selected frames of each part, in order, checking
    payload CRCs as they are copied. Damaged records raise, or are dropped (and listed in
    corruptions) with on_error="skip" / "warn"."""
    picks = []
    for frames, sel in parts:
        sel = np.arange(len(frames)) if sel is None else np.asarray(sel, np.int64)
        picks.append((frames, sel))
    total = sum(int(fr.lengths[s].sum()) for fr, s in picks)
    rows = sum(len(s) for _, s in picks)
    data = files.spares.empty(total)
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
            damaged(files, frames, int(sel[bad]))
            sel = sel[bad + 1 :]
    return LocatedBatch(data[:pos], offsets[: row + 1], (), locs[:row], files)


def damaged(files: Files, frames: Frames, k: int) -> None:
    """Report frame k, whose payload CRC failed, to the files' damage policy: it raises, or
    the gather steps over the frame."""
    start, length = int(frames.starts[k]), int(frames.lengths[k])
    reason = payload_crc_mismatch(frames.buf, start, length)
    path, record, offset = files.where(int(frames.locs[k]))
    error = CorruptRecordError(reason, path=path, record=record, offset=offset, hint=SALVAGE_HINT)
    files.damage.report(error, length + OVERHEAD_BYTES, stacklevel=3)


def rebatch(parts: Iterable[RecordBatch], batch_size: int) -> Iterator[RecordBatch]:
    """Batches of exactly batch_size records (the last may be short) from parts of any size.
    A part of exactly batch_size with nothing pending passes through untouched; the others
    are cut and joined keeping each row's location (LocatedBatch.locs)."""
    pending: list[RecordBatch] = []
    count = 0
    for part in parts:
        while len(part):
            take = min(batch_size - count, len(part))
            pending.append(slice_batch(part, 0, take) if take < len(part) else part)
            part = (
                slice_batch(part, take, len(part)) if take < len(part) else slice_batch(part, 0, 0)
            )
            count += take
            if count == batch_size:
                yield concat_batches(pending)
                pending, count = [], 0
    if pending:
        yield concat_batches(pending)


def slice_batch(batch: RecordBatch, start: int, stop: int) -> RecordBatch:
    part = batch.slice(start, stop)
    if isinstance(batch, LocatedBatch) and batch.locs is not None:
        return LocatedBatch(
            part.data, part.offsets, part.origins, batch.locs[start:stop], batch.files
        )
    return part


def concat_batches(batches: list[RecordBatch]) -> RecordBatch:
    joined = RecordBatch.concat(batches)
    if len(batches) < 2 or not all(
        isinstance(b, LocatedBatch) and b.locs is not None for b in batches
    ):
        return joined
    locs = np.concatenate([b.locs for b in batches])
    return LocatedBatch(joined.data, joined.offsets, joined.origins, locs, batches[0].files)
