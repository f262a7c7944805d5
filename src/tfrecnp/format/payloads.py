"""Record payloads in batches: `RecordBatch`, the one type every reader hands out and the
decoder takes, and `Origins`, where each of its rows came from.

A batch holds n payloads, each a span of a buffer: payload i is ``data[starts[i]:ends[i]]``.
The spans lie back to back when the batch is *packed* (``offsets`` is then set, and record i
is ``data[offsets[i]:offsets[i + 1]]``: what users, writers and `BytesColumn` take); apart,
in the TFRecord frames they were read in (a pass decodes big records there, no copy); or in
several buffers (``data`` a list, ``which[i]`` the buffer of payload i: the rows leaving a
shuffle pool, left where the pool holds them). Code that needs one kind asks for it
(`packed()`, `checked()`); the decoder reads every kind where it lies without asking which.

Every row has an origin, kept one way: a location ``file << LOC_BITS | record`` into a
table of paths, so slicing, joining and shuffling a batch carry each row's file and record
along, and an error about any row names the right ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from .._core import framing
from .._util.offsets import offsets_of
from ..errors import SALVAGE_HINT, CorruptRecordError
from .frames import HEADER_BYTES, payload_crc_mismatch

__all__ = ["LOC_BITS", "LOC_MASK", "Origins", "RecordBatch"]

LOC_BITS = 40  # a row's location: file number << LOC_BITS | record number in that file
LOC_MASK = (1 << LOC_BITS) - 1
UNKNOWN = "<memory>"  # the path of rows made from payloads in memory


class Origins:
    """Where each row of a batch came from: row r is record ``locs[r] & LOC_MASK`` of file
    ``paths[locs[r] >> LOC_BITS]``. It holds no payload bytes, so what keeps it to name
    rows in messages (a decoded block) does not keep the payloads alive."""

    __slots__ = ("locs", "paths")

    def __init__(self, paths: Sequence[str], locs: np.ndarray):
        self.paths = paths
        self.locs = locs

    @classmethod
    def run(cls, path: str, record: int, n: int) -> Origins:
        """n consecutive records of one file, from record `record`."""
        return cls((path,), np.arange(record, record + n, dtype=np.int64))

    @classmethod
    def from_runs(cls, runs: Sequence[tuple[int, str, int]], n: int) -> Origins:
        """From (first row, path, record) runs of consecutive records; rows before the
        first run (or all, without runs) are numbered as records of an unknown file."""
        paths = list(dict.fromkeys(path for _, path, _ in runs))
        locs = np.arange(n, dtype=np.int64)
        if not runs or runs[0][0] > 0:
            paths.append(UNKNOWN)
            locs |= (len(paths) - 1) << LOC_BITS
        ends = [first for first, _, _ in runs[1:]] + [n] if runs else []
        for (first, path, record), end in zip(runs, ends, strict=True):
            file = paths.index(path) << LOC_BITS
            locs[first:end] = np.arange(record, record + end - first, dtype=np.int64) | file
        return cls(tuple(paths), locs)

    def __len__(self) -> int:
        return len(self.locs)

    def where(self, row: int) -> tuple[str, int]:
        """(path, record number in that file) of row `row`."""
        loc = int(self.locs[row])
        return self.paths[loc >> LOC_BITS], loc & LOC_MASK

    def runs(self) -> tuple[tuple[int, str, int], ...]:
        """(first row, path, record) for each run of consecutive records of one file."""
        locs = self.locs
        if not len(locs):
            return ()
        breaks = np.flatnonzero(np.diff(locs) != 1) + 1
        return tuple((r, *self.where(r)) for r in [0, *breaks.tolist()])

    def slice(self, a: int, b: int) -> Origins:
        return Origins(self.paths, self.locs[a:b])

    def take(self, rows: np.ndarray) -> Origins:
        return Origins(self.paths, self.locs[rows])

    @classmethod
    def concat(cls, parts: Sequence[Origins]) -> Origins:
        """The rows of each part, in order; parts naming different files share one table."""
        if len(parts) == 1:
            return parts[0]
        paths = parts[0].paths if parts else ()
        if all(p.paths is paths or p.paths == paths for p in parts):
            return cls(paths, np.concatenate([p.locs for p in parts]) if parts else _NO_LOCS)
        table: dict[str, int] = {}
        locs = []
        for p in parts:
            files = np.array([table.setdefault(path, len(table)) for path in p.paths], np.int64)
            locs.append(files[p.locs >> LOC_BITS] << LOC_BITS | (p.locs & LOC_MASK))
        return cls(tuple(table), np.concatenate(locs))


_NO_LOCS = np.empty(0, np.int64)


def _first_bad_payload(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> int:
    """`framing.check_payloads`, walking the buffer in address order: spans in a shuffled
    order (rows read by position) check 2.3x slower in their own order (each jump to a far
    span starts the prefetcher afresh). Damage found is then looked for in their order."""
    if len(starts) < 2 or bool((starts[1:] >= starts[:-1]).all()):
        return framing.check_payloads(data, starts, ends)
    order = np.argsort(starts)
    if framing.check_payloads(data, starts[order], ends[order]) < 0:
        return -1
    return framing.check_payloads(data, starts, ends)


class RecordBatch:
    """n record payloads, each a span of a buffer, each with its origin (see the module's
    docstring for the kinds of spans).

    ``RecordBatch(data, offsets, origins)`` makes a packed batch: record i is
    ``data[offsets[i]:offsets[i + 1]]``; origins is an `Origins`, or (first row, path,
    record) runs. `RecordBatch.spans` makes the others. ``offset``: where data[0] lies in
    its file's (decompressed) stream, for payloads still in their frames; unless
    ``verified``, their CRCs are yet to be checked, by `verify()` or `checked()`, in
    whichever thread has time for it.
    """

    __slots__ = ("data", "ends", "offset", "offsets", "origins", "starts", "verified", "which")

    def __init__(
        self,
        data: np.ndarray,
        offsets: np.ndarray,
        origins: Origins | Sequence[tuple[int, str, int]] = (),
    ):
        self.data = data
        self.offsets = offsets
        self.starts = offsets[:-1]
        self.ends = offsets[1:]
        self.which: np.ndarray | None = None
        n = len(offsets) - 1
        self.origins = origins if isinstance(origins, Origins) else Origins.from_runs(origins, n)
        self.offset = 0
        self.verified = True

    @classmethod
    def spans(
        cls,
        data: np.ndarray | list[np.ndarray],
        starts: np.ndarray,
        ends: np.ndarray,
        origins: Origins,
        *,
        which: np.ndarray | None = None,
        offset: int = 0,
        verified: bool = True,
    ) -> RecordBatch:
        """Payloads that lie apart: `data[starts[i]:ends[i]]`, or with `which`,
        `data[which[i]][starts[i]:ends[i]]` of a list of buffers."""
        batch = cls.__new__(cls)
        batch.data, batch.offsets, batch.starts, batch.ends = data, None, starts, ends
        batch.which, batch.origins, batch.offset, batch.verified = which, origins, offset, verified
        return batch

    @classmethod
    def pool(cls, held: Sequence[RecordBatch], which: np.ndarray, rows: np.ndarray) -> RecordBatch:
        """Row rows[k] of the packed batch held[which[k]], for each k, left where it lies:
        no payload is copied (`packed()` copies them together)."""
        firsts = np.cumsum([0, *[len(b) for b in held]])
        starts = np.concatenate([b.starts for b in held])
        ends = np.concatenate([b.ends for b in held])
        at = firsts[which] + rows
        origins = Origins.concat([b.origins for b in held]).take(at)
        data = [b.data for b in held]
        return cls.spans(data, starts[at], ends[at], origins, which=which.astype(np.int64))

    def __len__(self) -> int:
        return len(self.starts)

    def __repr__(self) -> str:
        kind = "packed" if self.offsets is not None else "spans"
        return f"RecordBatch({len(self)} records, {self.nbytes} bytes, {kind})"

    @property
    def lengths(self) -> np.ndarray:
        return self.ends - self.starts

    @property
    def nbytes(self) -> int:
        """Payload bytes."""
        if self.offsets is not None:
            return int(self.offsets[-1] - self.offsets[0])
        return int((self.ends - self.starts).sum())

    def where(self, row: int) -> tuple[str, int]:
        """(path, record index in that file) of row `row` of this batch."""
        return self.origins.where(row)

    def __getitem__(self, i: int) -> bytes:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"record {i} out of range for a batch of {n}")
        i %= n
        data = self.data if self.which is None else self.data[int(self.which[i])]
        return data[self.starts[i] : self.ends[i]].tobytes()

    def __iter__(self) -> Iterator[bytes]:
        if self.offsets is None:
            return iter(self.packed())
        data, offsets = self.data, self.offsets.tolist()
        if len(offsets) > 1 and offsets[-1] - offsets[0] < 2048 * (len(offsets) - 1):
            # short records: one copy of the batch, then bytes slices, a third faster
            raw = data.tobytes()
            return map(raw.__getitem__, map(slice, offsets[:-1], offsets[1:]))
        return (data[a:b].tobytes() for a, b in itertools.pairwise(offsets))

    def slice(self, start: int, stop: int) -> RecordBatch:
        """Rows start..stop, as views on the same buffer(s) (no copy)."""
        origins = self.origins.slice(start, stop)
        if self.offsets is not None:
            offsets = self.offsets[start : stop + 1]
            data = self.data[offsets[0] : offsets[-1]]
            return RecordBatch(data, offsets - offsets[0], origins)
        which = self.which[start:stop] if self.which is not None else None
        return RecordBatch.spans(
            self.data,
            self.starts[start:stop],
            self.ends[start:stop],
            origins,
            which=which,
            offset=self.offset,
            verified=self.verified,
        )

    @classmethod
    def concat(cls, batches: Sequence[RecordBatch]) -> RecordBatch:
        """The batches' rows in order, packed into one buffer."""
        if len(batches) == 1:
            return batches[0].packed()
        batches = [b.packed() for b in batches]
        data = np.concatenate([b.data for b in batches]) if batches else np.empty(0, np.uint8)
        offsets = [np.zeros(1, np.int64)]
        base = 0
        for b in batches:
            offsets.append(b.offsets[1:] - b.offsets[0] + base)
            base += b.nbytes
        return cls(data, np.concatenate(offsets), Origins.concat([b.origins for b in batches]))

    def packed(self, spares=None) -> RecordBatch:
        """The payloads back to back in one buffer (this batch, when they already are;
        a copy otherwise, its buffer from `spares` when given), CRCs checked."""
        if self.offsets is not None:
            return self
        batch = self.checked()
        lengths = batch.ends - batch.starts
        offsets = offsets_of(lengths)
        size = int(offsets[-1])
        data = spares.empty(size) if spares is not None else np.empty(size, np.uint8)
        if batch.which is None:
            framing.gather_ranges(batch.data, batch.starts, lengths, data)
        else:
            framing.gather_parts(batch.data, batch.which, batch.starts, lengths, data, offsets[:-1])
        return RecordBatch(data, offsets, batch.origins)

    def verify(self) -> tuple[RecordBatch, CorruptRecordError | None]:
        """(the records before the first whose payload CRC fails, verified; the error
        naming that one, or None). Only payloads still in their frames can be unverified."""
        if self.verified:
            return self, None
        bad = _first_bad_payload(self.data, self.starts, self.ends)
        good = RecordBatch.spans(
            self.data,
            self.starts[: bad if bad >= 0 else None],
            self.ends[: bad if bad >= 0 else None],
            self.origins if bad < 0 else self.origins.slice(0, bad),
            offset=self.offset,
        )
        if bad < 0:
            return good, None
        a, b = int(self.starts[bad]), int(self.ends[bad])
        path, record = self.where(bad)
        error = CorruptRecordError(
            payload_crc_mismatch(memoryview(self.data), a - HEADER_BYTES, b - a),
            path=path,
            record=record,
            offset=self.offset + a - HEADER_BYTES,
            hint=SALVAGE_HINT,
        )
        return good, error

    def checked(self) -> RecordBatch:
        """This batch with every payload CRC checked: raises CorruptRecordError at the
        first that fails."""
        good, damage = self.verify()
        if damage is not None:
            raise damage
        return good
