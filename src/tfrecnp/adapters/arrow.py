"""Batches as an Arrow stream: a ``pyarrow.RecordBatchReader`` over any object's batches.

A RecordBatchReader is the streaming form Arrow's world takes whole: it carries its schema
before the first row, exports the Arrow C stream interface (``__arrow_c_stream__``), so
DuckDB queries it, polars, pandas and pyarrow.dataset read it, and `pyarrow.parquet`
writes it, each pulling one batch at a time. Types are `tfrecnp.interop.arrow`'s. The
schema is the first batch's (a spec cannot fix every type before a record is read: an
image's size, a Raw feature's shape); a later batch of another layout is cast to it, or
refused naming the column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from .._util.threads import close_iterator
from ..errors import SchemaError
from ..interop.arrow import pyarrow, to_arrow

__all__ = ["arrow_reader"]


def arrow_reader(
    batches: Iterable[Mapping[str, Any]],
    empty: Callable[[], Mapping[str, Any]],
    *,
    text: Iterable[str] | bool = (),
    batch_size: int | None = None,
) -> Any:
    """A RecordBatchReader of these batches (``empty()``: a batch of no rows, for the
    schema of a stream with none). The first batch is read now, for the schema. With
    batch_size, the Arrow batches are cut to that many rows (the last one fewer): each
    batch given is made Arrow once, whole, and cut into slices (no Python work per column
    and slice); only a slice that straddles two of them is copied."""
    pa = pyarrow()
    text = text if text is True else tuple(text or ())
    it = iter(batches)
    first = next(it, None)
    head = to_arrow(first if first is not None else empty(), text=text)
    schema = head.schema

    def whole() -> Iterator[Any]:
        try:
            if first is not None:
                yield head
            for cols in it:
                batch = to_arrow(cols, text=text)
                yield batch if batch.schema == schema else _conform(batch, schema)
        finally:
            close_iterator(it)

    stream = whole() if batch_size is None else _cut(whole(), batch_size)
    return pa.RecordBatchReader.from_batches(schema, stream)


def _cut(batches: Iterator[Any], size: int) -> Iterator[Any]:
    """Record batches of `size` rows (the last one fewer) cut from these."""
    pa = pyarrow()
    if size < 1:
        raise ValueError(f"batch_size must be a positive int, not {size!r}")
    parts: list[Any] = []
    have = 0
    try:
        for batch in batches:
            start, n = 0, batch.num_rows
            if parts and n:  # finish the straddling batch: a copy of its pieces
                take = min(size - have, n)
                parts.append(batch.slice(0, take))
                have += take
                start = take
                if have == size:
                    yield pa.concat_batches(parts)
                    parts, have = [], 0
            while n - start >= size:
                yield batch.slice(start, size)
                start += size
            if start < n:
                parts.append(batch.slice(start))
                have += n - start
        if parts:
            yield parts[0] if len(parts) == 1 else pa.concat_batches(parts)
    finally:
        batches.close()


def _conform(batch: Any, schema: Any) -> Any:
    """A batch cast to the stream's schema, or SchemaError naming the first column that
    cannot be."""
    pa = pyarrow()
    try:
        return batch.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        field = next(f for f in batch.schema if schema.field(f.name).type != f.type)
        raise SchemaError(
            f"feature {field.name!r} is {field.type} in this batch but "
            f"{schema.field(field.name).type} in the first: its rows change shape between "
            "batches (tn.Image without size=, tn.Raw without shape=); give the shape in the "
            "spec so every batch has one layout"
        ) from None
