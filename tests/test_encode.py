"""The encoder core (tfrecnp._core.encode) against TensorFlow's own serializer.

Every record must be byte-identical to ``tf.train.Example.SerializeToString(
deterministic=True)`` of the same values (keys sorted, packed lists, 10-byte negative
varints, empty lists kept). Also: every split and offset is checked before bytes are
written, and a change of the input between the two passes is caught.
"""

from __future__ import annotations

import numpy as np
import protowire as pw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfrecnp._core import encode
from tfrecnp.example.write_inputs import key_order

INT64_EDGES = [0, 1, -1, 127, 128, -128, 2**31 - 1, -(2**31), 2**32, 2**63 - 1, -(2**63)]


def tf_examples(tf, rows: list[dict[str, tuple[str, list]]]) -> list[bytes]:
    """rows: [{name: (kind, values)}] -> TensorFlow's deterministic serialization."""
    out = []
    for row in rows:
        feature = {}
        for name, (kind, values) in row.items():
            if kind == "float":
                feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
            elif kind == "int":
                feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
            else:
                feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        out.append(example.SerializeToString(deterministic=True))
    return out


def ours(columns: dict[str, tuple[str, list[list]]], n: int) -> list[bytes]:
    """columns: {name: (kind, per-row value lists)} -> our records, via row splits."""
    feats = []
    for name in sorted(columns, key=lambda k: key_order(k.encode())):
        kind, rows = columns[name]
        splits = np.zeros(n + 1, np.int64)
        np.cumsum([len(r) for r in rows], out=splits[1:])
        flat = [v for r in rows for v in r]
        if kind == "float":
            feats.append(
                (name.encode(), encode.FLOAT, np.array(flat, np.float32), None, 0, splits, 0)
            )
        elif kind == "int":
            feats.append(
                (name.encode(), encode.INT64, np.array(flat, np.int64), None, 0, splits, 0)
            )
        else:
            lengths = [len(v) for v in flat]
            voff = np.zeros(len(flat) + 1, np.int64)
            np.cumsum(lengths, out=voff[1:])
            data = np.frombuffer(b"".join(flat), np.uint8)
            feats.append((name.encode(), encode.BYTES, data, voff, 0, splits, 0))
    data, offsets = encode.encode_examples(feats, n)
    return [data[offsets[i] : offsets[i + 1]].tobytes() for i in range(n)]


def _transpose(columns, n):
    return [{name: (kind, rows[i]) for name, (kind, rows) in columns.items()} for i in range(n)]


def test_known_values_match_tensorflow_bytes(tf):
    rows = 4
    columns = {
        "ints": ("int", [INT64_EDGES, [], [5], [-1, -1]]),
        "floats": ("float", [[0.0, -0.0, 1.5], [], [np.inf, -np.inf], [3.4e38, 1e-45]]),
        "bytes": ("bytes", [[b""], [b"a", b"\x00\xff"], [], [b"x" * 300]]),
        "é-unicode": ("int", [[1], [2], [3], [4]]),
        "": ("bytes", [[b"empty key"], [], [], []]),
        "int": ("int", [[1], [2], [3], [4]]),  # a prefix of "ints"
    }
    assert ours(columns, rows) == tf_examples(tf, _transpose(columns, rows))


KINDS = st.sampled_from(["float", "int", "bytes"])
FLOATS = st.floats(width=32, allow_nan=False)  # NaN payload bits are not a TF promise
INTS = st.one_of(st.sampled_from(INT64_EDGES), st.integers(-(2**63), 2**63 - 1))
BYTES = st.binary(max_size=40)
VALUES = {"float": FLOATS, "int": INTS, "bytes": BYTES}


@st.composite
def schemas(draw):
    n = draw(st.integers(1, 6))
    names = draw(st.lists(st.text(min_size=0, max_size=6), min_size=1, max_size=5, unique=True))
    columns = {}
    for name in names:
        kind = draw(KINDS)
        rows = [draw(st.lists(VALUES[kind], max_size=12)) for _ in range(n)]
        columns[name] = (kind, rows)
    return columns, n


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas())
def test_random_schemas_match_tensorflow_bytes(tf, case):
    columns, n = case
    assert ours(columns, n) == tf_examples(tf, _transpose(columns, n))


def test_strides_match_tensorflow_bytes(tf):
    """Row and value strides (no split / offset arrays) give TensorFlow's bytes, as the
    explicit arrays do."""
    n, k = 5, 3
    values = np.arange(n * k, dtype=np.float32)
    raw = np.arange(n * 8, dtype=np.uint8)
    rows = [
        {
            "f": ("float", values[i * k : (i + 1) * k].tolist()),
            "r": ("bytes", [raw[i * 8 : (i + 1) * 8].tobytes()]),
        }
        for i in range(n)
    ]
    expected = tf_examples(tf, rows)
    for feats in (
        [
            (b"f", encode.FLOAT, values, None, 0, None, k),
            (b"r", encode.BYTES, raw, None, 8, None, 1),
        ],
        [
            (b"f", encode.FLOAT, values, None, 0, np.arange(n + 1) * k, 0),
            (b"r", encode.BYTES, raw, np.arange(n + 1) * 8, 0, np.arange(n + 1), 0),
        ],
    ):
        data, offsets = encode.encode_examples(feats, n)
        assert offsets.tolist() == np.cumsum([0] + [len(e) for e in expected]).tolist()
        assert data.tobytes() == b"".join(expected)


def test_zero_records():
    data, offsets = encode.encode_examples(
        [(b"x", encode.INT64, np.empty(0, np.int64), None, 0, None, 1)], 0
    )
    assert len(data) == 0 and offsets.tolist() == [0]


SPLITS = "row splits decrease or point past the values"
OFFSETS = "value offsets decrease or point past the bytes"


@pytest.mark.parametrize(
    ("splits", "voff", "code", "row", "reason"),
    [
        ([0, 2, 1], None, encode.BAD_SPLITS, 1, SPLITS),  # decreasing
        ([0, 1, 4], None, encode.BAD_SPLITS, 1, SPLITS),  # past the 3 values
        ([-1, 1, 2], None, encode.BAD_SPLITS, 0, SPLITS),
        ([0, 1, 3], [0, 2, 1, 3], encode.BAD_OFFSETS, 1, OFFSETS),  # value 1 ends before start
        ([0, 1, 3], [0, 1, 2, 9], encode.BAD_OFFSETS, 1, OFFSETS),  # past the 3 bytes
    ],
)
def test_bad_splits_and_offsets_are_caught_before_writing(splits, voff, code, row, reason):
    voff = np.array(voff if voff is not None else [0, 1, 2, 3], np.int64)
    feats = [
        (b"a", encode.INT64, np.arange(2, dtype=np.int64), None, 0, None, 1),
        (b"b", encode.BYTES, np.frombuffer(b"xyz", np.uint8), voff, 0, np.array(splits), 0),
    ]
    with pytest.raises(encode.EncodeError) as info:
        encode.encode_examples(feats, 2)
    assert (info.value.code, info.value.row, info.value.feature) == (code, row, 1)
    assert str(info.value) == f"{reason} (row {row}, feature 1)"


def test_batch_rejects_buffers_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"feature b'x': 2 row splits for 3 rows \(expected 4\)"):
        encode.Batch([(b"x", encode.INT64, np.zeros(3, np.int64), None, 0, [0, 1], 0)], 3)
    with pytest.raises(ValueError, match=r"feature b'x': data items are float64, not 4 bytes"):
        encode.Batch([(b"x", encode.FLOAT, np.zeros(3), None, 0, None, 1)], 3)
    batch = encode.Batch([(b"x", encode.INT64, np.zeros(3, np.int64), None, 0, None, 1)], 3)
    batch.measure(0, 3)
    size = 3 * len(pw.simple_example({"x": (pw.INT64, [0])}))
    assert batch.finish() == size
    with pytest.raises(ValueError, match=f"output holds {size + 1} bytes, the batch needs {size}"):
        batch.fill(np.empty(size + 1, np.uint8), 0, 3)
    with pytest.raises(ValueError, match=r"rows 2\.\.5 outside 0\.\.3"):
        batch.measure(2, 5)


def test_input_changed_between_passes_is_caught():
    """Pass two checks every record ends where pass one measured it."""
    values = np.array([1, 2, 3], np.int64)
    batch = encode.Batch([(b"x", encode.INT64, values, None, 0, None, 1)], 3)
    batch.measure(0, 3)
    out = np.empty(batch.finish(), np.uint8)
    values[1] = -5  # a 10-byte varint where a 1-byte one was measured
    with pytest.raises(encode.EncodeError) as info:
        batch.fill(out, 0, 3)
    assert info.value.code == encode.CHANGED and info.value.row == 1
    assert info.value.reason == "the input changed while it was being encoded"


def test_record_of_2_gib_is_refused(tmp_path):
    """The size check runs before any output is allocated: a sparse 2 GiB input is enough."""
    path = tmp_path / "sparse.bin"
    with open(path, "wb") as f:
        f.truncate(1 << 31)
    big = np.memmap(path, np.uint8, mode="r")
    with pytest.raises(encode.EncodeError) as info:
        encode.encode_examples([(b"x", encode.BYTES, big, None, 1 << 31, None, 1)], 1)
    assert info.value.code == encode.TOO_LARGE
    del big


def test_rows_can_be_measured_and_filled_in_pieces(tf):
    """Disjoint row ranges (as threads would take them) give TensorFlow's bytes."""
    values = np.arange(100, dtype=np.int64) * 1000
    feats = [(b"v", encode.INT64, values, None, 0, None, 4)]
    rows = [{"v": ("int", values[i * 4 : (i + 1) * 4].tolist())} for i in range(25)]
    whole = b"".join(tf_examples(tf, rows))
    batch = encode.Batch(feats, 25)
    for a, b in ((0, 10), (10, 11), (11, 25)):
        batch.measure(a, b)
    out = np.empty(batch.finish(), np.uint8)
    for a, b in ((11, 25), (0, 10), (10, 11)):
        batch.fill(out, a, b)
    assert out.tobytes() == whole


def test_index_lines():
    starts = np.array([0, 25, 10**12], np.int64)
    frames = np.array([25, 9, 16], np.int64)
    text = encode.index_lines(starts, frames).tobytes().decode()
    assert text == "".join(f"{s} {f}\n" for s, f in zip(starts, frames, strict=True))
    assert encode.index_lines(np.empty(0, np.int64), np.empty(0, np.int64)).size == 0
    with pytest.raises(ValueError, match="index offsets and lengths must be >= 0"):
        encode.index_lines(np.array([-1], np.int64), np.array([16], np.int64))
