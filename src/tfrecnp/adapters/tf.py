"""`ds.to_tf()`: a dataset as a `tf.data.Dataset` with an exact element_spec.

Batches come from `ds.batches()` (the block path: a background thread reads and decodes,
batches are views) through `tf.data.Dataset.from_generator`, each column flattened into a
few plain tensors, and are rebuilt inside the tf.data graph:

- dense columns pass as they are ([batch, *shape]);
- byte strings pass as one scalar string holding the batch's bytes plus offsets, cut apart
  by `tf.strings.substr` (one tensor instead of a Python object per value);
- Ragged columns pass as values plus row splits and become `tf.RaggedTensor`s through
  `from_row_splits(validate=False)` (the splits are checked when decoded).

Measured against `Dataset.range(n).map(numpy_function(ds[a:b]))` (see
benchmarks/bench_adapters.py), the generator over the block path was the faster feed at
batch 32 and 1024 on this machine: the block path already reads ahead in a thread and
serves views, and random access per batch would redo the read planning per batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .._util.optional import require
from ..example.columns import BytesColumn, Ragged
from .layout import Column, layout

# records per internal batch when the caller asks for single records (batch_size=None)
UNBATCHED = 1024


def to_tf(
    ds: Any,
    batch_size: int | None = None,
    *,
    shuffle: bool | int = False,
    seed: int | None = None,
    drop_remainder: bool = False,
    pad: Any = None,
    truncate: bool = False,
    prefetch: int = 2,
) -> Any:
    """A `tf.data.Dataset` of the records of `ds` (a tfrecnp Dataset), batched when
    batch_size is given; see `Dataset.to_tf`."""
    tf = require("tensorflow", "tf")
    if batch_size is None and pad is not None:
        raise ValueError("pad= pads the rows of a batch; give a batch_size too")
    columns = layout(ds.spec, pad)
    size = UNBATCHED if batch_size is None else batch_size
    fixed = size if drop_remainder and batch_size is not None else None
    signature = {name: _parts_spec(tf, col, fixed) for name, col in columns.items()}

    def generate() -> Iterator[dict[str, Any]]:
        batches = ds.batches(
            size,
            shuffle=shuffle,
            seed=seed,
            drop_remainder=drop_remainder and batch_size is not None,
            pad=pad,
            truncate=truncate,
            prefetch=prefetch,
        )
        for batch in batches:
            yield {name: _parts(batch[name], col) for name, col in columns.items()}

    def rebuild(parts: dict[str, Any]) -> dict[str, Any]:
        return {name: _rebuild(tf, parts[name], col, fixed) for name, col in columns.items()}

    data = tf.data.Dataset.from_generator(generate, output_signature=signature)
    data = data.map(rebuild, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if batch_size is None:
        data = data.unbatch()
    return data.prefetch(tf.data.AUTOTUNE)


# -- the flat parts a column travels in -------------------------------------------------------
#
# parts = (leaf..., splits...): leaf is (values,) for numbers or (blob, offsets) for bytes;
# splits run from the outermost rows inward, one per ragged axis.


def _parts_spec(tf: Any, col: Column, batch: int | None) -> tuple:
    inner = col.shape[col.ragged :]
    if col.dtype == "bytes":
        leaf = (tf.TensorSpec((), tf.string), tf.TensorSpec((None,), tf.int64))
    else:
        first = batch if not col.ragged else None
        leaf = (tf.TensorSpec((first, *inner), tf.as_dtype(col.dtype)),)
    rows = tuple(tf.TensorSpec((None,), tf.int64) for _ in range(col.ragged))
    if rows and batch is not None:  # the outermost splits give the batch axis
        rows = (tf.TensorSpec((batch + 1,), tf.int64), *rows[1:])
    return leaf + rows


def _parts(value: Any, col: Column) -> tuple:
    splits = []
    for _ in range(col.ragged):
        if isinstance(value, Ragged):
            s = value.row_splits
            splits.append(s - s[0])
            value = value.values[int(s[0]) : int(s[-1])]
        else:  # a Raw column that came back dense: every row the same length
            n, m = len(value), value.shape[1]
            splits.append(np.arange(n + 1, dtype=np.int64) * m)
            value = value.reshape(n * m, *value.shape[2:])
    if col.dtype == "bytes":
        return (*_bytes_parts(value), *splits)
    return (value, *splits)


def _bytes_parts(value: Any) -> tuple[bytes, np.ndarray]:
    if isinstance(value, BytesColumn):
        offsets = value.offsets
        return value.data[int(offsets[0]) : int(offsets[-1])].tobytes(), offsets - offsets[0]
    flat = [bytes(v) for v in np.asarray(value, dtype=object).reshape(-1)]
    offsets = np.zeros(len(flat) + 1, np.int64)
    np.cumsum([len(v) for v in flat], out=offsets[1:])
    return b"".join(flat), offsets


def _rebuild(tf: Any, parts: tuple, col: Column, batch: int | None) -> Any:
    if col.dtype == "bytes":
        blob, offsets, *splits = parts
        leaf = tf.strings.substr(blob, offsets[:-1], offsets[1:] - offsets[:-1])
        if not col.ragged:
            return tf.reshape(leaf, (-1 if batch is None else batch, *col.shape))
    else:
        leaf, *splits = parts
    for s in reversed(splits):
        leaf = tf.RaggedTensor.from_row_splits(leaf, s, validate=False)
    return leaf
