"""Batches as an Arrow stream: a ``pyarrow.RecordBatchReader`` over any object's batches.

A RecordBatchReader is the streaming form Arrow's world takes whole: it carries its schema
before the first row, exports the Arrow C stream interface (``__arrow_c_stream__``), so
DuckDB queries it, polars, pandas and pyarrow.dataset read it, and `pyarrow.parquet`
writes it, each pulling one batch at a time. Types are `tfrecnp.example.arrow`'s. The
schema is the first batch's (a spec cannot fix every type before a record is read: an
image's size, a Raw feature's shape); a later batch of another layout is cast to it, or
refused naming the column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ..errors import SchemaError
from ..example.arrow import pyarrow, to_arrow

__all__ = ["arrow_reader"]


def arrow_reader(
    batches: Iterable[Mapping[str, Any]],
    empty: Callable[[], Mapping[str, Any]],
    *,
    text: Iterable[str] | bool = (),
) -> Any:
    """A RecordBatchReader of these batches (``empty()``: a batch of no rows, for the
    schema of a stream with none). The first batch is read now, for the schema."""
    pa = pyarrow()
    text = text if text is True else tuple(text or ())
    it = iter(batches)
    first = next(it, None)
    head = to_arrow(first if first is not None else empty(), text=text)
    schema = head.schema

    def stream() -> Iterator[Any]:
        try:
            if first is not None:
                yield head
            for cols in it:
                batch = to_arrow(cols, text=text)
                yield batch if batch.schema == schema else _conform(batch, schema)
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    return pa.RecordBatchReader.from_batches(schema, stream())


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
