"""The decoder against TensorFlow, the oracle: random schemas (1-20 features of every kind,
lengths 0-100, inner shapes, unicode names), random values (int64 extremes, NaN, +-inf,
-0.0, random float32 bit patterns, empty and large bytes), records written by
TensorFlow's own tf.train.Example / SequenceExample protos, parsed by
tf.io.parse_example / parse_sequence_example and by tfrecnp; the columns must be equal
(floats bit for bit). Parsed values are compared, never serialized bytes."""

from __future__ import annotations

import math

import numpy as np
import protowire as pw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecnp as tn
from tfrecnp.example.decode import Decoder

SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
INT64_EXTREMES = np.array(
    [0, 1, -1, 127, 128, -128, 2**31 - 1, -(2**31), 2**32, 2**53 + 1, 2**63 - 1, -(2**63)],
    dtype=np.int64,
)
FLOAT_SPECIALS = np.array(
    [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45, -1e-45, 3.4028235e38, 1.0], dtype=np.float32
)
RAW_DTYPES = ["uint8", "int16", "uint16", "int32", "int64", "float16", "float32", "float64"]

names = st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=20, unique=True)


@st.composite
def context_feature(draw):
    """(tn spec, description) for an Example feature or a SequenceExample context one."""
    kind = draw(st.sampled_from(["fixed", "var", "raw", "bytes"]))
    if kind == "fixed":
        dtype = draw(st.sampled_from(["int64", "float32", "bytes", "int32", "float64"]))
        shapes = [(), (2,)] if dtype == "bytes" else [(), (1,), (3,), (2, 3), (100,)]
        shape = draw(st.sampled_from(shapes))
        if not draw(st.booleans()):
            return tn.FixedLen(shape, dtype)
        size = math.prod(shape)
        if dtype == "bytes":
            default = np.array([b"d%d" % i for i in range(size)], object).reshape(shape)
        else:
            default = np.arange(size).reshape(shape)
        return tn.FixedLen(shape, dtype, default=default)
    if kind == "var":
        dtype = draw(st.sampled_from(["int64", "float32", "bytes"]))
        inner = () if dtype == "bytes" else draw(st.sampled_from([(), (), (2,), (4,), (2, 2)]))
        return tn.VarLen(dtype, inner)
    if kind == "raw":
        dtype = draw(st.sampled_from(RAW_DTYPES))
        shape = draw(st.sampled_from([(4,), (2, 3), (-1,), (-1, 2), (3, -1)]))
        return tn.Raw(dtype, shape)
    return tn.Bytes()


@st.composite
def sequence_feature(draw):
    kind = draw(st.sampled_from(["fixed", "var", "bytes"]))
    if kind == "fixed":
        dtype = draw(st.sampled_from(["int64", "float32"]))
        return tn.FixedLen(draw(st.sampled_from([(), (2,), (2, 2)])), dtype)
    if kind == "var":
        return tn.VarLen(draw(st.sampled_from(["int64", "float32", "bytes"])))
    return tn.Bytes()


# --- values ------------------------------------------------------------------------------


def int_values(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    if dtype != "int64":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, endpoint=True, dtype=np.int64)
    out = rng.integers(-(2**63), 2**63 - 1, n, endpoint=True, dtype=np.int64)
    pick = rng.random(n) < 0.3
    out[pick] = rng.choice(INT64_EXTREMES, int(pick.sum()))
    small = rng.random(n) < 0.3
    out[small] = rng.integers(0, 300, int(small.sum()))
    return out


def float_values(rng: np.random.Generator, n: int) -> np.ndarray:
    out = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    out = out.copy()
    pick = rng.random(n) < 0.3
    out[pick] = rng.choice(FLOAT_SPECIALS, int(pick.sum()))
    return out


def bytes_values(rng: np.random.Generator, n: int) -> list[bytes]:
    lengths = np.where(rng.random(n) < 0.2, 0, rng.integers(0, 40, n))
    return [rng.bytes(int(k)) for k in lengths]


def values_for(rng: np.random.Generator, spec, count: int):
    """count values of the spec's dtype, as the list a tf.train list takes."""
    if spec.dtype == "bytes":
        return bytes_values(rng, count)
    if np.dtype(spec.dtype).kind == "f":
        return float_values(rng, count)
    return int_values(rng, count, spec.dtype)


def tf_feature(tf, kind: str, values):
    if kind == "bytes":
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(values)))
    if kind == "float":
        return tf.train.Feature(float_list=tf.train.FloatList(value=np.asarray(values).tolist()))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=np.asarray(values).tolist()))


def kind_of(spec) -> str:
    if isinstance(spec, tn.Raw) or spec.dtype == "bytes":
        return "bytes"
    return "float" if np.dtype(spec.dtype).kind == "f" else "int"


def context_value(rng: np.random.Generator, spec):
    """Values of one record for a context feature, or None when it is left out."""
    if isinstance(spec, tn.FixedLen):
        if spec.default is not None and rng.random() < 0.3:
            return None
        return values_for(rng, spec, spec.size)
    if isinstance(spec, tn.VarLen):
        if rng.random() < 0.15:
            return None
        rows = int(rng.integers(0, 100 // spec.size + 1))
        return values_for(rng, spec, rows * spec.size)
    if isinstance(spec, tn.Raw):
        itemsize = np.dtype(spec.dtype).itemsize
        known = math.prod(d for d in spec.shape if d != -1) * itemsize
        rows = 3 if spec.shape[0] != -1 else int(rng.integers(0, 6))  # (3, -1) -> (3, 3)
        return [rng.bytes(known * (rows if -1 in spec.shape else 1))]
    return bytes_values(rng, 1)


# --- oracle ------------------------------------------------------------------------------


def tf_context_spec(tf, spec):
    dtype = {"bytes": tf.string, "float": tf.float32, "int": tf.int64}[kind_of(spec)]
    if isinstance(spec, tn.Raw):
        return tf.io.FixedLenFeature([], tf.string)
    if isinstance(spec, tn.FixedLen):
        default = None if spec.default is None else spec.default.tolist()
        return tf.io.FixedLenFeature(list(spec.shape), dtype, default_value=default)
    partitions = [tf.io.RaggedFeature.UniformRowLength(d) for d in spec.inner_shape]
    return tf.io.RaggedFeature(dtype, partitions=partitions, row_splits_dtype=tf.int64)


def assert_same(ours, theirs, what: str):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if theirs.dtype == object or ours.dtype == object:
        assert ours.shape == theirs.shape, what
        assert ours.reshape(-1).tolist() == theirs.reshape(-1).tolist(), what
        return
    assert ours.shape == theirs.shape, (what, ours.shape, theirs.shape)
    assert ours.dtype == theirs.dtype, (what, ours.dtype, theirs.dtype)
    assert ours.tobytes() == theirs.tobytes(), what


def check_context(tf, name, spec, ours, theirs):
    if isinstance(spec, tn.Raw):
        blobs = theirs.numpy().tolist()
        dtype = np.dtype(spec.dtype).newbyteorder("<")
        if spec.ragged:
            rows = spec.row_shape
            expected = [np.frombuffer(b, dtype).reshape(-1, *rows) for b in blobs]
            if isinstance(ours, np.ndarray):  # one size in every record: dense, like TF's batch
                assert len({len(e) for e in expected}) == 1, name
                assert_same(ours, np.stack(expected).astype(spec.dtype), name)
                return
            assert len({len(e) for e in expected}) != 1, name  # Ragged only when sizes differ
            assert ours.lengths.tolist() == [len(e) for e in expected], name
            if expected:
                assert_same(ours.values, np.concatenate(expected).astype(spec.dtype), name)
            return
        decoded = tf.io.decode_raw(theirs, getattr(tf, np.dtype(spec.dtype).name)).numpy()
        assert_same(ours, decoded.reshape(len(blobs), *ours.shape[1:]), name)
        assert ours.shape[1:] == tuple(3 if d == -1 else d for d in spec.shape)
        return
    if isinstance(spec, tn.FixedLen):
        expected = theirs.numpy()
        if spec.dtype not in ("bytes", "int64", "float32"):
            expected = expected.astype(spec.dtype)  # TF parses int64 / float32 only
        if isinstance(ours, tn.BytesColumn):
            ours = ours.to_numpy()
        assert_same(ours, expected, name)
        return
    assert isinstance(ours, tn.Ragged)
    assert_same(ours.row_splits, theirs.row_splits.numpy(), name)
    flat = theirs.flat_values.numpy()
    values = ours.values.to_numpy() if isinstance(ours.values, tn.BytesColumn) else ours.values
    assert_same(np.asarray(values), flat, name)


def _plain(value):
    """A value as nested lists (Ragged rows, byte columns, arrays), its type kept."""
    if isinstance(value, tn.Ragged):
        return ["ragged", [_plain(value[k]) for k in range(len(value))]]
    if isinstance(value, tn.BytesColumn):
        return ["bytes", list(value)]
    if isinstance(value, (np.ndarray, np.generic)):  # bit for bit (NaNs included)
        raw = value.tolist() if value.dtype.hasobject else value.tobytes()
        return [type(value).__name__, value.dtype.str, value.shape, raw]
    return [type(value).__name__, value]


def check_one_by_one(payloads, spec, ours):
    """ds[i]'s short path (Decoder.decode_one) gives each record as `decode` gave its row
    (itself checked against TensorFlow); a record it refuses must be one decode rejects."""
    decoder = Decoder(spec)
    for i, p in enumerate(payloads):
        record = decoder.decode_one(np.frombuffer(p, np.uint8), 0, len(p))
        if decoder._ones is not None:
            assert record is not None, i
        if record is not None:
            assert list(record) == list(ours)
            for name, value in record.items():
                assert _plain(value) == _plain(ours[name][i]), (i, name)


# --- Example -----------------------------------------------------------------------------


@SETTINGS
@given(
    spec_names=names,
    features=st.data(),
    records=st.integers(1, 24),
    seed=st.integers(0, 2**32 - 1),
)
def test_examples_match_tensorflow(tf, spec_names, features, records, seed):
    spec = {name: features.draw(context_feature(), label=name) for name in spec_names}
    rng = np.random.default_rng(seed)
    payloads = []
    for _ in range(records):
        feats = {}
        for name, f in spec.items():
            value = context_value(rng, f)
            if value is not None:
                feats[name] = tf_feature(tf, kind_of(f), value)
        example = tf.train.Example(features=tf.train.Features(feature=feats))
        payloads.append(example.SerializeToString())
    theirs = tf.io.parse_example(payloads, {n: tf_context_spec(tf, f) for n, f in spec.items()})
    ours = tn.decode(payloads, spec)
    assert list(ours) == list(spec)
    for name, f in spec.items():
        check_context(tf, name, f, ours[name], theirs[name])
    check_one_by_one(payloads, spec, ours)


def test_large_bytes_values_match_tensorflow(tf):
    rng = np.random.default_rng(7)
    blobs = [rng.bytes(1 << 20), b"", rng.bytes(3)]
    payloads = [
        tf.train.Example(
            features=tf.train.Features(feature={"b": tf_feature(tf, "bytes", [blob])})
        ).SerializeToString()
        for blob in blobs
    ]
    theirs = tf.io.parse_example(payloads, {"b": tf.io.FixedLenFeature([], tf.string)})
    ours = tn.decode(payloads, {"b": tn.Bytes()})["b"]
    assert ours.to_list() == theirs["b"].numpy().tolist() == blobs


# --- SequenceExample ---------------------------------------------------------------------


def tf_sequence_spec(tf, spec):
    dtype = {"bytes": tf.string, "float": tf.float32, "int": tf.int64}[kind_of(spec)]
    if isinstance(spec, tn.FixedLen):
        return tf.io.FixedLenSequenceFeature(list(spec.shape), dtype, allow_missing=True)
    return tf.io.RaggedFeature(dtype, row_splits_dtype=tf.int64)


def step_values(rng: np.random.Generator, spec) -> list:
    if isinstance(spec, tn.FixedLen):
        return values_for(rng, spec, spec.size)
    return values_for(rng, spec, int(rng.integers(0, 8)))


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    context_names=st.lists(st.text(min_size=1, max_size=6), max_size=5, unique=True),
    sequence_names=st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=6, unique=True),
    data=st.data(),
    records=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
)
def test_sequence_examples_match_tensorflow(tf, context_names, sequence_names, data, records, seed):
    context = {n: data.draw(context_feature(), label=n) for n in context_names}
    sequence_names = [n for n in sequence_names if n not in context] or ["\x00seq"]
    sequence = {n: data.draw(sequence_feature(), label=n) for n in sequence_names}
    rng = np.random.default_rng(seed)
    payloads = []
    for _ in range(records):
        ex = tf.train.SequenceExample()
        for name, f in context.items():
            value = context_value(rng, f)
            if value is not None:
                ex.context.feature[name].CopyFrom(tf_feature(tf, kind_of(f), value))
        for name, f in sequence.items():
            if rng.random() < 0.2:
                continue
            steps = ex.feature_lists.feature_list[name]
            for _ in range(int(rng.integers(0, 10))):
                steps.feature.add().CopyFrom(tf_feature(tf, kind_of(f), step_values(rng, f)))
        payloads.append(ex.SerializeToString())
    ctx, lists, lengths = tf.io.parse_sequence_example(
        payloads,
        context_features={n: tf_context_spec(tf, f) for n, f in context.items()} or None,
        sequence_features={n: tf_sequence_spec(tf, f) for n, f in sequence.items()},
    )
    ours = tn.decode(payloads, tn.Sequence(context, sequence))
    check_one_by_one(payloads, tn.Sequence(context, sequence), ours)
    for name, f in context.items():
        check_context(tf, name, f, ours[name], ctx[name])
    for name, f in sequence.items():
        col = ours[name]
        assert isinstance(col, tn.Ragged)
        if isinstance(f, tn.FixedLen):
            steps = lengths[name].numpy()
            assert col.lengths.tolist() == steps.tolist(), name
            dense = lists[name].numpy()
            expected = [dense[i, : steps[i]] for i in range(records)]
            values = col.values.to_numpy() if isinstance(col.values, tn.BytesColumn) else col.values
            flat = np.concatenate(expected) if expected else dense[:0, 0]
            assert_same(np.asarray(values).reshape(flat.shape), flat, name)
        else:
            rt = lists[name]
            assert_same(col.row_splits, rt.row_splits.numpy(), name)
            assert_same(col.values.row_splits, rt.values.row_splits.numpy(), name)
            inner = col.values.values
            inner = inner.to_numpy() if isinstance(inner, tn.BytesColumn) else inner
            assert_same(np.asarray(inner), rt.flat_values.numpy(), name)


def test_sequence_int64_beyond_32_bits_match_tensorflow(tf):
    values = [[2**33 + 1, -(2**40)], [2**63 - 1, -(2**63)], [0, 2**32]]
    ex = tf.train.SequenceExample()
    steps = ex.feature_lists.feature_list["t"]
    for v in values:
        steps.feature.add().int64_list.value.extend(v)
    payload = ex.SerializeToString()
    _, lists, _ = tf.io.parse_sequence_example(
        [payload], sequence_features={"t": tf.io.FixedLenSequenceFeature([2], tf.int64)}
    )
    ours = tn.decode([payload], tn.Sequence(sequence={"t": tn.FixedLen(2, "int64")}))["t"]
    assert ours[0].tolist() == lists["t"].numpy()[0].tolist() == values


@pytest.mark.parametrize("packed", [True, False])
def test_hand_encoded_variants_match_tensorflow(tf, packed):
    """Encodings TensorFlow's writer does not emit, parsed by both."""
    ints = [5, -1, 2**62, -(2**63)]
    floats = [1.5, float("nan"), -0.0]
    entries = [
        pw.entry("f", pw.feature(pw.FLOAT, floats, packed=packed), value_first=True),
        pw.entry("i", pw.feature(pw.INT64, [0], packed=packed)),
        pw.entry("i", pw.feature(pw.INT64, ints, packed=packed, split=0)),
        pw.entry("b", pw.feature(pw.BYTES, [b"x", b""]), value_first=True),
    ]
    payload = pw.example(pw.features(entries))
    tf_spec = {
        "f": tf.io.FixedLenFeature([3], tf.float32),
        "i": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64),
        "b": tf.io.RaggedFeature(tf.string, row_splits_dtype=tf.int64),
    }
    theirs = tf.io.parse_example([payload], tf_spec)
    ours = tn.decode([payload], tf_spec)
    assert_same(ours["f"], theirs["f"].numpy(), "f")
    assert ours["i"].to_list() == theirs["i"].to_list() == [ints]
    assert ours["b"].to_list() == theirs["b"].to_list() == [[b"x", b""]]


def _length(n: int, width: int | None) -> bytes:
    """n as a varint of `width` bytes (padded: non-canonical), or canonical when None or
    when n needs more."""
    canonical = len(pw.varint(n))
    width = canonical if width is None else max(width, canonical)
    return bytes(((n >> 7 * i) & 0x7F) | (0x80 if i < width - 1 else 0) for i in range(width))


@pytest.mark.parametrize("width", [None, 2, 3])
def test_one_list_features_of_any_length_encoding_match_tensorflow(tf, width):
    """A Feature holding one list of one packed block or one bytes value is read by a short
    path in the core: lengths of one, two and three bytes, canonical or padded, read as
    TensorFlow reads them."""
    import struct

    def feature(kind: int, payload: bytes) -> bytes:
        body = pw.tag(1, pw.DELIMITED) + _length(len(payload), width) + payload
        return pw.tag(kind, pw.DELIMITED) + _length(len(body), width) + body

    rng = np.random.default_rng(0)
    records, want = [], {"f": [], "i": [], "b": []}
    for n in (0, 1, 31, 32, 33, 4095, 4096):  # float blocks of 0 .. 16 384 bytes
        floats = rng.random(n, dtype=np.float32)
        ints = rng.integers(-(2**40), 2**40, n).tolist()
        raw = rng.bytes(n * 4 + n % 3)
        packed_ints = b"".join(pw.varint(v) for v in ints)
        entries = [
            pw.entry("f", feature(pw.FLOAT, struct.pack(f"<{n}f", *floats))),
            pw.entry("i", feature(pw.INT64, packed_ints)),
            pw.entry("b", feature(pw.BYTES, raw)),
        ]
        records.append(pw.example(pw.features(entries)))
        want["f"].append(floats.tolist())
        want["i"].append(ints)
        want["b"].append([raw])
    tf_spec = {
        "f": tf.io.RaggedFeature(tf.float32, row_splits_dtype=tf.int64),
        "i": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64),
        "b": tf.io.RaggedFeature(tf.string, row_splits_dtype=tf.int64),
    }
    theirs = tf.io.parse_example(records, tf_spec)
    ours = tn.decode(records, tf_spec)
    for name in tf_spec:
        assert ours[name].to_list() == theirs[name].to_list() == want[name], name


def test_zero_width_fixed_len_matches_tensorflow(tf, tmp_path):
    path = str(tmp_path / "z.tfrecord")
    for dtype, tf_dtype in [("S1", tf.string), ("float32", tf.float32), ("int64", tf.int64)]:
        spec = tn.write(path, {"s": np.zeros((3, 0), dtype)}).spec
        assert spec == {"s": tn.FixedLen((0,), "bytes" if dtype == "S1" else dtype)}
        payloads = [r.numpy() for r in tf.data.TFRecordDataset(path)]
        theirs = tf.io.parse_example(payloads, {"s": tf.io.FixedLenFeature([0], tf_dtype)})
        ours = tn.read(path, spec)["s"]
        assert ours.shape == tuple(theirs["s"].shape) == (3, 0), dtype
        assert ours.dtype == (object if dtype == "S1" else np.dtype(dtype))


def test_fixed_length_sequence_features_as_tensorflow_gives_them(tf, tmp_path):
    """FixedLenSequenceFeature([3]) in a SequenceExample: a Ragged of rows of 3 (padded:
    [batch, T, 3]), equal to tf.io.parse_sequence_example; TensorFlow's own spec objects
    are taken as they are, in a tn.Sequence or as the (context, sequence) pair."""
    F = tf.train
    rng = np.random.default_rng(0)
    path = str(tmp_path / "seq.tfrecord")
    steps = [1, 3, 0, 2, 3, 1]
    with tf.io.TFRecordWriter(path) as w:
        for i, t in enumerate(steps):
            feature = [F.Feature(float_list=F.FloatList(value=rng.random(3))) for _ in range(t)]
            lists = F.FeatureLists(feature_list={"pts": F.FeatureList(feature=feature)})
            ctx = F.Features(feature={"id": F.Feature(int64_list=F.Int64List(value=[i]))})
            w.write(F.SequenceExample(context=ctx, feature_lists=lists).SerializeToString())
    context = {"id": tf.io.FixedLenFeature([], tf.int64)}
    sequence = {"pts": tf.io.FixedLenSequenceFeature([3], tf.float32, allow_missing=True)}
    serialized = [r.numpy() for r in tf.data.TFRecordDataset(path)]
    _, theirs, lengths = tf.io.parse_sequence_example(serialized, context, sequence)
    for spec in (tn.Sequence(context, sequence), (context, sequence)):
        ds = tn.open(path, spec)
        assert ds.spec.sequence == {"pts": tn.FixedLen((3,), "float32")}
        ours = next(ds.batches(len(steps)))["pts"]
        assert isinstance(ours, tn.Ragged) and ours.inner_shape == (3,)
        assert ours.lengths.tolist() == lengths["pts"].numpy().tolist() == steps
        padded = next(ds.batches(len(steps), pad={"pts": None}))
        assert np.array_equal(padded["pts"], theirs["pts"].numpy())


ARRAY = np.arange(10, dtype=np.float32).tobytes()  # 40 bytes, one array's raw bytes
HINTED = [  # (record kind, what one record holds, the spec given), each wrong for the data
    ("example", ("float", [1.0, 2.0]), tn.FixedLen((3,), "float32")),
    ("example", ("bytes", [ARRAY]), tn.FixedLen((10,), "float32")),
    ("example", ("bytes", [ARRAY]), tn.VarLen("float32", inner_shape=(2,))),
    ("example", ("bytes", [ARRAY]), tn.Raw("float64", shape=(2, 2))),
    ("example", ("int64", [1, 2, 3]), tn.Raw("float32", shape=(3,))),
    ("example", ("bytes", [ARRAY[:8]]), tn.FixedLen((), "int64")),
    ("example", ("bytes", [b"a", b"b"]), tn.Raw("uint8")),
    ("example", ("float", [1.5]), tn.Bytes()),
    ("steps", ("float", [1.0, 2.0]), tn.FixedLen((3,), "float32")),
    ("steps", ("bytes", [ARRAY]), tn.FixedLen((10,), "float32")),
    ("steps", ("bytes", [ARRAY]), tn.FixedLen((), "float32")),
    ("steps", ("bytes", [ARRAY]), tn.VarLen("float32")),
    ("steps", ("bytes", [ARRAY]), tn.VarLen("float32", inner_shape=(5,))),
    ("steps", ("bytes", [ARRAY, ARRAY]), tn.VarLen("float32")),
    ("steps", ("bytes", [b"a", b"b"]), tn.Bytes()),
    ("steps", ("float", [1.5]), tn.Bytes()),
]


@pytest.mark.parametrize(("record", "holds", "spec"), HINTED)
def test_did_you_mean_hints_are_code_that_reads_the_file(tf, tmp_path, record, holds, spec):
    """A SchemaError's 'did you mean X?' is Python that builds a spec its place accepts
    (a feature list takes no Raw of varying length), and that spec reads the file."""
    import re

    kind, values = holds
    lists = {"bytes": tf.train.BytesList, "float": tf.train.FloatList, "int64": tf.train.Int64List}
    feature = tf.train.Feature(**{f"{kind}_list": lists[kind](value=values)})
    if record == "example":
        proto = tf.train.Example(features=tf.train.Features(feature={"x": feature}))
        as_spec = lambda f: {"x": f}  # noqa: E731
    else:  # three steps, each holding what one Example's feature holds
        steps = tf.train.FeatureList(feature=[feature] * 3)
        proto = tf.train.SequenceExample(
            feature_lists=tf.train.FeatureLists(feature_list={"x": steps})
        )
        as_spec = lambda f: tn.Sequence(sequence={"x": f})  # noqa: E731
    path = str(tmp_path / "x.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        writer.write(proto.SerializeToString())
    with pytest.raises(tn.SchemaError) as info:
        tn.read(path, spec=as_spec(spec))
    hint = re.search(r"did you mean (tn\..*?)(?: in the sequence)?\?$", str(info.value))
    assert hint, str(info.value)
    suggested = eval(hint.group(1), {"tn": tn})
    tn.read(path, spec=as_spec(suggested))  # reads, no SchemaError
