#!/usr/bin/env python3
"""Fuzz target: the Example / SequenceExample decoder, with a random spec, on arbitrary
record bytes.

Input: byte 0 the spec's header (bit 7: a tn.Sequence; bits 0-1: 1 + that many features),
then 3 bytes per feature (kind and name, dtype, shape), then records, each a 2-byte
little-endian length and its bytes (the last one takes what is left).

Feature kinds: FixedLen, FixedLen with a default, VarLen, VarLen with an inner shape, Raw
of a known shape, Raw with a varying first axis, Raw with a -1 inside, tn.Bytes. A spec the
constructors refuse (ValueError, their documented answer) ends the input.

Checks: decoding gives columns of one row per record, or a typed error; decoding each
record alone gives the batch's rows (chunking, offsets and sizing agree); tn.decode (with
its dense_when_uniform step) agrees with the Decoder; the spec schema inference proposes
for the records (tn.infer_spec, `tfrecnp inspect`) reads them without a SchemaError.
"""

from __future__ import annotations

from _harness import Scratch, instrumented, main, row_slice, same, typed_errors

with instrumented():
    import numpy as np

    import tfrecnp as tn
    from tfrecnp.errors import SchemaError
    from tfrecnp.example.decode import Decoder, decode
    from tfrecnp.example.decode_plan import as_batch
    from tfrecnp.example.infer import _survey_stats

TYPED = typed_errors()
SCRATCH = Scratch()
NAMES = ("a", "b", "c", "d")
DTYPES = (
    "int64",
    "float32",
    "bytes",
    "int32",
    "uint8",
    "bool",
    "float16",
    "float64",
    "int8",
    "uint16",
    "uint64",
    "int16",
)


def shape_of(b: int, unknown: bool = False) -> tuple[int, ...]:
    dims = b & 3
    sizes = [(b >> (2 + 2 * k)) & 3 for k in range(dims)]
    if unknown and sizes:
        sizes[(b >> 7) % len(sizes)] = -1
    return tuple(sizes)


def feature(kind: int, dtype_byte: int, shape_byte: int):
    dtype = DTYPES[dtype_byte % len(DTYPES)]
    numeric = dtype if dtype != "bytes" else "uint8"
    k = kind & 7
    if k == 0:
        return tn.FixedLen(shape_of(shape_byte), dtype)
    if k == 1:
        shape = shape_of(shape_byte)
        default = b"d" * (dtype_byte >> 4) if dtype == "bytes" else dtype_byte >> 4
        return tn.FixedLen(shape, dtype, default=default)
    if k == 2:
        return tn.VarLen(dtype)
    if k == 3:
        return tn.VarLen(dtype, inner_shape=shape_of(shape_byte))
    if k == 4:
        return tn.Raw(numeric, shape=shape_of(shape_byte))
    if k == 5:
        shape = shape_of(shape_byte)
        return tn.Raw(numeric, shape=None if not shape else (-1, *shape[1:]))
    if k == 6:
        return tn.Raw(numeric, shape=shape_of(shape_byte, unknown=True))
    return tn.Bytes()


def spec_of(head: bytes):
    sequence, n = head[0] & 0x80, 1 + (head[0] & 3)
    context, steps = {}, {}
    for i in range(n):
        kind, dtype_byte, shape_byte = head[1 + 3 * i : 4 + 3 * i]
        f = feature(kind, dtype_byte, shape_byte)
        name = NAMES[kind >> 3 & 3]
        (steps if sequence and kind & 0x20 else context)[name] = f
    if sequence:
        return tn.Sequence(context, steps)
    return context


def records_of(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data) and len(out) < 16:
        n = int.from_bytes(data[pos : pos + 2], "little")
        out.append(data[pos + 2 : pos + 2 + n])
        pos += 2 + n
    return out


def rows(columns: dict, n: int) -> None:
    for name, col in columns.items():
        got = len(col)
        assert got == n, f"{name}: {got} rows for {n} records"


def check_inferred(records: list[bytes]) -> None:
    """The spec inferred from records (as tn.infer_spec / tfrecnp inspect propose it) reads
    the records it was inferred from: never a SchemaError."""
    batch = as_batch(records)
    try:
        _, inferred, surveyed = _survey_stats(batch, "<fuzz>")
    except TYPED:
        return
    try:
        Decoder(inferred).decode(batch.slice(0, surveyed))
    except SchemaError as e:
        raise AssertionError(f"the inferred spec {inferred} does not read its records: {e}") from e
    except TYPED:
        pass  # damage the survey does not look at (it reads names, kinds and counts)


def test_one_input(data: bytes) -> None:
    if not data:
        return
    size = 1 + 3 * (1 + (data[0] & 3))
    if len(data) < size:
        return
    try:
        spec = spec_of(data[:size])
        decoder = Decoder(spec, threads=1)
    except ValueError:
        return  # the constructors' documented refusal of a spec
    records = records_of(data[size:])
    check_inferred(records)
    try:
        batch = decoder.decode(records)
    except TYPED:
        batch = None
    if batch is not None:
        rows(batch, len(records))
        for i, record in enumerate(records):
            try:
                single = decoder.decode([record])
            except TYPED as e:
                raise AssertionError(f"record {i} fails alone but not in its batch: {e}") from e
            for name, col in single.items():
                assert same(col, row_slice(batch[name], i, i + 1)), (name, i, col, batch[name])
    try:
        dense = decode(records, spec, threads=2)
    except TYPED:
        assert batch is None, "tn.decode failed where the Decoder did not"
        return
    assert batch is not None, "tn.decode succeeded where the Decoder failed"
    rows(dense, len(records))
    for name, col in dense.items():
        if isinstance(col, np.ndarray) and not isinstance(batch[name], np.ndarray):
            continue  # a Raw with a varying first axis, made dense by dense_when_uniform
        assert same(col, batch[name]), name


if __name__ == "__main__":
    main(test_one_input)
