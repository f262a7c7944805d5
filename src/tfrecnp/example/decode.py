"""Record payloads -> NumPy columns: a spec compiled once, batches decoded in one call.

`Decoder(spec)` turns a spec into a plan for the compiled core (`tfrecnp._core.decode`);
`decoder.decode(batch)` decodes a `RecordBatch` (or a list of payloads) into a
``dict[str, column]``, reading each payload where it lies (back to back, in the frames it
was read in, or where a shuffle pool holds it). The core walks each batch twice
without the GIL -- once to find and check every spec feature of every record, once to copy
the values into outputs sized exactly from the first pass -- and large batches are split
into chunks decoded by parallel threads. This module sizes the outputs and wraps buffers
as columns; the plan is made in `decode_plan`, the core's status codes become errors that
name file, record, feature and byte in `decode_errors`, and the spec-less walk used by
inference is `survey`.

Which rules are protobuf's and which TensorFlow's: unknown fields are skipped (protobuf;
TensorFlow's fast parser rejects some), the last of duplicate map keys wins (both), a
feature present with an empty list is empty, not missing (TensorFlow), and a Feature
whose kind is not set counts as missing (TensorFlow).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .._core import decode as _core
from .._util.spares import Spares
from .._util.threads import CPUS, run_parallel
from ..format.payloads import RecordBatch
from .columns import BytesColumn, Column, Ragged
from .decode_errors import bytes_rows, missing_list, out_of_range, scan_error, uneven_raw
from .decode_plan import WIRE_DTYPE, Compiled, as_batch, compile_spec, make_plan
from .partitions import assemble
from .spec import FixedLen, Raw, Spec, VarLen, as_spec
from .spec import Sequence as SequenceSpec
from .survey import Survey, survey  # their home before the survey had its own module

__all__ = ["Batch", "Decoder", "Survey", "decode", "dense_when_uniform", "survey"]

Batch = dict[str, Column]

CHUNK_MIN_BYTES = 64 << 10  # pieces of a batch decoded by parallel threads hold at least
CHUNK_MIN_RECORDS = 256  # this much; a batch is cut in up to 4 pieces per thread
PIECES_PER_THREAD = 4
TABLE_CACHE_RECORDS = 1 << 16  # scan tables up to this many records are reused

_ONE_ROW = np.zeros((1, _core.ROW_FIELDS), np.int64)  # a batch of one, for _wrap


class Decoder:
    """A spec compiled once into a decode plan; `decode(batch)` -> dict of columns.

    Reuse one Decoder for every batch of a dataset; it holds no per-batch state, so
    threads may share it.
    """

    def __init__(self, spec: Spec | Any, *, threads: int | None = None):
        self.spec = as_spec(spec)
        self.threads = threads
        self.sequence = isinstance(self.spec, SequenceSpec)
        self._features, self._assemblies = compile_spec(self.spec)
        self._order = _column_order(self.spec)
        ones = [self._finisher(c) for c in self._features]
        self._ones = (
            None
            if None in ones or self._assemblies
            else list(zip([c.out for c in self._features], ones, strict=True))
        )
        self._tables = Spares(limit=4)  # scan tables: one per block decoding at once
        # big outputs, reused once their batches are dropped; a few blocks' worth
        # (what a pass holds at once), so a whole dataset decoded and joined keeps no copy
        self._spares = Spares(limit=8)
        self._plan = make_plan(self._features, self.sequence)

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

    def decode(
        self,
        batch: RecordBatch | Iterable[bytes],
        *,
        threads: int | None = None,
        into: Mapping[str, np.ndarray] | None = None,
    ) -> Batch:
        """Decode every record of the batch; returns {name: column} in spec order.

        threads: how many chunks to decode at once (default: the Decoder's, else the
        number of cores); small batches always decode in one piece. Payload CRCs left for
        later are checked first (CorruptRecordError).
        into: arrays that tn.Raw columns of a known shape are decoded into, by name (shape
        (len(batch), *shape), the spec's dtype, C-contiguous): rows of a larger block are
        written where they belong, not copied there afterwards.
        """
        batch = as_batch(batch).checked()  # read where it lies: one buffer, or several
        data, which = batch.data, batch.which
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

        for status in run_parallel(scan, len(chunks), workers):
            if status[0] != _core.OK:
                raise scan_error(feats, self.sequence, batch, table, status)

        sums = totals.sum(axis=0).tolist()
        bases = np.zeros((len(chunks), nf, 3), np.int64)
        np.cumsum(totals[:-1, :, :3], axis=0, out=bases[1:])
        into = into or {}
        outs = [self._allocate(c, f, n, sums[f], table, batch, into) for f, c in enumerate(feats)]
        args = [o[0] for o in outs]

        def fill(k: int) -> int:
            lo, hi = chunks[k]
            return _core.fill(plan, data, starts, lo, hi, table, args, bases[k], which)

        if any(s != _core.OK for s in run_parallel(fill, len(chunks), workers)):
            raise RuntimeError("the batch's buffer changed while it was being decoded")
        columns = {}
        for f, c in enumerate(feats):
            column = self._wrap(c, outs[f][1], table[:, f], batch)
            if c.outer is not None:
                column = c.outer.finish(column, name=c.name, where=batch.where)
            columns[c.out] = column
        if self._assemblies:  # partitioned features, built of the lists read for them
            return self._assemble(columns, n, batch)
        return columns

    def _assemble(self, columns: Batch, n: int, batch: RecordBatch) -> Batch:
        """The batch in spec order, partitioned features assembled, hidden lists dropped."""
        built = {a.name: assemble(a, columns, n, batch.where) for a in self._assemblies}
        return {name: built[name] if name in built else columns[name] for name in self._order}

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

    def _finisher(self, c: Compiled) -> Callable[..., Any] | None:
        """How `decode_one` turns one record's buffers (values, offsets, splits, inner) into
        the value `decode(...)[name][0]` holds; None where a value needs a cast (a dtype
        other than the wire's) or finishing (images)."""
        spec, op = c.spec, c.op
        numbers = op in ("dense", "var", "seq", "seq_var")
        if c.outer is not None or (numbers and np.dtype(spec.dtype) != WIRE_DTYPE[c.kind]):
            return None
        if c.required or (op == "var_bytes" and spec.inner_shape):
            return None  # checks made on a batch
        wire = WIRE_DTYPE.get(c.kind)
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

    def _allocate(
        self, c: Compiled, f: int, n: int, sums: list, table, batch, into: Mapping
    ) -> tuple:
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
            values = self._empty((n, *spec.shape), WIRE_DTYPE[c.kind])
        elif op in ("var", "seq", "seq_var"):
            values = self._empty((values_total,), WIRE_DTYPE[c.kind])
        elif op in ("dense_bytes", "var_bytes", "seq_bytes", "seq_var_bytes"):
            values = self._empty((bytes_total,), np.uint8)
            offs = self._empty((values_total + 1,), np.int64)
            offs[0] = 0
        elif op == "raw":
            values = into.get(c.out)
            if values is None:
                values = self._empty((n, *spec.shape), spec.dtype)
            elif values.shape != (n, *spec.shape) or values.dtype != np.dtype(spec.dtype):
                raise ValueError(f"decode(into=): {c.out!r} needs {(n, *spec.shape)} {spec.dtype}")
            elif not (values.flags.c_contiguous and values.flags.writeable):
                raise ValueError(f"decode(into=): {c.out!r} must be C-contiguous and writable")
        elif op == "seq_raw":
            values = self._empty((steps_total, *spec.row_shape), spec.dtype)
        elif op == "raw_var":
            values = self._empty((bytes_total // c.divisor, *spec.row_shape), spec.dtype)
        else:  # raw_any: the -1 resolves from this batch's byte counts, equal in every record
            sizes = table[:, f, _core.ROW_NBYTES]
            raw_bytes = int(sizes[0]) if n else 0
            if n and np.any(sizes != raw_bytes):
                r = int(np.flatnonzero(sizes != raw_bytes)[0])
                raise uneven_raw(c, batch, r, int(sizes[r]), raw_bytes)
            shape = tuple(raw_bytes // c.divisor if d == -1 else d for d in spec.shape)
            values = self._empty((n, *shape), spec.dtype)
        return (values, offs, splits, inner, raw_bytes), (values, offs, splits, inner)

    def _empty(self, shape: tuple, dtype: Any) -> np.ndarray:
        """An output from the Decoder's spares: for a big one, the pages of a batch nobody
        holds any more (fresh ones cost the kernel a fault and a zeroing each)."""
        dtype = np.dtype(dtype)
        return self._spares.empty(math.prod(shape) * dtype.itemsize).view(dtype).reshape(shape)

    def _wrap(self, c: Compiled, arrays: tuple, rows: np.ndarray, batch: RecordBatch) -> Column:
        values, offs, splits, inner = arrays
        spec, op = c.spec, c.op
        if c.required:
            missing = rows[:, _core.ROW_END] == 0  # a list present has its place in the record
            if missing.any():
                raise missing_list(c, batch, int(np.flatnonzero(missing)[0]))
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
            elif spec.inner_shape:  # bytes in rows of inner_shape: counted here
                col, splits = bytes_rows(c, col, splits, batch)
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

    def _cast(self, c: Compiled, values: np.ndarray, splits, inner, rows, batch) -> np.ndarray:
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
            raise out_of_range(c, int(flat[i]), batch, r, dtype, lo, hi)
        return values.astype(dtype)

    @staticmethod
    def _record_of_value(c: Compiled, i: int, splits, inner) -> int:
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


def _decoder(spec: Spec, threads: int | None) -> Decoder:
    return Decoder(spec, threads=threads)


def _column_order(spec: Spec) -> list[str]:
    """The batch's column names, in spec order."""
    if isinstance(spec, SequenceSpec):
        return [spec.context_column(n) for n in spec.context] + list(spec.sequence)
    return list(spec)


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
    gives in TensorFlow; records of different sizes stay a Ragged. A tn.VarLen with a
    default (FixedLenSequenceFeature's default_value) is padded with it to the batch's
    longest row, as tf.io.parse_example pads. Decoder.decode always gives the Ragged (a
    block of a dataset is not a user's batch); None if there are no such features."""
    features = spec.context if isinstance(spec, SequenceSpec) else spec
    names = [name for name, f in features.items() if isinstance(f, Raw) and f.ragged]
    padded = {
        name: f.default
        for name, f in features.items()
        if isinstance(f, VarLen) and f.default is not None
    }
    if not names and not padded:
        return None

    def apply(cols: Batch) -> Batch:
        out = cols
        for name, value in padded.items():
            col = cols.get(name)
            if isinstance(col, Ragged):
                out = {**out, name: col.to_padded(None, value)}
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
