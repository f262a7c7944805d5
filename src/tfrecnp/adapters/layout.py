"""What a batch of a spec holds, column by column, known before any record is read:
tf.data wants its element_spec up front. Read off the spec alone, so the adapters need
nothing of where the records come from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..example.image import Image
from ..example.padding import LENGTH_SUFFIX, pad_lengths
from ..example.spec import FixedLen, Raw, Sequence, VarLen


@dataclass(frozen=True)
class Column:
    """One column of a batch. dtype: a NumPy dtype name, or "bytes". shape: the shape of one
    record's value, None for an axis that varies; `ragged` axes (counted from the record's
    first) vary from record to record and are carried as row splits."""

    dtype: str
    shape: tuple[int | None, ...]
    ragged: int = 0


def layout(spec: Any, pad: Any = None) -> dict[str, Column]:
    """name -> Column for the batches `batches(pad=pad)` serves from a dataset with `spec`."""
    if isinstance(spec, Sequence):
        out = {spec.context_column(n): _example_column(f) for n, f in spec.context.items()}
        for name, f in spec.sequence.items():
            inner = _example_column(f)
            if f.__class__ is VarLen:  # steps of lists: rows of rows (of rows: partitions)
                out[name] = Column(inner.dtype, (None, *inner.shape), 1 + inner.ragged)
            else:
                out[name] = Column(inner.dtype, (None, *inner.shape), 1)
    else:
        out = {name: _example_column(f) for name, f in spec.items()}
    return _padded(out, pad_lengths(spec, pad))


def _example_column(f: Any) -> Column:
    shown = getattr(f, "column_as", None)  # a feature whose finished column is another's
    if shown is not None and shown() is not None:
        f = shown()
    if isinstance(f, Image):  # pixels: [h, w, c], h and w known only with size=
        h, w = f.size if f.size is not None else (None, None)
        return Column(f.dtype, (h, w, f.channels))
    decoded = f.decode_as() or f
    if isinstance(decoded, FixedLen):
        return Column(decoded.dtype, decoded.shape)
    if isinstance(decoded, VarLen):  # a level of rows per record, and per partition
        levels = decoded.ragged_rank
        return Column(decoded.dtype, (*(None,) * levels, *decoded.inner_shape), levels)
    if isinstance(decoded, Raw):
        if decoded.ragged:
            return Column(decoded.dtype, (None, *decoded.row_shape), 1)
        return Column(decoded.dtype, tuple(None if d == -1 else d for d in decoded.shape))
    raise TypeError(f"no framework layout for a feature of type {type(f).__name__}")


def _padded(columns: dict[str, Column], wanted: dict[str, tuple]) -> dict[str, Column]:
    out = {}
    for name, col in columns.items():
        if name in wanted:
            out[name] = Column(col.dtype, (wanted[name][0], *col.shape[1:]))
            out[name + LENGTH_SUFFIX] = Column("int64", ())
        else:
            out[name] = col
    return out
