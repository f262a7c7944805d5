#!/usr/bin/env python3
"""Fuzz target: the encoder round trip. Random columns -> tn.write -> tn.read -> equal.

Input: byte 0 options (bits 0-2 rows 0..7, bits 3-4 compression None / GZIP / ZLIB / None,
bit 5 two records per shard, bit 6 .idx sidecars, bit 7 verify=True), byte 1 the number of
columns (1 + b % 4), 2 bytes per column (kind and dtype, shape), then the bytes the values
are cut from (cycled when short).

Column kinds: a dense array written as lists, the same written raw, a tn.Ragged of numbers
(with an inner shape), a list of bytes, rows of lists of bytes, a str array.

Checks: tn.write either refuses the columns with a typed error (values a tf.train.Example
cannot hold: float64 beyond float32, uint64 beyond int64) or writes files that read back,
with the spec it returns, to the same values (floats through float32, str as UTF-8).
"""

from __future__ import annotations

from _harness import Scratch, instrumented, main, typed_errors

with instrumented():
    import numpy as np

    import tfrecnp as tn
    from tfrecnp.example.columns import BytesColumn, Ragged

TYPED = typed_errors()
SCRATCH = Scratch()
NUMERIC = (
    "int64",
    "float32",
    "int32",
    "uint8",
    "bool",
    "float64",
    "float16",
    "int8",
    "uint16",
    "uint32",
    "uint64",
    "int16",
)
COMPRESSIONS = (None, "GZIP", "ZLIB", None)


class Pool:
    """The bytes values are cut from, cycled."""

    def __init__(self, data: bytes):
        self.data = data or b"\x00"
        self.pos = 0

    def take(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            piece = self.data[self.pos : self.pos + n - len(out)]
            out += piece
            self.pos = (self.pos + len(piece)) % len(self.data)
        return bytes(out)

    def array(self, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
        count = int(np.prod(shape))
        if dtype == "bool":
            return np.frombuffer(self.take(count), np.uint8).astype(bool).reshape(shape)
        dt = np.dtype(dtype)
        return np.frombuffer(self.take(count * dt.itemsize), dt).reshape(shape).copy()

    def lengths(self, n: int) -> list[int]:
        return [b % 4 for b in self.take(n)]

    def blobs(self, n: int) -> list[bytes]:
        return [self.take(k) for k in (b % 6 for b in self.take(n))]


def narrowed(values: np.ndarray) -> np.ndarray:
    """Floats as a float_list holds them: through float32, back to their own dtype."""
    if values.dtype.kind != "f":
        return values
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(np.float32).astype(values.dtype)


def column(kind: int, shape_byte: int, n: int, pool: Pool):
    """(column, expected read-back column, encoding)."""
    dtype = NUMERIC[(kind >> 3) % len(NUMERIC)]
    dims = tuple((shape_byte >> (2 * k)) & 3 for k in range(shape_byte >> 6))
    k = kind & 7
    if k in (0, 1):
        values = pool.array(dtype, (n, *dims))
        return values, values if k == 1 else narrowed(values), "raw" if k == 1 else None
    if k == 2:
        inner = dims[:1] if dims and dims[0] else ()
        lengths = pool.lengths(n)
        flat = pool.array(dtype, (sum(lengths), *inner))
        col = Ragged.from_lengths(flat, lengths)
        return col, Ragged.from_lengths(narrowed(flat), lengths), None
    if k == 3:
        blobs = pool.blobs(n)
        return blobs, BytesColumn.from_list(blobs), None
    if k == 4:
        rows = [pool.blobs(m) for m in pool.lengths(n)]
        lengths = [len(r) for r in rows]
        if not any(lengths):  # nothing says these are bytes: lists of nothing are floats
            return rows, np.empty((n, 0) if n else 0, np.float32 if not n else np.float64), None
        expected = Ragged.from_lengths(BytesColumn.from_list([b for r in rows for b in r]), lengths)
        return rows, expected, None
    text = np.array([blob.decode("latin-1") for blob in pool.blobs(n)], dtype="U8")
    # (NumPy drops a str's trailing NULs; the array holds what is written)
    return text, BytesColumn.from_list([str(t) for t in text]), None


def equal(expected, got) -> bool:
    if isinstance(expected, Ragged):
        return (
            isinstance(got, Ragged)
            and np.array_equal(expected.row_splits, got.row_splits)
            and equal(expected.values, got.values)
        )
    if isinstance(expected, BytesColumn):
        if isinstance(got, np.ndarray) and got.dtype == object:
            got = BytesColumn.from_list(list(got.reshape(-1)))
        return isinstance(got, BytesColumn) and expected.to_list() == got.to_list()
    got = np.asarray(got)
    if got.shape != expected.shape:
        return False
    if got.dtype != expected.dtype:
        return False
    if expected.dtype.kind == "f":
        return np.array_equal(got, expected, equal_nan=True)
    return np.array_equal(got, expected)


def test_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    flags, ncols = data[0], 1 + data[1] % 4
    head = 2 + 2 * ncols
    if len(data) < head:
        return
    n = flags & 7
    pool = Pool(data[head:])
    columns, expected, encoding = {}, {}, {}
    for i in range(ncols):
        kind, shape_byte = data[2 + 2 * i], data[3 + 2 * i]
        name = f"f{i}"
        columns[name], expected[name], encoding[name] = column(kind, shape_byte, n, pool)
    out = SCRATCH.fresh("out")
    try:
        result = tn.write(
            str(out / "data.tfrecord"),
            columns,
            encoding=encoding,
            compression=COMPRESSIONS[flags >> 3 & 3],
            records_per_shard=2 if flags & 32 else None,
            index=bool(flags & 64) and not flags & 24,  # (an index needs plain files)
            verify=bool(flags & 128),
            progress=False,
        )
    except TYPED:
        return  # a typed refusal of values a tf.train.Example cannot hold
    assert result.records == n
    back = tn.read(result.paths, spec=result.spec)
    assert set(back) == set(columns), (set(back), set(columns))
    for name in columns:
        if n == 0:  # no record says what an empty column held
            assert len(back[name]) == 0, (name, back[name])
            continue
        assert equal(expected[name], back[name]), (name, expected[name], back[name])
    if flags & 64 and not flags & 24 and result.paths:
        assert len(tn.open(result.paths, spec=result.spec)) == n


if __name__ == "__main__":
    main(test_one_input)
