"""Row partitions (TensorFlow's RaggedFeature): a record's flat values and its int64
partition features -> a Ragged with one ragged level per partition, checked.

The decoder reads the values and each partition feature as plain variable-length columns
(the core knows nothing of partitions); `assemble` then builds every level of a whole batch
at once, in NumPy, innermost partition first, as tf.io.parse_example does per record. The
unit a partition cuts is the record (Example, SequenceExample context) or the step (feature
lists, where each step holds its own values and partitions). A partition that does not
describe its values (lengths that do not add up, splits that go backwards) is a
SchemaError naming the feature, the partition feature and the record, where TensorFlow
refuses it too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._util.offsets import offsets_of
from ..errors import SchemaError
from .columns import BytesColumn, Ragged
from .spec import (
    Partition,
    RowLengths,
    RowLimits,
    RowSplits,
    RowStarts,
    UniformRowLength,
    ValueRowIds,
    VarLen,
)

__all__ = ["Assembly", "assemble"]

Where = Callable[[int], tuple[str, int]]

_WHAT = {
    RowSplits: "row splits",
    RowLengths: "row lengths",
    RowStarts: "row starts",
    RowLimits: "row limits",
    ValueRowIds: "value row ids",
}


@dataclass(frozen=True)
class Assembly:
    """One partitioned feature: where its values and partitions were read (column keys of
    the decoded batch), and what to build of them."""

    name: str
    spec: VarLen
    section: int
    values: str  # the column holding the values (wire dtype, flat)
    parts: tuple[str | None, ...]  # per partition of spec.partitions, its column (None: uniform)


class _Fail(Exception):
    """A partition that does not describe its values: the first bad unit and why."""

    def __init__(self, unit: int, reason: str):
        self.unit, self.reason = unit, reason


def _first(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad)[0])


def _level(p: Partition, col: Ragged | None, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row splits over all units' items, rows per unit) for partition p cutting n[u] items
    of each unit u; col: the partition feature's values per unit (None for uniform)."""
    units = len(n)
    total = int(n.sum())
    if isinstance(p, UniformRowLength):
        k = p.length
        bad = n % k != 0
        if bad.any():
            u = _first(bad)
            raise _Fail(u, f"{int(n[u])} items do not make rows of {k}")
        rows = n // k
        return np.arange(int(rows.sum()) + 1, dtype=np.int64) * k, rows
    assert col is not None
    v = np.asarray(col.values, np.int64)
    m = np.diff(col.row_splits)  # partition values per unit
    unit = np.repeat(np.arange(units, dtype=np.int64), m)
    off = np.zeros(units, np.int64)  # each unit's first item, over all units
    np.cumsum(n[:-1], out=off[1:])
    same = unit[1:] == unit[:-1] if len(v) > 1 else np.zeros(0, bool)
    back = same & (v[1:] < v[:-1]) if len(v) > 1 else np.zeros(0, bool)
    first = col.row_splits[:-1][m > 0]
    last = col.row_splits[1:][m > 0] - 1
    has = np.flatnonzero(m > 0)
    if isinstance(p, RowLengths):
        if len(v) and v.min() < 0:
            u = int(unit[_first(v < 0)])
            raise _Fail(u, f"a row length is negative ({int(v[v < 0][0])})")
        sums = offsets_of(v)
        got = sums[col.row_splits[1:]] - sums[col.row_splits[:-1]]
        bad = got != n
        if bad.any():
            u = _first(bad)
            raise _Fail(u, f"the row lengths add up to {int(got[u])} but there are {int(n[u])}")
        return sums, m
    if back.any():
        u = int(unit[1:][_first(back)])
        raise _Fail(u, "they go backwards")
    if isinstance(p, RowSplits):
        bad_first = v[first] != 0
        bad_last = v[last] != n[has]
        bad_empty = (m == 0) & (n > 0)
        if bad_first.any() or bad_last.any() or bad_empty.any():
            u = min(
                [int(has[_first(b)]) for b in (bad_first, bad_last) if b.any()]
                + ([_first(bad_empty)] if bad_empty.any() else [])
            )
            k = int(np.searchsorted(has, u))
            found = "none" if m[u] == 0 else f"{int(v[first[k]])} .. {int(v[last[k]])}"
            raise _Fail(u, f"they run {found}, not 0 .. {int(n[u])}")
        keep = np.ones(len(v), bool)
        keep[first] = False  # each unit's leading 0
        return np.concatenate([[0], v[keep] + off[unit[keep]]]).astype(np.int64), np.maximum(
            m - 1, 0
        )
    if isinstance(p, RowStarts):
        bad_first = v[first] != 0
        bad_end = np.zeros(units, bool)
        bad_end[has] = v[last] > n[has]
        bad_end |= (m == 0) & (n > 0)
        if bad_first.any() or bad_end.any():
            u = min([int(has[_first(bad_first)])] if bad_first.any() else [units])
            u = min(u, _first(bad_end) if bad_end.any() else units)
            raise _Fail(u, f"they do not start at 0 and stay within the {int(n[u])} items")
        return np.concatenate([v + off[unit], [total]]).astype(np.int64), m
    if isinstance(p, RowLimits):
        bad = np.zeros(units, bool)
        bad[has] = (v[first] < 0) | (v[last] != n[has])
        bad |= (m == 0) & (n > 0)
        if bad.any():
            u = _first(bad)
            raise _Fail(u, f"they do not end at the {int(n[u])} items")
        return np.concatenate([[0], v + off[unit]]).astype(np.int64), m
    if isinstance(p, ValueRowIds):
        bad = m != n
        if bad.any():
            u = _first(bad)
            raise _Fail(u, f"there are {int(m[u])} ids for {int(n[u])} items")
        if len(v) and v.min() < 0:
            raise _Fail(int(unit[_first(v < 0)]), "an id is negative")
        rows = np.zeros(units, np.int64)
        rows[has] = v[last] + 1
        row_off = np.zeros(units, np.int64)
        np.cumsum(rows[:-1], out=row_off[1:])
        ids = v + row_off[unit]
        counts = np.bincount(ids, minlength=int(rows.sum()))
        return offsets_of(counts), rows
    raise TypeError(f"unknown partition {p!r}")


def _cast(values: np.ndarray, dtype: str) -> np.ndarray:
    if values.dtype == np.dtype(dtype):
        return values
    dt = np.dtype(dtype)
    if dt.kind in "biu":
        lo, hi = (0, 1) if dt.kind == "b" else (np.iinfo(dt).min, np.iinfo(dt).max)
        if values.size and (values.min() < lo or values.max() > hi):
            raise _Fail(-1, f"a value does not fit in {dtype}")
    return values.astype(dt)


def _units(
    a: Assembly, cols: dict, n_records: int
) -> tuple[Ragged, list[Ragged | None], np.ndarray | None]:
    """(values per unit, partitions per unit, record splits over steps or None)."""
    values = cols[a.values]
    parts = [None if key is None else cols[key] for key in a.parts]
    if not a.section:
        return values, parts, None
    steps = values.row_splits
    for k, part in enumerate(parts):
        if part is not None and not np.array_equal(part.row_splits, steps):
            bad = np.diff(part.row_splits) != np.diff(steps)
            r = _first(bad)
            key = a.spec.partitions[k].key
            raise _Fail(
                -2 - r,
                f"feature list {key!r} has {int(np.diff(part.row_splits)[r])} steps but the "
                f"values have {int(np.diff(steps)[r])} (values and partitions are not aligned)",
            )
    return values.values, [None if p is None else p.values for p in parts], steps


def assemble(a: Assembly, cols: dict, n_records: int, where: Where | None) -> Ragged:
    """The Ragged of feature `a` for a batch of n_records, from the decoded columns."""
    spec = a.spec
    steps = cols[a.values].row_splits if a.section else None
    try:
        values, parts, steps = _units(a, cols, n_records)
        flat = values.values
        counts = np.diff(values.row_splits)
        size = spec.size
        if size > 1:
            bad = counts % size != 0
            if bad.any():
                u = _first(bad)
                raise _Fail(
                    u,
                    f"its {int(counts[u])} values do not make rows of shape {spec.inner_shape}",
                )
        if isinstance(flat, BytesColumn):
            if spec.inner_shape:
                flat = flat.to_numpy().reshape(-1, *spec.inner_shape)
        else:
            flat = _cast(flat, spec.dtype).reshape(-1, *spec.inner_shape)
        n = counts // size
        levels = []
        for p, col in zip(reversed(spec.partitions), reversed(parts), strict=True):
            try:
                splits, n = _level(p, col, n)
            except _Fail as e:
                raise _Fail(
                    e.unit,
                    f"{_WHAT.get(type(p), 'uniform rows')} "
                    f"{'' if p.key is None else repr(p.key) + ' '}do not fit: {e.reason}",
                ) from None
            levels.append(splits)
        out = flat
        for splits in levels:
            out = Ragged.from_row_splits(out, splits, validate=False)
        out = Ragged.from_row_splits(out, offsets_of(n), validate=False)
        if steps is not None:
            out = Ragged.from_row_splits(out, steps, validate=False)
        return out
    except _Fail as e:
        raise _error(a, e, steps, where) from None


def _error(a: Assembly, e: _Fail, steps: np.ndarray | None, where: Where | None) -> SchemaError:
    if e.unit <= -2:  # steps misaligned: the record given directly
        record, step = -2 - e.unit, None
    elif e.unit < 0:
        record, step = None, None
    elif steps is not None:
        record = int(np.searchsorted(steps, e.unit, side="right") - 1)
        step = e.unit - int(steps[record])
    else:
        record, step = e.unit, None
    at = ""
    if record is not None:
        path, rec = where(record) if where is not None else ("<batch>", record)
        at = f" at {path} record {rec}" + ("" if step is None else f" step {step}")
    what = "feature list" if a.section else "feature"
    return SchemaError(
        f"{what} {a.name!r} ({a.spec.spell()}): {e.reason}{at}; the partition features "
        "must describe the values, as tf.io.parse_example requires"
    )
