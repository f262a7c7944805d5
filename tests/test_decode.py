"""The decoder on hand-built records: every wire rule of FORMAT.md (packed and unpacked
lists, 10-byte negative varints, map entries in any order, duplicates, unknown fields),
the missing / empty / wrong-kind semantics, each column type, SequenceExample, threads,
files, and the exact text of schema errors. Expected values come from what the test
encoded (tests/protowire.py), never from tfrecnp's output."""

from __future__ import annotations

import importlib
import pickle
import struct
import threading

import numpy as np
import protowire as pw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecnp as tn
from tfrecnp.data.read import read
from tfrecnp.data.record_dataset import RecordSource
from tfrecnp.example.decode import Decoder, decode
from tfrecnp.example.spec import Feature
from tfrecnp.example.survey import survey
from tfrecnp.format.payloads import Origins, RecordBatch

decode_module = importlib.import_module("tfrecnp.example.decode")  # tn.decode: the function
blocks_module = importlib.import_module("tfrecnp.data.blocks")
INT64_EXTREMES = [0, 1, -1, 127, 128, 2**31, -(2**31) - 1, 2**32, 2**62, 2**63 - 1, -(2**63)]


def f32(values) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


# --- wire rules --------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    ints=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40),
    floats=st.lists(st.floats(width=32), max_size=40),
    packed=st.booleans(),
    split=st.integers(0, 5),
)
def test_packed_unpacked_and_split_lists_read_the_same(ints, floats, packed, split):
    how = {"packed": packed, "split": split}
    payload = pw.example(
        pw.features(
            [
                pw.entry("i", pw.feature(pw.INT64, ints, **how)),
                pw.entry("f", pw.feature(pw.FLOAT, floats, **how)),
            ]
        )
    )
    out = decode([payload, payload], {"i": tn.VarLen("int64"), "f": tn.VarLen("float32")})
    assert out["i"].row_splits.tolist() == [0, len(ints), 2 * len(ints)]
    assert out["i"].values.tolist() == ints * 2
    assert same_bits(out["f"][1], f32(floats))


def test_negative_int64_is_a_ten_byte_varint():
    assert len(pw.varint(-1)) == 10 and len(pw.varint(-(2**63))) == 10
    payload = pw.simple_example({"x": (pw.INT64, INT64_EXTREMES)}, packed=False)
    packed = pw.simple_example({"x": (pw.INT64, INT64_EXTREMES)})
    spec = {"x": tn.FixedLen(len(INT64_EXTREMES), "int64")}
    out = decode([payload, packed], spec)["x"]
    assert out.dtype == np.int64
    assert out.tolist() == [INT64_EXTREMES, INT64_EXTREMES]


def test_float_specials_keep_their_bits():
    values = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1e-45, 3.4028235e38]
    payload = pw.simple_example({"x": (pw.FLOAT, values)}, packed=False)
    out = decode([payload], {"x": tn.FixedLen(len(values), "float32")})["x"]
    assert same_bits(out[0], f32(values))


def test_map_entries_in_any_order_and_the_last_duplicate_wins():
    first = pw.entry("a", pw.feature(pw.INT64, [1]))
    value_first = pw.entry("b", pw.feature(pw.FLOAT, [2.5, 3.5]), value_first=True)
    again = pw.entry("a", pw.feature(pw.INT64, [7]), value_first=True)
    ignored = pw.entry("zzz", pw.feature(pw.BYTES, [b"x"]))
    payload = pw.example(pw.features([value_first, first, ignored, again]))
    out = decode([payload], {"a": tn.FixedLen((), "int64"), "b": tn.FixedLen(2, "float32")})
    assert out["a"].tolist() == [7]
    assert out["b"].tolist() == [[2.5, 3.5]]


def test_duplicate_key_and_value_fields_inside_one_entry_last_wins():
    body = (
        pw.delimited(2, pw.feature(pw.INT64, [1]))
        + pw.delimited(1, b"other")
        + pw.delimited(1, b"x")
        + pw.delimited(2, pw.feature(pw.INT64, [2]))
    )
    out = decode([pw.example(pw.features([body]))], {"x": tn.FixedLen((), "int64")})
    assert out["x"].tolist() == [2]


def test_features_message_repeated_merges_its_maps():
    part1 = pw.delimited(1, pw.features([pw.entry("a", pw.feature(pw.INT64, [1]))]))
    part2 = pw.delimited(1, pw.features([pw.entry("b", pw.feature(pw.INT64, [2]))]))
    spec = {"a": tn.FixedLen((), "int64"), "b": tn.FixedLen((), "int64")}
    out = decode([part1 + part2], spec)
    assert (out["a"].tolist(), out["b"].tolist()) == ([1], [2])


def test_unknown_fields_are_skipped_at_every_level():
    junk = pw.unknown_fields()
    int_list = junk + pw.int64_list([5, -6]) + junk
    feature = junk + pw.delimited(pw.INT64, int_list) + junk
    entry = junk + pw.delimited(1, b"x") + junk + pw.delimited(2, feature) + junk
    payload = junk + pw.delimited(1, junk + pw.delimited(1, entry) + junk) + junk
    out = decode([payload], {"x": tn.FixedLen(2, "int64")})
    assert out["x"].tolist() == [[5, -6]]


def test_a_later_list_of_another_kind_replaces_the_earlier_oneof_member():
    feature = pw.delimited(pw.FLOAT, pw.float_list([1.0])) + pw.delimited(
        pw.INT64, pw.int64_list([4, 5])
    )
    payload = pw.example(pw.features([pw.entry("x", feature)]))
    assert decode([payload], {"x": tn.VarLen("int64")})["x"].to_list() == [[4, 5]]


def test_repeated_lists_of_one_kind_concatenate():
    feature = pw.delimited(pw.INT64, pw.int64_list([1])) + pw.delimited(
        pw.INT64, pw.int64_list([2, 3], packed=False)
    )
    payload = pw.example(pw.features([pw.entry("x", feature)]))
    assert decode([payload], {"x": tn.FixedLen(3, "int64")})["x"].tolist() == [[1, 2, 3]]


def test_features_outside_the_spec_are_not_looked_at():
    broken = pw.entry("other", b"\xff\xff")  # not a valid Feature
    payload = pw.example(pw.features([broken, pw.entry("x", pw.feature(pw.INT64, [3]))]))
    assert decode([payload], {"x": tn.FixedLen((), "int64")})["x"].tolist() == [3]


def test_an_sequence_example_reads_as_an_example_of_its_context():
    context = pw.features([pw.entry("x", pw.feature(pw.INT64, [9]))])
    lists = pw.features([pw.entry("s", pw.feature_list([pw.feature(pw.INT64, [1])]))])
    payload = pw.sequence_example(context, lists)
    assert decode([payload], {"x": tn.FixedLen((), "int64")})["x"].tolist() == [9]


# --- missing, empty, defaults ------------------------------------------------------------


def test_missing_feature_takes_its_default_and_var_len_gets_an_empty_row():
    present = pw.simple_example({"a": (pw.FLOAT, [1.0, 2.0]), "v": (pw.INT64, [1, 2])})
    absent = pw.simple_example({})
    spec = {
        "a": tn.FixedLen(2, "float32", default=[-1.0, -2.0]),
        "v": tn.VarLen("int64"),
        "s": tn.Bytes(default=b"none"),
        "t": tn.FixedLen((2,), "bytes", default=[b"p", b"q"]),
    }
    out = decode([present, absent, present], spec)
    assert out["a"].tolist() == [[1, 2], [-1, -2], [1, 2]]
    assert out["v"].to_list() == [[1, 2], [], [1, 2]]
    assert out["s"].to_list() == [b"none"] * 3
    assert out["t"].tolist() == [[b"p", b"q"]] * 3


def test_missing_feature_without_default_names_feature_and_record():
    records = [pw.simple_example({"a": (pw.INT64, [1])}), pw.simple_example({})]
    with pytest.raises(tn.SchemaError) as e:
        decode(records, {"a": tn.FixedLen((), "int64")})
    assert str(e.value) == (
        "feature 'a' is missing at <memory> record 1 and tn.FixedLen((), 'int64') has no "
        "default; give it one (default=...), or read it as tn.VarLen('int64') to get empty "
        "rows where it is absent"
    )


def test_a_feature_without_kind_or_an_entry_without_value_is_missing():
    no_kind = pw.example(pw.features([pw.entry("a", b"")]))
    no_value = pw.example(pw.features([pw.entry("a", None)]))
    spec = {"a": tn.FixedLen((), "int64", default=5)}
    assert decode([no_kind, no_value], spec)["a"].tolist() == [5, 5]


def test_present_but_empty_list_is_empty_not_missing():
    empty = pw.example(pw.features([pw.entry("a", pw.delimited(pw.FLOAT, b""))]))
    assert decode([empty], {"a": tn.VarLen("float32")})["a"].to_list() == [[]]
    with pytest.raises(tn.SchemaError) as e:
        decode([empty], {"a": tn.FixedLen(2, "float32", default=[0.0, 0.0])})
    assert str(e.value) == (
        "feature 'a' has 0 values where tn.FixedLen((2,), 'float32', default=[0.0, 0.0]) "
        "expects 2, at <memory> record 0; did you mean tn.VarLen('float32')?"
    )


def test_default_of_a_wider_float_is_exact():
    out = decode([pw.simple_example({})], {"a": tn.FixedLen((), "float64", default=0.1)})
    assert out["a"].dtype == np.float64 and out["a"][0] == 0.1


# --- wrong kind, wrong length ------------------------------------------------------------


def test_raw_bytes_read_as_floats_suggest_raw():
    # seed 003: float32[10] written as one bytes value, described as FixedLen([10], float32)
    blob = np.arange(10, dtype=np.float32).tobytes()
    payload = pw.simple_example({"data": (pw.BYTES, [blob])})
    with pytest.raises(tn.SchemaError) as e:
        decode([payload], {"data": tn.FixedLen([10], "float32")})
    assert str(e.value) == (
        "feature 'data' holds a bytes_list of 1 value (40 bytes) where "
        "tn.FixedLen((10,), 'float32') expects a float_list, at <memory> record 0; "
        "did you mean tn.Raw('float32', shape=(10,))?"
    )
    fixed = decode([payload], {"data": tn.Raw("float32", shape=(10,))})["data"]
    assert same_bits(fixed, np.arange(10, dtype=np.float32)[None])


def test_floats_read_as_ints_suggest_the_float_spec():
    payload = pw.simple_example({"x": (pw.FLOAT, [1.0, 2.0, 3.0])})
    with pytest.raises(tn.SchemaError) as e:
        decode([payload], {"x": tn.FixedLen(3, "int64")})
    assert str(e.value) == (
        "feature 'x' holds a float_list of 3 values where tn.FixedLen((3,), 'int64') expects "
        "an int64_list, at <memory> record 0; did you mean tn.FixedLen((3,), 'float32')?"
    )


def test_wrong_count_and_inner_multiple_errors():
    payload = pw.simple_example({"x": (pw.FLOAT, [1.0] * 7)})
    with pytest.raises(tn.SchemaError) as e:
        decode([payload, payload], {"x": tn.VarLen("float32", inner_shape=(4,))})
    assert str(e.value) == (
        "feature 'x' has 7 values, not a multiple of 4 as tn.VarLen('float32', "
        "inner_shape=(4,)) needs (rows of shape (4,)), at <memory> record 0"
    )
    with pytest.raises(tn.SchemaError) as e:
        decode([payload], {"x": tn.Bytes()})
    assert str(e.value) == (
        "feature 'x' holds a float_list of 7 values where tn.Bytes() expects a bytes_list, "
        "at <memory> record 0; did you mean tn.VarLen('float32')?"
    )


def test_narrowing_checks_the_range_and_names_the_record():
    records = [pw.simple_example({"x": (pw.INT64, [v])}) for v in (0, 255, 256)]
    assert decode(records[:2], {"x": tn.FixedLen((), "uint8")})["x"].tolist() == [0, 255]
    with pytest.raises(tn.SchemaError) as e:
        decode(records, {"x": tn.FixedLen((), "uint8")})
    assert str(e.value) == (
        "feature 'x' value 256 at <memory> record 2 does not fit in uint8 (0..255); "
        "use a wider dtype such as 'int64'"
    )
    tokens = [pw.simple_example({"t": (pw.INT64, v)}) for v in ([1, 2], [], [3, 70000])]
    with pytest.raises(tn.SchemaError, match="value 70000 at <memory> record 2 "):
        decode(tokens, {"t": tn.VarLen("int16")})
    ok = decode(tokens[:2], {"t": tn.VarLen("int16")})["t"]
    assert ok.values.dtype == np.int16 and ok.to_list() == [[1, 2], []]


def test_output_dtypes():
    payload = pw.simple_example({"i": (pw.INT64, [0, 1]), "f": (pw.FLOAT, [0.5, -2.0])})
    out = decode(
        [payload],
        {
            "i": tn.FixedLen(2, "bool"),
            "f": tn.FixedLen(2, "float64"),
            "g": tn.VarLen(np.float16),
        },
    )
    assert out["i"].dtype == np.bool_ and out["i"].tolist() == [[False, True]]
    assert out["f"].dtype == np.float64 and out["f"].tolist() == [[0.5, -2.0]]
    assert out["g"].values.dtype == np.float16


# --- Raw and bytes -----------------------------------------------------------------------


def test_raw_shapes():
    arrays = [np.arange(12, dtype="<i2").reshape(3, 4) + 100 * k for k in range(3)]
    records = [pw.simple_example({"r": (pw.BYTES, [a.tobytes()])}) for a in arrays]
    dense = decode(records, {"r": tn.Raw("int16", shape=(3, 4))})["r"]
    assert same_bits(dense, np.stack(arrays))
    resolved = decode(records, {"r": tn.Raw("int16", shape=(3, -1))})["r"]
    assert same_bits(resolved, np.stack(arrays))
    # a varying first axis: one batch of records of one size is dense, like decode_raw +
    # reshape + batch; the Decoder itself (what datasets decode blocks with) keeps the Ragged
    uniform = decode(records, {"r": tn.Raw("int16", shape=(-1, 2))})["r"]
    assert same_bits(uniform, np.stack([a.reshape(-1, 2) for a in arrays]))
    ragged = Decoder({"r": tn.Raw("int16", shape=(-1, 2))}).decode(records)["r"]
    assert ragged.row_splits.tolist() == [0, 6, 12, 18]
    assert same_bits(ragged.values, np.concatenate([a.reshape(-1, 2) for a in arrays]))
    flat = decode(records, {"r": tn.Raw("int16")})["r"]
    assert same_bits(flat, np.stack([a.reshape(-1) for a in arrays]))


def test_raw_errors():
    records = [pw.simple_example({"r": (pw.BYTES, [b"\0" * n])}) for n in (8, 6)]
    with pytest.raises(tn.SchemaError) as e:
        decode(records, {"r": tn.Raw("float32", shape=(2,))})
    assert str(e.value) == (
        "feature 'r' holds 6 bytes where tn.Raw('float32', shape=(2,)) expects 8 "
        "(2 × 4 bytes), at <memory> record 1"
    )
    ragged = decode(records, {"r": tn.Raw("int16", shape=(-1,))})["r"]
    assert ragged.row_splits.tolist() == [0, 4, 7]
    with pytest.raises(tn.SchemaError) as e:
        decode(records, {"r": tn.Raw("int16", shape=(1, -1))})
    assert str(e.value) == (
        "feature 'r' holds 6 bytes at <memory> record 1 but 8 at <memory> record 0; "
        "tn.Raw('int16', shape=(1, -1)) needs one size per batch. Put the varying axis "
        "first (a Ragged column): tn.Raw('int16', shape=(-1, 1))"
    )
    two = pw.simple_example({"r": (pw.BYTES, [b"ab", b"cd"])})
    with pytest.raises(tn.SchemaError) as e:
        decode([two], {"r": tn.Raw("uint8", shape=(2,))})
    assert str(e.value) == (
        "feature 'r' holds a bytes_list of 2 values where tn.Raw('uint8', shape=(2,)) "
        "expects exactly one value, at <memory> record 0; did you mean tn.VarLen('bytes')?"
    )


def test_raw_ragged_error_for_a_partial_row():
    records = [pw.simple_example({"r": (pw.BYTES, [b"\0" * 6])})]
    with pytest.raises(tn.SchemaError) as e:
        decode(records, {"r": tn.Raw("int32", shape=(-1,))})
    assert str(e.value) == (
        "feature 'r' holds 6 bytes where tn.Raw('int32', shape=(-1,)) expects a multiple "
        "of 4, at <memory> record 0"
    )


def test_bytes_columns():
    values = [[b"", b"a"], [], [b"\x00" * 1000, "é".encode()]]
    records = [
        pw.simple_example({"b": (pw.BYTES, v), "one": (pw.BYTES, [b"k%d" % i])})
        for i, v in enumerate(values)
    ]
    out = decode(records, {"b": tn.VarLen("bytes"), "one": tn.Bytes()})
    assert out["b"].to_list() == values
    assert isinstance(out["one"], tn.BytesColumn)
    assert out["one"].to_list() == [b"k0", b"k1", b"k2"]
    assert out["b"][2].tolist() == values[2]


# --- SequenceExample ---------------------------------------------------------------------


def seq_record(context: dict, lists: dict) -> bytes:
    ctx = pw.features(pw.entry(k, pw.feature(kind, v)) for k, (kind, v) in context.items())
    fl = pw.features(
        pw.entry(k, pw.feature_list(pw.feature(kind, step) for step in steps))
        for k, (kind, steps) in lists.items()
    )
    return pw.sequence_example(ctx, fl)


def test_sequence_example_columns():
    big = [2**40, -(2**35), 2**63 - 1]
    records = [
        seq_record(
            {"id": (pw.BYTES, [b"r0"])},
            {
                "tok": (pw.INT64, [[big[0]], [big[1]], [big[2]]]),
                "xy": (pw.FLOAT, [[1.0, 2.0], [3.0, 4.0]]),
                "var": (pw.INT64, [[1, 2, 3], [], [4]]),
                "w": (pw.BYTES, [[b"a"], [b"bc"]]),
            },
        ),
        seq_record({"id": (pw.BYTES, [b"r1"])}, {"tok": (pw.INT64, [])}),
    ]
    spec = tn.Sequence(
        context={"id": tn.Bytes()},
        sequence={
            "tok": tn.FixedLen((), "int64"),
            "xy": tn.FixedLen(2, "float32"),
            "var": tn.VarLen("int64"),
            "w": tn.Bytes(),
        },
    )
    out = decode(records, spec)
    assert out["id"].to_list() == [b"r0", b"r1"]
    assert out["tok"].to_list() == [big, []]
    assert out["tok"].values.dtype == np.int64
    assert out["xy"].row_splits.tolist() == [0, 2, 2]
    assert out["xy"].values.tolist() == [[1, 2], [3, 4]]
    assert out["var"].to_list() == [[[1, 2, 3], [], [4]], []]
    assert out["w"].to_list() == [[b"a", b"bc"], []]


def test_sequence_raw_and_errors():
    frames = [np.full(3, k, np.float32).tobytes() for k in range(4)]
    records = [seq_record({}, {"f": (pw.BYTES, [[f] for f in frames[:3]])}), seq_record({}, {})]
    out = decode(records, tn.Sequence(sequence={"f": tn.Raw("float32", shape=(3,))}))["f"]
    assert out.row_splits.tolist() == [0, 3, 3]
    assert out.values.tolist() == [[0] * 3, [1] * 3, [2] * 3]
    bad = seq_record({}, {"x": (pw.FLOAT, [[1.0, 2.0], [1.0]])})
    with pytest.raises(tn.SchemaError) as e:
        decode([bad], tn.Sequence(sequence={"x": tn.FixedLen(2, "float32")}))
    assert str(e.value) == (
        "feature list 'x' step 1 of 2 has 1 values where tn.FixedLen((2,), 'float32') "
        "expects 2 per step, at <memory> record 0; did you mean tn.VarLen('float32') "
        "in the sequence?"
    )
    steps = pw.feature_list([pw.feature(pw.FLOAT, [1.0]), pw.feature(pw.INT64, [1])])
    mixed = pw.sequence_example(None, pw.features([pw.entry("x", steps)]))
    with pytest.raises(tn.SchemaError) as e:
        decode([mixed], tn.Sequence(sequence={"x": tn.VarLen("float32")}))
    assert str(e.value) == (
        "feature list 'x' mixes kinds at <memory> record 0: step 1 holds an int64_list "
        "after steps holding float_list"
    )


# --- batches, threads, files -------------------------------------------------------------


def test_threads_give_the_same_columns(monkeypatch):
    monkeypatch.setattr(decode_module, "CHUNK_MIN_BYTES", 1 << 10)
    monkeypatch.setattr(decode_module, "CHUNK_MIN_RECORDS", 16)
    rng = np.random.default_rng(1)
    records, expect = [], []
    for i in range(3000):
        toks = rng.integers(-(2**40), 2**40, rng.integers(0, 20)).tolist()
        records.append(pw.simple_example({"t": (pw.INT64, toks), "b": (pw.BYTES, [b"%d" % i])}))
        expect.append(toks)
    decoder = Decoder({"t": tn.VarLen("int64"), "b": tn.Bytes()})
    one = decoder.decode(records, threads=1)
    four = decoder.decode(records, threads=4)
    offsets = np.cumsum([0] + [len(r) for r in records])
    pieces = decoder._chunks(offsets[:-1], offsets[1:], 4)
    assert len(pieces) == 16 and pieces[0][0] == 0 and pieces[-1][1] == 3000
    assert one["t"].to_list() == four["t"].to_list() == expect
    assert four["b"].to_list() == [b"%d" % i for i in range(3000)]
    bad = [*records[:2500], pw.simple_example({"t": (pw.FLOAT, [1.0])}), *records[:3]]
    with pytest.raises(tn.SchemaError, match="at <memory> record 2500;"):
        decoder.decode(bad, threads=4)


def _pooled(
    records: list[bytes], rng: np.random.Generator, parts: int, path: str = "<pool>", first: int = 0
) -> RecordBatch:
    """The records scattered over `parts` buffers, each record at a random place of a
    random one, with bytes between (a pool's blocks): a batch in the records' order."""
    which = rng.integers(0, parts, len(records))
    buffers = [bytearray(rng.bytes(7)) for _ in range(parts)]
    starts = np.empty(len(records), np.int64)
    for k in rng.permutation(len(records)):  # laid out in another order than they are read
        buf = buffers[which[k]]
        starts[k] = len(buf)
        buf += records[k] + rng.bytes(int(rng.integers(0, 9)))
    ends = starts + np.array([len(r) for r in records], np.int64)
    data = [np.frombuffer(bytes(b), np.uint8) for b in buffers]
    origins = Origins.run(path, first, len(records))
    return RecordBatch.spans(data, starts, ends, origins, which=which.astype(np.int64))


SPECS_OF_EVERY_KIND = {
    "label": tn.FixedLen((), "int64"),
    "x": tn.FixedLen((3,), "float32", default=[0, 0, 0]),
    "t": tn.VarLen("int64"),
    "b": tn.Bytes(),
    "r": tn.Raw("float32", shape=(-1, 2)),
}


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 300), parts=st.integers(1, 6))
def test_records_where_a_pool_holds_them_decode_as_back_to_back(seed, n, parts):
    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        feats = {
            "label": (pw.INT64, [i]),
            "t": (pw.INT64, rng.integers(-(2**40), 2**40, rng.integers(0, 30)).tolist()),
            "b": (pw.BYTES, [rng.bytes(int(rng.integers(0, 40)))]),
            "r": (pw.BYTES, [rng.random(2 * int(rng.integers(0, 5)), np.float32).tobytes()]),
        }
        if rng.random() < 0.7:  # else missing: its default
            feats["x"] = (pw.FLOAT, rng.random(3, np.float32).tolist())
        records.append(pw.simple_example(feats, packed=bool(rng.random() < 0.8)))
    decoder = Decoder(SPECS_OF_EVERY_KIND)
    want = decoder.decode(records, threads=1)
    pooled = _pooled(records, rng, parts)
    for threads in (1, 3):
        with pytest.MonkeyPatch.context() as patch:  # pieces of a few records each
            patch.setattr(decode_module, "CHUNK_MIN_BYTES", 64)
            patch.setattr(decode_module, "CHUNK_MIN_RECORDS", 8)
            got = decoder.decode(pooled, threads=threads)
        for name, col in want.items():
            assert (
                np.array_equal(np.asarray(got[name]), np.asarray(col))
                if isinstance(col, np.ndarray)
                else got[name] == col
            ), name
    packed = pooled.packed()
    assert [bytes(p) for p in packed] == records
    assert [packed.where(r) for r in range(n)] == [("<pool>", r) for r in range(n)]


def test_a_pooled_record_that_does_not_decode_is_named_by_the_pool():
    rng = np.random.default_rng(3)
    good = [pw.simple_example({"label": (pw.INT64, [i])}) for i in range(50)]
    records = [*good[:20], b"\x0a\x05\x0a\x03", *good[20:]]  # a Features that runs out
    pooled = _pooled(records, rng, 4, "pool.tfrecord", 100)
    with pytest.raises(tn.CorruptRecordError) as error:
        Decoder({"label": tn.FixedLen((), "int64")}).decode(pooled)
    assert (error.value.path, error.value.record) == ("pool.tfrecord", 120)


def test_pooled_spans_outside_their_buffer_are_refused():
    from tfrecnp._core import decode as core

    decoder = Decoder({"label": tn.FixedLen((), "int64")})
    record = pw.simple_example({"label": (pw.INT64, [1])})
    parts = [np.frombuffer(record, np.uint8), np.zeros(3, np.uint8)]
    table = np.empty((1, 1, core.ROW_FIELDS), np.int64)
    totals = np.zeros((1, 4), np.int64)
    span = np.array([0], np.int64), np.array([len(record)], np.int64)
    for which in ([2], [-1], [1]):  # no such part; a part too short for the span
        status = core.scan(decoder._plan, parts, *span, 0, 1, table, totals, np.array(which))
        assert status[0] == core.BAD_OFFSETS
    assert core.scan(decoder._plan, parts, *span, 0, 1, table, totals, np.array([0]))[0] == core.OK
    with pytest.raises(ValueError, match="several buffers"):
        core.scan(decoder._plan, parts[0], *span, 0, 1, table, totals, np.array([0]))


def test_read_files_and_errors_name_the_file(tmp_path):
    paths = []
    for k in range(2):
        path = tmp_path / f"part-{k}.tfrecord"
        with tn.RecordWriter(path) as w:
            for i in range(5):
                w.write(pw.simple_example({"x": (pw.INT64, [10 * k + i])}))
        paths.append(path)
    out = read(tmp_path / "part-*.tfrecord", {"x": tn.FixedLen((), "int64")})
    assert out["x"].tolist() == [0, 1, 2, 3, 4, 10, 11, 12, 13, 14]
    with tn.RecordWriter(paths[1]) as w:
        for i in range(5):
            w.write(pw.simple_example({"x": (pw.INT64, [i])} if i != 3 else {}))
    with pytest.raises(tn.SchemaError) as e:
        read(paths, {"x": tn.FixedLen((), "int64")})
    assert f"at {paths[1]} record 3 and" in str(e.value)


def test_decode_takes_record_batches_and_refuses_one_payload():
    payloads = [pw.simple_example({"x": (pw.INT64, [i])}) for i in range(3)]
    lengths = [len(p) for p in payloads]
    batch = tn.framing.RecordBatch(
        np.frombuffer(b"".join(payloads), np.uint8), np.cumsum([0, *lengths])
    )
    assert decode(batch, {"x": tn.FixedLen((), "int64")})["x"].tolist() == [0, 1, 2]
    assert decode(batch.slice(1, 3), {"x": tn.FixedLen((), "int64")})["x"].tolist() == [1, 2]
    assert decode([], {"x": tn.VarLen("int64")})["x"].to_list() == []
    with pytest.raises(TypeError, match="not one payload"):
        decode(payloads[0], {"x": tn.FixedLen((), "int64")})


def test_tensorflow_spec_objects_are_accepted(tf):
    payload = pw.simple_example({"x": (pw.FLOAT, [1.0, 2.0]), "t": (pw.INT64, [5])})
    out = decode(
        [payload],
        {"x": tf.io.FixedLenFeature([2], tf.float32), "t": tf.io.VarLenFeature(tf.int64)},
    )
    assert out["x"].tolist() == [[1.0, 2.0]] and out["t"].to_list() == [[5]]


# --- survey ------------------------------------------------------------------------------


def test_survey_lists_each_feature_once_per_record():
    records = [
        pw.example(
            pw.features(
                [
                    pw.entry("a", pw.feature(pw.INT64, [1, 2])),
                    pw.entry("img", pw.feature(pw.BYTES, [b"\x89PNG\r\n\x1a\nrest"])),
                    pw.entry("a", pw.feature(pw.FLOAT, [1.0])),
                ]
            )
        ),
        seq_record({"c": (pw.INT64, [3])}, {"s": (pw.FLOAT, [[1.0], [2.0, 3.0]])}),
    ]
    s = survey(records)
    rows = sorted(
        (int(r), int(sec), s.names[n], int(k), int(c), int(st_))
        for r, sec, n, k, c, st_ in zip(
            s.record, s.section, s.name, s.kind, s.count, s.steps, strict=True
        )
    )
    assert rows == [
        (0, 0, "a", 2, 1, -1),
        (0, 0, "img", 1, 1, -1),
        (1, 0, "c", 3, 1, -1),
        (1, 1, "s", 2, 3, 2),
    ]
    img = next(i for i in range(len(s)) if s.names[s.name[i]] == "img")
    assert s.first[img] == b"\x89PNG\r\n\x1a\nrest"
    seq = next(i for i in range(len(s)) if s.section[i] == 1)
    assert (s.step_min[seq], s.step_max[seq]) == (1, 2)


def test_survey_reports_malformed_records():
    with pytest.raises(tn.CorruptRecordError, match=r"at <memory> record 1 \(payload byte 1\)"):
        survey([pw.simple_example({}), b"\x0a\x05ab"])


def test_spec_name_encoding_round_trips_unicode():
    name = "名前 ✓"
    payload = pw.simple_example({name: (pw.INT64, [1])})
    assert decode([payload], {name: tn.FixedLen((), "int64")})[name].tolist() == [1]
    assert survey([payload]).names == [name]


def test_float_list_bytes_are_little_endian():
    payload = pw.example(
        pw.features(
            [pw.entry("x", pw.delimited(pw.FLOAT, pw.delimited(1, struct.pack("<f", 1.5))))]
        )
    )
    assert decode([payload], {"x": tn.FixedLen((), "float32")})["x"].tolist() == [1.5]


def test_read_pipelines_many_chunked_batches_without_deadlock(tmp_path, monkeypatch):
    # read() decodes batch k in the pipeline thread while reading batch k + 1, and each
    # decode splits into chunks run by the chunk pool: neither may wait on the other.
    monkeypatch.setattr(decode_module, "CHUNK_MIN_BYTES", 256)
    monkeypatch.setattr(decode_module, "CHUNK_MIN_RECORDS", 4)
    monkeypatch.setattr(blocks_module, "BLOCK_RECORDS", (64, 64))  # tn.read's blocks
    path = tmp_path / "many.tfrecord"
    with tn.RecordWriter(path) as w:
        for i in range(2000):
            w.write(pw.simple_example({"x": (pw.INT64, [i]), "t": (pw.INT64, [i] * (i % 7))}))
    result = {}
    worker = threading.Thread(
        target=lambda: result.update(read(path, {"x": tn.FixedLen((), "int64")}, threads=4)),
        daemon=True,
    )
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "read() deadlocked"
    assert result["x"].tolist() == list(range(2000))


class Shout(Feature):
    """A feature read as another one and finished in Python (the hook tn.Image uses)."""

    def decode_as(self):
        return tn.Bytes()

    def finish(self, column, *, name, where):
        assert name == "w" and where(1) == ("<memory>", 1)  # errors name file and record
        return [v.upper() for v in column.to_list()]


def test_features_can_be_read_as_another_and_finished():
    records = [
        pw.simple_example({"w": (pw.BYTES, [b"ab"])}),
        pw.simple_example({"w": (pw.BYTES, [b"c"])}),
    ]
    assert decode(records, {"w": Shout()})["w"] == [b"AB", b"C"]


def test_survey_of_records_with_many_features():
    wide = pw.simple_example({f"f{i}": (pw.INT64, [i] * (i % 3)) for i in range(200)})
    s = survey([pw.simple_example({"a": (pw.FLOAT, [1.0])}), wide, wide])
    assert len(s) == 1 + 2 * 200
    assert sorted(set(s.names)) == sorted({"a", *(f"f{i}" for i in range(200))})
    counts = {
        s.names[n]: int(c) for n, c, r in zip(s.name, s.count, s.record, strict=True) if r == 2
    }
    assert counts == {f"f{i}": i % 3 for i in range(200)}


def test_batch_size_aims_at_a_few_mib(tmp_path):
    small, big = tmp_path / "small.tfrecord", tmp_path / "big.tfrecord"
    with tn.RecordWriter(small) as w:
        for i in range(100):
            w.write(pw.simple_example({"x": (pw.INT64, [i])}))
    with tn.RecordWriter(big) as w:
        for _ in range(3):
            w.write(pw.simple_example({"r": (pw.BYTES, [b"\0" * (1 << 20)])}))

    def block(path):  # tn.read's blocks: the Dataset's, sized from the first records
        source = RecordSource.of([str(path)], {"x": tn.FixedLen((), "int64")})
        return blocks_module.block_records(1, source.mean_record_bytes(0, None))

    assert block(small) >= 4096  # small records by thousands ...
    assert block(big) <= 64  # ... 1 MiB ones by a few


def test_decoders_pickle():
    decoder = Decoder(tn.Sequence({"c": tn.Bytes()}, {"s": tn.VarLen("int64")}), threads=2)
    record = seq_record({"c": (pw.BYTES, [b"x"])}, {"s": (pw.INT64, [[1], [2, 3]])})
    again = pickle.loads(pickle.dumps(decoder))
    assert again.spec == decoder.spec and again.threads == 2
    assert again.decode([record])["s"].to_list() == [[[1], [2, 3]]]


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.integers(0, 127),
            st.integers(0, 2**21),
            st.integers(-(2**63), 2**63 - 1),
            st.sampled_from(INT64_EXTREMES),
        ),
        max_size=60,
    )
)
def test_packed_varint_decoders_agree_with_the_encoding(values):
    core = importlib.import_module("tfrecnp._core.decode")
    block = np.frombuffer(b"".join(map(pw.varint, values)), np.uint8)
    assert core.decode_packed_varints(block, pext=False).tolist() == values
    if core.has_fast_pext():
        assert core.decode_packed_varints(block, pext=True).tolist() == values
    # the scan's counting (word at a time, the tail masked) and the fill, in context
    payload = pw.simple_example({"x": (pw.INT64, values), "y": (pw.INT64, [1])})
    out = decode([payload, payload], {"x": tn.VarLen("int64")})["x"]
    assert out.to_list() == [values, values]


def test_zero_width_fixed_len_reads_as_zero_width_rows():
    # reshape(-1, 0) cannot tell a row count, so these once failed to decode
    empty = {"f": (pw.FLOAT, []), "i": (pw.INT64, []), "b": (pw.BYTES, [])}
    records = [pw.simple_example(empty)] * 3
    spec = {
        "f": tn.FixedLen(0, "float32"),
        "i": tn.FixedLen((2, 0), "int64"),
        "b": tn.FixedLen((0,), "bytes"),
    }
    out = decode(records, spec)
    assert same_bits(out["f"], np.zeros((3, 0), np.float32))
    assert same_bits(out["i"], np.zeros((3, 2, 0), np.int64))
    assert out["b"].shape == (3, 0) and out["b"].dtype == object
    steps = [
        seq_record({}, {"f": (pw.FLOAT, [[], []]), "b": (pw.BYTES, [[], [], []])}),
        seq_record({}, {}),
    ]
    seq = decode(
        steps,
        tn.Sequence(sequence={"f": tn.FixedLen(0, "float32"), "b": tn.FixedLen(0, "bytes")}),
    )
    assert seq["f"].row_splits.tolist() == [0, 2, 2]
    assert same_bits(seq["f"].values, np.zeros((2, 0), np.float32))
    assert seq["b"].row_splits.tolist() == [0, 3, 3] and seq["b"].values.shape == (3, 0)


def test_empty_defaults_for_missing_features(tmp_path):
    # found by `make asan` replaying the fuzz corpus (UBSan): a default of no values copied
    # into an output of no bytes was memcpy(NULL, default, 0), undefined behaviour
    path = tmp_path / "r.tfrecord"
    tn.write(path, {"b": np.arange(3)}, progress=False)
    got = tn.read(path, {"a": tn.FixedLen((0,), "float32", default=[])})["a"]
    assert got.shape == (3, 0) and got.dtype == np.float32
    assert tn.read(path, {"a": tn.FixedLen((), "bytes", default=b"")})["a"].to_list() == [b""] * 3
    got = tn.read(path, {"a": tn.FixedLen((2,), "bytes", default=[b"", b""])})["a"]
    assert got.tolist() == [[b"", b""]] * 3


def test_read_is_a_dataset_pass(tmp_path):
    # tn.read decodes through the Dataset's block reader: the same rows, and the same
    # damage skipped and listed, as tn.open(...).to_numpy()
    path = tmp_path / "d.tfrecord"
    with tn.RecordWriter(path) as w:
        for i in range(300):
            w.write(pw.simple_example({"x": (pw.INT64, [i]), "t": (pw.INT64, [i] * (i % 4))}))
    index = tn.framing.scan_file(path)
    with open(path, "r+b") as f:  # a payload byte of record 123
        f.seek(int(index.offsets[123]) + 12)
        byte = f.read(1)[0]
        f.seek(-1, 1)
        f.write(bytes([byte ^ 0xFF]))
    spec = {"x": tn.FixedLen((), "int64"), "t": tn.VarLen("int64")}
    with pytest.raises(tn.CorruptRecordError, match="record 123"):
        read(path, spec)
    with pytest.warns(UserWarning, match="record 123"):
        got = read(path, spec, on_error="warn")
    ds = tn.open(path, spec, on_error="skip")
    want = ds.to_numpy()
    assert got["x"].tolist() == want["x"].tolist() == [i for i in range(300) if i != 123]
    assert got["t"].to_list() == want["t"].to_list()
    assert [e.record for e in ds.corruptions] == [123]
