"""Record payloads -> NumPy columns: a spec compiled once, batches decoded in one call.

`Decoder(spec)` turns a spec into a plan for the compiled core (`tfrecnp._core.decode`);
`decoder.decode(batch)` decodes a `RecordBatch` (or a list of payloads, a `FrameBatch` of
records still in the frames they were read into, or a `PooledBatch` of records where a
shuffle pool holds them) into a ``dict[str, column]``. The core walks each batch twice
without the GIL -- once to find and check every spec feature of every record, once to copy
the values into outputs sized exactly from the first pass -- and large batches are split
into chunks decoded by parallel threads. This module sizes the outputs, turns the core's
status codes into errors that name file, record, feature and byte, and wraps buffers as
columns.

Which rules are protobuf's and which TensorFlow's: unknown fields are skipped (protobuf;
TensorFlow's fast parser rejects some), the last of duplicate map keys wins (both), a
feature present with an empty list is empty, not missing (TensorFlow), and a Feature
whose kind is not set counts as missing (TensorFlow).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core import decode as _core
from .._util.spares import Spares
from .._util.text import format_count, format_shape
from .._util.threads import CPUS, executor
from ..errors import CorruptRecordError, SchemaError
from ..format.reader import FrameBatch, Payloads, PooledBatch, RecordBatch
from .columns import BytesColumn, Column, Ragged
from .spec import (
    KIND_BYTES,
    KIND_DTYPES,
    KIND_FLOAT,
    KIND_INT64,
    KIND_NAMES,
    Feature,
    FixedLen,
    Raw,
    Spec,
    VarLen,
    as_spec,
)
from .spec import Sequence as SequenceSpec

__all__ = ["Decoder", "Survey", "decode", "survey"]

# (CPUS and executor live in _util.threads; they stay importable from here for callers
# not yet moved)

Batch = dict[str, Column]

CHUNK_MIN_BYTES = 64 << 10  # pieces of a batch decoded by parallel threads hold at least
CHUNK_MIN_RECORDS = 256  # this much; a batch is cut in up to 4 pieces per thread
PIECES_PER_THREAD = 4
TABLE_CACHE_RECORDS = 1 << 16  # scan tables up to this many records are reused
NAME_ENCODING = ("utf-8", "surrogateescape")
MALFORMED_HINT = (
    "the payload is not a valid tf.train.Example; if `tfrecnp verify` finds its CRCs "
    "intact, the writer produced it this way"
)

_KIND_WORD = {0: "nothing", **KIND_NAMES, 4: "mixed kinds"}
_WIRE_DTYPE = {KIND_FLOAT: np.dtype(np.float32), KIND_INT64: np.dtype(np.int64)}
_ONE_ROW = np.zeros((1, _core.ROW_FIELDS), np.int64)  # a batch of one, for _wrap


def _run_parallel(fn: Callable[[int], Any], count: int, workers: int) -> list:
    """[fn(0), ..., fn(count - 1)], computed by this thread and up to workers - 1 pool
    threads taking pieces from a shared counter. The caller never waits for a helper
    that has not started (on a busy machine it may not get a core for milliseconds): it
    does the work itself, and waits only for pieces a helper already took. Once it
    returns, no helper refers to fn any more (one that starts late finds nothing), so the
    buffers fn reads and fills are free for reuse (Spares) as soon as the caller drops
    them."""
    if count <= 1 or workers <= 1:
        return [fn(k) for k in range(count)]
    results: list[Any] = [None] * count
    errors: list[BaseException] = []
    lock = threading.Lock()
    taken = [0, 0]  # pieces taken, pieces finished
    finished = threading.Event()
    job = [fn]  # emptied when every piece is done

    def work() -> None:
        while True:
            with lock:
                k = taken[0]
                if k >= count:
                    return
                taken[0] += 1
                piece = job[0]
            try:
                results[k] = piece(k)
            except BaseException as e:  # re-raised by the caller
                errors.append(e)
            del piece  # not held past the last piece
            with lock:
                taken[1] += 1
                if taken[1] == count:
                    finished.set()

    pool = executor()
    for _ in range(min(workers, count) - 1):
        pool.submit(work)
    work()
    finished.wait()
    job.clear()
    if errors:
        raise errors[0]
    return results


@dataclass(frozen=True)
class _Compiled:
    """One spec feature as the plan sees it."""

    name: str
    spec: Feature
    section: int  # 0 Example features / context, 1 feature lists
    op: str
    kind: int
    count: int = 0
    divisor: int = 1
    raw_bytes: int = 0
    default: tuple[bytes, list[int] | None] | None = None
    outer: Feature | None = None  # a feature decoded as `spec`, then finished by outer

    @property
    def label(self) -> str:
        return f"feature list {self.name!r}" if self.section else f"feature {self.name!r}"


def _compile(name: str, f: Feature, section: int) -> _Compiled:
    base = f.decode_as() if not isinstance(f, (FixedLen, VarLen, Raw)) else None
    if base is not None:
        return dataclasses.replace(_compile(name, base, section), outer=f)
    kind = f.kind
    if isinstance(f, FixedLen):
        if section:
            return _Compiled(name, f, 1, "seq_bytes" if kind == KIND_BYTES else "seq", kind, f.size)
        default = None
        if f.default is not None:
            if kind == KIND_BYTES:
                values = [bytes(v) for v in f.default.reshape(-1)]
                default = (b"".join(values), [len(v) for v in values])
            else:
                default = (np.ascontiguousarray(f.default, _WIRE_DTYPE[kind]).tobytes(), None)
        op = "dense_bytes" if kind == KIND_BYTES else "dense"
        return _Compiled(name, f, 0, op, kind, f.size, default=default)
    if isinstance(f, VarLen):
        if section:
            op = "seq_var_bytes" if kind == KIND_BYTES else "seq_var"
        else:
            op = "var_bytes" if kind == KIND_BYTES else "var"
        return _Compiled(name, f, section, op, kind, divisor=f.size)
    if isinstance(f, Raw):
        row = math.prod(f.row_shape) * f.itemsize
        if section:
            return _Compiled(name, f, 1, "seq_raw", KIND_BYTES, 1, raw_bytes=row)
        if f.ragged:
            if row == 0:
                raise ValueError(f"feature {name!r}: {f.spell()} has rows of 0 bytes")
            return _Compiled(name, f, 0, "raw_var", KIND_BYTES, 1, divisor=row)
        if -1 in f.shape:
            known = math.prod(d for d in f.shape if d != -1) * f.itemsize
            if known == 0:
                raise ValueError(f"feature {name!r}: {f.spell()} cannot resolve its -1")
            return _Compiled(name, f, 0, "raw_any", KIND_BYTES, 1, divisor=known)
        return _Compiled(name, f, 0, "raw", KIND_BYTES, 1, raw_bytes=row)
    raise TypeError(f"feature {name!r}: the decoder does not know {type(f).__name__}")


def _as_batch(batch: RecordBatch | Iterable[bytes]) -> RecordBatch:
    if isinstance(batch, RecordBatch):
        data = batch.data
        offsets = batch.offsets
        if (
            data.dtype == np.uint8
            and data.ndim == 1
            and data.flags.c_contiguous
            and offsets.dtype == np.int64
            and offsets.flags.c_contiguous
        ):
            return batch
        return RecordBatch(
            np.ascontiguousarray(data.reshape(-1).view(np.uint8)),
            np.ascontiguousarray(offsets, dtype=np.int64),
            batch.origins,
        )
    if isinstance(batch, (bytes, bytearray, memoryview, str)):
        raise TypeError("decode takes a list of payloads or a RecordBatch, not one payload")
    payloads = [bytes(p) for p in batch]
    lengths = np.fromiter(map(len, payloads), np.int64, len(payloads))
    offsets = np.zeros(len(payloads) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return RecordBatch(np.frombuffer(b"".join(payloads), np.uint8), offsets)


class Decoder:
    """A spec compiled once into a decode plan; `decode(batch)` -> dict of columns.

    Reuse one Decoder for every batch of a dataset; it holds no per-batch state, so
    threads may share it.
    """

    def __init__(self, spec: Spec | Any, *, threads: int | None = None):
        self.spec = as_spec(spec)
        self.threads = threads
        if isinstance(self.spec, SequenceSpec):
            self.sequence = True
            parts = [(n, f, 0) for n, f in self.spec.context.items()]
            parts += [(n, f, 1) for n, f in self.spec.sequence.items()]
        else:
            self.sequence = False
            parts = [(n, f, 0) for n, f in self.spec.items()]
        self._features = [_compile(n, f, s) for n, f, s in parts]
        ones = [self._finisher(c) for c in self._features]
        self._ones = (
            None if None in ones else list(zip([c.name for c in self._features], ones, strict=True))
        )
        self._tables = Spares(limit=4)  # scan tables: one per block decoding at once
        # big outputs, reused once their batches are dropped; a few blocks' worth
        # (what a pass holds at once), so a whole dataset decoded and joined keeps no copy
        self._spares = Spares(limit=8)
        feats = self._features
        self._plan = _core.Plan(
            [c.name.encode(*NAME_ENCODING) for c in feats],
            [c.section for c in feats],
            [_core.OPS[c.op] for c in feats],
            [c.kind for c in feats],
            [c.count for c in feats],
            [c.divisor for c in feats],
            [c.raw_bytes for c in feats],
            [c.default for c in feats],
            self.sequence,
        )

    def __repr__(self) -> str:
        return f"Decoder({self.spec!r})"

    def __reduce__(self) -> tuple:
        # the compiled plan is rebuilt on unpickling (DataLoader workers, processes)
        return (_decoder, (self.spec, self.threads))

    def _table(self, n: int) -> np.ndarray:
        """The scan's (n, features, ROW_FIELDS) table, in a buffer reused from batch to
        batch once the last decode that used it is done (fresh memory costs a page fault
        per 4 KiB; measured: benchmarks/CONSTANTS.md, TABLE_CACHE_RECORDS)."""
        shape = (n, len(self._features), _core.ROW_FIELDS)
        if n > TABLE_CACHE_RECORDS:
            return np.empty(shape, np.int64)
        return self._tables.empty(8 * math.prod(shape)).view(np.int64).reshape(shape)

    # -- the two passes ------------------------------------------------------------

    def _workers(self, threads: int | None) -> int:
        workers = threads if threads is not None else self.threads
        return max(1, workers if workers is not None else CPUS)

    def _chunks(self, starts: np.ndarray, ends: np.ndarray, workers: int) -> list[tuple[int, int]]:
        """Record ranges of about equal payload bytes, one per piece decoded at once."""
        n = len(starts)
        pieces = min(workers * PIECES_PER_THREAD if workers > 1 else 1, n // CHUNK_MIN_RECORDS + 1)
        if pieces <= 1:  # one piece: no need to add up the bytes
            return [(0, n)]
        sizes = np.cumsum(ends - starts)  # records may lie anywhere (a pool's, several buffers)
        size = int(sizes[-1])
        pieces = min(pieces, size // CHUNK_MIN_BYTES + 1)
        if pieces <= 1:
            return [(0, n)]
        cuts = np.searchsorted(sizes, np.linspace(0, size, pieces + 1)[1:-1])
        bounds = [0, *sorted(set(int(c) for c in cuts if 0 < c < n)), n]
        return list(itertools.pairwise(bounds))

    def decode(self, batch: Payloads | Iterable[bytes], *, threads: int | None = None) -> Batch:
        """Decode every record of the batch; returns {name: column} in spec order.

        threads: how many chunks to decode at once (default: the Decoder's, else the
        number of cores); small batches always decode in one piece. A FrameBatch whose
        payload CRCs were left for later has them checked first (CorruptRecordError).
        """
        which = None
        if isinstance(batch, FrameBatch):  # records still in their frames decode there
            batch, damage = batch.verify()
            if damage is not None:
                raise damage
            data = batch.data
        elif isinstance(batch, PooledBatch):  # and those of a shuffle pool where it holds them
            data, which = batch.parts, batch.which
        else:
            batch = _as_batch(batch)
            data = batch.data
        n, feats, plan = len(batch), self._features, self._plan
        starts, ends = batch.starts, batch.ends
        nf = len(feats)
        if nf == 0:
            return {}
        workers = self._workers(threads)
        chunks = self._chunks(starts, ends, workers)
        table = self._table(n)
        totals = np.zeros((len(chunks), nf, 4), np.int64)

        def scan(k: int) -> tuple:
            lo, hi = chunks[k]
            return _core.scan(plan, data, starts, ends, lo, hi, table, totals[k], which)

        for status in _run_parallel(scan, len(chunks), workers):
            if status[0] != _core.OK:
                raise self._scan_error(batch, table, status)

        sums = totals.sum(axis=0).tolist()
        bases = np.zeros((len(chunks), nf, 3), np.int64)
        np.cumsum(totals[:-1, :, :3], axis=0, out=bases[1:])
        outs = [self._allocate(c, f, n, sums[f], table, batch) for f, c in enumerate(feats)]
        args = [o[0] for o in outs]

        def fill(k: int) -> int:
            lo, hi = chunks[k]
            return _core.fill(plan, data, starts, lo, hi, table, args, bases[k], which)

        if any(s != _core.OK for s in _run_parallel(fill, len(chunks), workers)):
            raise RuntimeError("the batch's buffer changed while it was being decoded")
        columns = {}
        for f, c in enumerate(feats):
            column = self._wrap(c, outs[f][1], table[:, f], batch)
            if c.outer is not None:
                column = c.outer.finish(column, name=c.name, where=batch.where)
            columns[c.name] = column
        return columns

    def decode_one(self, data: np.ndarray, start: int, stop: int) -> dict[str, Any] | None:
        """The record data[start:stop] as {name: value}, as `decode` would give its row:
        `ds[i]`'s short path (one core call that also allocates, then a finisher per
        feature; no batch, no chunks, no threads). None when the record does not decode
        cleanly or a feature has no finisher (images, narrowed dtypes, bytes lists): the
        caller then decodes it as a batch, whose errors name file, record and feature."""
        ones = self._ones
        if ones is None:
            return None
        got = _core.decode_one(self._plan, data, start, stop)
        if got is None:
            return None
        return {name: one(*arrays) for (name, one), arrays in zip(ones, got, strict=True)}

    def _finisher(self, c: _Compiled) -> Callable[..., Any] | None:
        """How `decode_one` turns one record's buffers (values, offsets, splits, inner) into
        the value `decode(...)[name][0]` holds; None where a value needs a cast (a dtype
        other than the wire's) or finishing (images)."""
        spec, op = c.spec, c.op
        numbers = op in ("dense", "var", "seq", "seq_var")
        if c.outer is not None or (numbers and np.dtype(spec.dtype) != _WIRE_DTYPE[c.kind]):
            return None
        wire = _WIRE_DTYPE.get(c.kind)
        if op == "dense" and spec.shape == ():  # the commonest, without the general wrap
            return lambda v, *_: np.frombuffer(v, wire)[0]
        if op == "dense":
            return lambda v, *_: np.frombuffer(v, wire).reshape(spec.shape)
        if op == "var" and spec.inner_shape == ():
            return lambda v, *_: np.frombuffer(v, wire)
        if op == "dense_bytes" and spec.shape == ():
            return lambda v, *_: bytes(v)

        def general(v: bytearray, *ends: bytearray | None) -> Any:
            offs, splits, inner = (None if a is None else np.frombuffer(a, np.int64) for a in ends)
            values = np.frombuffer(v, np.uint8 if offs is not None else wire or spec.dtype)
            if op == "raw":
                values = values.reshape(1, *spec.shape)
            elif op == "raw_any":  # the -1 resolved from this record's size
                known = math.prod(d for d in spec.shape if d != -1)
                values = values.reshape(
                    1, *(values.size // known if d == -1 else d for d in spec.shape)
                )
            elif op in ("raw_var", "seq_raw"):  # rows (steps) counted by the splits
                values = values.reshape(int(splits[-1]), *spec.row_shape)
            return self._wrap(c, (values, offs, splits, inner), _ONE_ROW, None)[0]

        return general

    def _allocate(self, c: _Compiled, f: int, n: int, sums: list, table, batch) -> tuple:
        """((values, offsets, splits, inner, raw_bytes) for the core, arrays to wrap)."""
        values_total, bytes_total, steps_total = sums[:3]
        spec, op = c.spec, c.op
        splits = inner = offs = None
        raw_bytes = 0
        if op in ("var", "var_bytes", "raw_var") or c.section:
            splits = self._empty((n + 1,), np.int64)
            splits[0] = 0
        if op in ("seq_var", "seq_var_bytes"):
            inner = self._empty((steps_total + 1,), np.int64)
            inner[0] = 0
        if op == "dense":
            values = self._empty((n, *spec.shape), _WIRE_DTYPE[c.kind])
        elif op in ("var", "seq", "seq_var"):
            values = self._empty((values_total,), _WIRE_DTYPE[c.kind])
        elif op in ("dense_bytes", "var_bytes", "seq_bytes", "seq_var_bytes"):
            values = self._empty((bytes_total,), np.uint8)
            offs = self._empty((values_total + 1,), np.int64)
            offs[0] = 0
        elif op == "raw":
            values = self._empty((n, *spec.shape), spec.dtype)
        elif op == "seq_raw":
            values = self._empty((steps_total, *spec.row_shape), spec.dtype)
        elif op == "raw_var":
            values = self._empty((bytes_total // c.divisor, *spec.row_shape), spec.dtype)
        else:  # raw_any: the -1 resolves from this batch's byte counts, equal in every record
            sizes = table[:, f, _core.ROW_NBYTES]
            raw_bytes = int(sizes[0]) if n else 0
            if n and np.any(sizes != raw_bytes):
                r = int(np.flatnonzero(sizes != raw_bytes)[0])
                raise SchemaError(
                    f"feature {c.name!r} holds {format_count(int(sizes[r]))} bytes at "
                    f"{_where(batch, r)} but {format_count(raw_bytes)} at {_where(batch, 0)}; "
                    f"{spec.spell()} needs one size per batch. Put the varying axis first "
                    f"(a Ragged column): tn.Raw({spec.dtype!r}, shape={_varying_first(spec)})"
                )
            shape = tuple(raw_bytes // c.divisor if d == -1 else d for d in spec.shape)
            values = self._empty((n, *shape), spec.dtype)
        return (values, offs, splits, inner, raw_bytes), (values, offs, splits, inner)

    def _empty(self, shape: tuple, dtype: Any) -> np.ndarray:
        """An output from the Decoder's spares: for a big one, the pages of a batch nobody
        holds any more (fresh ones cost the kernel a fault and a zeroing each)."""
        dtype = np.dtype(dtype)
        return self._spares.empty(math.prod(shape) * dtype.itemsize).view(dtype).reshape(shape)

    def _wrap(self, c: _Compiled, arrays: tuple, rows: np.ndarray, batch: Payloads) -> Column:
        values, offs, splits, inner = arrays
        spec, op = c.spec, c.op
        if op in ("raw", "raw_any"):
            return values
        if op in ("raw_var", "seq_raw"):
            return Ragged.from_row_splits(values, splits, validate=False)
        # reshapes name their row count: reshape(-1, ...) cannot infer it for a zero-size shape
        if offs is not None:
            col: Any = BytesColumn.from_offsets(values, offs, validate=False)
            if isinstance(spec, FixedLen) and spec.shape != ():
                n = len(rows) if op == "dense_bytes" else int(splits[-1])
                col = col.to_numpy().reshape(n, *spec.shape)
        else:
            col = self._cast(c, values, splits, inner, rows, batch)
        if op in ("dense", "dense_bytes"):
            return col
        if op in ("var", "var_bytes"):
            if op == "var":
                col = col.reshape(int(splits[-1]), *spec.inner_shape)
            return Ragged.from_row_splits(col, splits, validate=False)
        if op == "seq":
            return Ragged.from_row_splits(
                col.reshape(int(splits[-1]), *spec.shape), splits, validate=False
            )
        if op == "seq_bytes":
            return Ragged.from_row_splits(col, splits, validate=False)
        if op == "seq_var":
            col = col.reshape(int(inner[-1]), *spec.inner_shape)
        return Ragged.from_row_splits(
            Ragged.from_row_splits(col, inner, validate=False), splits, validate=False
        )

    def _cast(self, c: _Compiled, values: np.ndarray, splits, inner, rows, batch) -> np.ndarray:
        """The wire values (float32 / int64) as the spec's dtype; narrowing is checked."""
        dtype = np.dtype(c.spec.dtype)
        if dtype == values.dtype:
            return values
        if dtype.kind == "f":
            out = values.astype(dtype)
            if c.op == "dense" and c.spec.default is not None:
                missing = (rows[:, _core.ROW_KIND] & 0xFF) == 0
                if missing.any():  # the default as given, not rounded through float32
                    out[missing] = c.spec.default
            return out
        lo, hi = (0, 1) if dtype.kind == "b" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
        flat = values.reshape(-1)
        if flat.size and (flat.min() < lo or flat.max() > hi):
            i = int(np.flatnonzero((flat < lo) | (flat > hi))[0])
            r = self._record_of_value(c, i, splits, inner)
            raise SchemaError(
                f"{c.label} value {int(flat[i])} at {_where(batch, r)} does not fit in "
                f"{dtype.name} ({lo}..{hi}); use a wider dtype such as 'int64'"
            )
        return values.astype(dtype)

    @staticmethod
    def _record_of_value(c: _Compiled, i: int, splits, inner) -> int:
        if c.op == "dense":
            return i // max(c.count, 1)
        if c.op == "var":
            return int(np.searchsorted(splits, i // c.divisor, side="right") - 1)
        step = (
            i // max(c.count, 1)
            if c.op == "seq"
            else int(np.searchsorted(inner, i // c.divisor, side="right") - 1)
        )
        return int(np.searchsorted(splits, step, side="right") - 1)

    # -- errors ----------------------------------------------------------------------

    def _scan_error(self, batch: Payloads, table: np.ndarray, status: tuple) -> Exception:
        code, r, a, b = status
        if code == _core.BAD_OFFSETS:
            return ValueError(
                "the batch's offsets do not fit its data (decreasing, or past the end)"
            )
        if code == _core.MALFORMED:
            return self._malformed(batch, r, a, b)
        c = self._features[a]
        row = table[r, a]
        return SchemaError(_schema_message(c, _core.SCHEMA_CODES[b], row, _where(batch, r)))

    def _malformed(self, batch: Payloads, r: int, offset: int, detail: tuple) -> Exception:
        reason_code, where_code, feature, a, b = detail
        inside = f" of {self._features[feature].label}" if feature >= 0 else ""
        kind = "SequenceExample" if self.sequence else "Example"
        reason = _malformed_reason(reason_code, where_code, a, b)
        path, record = batch.where(r)
        return _corrupt(f"malformed {kind}: {reason}{inside}", path, record, offset)


def _malformed_reason(code: int, where_code: int, a: int, b: int) -> str:
    """The core's (reason, where, a, b) as words: "a varint runs past 10 bytes in ..."."""
    where = _core.WHERE[where_code]
    expected = {
        "an Int64List": "0 (varint) or 2 (packed)",
        "a FloatList": "5 (32-bit) or 2 (packed)",
    }.get(where, "2 (length-delimited)")
    a_, b_ = (format_count(x) if x > 9999 else str(x) for x in (a, b))
    reason = _core.MALFORMED_REASONS[code].format(a=a_, b=b_, expected=expected)
    return f"{reason} in {where}"


def _decoder(spec: Spec, threads: int | None) -> Decoder:
    return Decoder(spec, threads=threads)


def _corrupt(reason: str, path: str, record: int, offset: int) -> CorruptRecordError:
    """A CorruptRecordError whose offset counts from the start of the record's payload."""
    error = CorruptRecordError(reason, path=path, record=record, offset=offset, hint=MALFORMED_HINT)
    error.args = (
        f"{reason} at {path} record {record} (payload byte {format_count(offset)}); "
        f"{MALFORMED_HINT}",
    )
    return error


def _where(batch: Payloads, r: int) -> str:
    path, record = batch.where(r)
    return f"{path} record {record}"


def _varying_first(spec: Raw) -> str:
    rest = tuple(d for d in spec.shape if d != -1)
    return format_shape((-1, *rest))


def _a(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _suggest(c: _Compiled, kind: int, count: int, nbytes: int, steps: int = 0) -> str:
    """A spec that would read what was found, as ' did you mean ...?', or ''. The spec
    is printed as code to paste, so it must be one that the spec's place accepts (a
    feature list takes no Raw of a varying first axis)."""
    spec = c.spec
    found = KIND_DTYPES.get(kind)
    if found is None:
        return ""
    per = max(steps, 1) if c.section else 1  # lists found: a record's, or each step's
    guess: Feature | None = None
    if isinstance(spec, (FixedLen, VarLen)) and spec.dtype != "bytes" and kind == KIND_BYTES:
        itemsize = np.dtype(spec.dtype).itemsize
        n = nbytes // per // itemsize  # values in each bytes value, if they are one size
        if count == per and nbytes and nbytes % (per * itemsize) == 0:
            if isinstance(spec, FixedLen) and n == spec.size:
                guess = Raw(spec.dtype, shape=spec.shape)
            elif isinstance(spec, FixedLen) or (c.section and n % spec.size):
                guess = Raw(spec.dtype, shape=(n,))
            elif c.section:
                guess = Raw(spec.dtype, shape=(n // spec.size, *spec.inner_shape))
            else:
                guess = Raw(spec.dtype, shape=(-1, *spec.inner_shape))
        elif c.section:
            guess = VarLen("bytes")
    elif isinstance(spec, FixedLen):
        if count == spec.size * per or (found == "bytes" and count == per):
            shape = spec.shape if count == spec.size * per else ()
            guess = FixedLen(shape, found)
        else:
            guess = VarLen(found)
    elif isinstance(spec, VarLen):
        guess = VarLen(found)
    elif isinstance(spec, Raw):
        known = spec.shape and -1 not in spec.shape
        guess = (
            FixedLen(spec.shape, found)
            if known and count == math.prod(spec.shape) * per
            else VarLen(found)
        )
    return f"; did you mean {guess.spell()}?" if guess is not None else ""


def _schema_message(c: _Compiled, code: str, row: np.ndarray, where: str) -> str:
    count, nbytes = int(row[_core.ROW_COUNT]), int(row[_core.ROW_NBYTES])
    steps, bad_step = int(row[_core.ROW_STEPS]), int(row[_core.ROW_BAD_STEP])
    bad_value, kind = int(row[_core.ROW_BAD_VALUE]), int(row[_core.ROW_KIND]) & 0xFF
    spec = c.spec
    spelled = (c.outer or spec).spell()  # tn.Image(), not the tn.Bytes() it reads
    n_values = f"{format_count(count)} value" + ("" if count == 1 else "s")
    if code == "missing":
        if c.outer is not None:
            return (
                f"{c.label} is missing at {where}; {spelled} needs a value in every record "
                "(select the records that have one, or read it as tn.VarLen('bytes'))"
            )
        if isinstance(spec, Raw):
            return (
                f"{c.label} is missing at {where}; {spelled} reads one bytes value per record "
                "and has no default"
            )
        return (
            f"{c.label} is missing at {where} and {spelled} has no default; give it one "
            f"(default=...), or read it as tn.VarLen({spec.dtype!r}) to get empty rows "
            "where it is absent"
        )
    if code == "kind":
        expected = KIND_NAMES[c.kind]
        found = _KIND_WORD.get(kind, "?")
        size = f" ({format_count(nbytes)} bytes)" if kind == KIND_BYTES else ""
        return (
            f"{c.label} holds {_a(found)} of {n_values}{size} where {spelled} expects "
            f"{_a(expected)}, at {where}" + _suggest(c, kind, count, nbytes, steps)
        )
    if code == "count":
        hint = (
            " did you mean tn.VarLen('bytes')?"
            if spec.dtype == "bytes"
            else f" did you mean tn.VarLen({spec.dtype!r})?"
        )
        return (
            f"{c.label} has {n_values} where {spelled} expects {format_count(c.count)}, "
            f"at {where};{hint}"
        )
    if code == "multiple":
        return (
            f"{c.label} has {n_values}, not a multiple of {c.divisor} as {spelled} needs "
            f"(rows of shape {format_shape(spec.inner_shape)}), at {where}"
        )
    if code == "raw_count":
        what = "an empty bytes_list" if count == 0 else f"a bytes_list of {n_values}"
        hint = "; did you mean tn.VarLen('bytes')?" if count > 1 else ""
        return f"{c.label} holds {what} where {spelled} expects exactly one value, at {where}{hint}"
    if code == "raw_size":
        itemsize = spec.itemsize
        if c.op == "raw":
            want = (
                f"{format_count(c.raw_bytes)} ({format_count(c.raw_bytes // itemsize)} × "
                f"{itemsize} bytes)"
            )
        else:
            want = f"a multiple of {format_count(c.divisor)}"
        guess = ""
        if nbytes % itemsize == 0 and c.op == "raw":
            guess = f"; did you mean {Raw(spec.dtype, shape=(nbytes // itemsize,)).spell()}?"
        return (
            f"{c.label} holds {format_count(nbytes)} bytes where {spelled} expects {want}, "
            f"at {where}{guess}"
        )
    if code == "mixed":
        return (
            f"{c.label} mixes kinds at {where}: step {bad_step} holds "
            f"{_a(KIND_NAMES.get(bad_value, '?'))} after steps holding "
            f"{KIND_NAMES.get(kind, '?')}"
        )
    per = f"step {bad_step} of {format_count(steps)}"
    if code == "step_count":
        hint = (
            _suggest(c, kind, count, nbytes, steps)  # steps of another kind: read that kind
            if kind not in (0, c.kind)
            else f"; did you mean tn.VarLen({spec.dtype!r}) in the sequence?"
        )
        return (
            f"{c.label} {per} has {format_count(bad_value)} values where {spelled} expects "
            f"{format_count(c.count)} per step, at {where}{hint}"
        )
    if code == "step_multiple":
        hint = _suggest(c, kind, count, nbytes, steps) if kind not in (0, c.kind) else ""
        return (
            f"{c.label} {per} has {format_count(bad_value)} values, not a multiple of "
            f"{c.divisor} as {spelled} needs, at {where}{hint}"
        )
    if code == "step_raw_count":
        return (
            f"{c.label} {per} holds {format_count(bad_value)} bytes values where {spelled} "
            f"expects exactly one, at {where}"
        )
    return (
        f"{c.label} {per} holds {format_count(bad_value)} bytes where {spelled} expects "
        f"{format_count(c.raw_bytes)}, at {where}"
    )


# --- module functions ----------------------------------------------------------------


def decode(
    payloads: RecordBatch | Sequence[bytes], spec: Spec | Any, *, threads: int | None = None
) -> Batch:
    """Decode serialized tf.train.Example (or SequenceExample, with a tn.Sequence spec)
    payloads into {name: column}, as one batch: a tn.Raw with a varying first axis is a
    dense array when every record has the same size (see `dense_when_uniform`). For many
    batches, build one Decoder and reuse it."""
    decoder = Decoder(spec)
    cols = decoder.decode(payloads, threads=threads)
    dense = dense_when_uniform(decoder.spec)
    return dense(cols) if dense else cols


def dense_when_uniform(spec: Spec) -> Callable[[Batch], Batch] | None:
    """For a spec with tn.Raw features whose first axis varies (shape None or (-1, ...)):
    a function that makes such a column of one batch a dense [n, m, ...] array when every
    record of the batch holds the same number of rows, as decode_raw + reshape + batch
    gives in TensorFlow; records of different sizes stay a Ragged. Decoder.decode always
    gives the Ragged (a block of a dataset is not a user's batch); None if there are none."""
    features = spec.context if isinstance(spec, SequenceSpec) else spec
    names = [name for name, f in features.items() if isinstance(f, Raw) and f.ragged]
    if not names:
        return None

    def apply(cols: Batch) -> Batch:
        out = cols
        for name in names:
            col = cols.get(name)
            if not isinstance(col, Ragged) or not isinstance(col.values, np.ndarray):
                continue
            splits = col.row_splits
            n = len(splits) - 1
            width = int(splits[1] - splits[0]) if n else 0
            if n and int(splits[-1] - splits[0]) == width * n and np.all(np.diff(splits) == width):
                rows = col.values[int(splits[0]) : int(splits[-1])]
                out = {**out, name: rows.reshape(n, width, *rows.shape[1:])}
        return out

    return apply


# --- survey: what the records hold, for schema inference ------------------------------


@dataclass(frozen=True)
class Survey:
    """Every feature of every record of a batch, one entry per (record, section, name)
    (the last of duplicate keys, as decoding sees it).

    names[name[i]] is entry i's feature name; section 0 = Example features or
    SequenceExample context, 1 = feature lists; kind 0 none (Feature without a list),
    1 bytes_list, 2 float_list, 3 int64_list, 4 mixed (feature lists only); count =
    values (all steps), nbytes = bytes of bytes values, steps/step_min/step_max for
    feature lists (-1 elsewhere); first = the first bytes value's leading bytes (up to 16)
    or b"".
    """

    names: list[str]
    records: int
    record: np.ndarray
    section: np.ndarray
    name: np.ndarray
    kind: np.ndarray
    count: np.ndarray
    nbytes: np.ndarray
    steps: np.ndarray
    step_min: np.ndarray
    step_max: np.ndarray
    first: list[bytes]

    def __len__(self) -> int:
        return len(self.record)


def survey(batch: RecordBatch | Iterable[bytes], *, first_bytes: int = 16) -> Survey:
    """List each record's features (name, kind, value count, ...) without a spec, for
    schema inference and `tfrecnp inspect`. Malformed records raise CorruptRecordError."""
    batch = _as_batch(batch)
    data, offsets = batch.data, batch.offsets
    n = len(batch)
    cap = max(64, n * 8)
    parts = []
    r = 0
    while r < n:
        out = np.empty((cap, _core.SURVEY_FIELDS), np.int64)
        status, nxt, count, detail = _core.survey(data, offsets, r, n, out)
        parts.append(out[:count])
        if status == _core.MALFORMED:
            offset, code, where, a, b = detail
            path, record = batch.where(nxt)
            reason = _malformed_reason(code, where, a, b)
            raise _corrupt(f"malformed record: {reason}", path, record, offset)
        if status == _core.BAD_OFFSETS:
            raise ValueError("the batch's offsets do not fit its data")
        if status == _core.FULL and nxt == r and count == 0:
            cap *= 4  # one record holds more entries than fit
        r = nxt
    table = np.concatenate(parts) if parts else np.empty((0, _core.SURVEY_FIELDS), np.int64)
    keys = [data[s : s + k].tobytes() for s, k in table[:, 2:4].tolist()]
    ids: dict[bytes, int] = {}
    name = np.fromiter((ids.setdefault(k, len(ids)) for k in keys), dtype=np.int64, count=len(keys))
    # the last entry of each (record, section, name) wins
    key = (table[:, 0] * 2 + table[:, 1]) * max(len(ids), 1) + name
    _, last_rev = np.unique(key[::-1], return_index=True)
    keep = np.sort(len(key) - 1 - last_rev)
    table, name = table[keep], name[keep]
    first = [
        data[s : s + min(k, first_bytes)].tobytes() if s >= 0 else b""
        for s, k in table[:, 10:12].tolist()
    ]
    return Survey(
        names=[k.decode(*NAME_ENCODING) for k in ids],
        records=n,
        record=table[:, 0].copy(),
        section=table[:, 1].copy(),
        name=name,
        kind=table[:, 4].copy(),
        count=table[:, 5].copy(),
        nbytes=table[:, 6].copy(),
        steps=np.where(table[:, 1] == 1, table[:, 7], -1),
        step_min=table[:, 8].copy(),
        step_max=table[:, 9].copy(),
        first=first,
    )
