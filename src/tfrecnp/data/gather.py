"""Batches of payloads gathered out of frames: the compiled core copies each selected
payload into the batch's buffer and checks its CRC in the same pass. Damaged records raise,
or are dropped and listed with on_error="skip" / "warn"; `rebatch` then tops batches up so
that only the last one is short."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from .._core import framing
from ..errors import SALVAGE_HINT, CorruptRecordError
from ..format.frames import HEADER_BYTES, OVERHEAD_BYTES, payload_crc_mismatch
from ..format.payloads import Origins, RecordBatch
from .files import Files, read_span


def gather_range(files: Files, a: int, b: int) -> RecordBatch:
    """Records a..b (global numbers) read file piece by piece and gathered."""
    return gather(files, [(fr, None) for fr in spans(files, a, b)])


def spans(files: Files, a: int, b: int) -> Iterator[RecordBatch]:
    files.index()
    while a < b:
        f = int(files.locate(np.asarray([a]))[0])
        end = min(b, int(files.firsts[f + 1]))
        first = int(files.firsts[f])
        if end > a:
            yield read_span(files, f, a - first, end - first)
        a = max(end, a + (end <= a))


def gather(files: Files, parts: list[tuple[RecordBatch, np.ndarray | None]]) -> RecordBatch:
    """One packed batch of the selected payloads of each part (payloads in their frames,
    read by position), in order, checking payload CRCs as they are copied. Damaged records
    raise, or are dropped (and listed in corruptions) with on_error="skip" / "warn"."""
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
            starts, ends = frames.starts[sel], frames.ends[sel]
            k = len(sel)
            lengths = ends - starts
            size = int(lengths.sum())
            bad = framing.gather_payloads(
                frames.data,
                starts - HEADER_BYTES,
                lengths,
                data[pos : pos + size],
                offsets[row : row + k + 1],
                not frames.verified,
                pos,
            )
            good = k if bad < 0 else bad
            locs[row : row + good] = frames.origins.locs[sel[:good]]
            row += good
            pos = int(offsets[row])
            if bad < 0:
                break
            damaged(files, frames, int(sel[bad]))
            sel = sel[bad + 1 :]
    return RecordBatch(data[:pos], offsets[: row + 1], Origins(files.paths, locs[:row]))


def damaged(files: Files, frames: RecordBatch, k: int) -> None:
    """Report frame k, whose payload CRC failed, to the files' damage policy: it raises, or
    the gather steps over the frame."""
    start, length = int(frames.starts[k]) - HEADER_BYTES, int(frames.lengths[k])
    reason = payload_crc_mismatch(frames.data, start, length)
    path, record, offset = files.place(int(frames.origins.locs[k]))
    error = CorruptRecordError(reason, path=path, record=record, offset=offset, hint=SALVAGE_HINT)
    files.damage.report(error, length + OVERHEAD_BYTES, stacklevel=3)


def rebatch(parts: Iterable[RecordBatch], batch_size: int) -> Iterator[RecordBatch]:
    """Batches of exactly batch_size records (the last may be short) from parts of any size.
    A part of exactly batch_size with nothing pending passes through untouched; the others
    are cut and joined, each row keeping its origin."""
    pending: list[RecordBatch] = []
    count = 0
    for part in parts:
        while len(part):
            take = min(batch_size - count, len(part))
            pending.append(part.slice(0, take) if take < len(part) else part)
            part = part.slice(take, len(part)) if take < len(part) else part.slice(0, 0)
            count += take
            if count == batch_size:
                yield RecordBatch.concat(pending)
                pending, count = [], 0
    if pending:
        yield RecordBatch.concat(pending)
