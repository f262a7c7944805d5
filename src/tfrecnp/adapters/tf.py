"""`ds.to_tf()`: a dataset as a `tf.data.Dataset` with an exact element_spec.

Python hands TensorFlow whole blocks (`ds.batches(block)`: thousands of records read and
decoded by the block path's background thread), each column flattened into a few plain
tensors; the tf.data graph rebuilds the columns and cuts the user's batches out of the
blocks (`rebatch` for dense columns; when there are Ragged ones, which `rebatch` cuts
slower, slices of each column's values and row splits), so the per-batch cost is
TensorFlow's own, not a trip through Python:

- dense columns pass as they are ([n, *shape]);
- byte strings pass as one scalar string holding the block's bytes plus offsets, cut apart
  by `tf.strings.substr` (one tensor instead of a Python object per value);
- Ragged columns pass as values plus row splits and become `tf.RaggedTensor`s through
  `from_row_splits(validate=False)` (the splits were checked when decoded);
- pad= with fixed lengths pads per block in NumPy; a length of None pads each batch in
  the graph.

A generator step per batch would cost more than TensorFlow's own pipeline spends on the
batch (measured: benchmarks/CONSTANTS.md, adapters.tf.to_tf).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .._util.offsets import offsets_of
from .._util.optional import require
from ..example.columns import BytesColumn, Ragged
from ..example.padding import LENGTH_SUFFIX, pad_lengths
from .layout import Column, layout


def to_tf(
    ds: Any,
    batch_size: int | None = None,
    *,
    block: int,
    shuffle: bool | int = False,
    seed: int | None = None,
    drop_remainder: bool = False,
    pad: Any = None,
    truncate: bool = False,
    prefetch: int = 2,
) -> Any:
    """A `tf.data.Dataset` of the records of `ds` (a tfrecnp Dataset), batched when
    batch_size is given; see `Dataset.to_tf`. block: records per hand-over from Python (a
    whole number of batches)."""
    tf = require("tensorflow", "tf")
    if batch_size is None and pad not in (None, False):
        raise ValueError("pad= pads the rows of a batch; give a batch_size too")
    # fixed lengths pad per block in NumPy (the same rows as per batch); a length of None
    # (the batch's longest row) pads each batch in the graph. A bad pad= fails here.
    wanted = pad_lengths(ds.spec, pad)
    fixed = {name: how for name, how in wanted.items() if how[0] is not None} or None
    per_batch = {name: value for name, (length, value) in wanted.items() if length is None}
    fed = layout(ds.spec, fixed)
    signature = {name: _parts_spec(tf, col) for name, col in fed.items()}

    def generate() -> Iterator[dict[str, Any]]:
        blocks = ds.batches(
            block, shuffle=shuffle, seed=seed, pad=fixed, truncate=truncate, prefetch=prefetch
        )
        for cols in blocks:
            yield {name: _parts(cols[name], col) for name, col in fed.items()}

    ragged = any(col.ragged for col in fed.values())
    cut = batch_size is not None and ragged

    def rebuild(parts: dict[str, Any]) -> dict[str, Any]:
        flat = {name: _flat(tf, parts[name], col) for name, col in fed.items()}
        return flat if cut else {name: _nest(tf, *value) for name, value in flat.items()}

    data = tf.data.Dataset.from_generator(generate, output_signature=signature)
    data = data.map(rebuild, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if batch_size is None:
        return data.unbatch().prefetch(tf.data.AUTOTUNE)
    if cut:
        data = data.flat_map(lambda cols: _cut(tf, cols, batch_size, drop_remainder))
    else:
        data = data.rebatch(batch_size, drop_remainder=drop_remainder)
    if per_batch:

        def pad_rows(cols: dict[str, Any]) -> dict[str, Any]:
            out = {}
            for name, value in cols.items():
                if name in per_batch:
                    out[name + LENGTH_SUFFIX] = value.row_lengths()
                    value = value.to_tensor(per_batch[name])
                out[name] = value
            return out

        data = data.map(pad_rows, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return data.prefetch(tf.data.AUTOTUNE)


def _cut(tf: Any, cols: dict[str, tuple], size: int, drop_remainder: bool) -> Any:
    """The batches of one block, cut from its flat parts (leaf, *splits): a batch's rows
    take a slice of each level's splits and of the leaf, then become Ragged (slicing the
    block's RaggedTensors runs ragged __getitem__'s many ops per batch: more CPU, measured
    in benchmarks/CONSTANTS.md, adapters.tf.to_tf)."""
    leaf, *splits = next(iter(cols.values()))
    n = tf.shape(splits[0], tf.int64)[0] - 1 if splits else tf.shape(leaf, tf.int64)[0]
    end = n - n % size if drop_remainder else n

    def cut(a: Any) -> dict[str, Any]:
        b = tf.minimum(a + size, n)
        return {name: _rows(tf, *flat, a=a, b=b, fixed=size if drop_remainder else None)
                for name, flat in cols.items()}  # fmt: skip

    return tf.data.Dataset.range(0, end, size).map(cut)


def _rows(tf: Any, leaf: Any, *splits: Any, a: Any, b: Any, fixed: int | None) -> Any:
    """Rows a..b of a column in flat parts, rebuilt; fixed: the batch's known length (a
    slice forgets it)."""
    cut = []
    for level, s in enumerate(splits):
        part = s[a : b + 1]
        if fixed is not None and level == 0:
            part = tf.ensure_shape(part, (fixed + 1,))
        cut.append(part - part[0])
        a, b = part[0], part[-1]
    leaf = leaf[a:b]
    if fixed is not None and not splits:
        leaf = tf.ensure_shape(leaf, (fixed, *leaf.shape[1:]))
    return _nest(tf, leaf, *cut)


# -- the flat parts a column travels in -------------------------------------------------------
#
# parts = (leaf..., splits...): leaf is (values,) for numbers or (blob, offsets) for bytes;
# splits run from the outermost rows inward, one per ragged axis.


def _parts_spec(tf: Any, col: Column) -> tuple:
    if col.dtype == "bytes":
        leaf = (tf.TensorSpec((), tf.string), tf.TensorSpec((None,), tf.int64))
    else:
        leaf = (tf.TensorSpec((None, *col.shape[col.ragged :]), tf.as_dtype(col.dtype)),)
    return leaf + tuple(tf.TensorSpec((None,), tf.int64) for _ in range(col.ragged))


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
    if not value.flags.writeable:
        # a view of a memory-mapped file: TensorFlow would keep reading the map after the
        # dataset handed its pages back, and every page read would stay resident
        value = value.copy()
    return (value, *splits)


def _bytes_parts(value: Any) -> tuple[bytes, np.ndarray]:
    if isinstance(value, BytesColumn):
        offsets = value.offsets
        return value.data[int(offsets[0]) : int(offsets[-1])].tobytes(), offsets - offsets[0]
    flat = [bytes(v) for v in np.asarray(value, dtype=object).reshape(-1)]
    return b"".join(flat), offsets_of([len(v) for v in flat])


def _flat(tf: Any, parts: tuple, col: Column) -> tuple:
    """(leaf, *splits) of a column's parts: byte strings cut apart, rows of the leaf shaped."""
    if col.dtype != "bytes":
        return parts
    blob, offsets, *splits = parts
    leaf = tf.strings.substr(blob, offsets[:-1], offsets[1:] - offsets[:-1])
    if not col.ragged:
        return (tf.reshape(leaf, (-1, *col.shape)),)
    if col.shape[col.ragged :]:  # bytes in rows of an inner shape (issue 24)
        leaf = tf.reshape(leaf, (-1, *col.shape[col.ragged :]))
    return (leaf, *splits)


def _nest(tf: Any, leaf: Any, *splits: Any) -> Any:
    """The column from its flat parts: a tensor, or Ragged over the splits (checked when
    decoded, so not validated again)."""
    for s in reversed(splits):
        leaf = tf.RaggedTensor.from_row_splits(leaf, s, validate=False)
    return leaf
