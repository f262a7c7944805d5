"""What tn.write / tn.Writer produce, read back by TensorFlow (the oracle) and by tn.read.

TensorFlow parses every file with the features its users would write for the data
(FixedLenFeature, RaggedFeature, decode_raw); the parsed values must equal the inputs
(cast the way a tf.train.Example stores them: float32, int64, bytes). Our own reader,
given the spec `write` returned, must give back the inputs in their own dtypes.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecnp as tn

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def tf_parse(tf, paths, features, compression=None):
    """All records of the files parsed in one tf.io.parse_example call -> numpy / lists."""
    paths = [os.fspath(p) for p in (paths if isinstance(paths, list) else [paths])]
    dataset = tf.data.TFRecordDataset(paths, compression_type=compression or "")
    serialized = [r.numpy() for r in dataset]
    parsed = tf.io.parse_example(tf.constant(serialized, tf.string), features)
    out = {}
    for name, value in parsed.items():
        out[name] = value.to_list() if isinstance(value, tf.RaggedTensor) else value.numpy()
    return out


def int_edges(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    info = np.iinfo(dtype)
    hi = min(int(info.max), 2**63 - 1)
    edges = [info.min, hi, 0, 1, hi - 1, info.min + 1, 127, 128, 255, 256]
    edges = [v for v in edges if info.min <= v <= hi]
    size = int(np.prod(shape, dtype=np.int64))
    n = -(-len(edges) // max(1, size)) + 1
    flat = np.resize(np.array(edges, dtype=dtype), n * size)
    return flat.reshape((n, *shape))


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("shape", [(), (3,), (2, 2)])
def test_integers_at_their_range_edges(tf, tmp_path, dtype, shape):
    values = int_edges(dtype, shape)
    paths, spec = tn.write(tmp_path / "ints.tfrecord", {"x": values}, progress=False)
    assert spec == {"x": tn.FixedLen(shape, dtype)}
    got = tf_parse(tf, paths, {"x": tf.io.FixedLenFeature(shape, tf.int64)})["x"]
    assert np.array_equal(got, values.astype(np.int64))
    ours = tn.read(paths, spec)["x"]
    assert ours.dtype == values.dtype and np.array_equal(ours, values)


def test_bool(tf, tmp_path):
    values = np.array([[True, False], [False, False], [True, True]])
    paths, spec = tn.write(tmp_path / "b.tfrecord", {"b": values}, progress=False)
    assert spec == {"b": tn.FixedLen((2,), "bool")}
    got = tf_parse(tf, paths, {"b": tf.io.FixedLenFeature([2], tf.int64)})["b"]
    assert np.array_equal(got, values.astype(np.int64))
    assert np.array_equal(tn.read(paths, spec)["b"], values)


FLOAT_CASES = {
    "float16": [0.0, -0.0, 1.0, 65504.0, -65504.0, 6e-8, np.inf, -np.inf, np.nan, 0.1],
    "float32": [0.0, -0.0, 3.4028235e38, 1.4e-45, -1.17549435e-38, np.inf, np.nan, 1 / 3],
    # (finite float64 beyond float32's range is refused: test_arrays.py)
    "float64": [0.0, -0.0, 3.4028234663852886e38, -np.inf, 1e-320, 1 / 3, np.pi, np.nan, 2.0**-149],
}


@pytest.mark.parametrize("dtype", sorted(FLOAT_CASES))
def test_floats(tf, tmp_path, dtype):
    values = np.array(FLOAT_CASES[dtype], dtype=dtype).reshape(-1, 1).repeat(3, axis=1)
    paths, spec = tn.write(tmp_path / "f.tfrecord", {"f": values}, progress=False)
    assert spec == {"f": tn.FixedLen((3,), dtype)}
    got = tf_parse(tf, paths, {"f": tf.io.FixedLenFeature([3], tf.float32)})["f"]
    with np.errstate(over="ignore"):
        as_float32 = values.astype(np.float32)  # what a float_list holds
    assert np.array_equal(got, as_float32, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(as_float32))
    ours = tn.read(paths, spec)["f"]
    assert ours.dtype == values.dtype
    assert np.array_equal(ours, as_float32.astype(dtype), equal_nan=True)


def test_bytes_and_str(tf, tmp_path):
    columns = {
        "s": ["", "a", "héllo wörld ✓", "x" * 1000],
        "b": [b"", b"\x00", b"a\x00b", bytes(range(256))],
        "fixed": np.array([b"ab", b"", b"c\x00d", b"e"]),  # NumPy S drops trailing NULs only
        "u": np.array(["", "é", "xyz", "日本"]),
        "pairs": np.array([[b"a", b"bb"], [b"", b"c"], [b"d", b""], [b"e", b"f"]]),
    }
    paths, spec = tn.write(tmp_path / "s.tfrecord", columns, progress=False)
    assert spec == {
        "b": tn.Bytes(),
        "fixed": tn.Bytes(),
        "pairs": tn.FixedLen((2,), "bytes"),
        "s": tn.Text(),  # str columns read back as str
        "u": tn.Text(),
    }
    features = {k: tf.io.FixedLenFeature([], tf.string) for k in ("s", "b", "fixed", "u")}
    features["pairs"] = tf.io.FixedLenFeature([2], tf.string)
    got = tf_parse(tf, paths, features)
    assert got["s"].tolist() == [v.encode() for v in columns["s"]]
    assert got["b"].tolist() == columns["b"]
    assert got["fixed"].tolist() == columns["fixed"].tolist()
    assert got["u"].tolist() == [v.encode() for v in columns["u"].tolist()]
    assert got["pairs"].tolist() == columns["pairs"].tolist()
    ours = tn.read(paths, spec)
    assert ours["b"].to_list() == columns["b"]
    assert ours["s"].tolist() == columns["s"]
    assert ours["u"].tolist() == columns["u"].tolist()


def test_ragged_with_empty_rows(tf, tmp_path):
    ints = tn.Ragged(np.array([2**63 - 1, -(2**63), 5, 0], np.int64), [0, 0, 2, 2, 4, 4])
    floats = tn.Ragged(np.array([1.5, -0.0, np.inf], np.float64), [0, 0, 0, 0, 3, 3])
    words = tn.Ragged.from_list([[], [b"a", b""], [], [b"xyz"], []], dtype="bytes")
    boxes = tn.Ragged(np.arange(12, dtype=np.float32).reshape(3, 4), [0, 0, 1, 1, 1, 3])
    columns = {"ints": ints, "floats": floats, "words": words, "boxes": boxes}
    paths, spec = tn.write(tmp_path / "r.tfrecord", columns, progress=False)
    assert spec == {
        "boxes": tn.VarLen("float32", inner_shape=(4,)),
        "floats": tn.VarLen("float64"),
        "ints": tn.VarLen("int64"),
        "words": tn.VarLen("bytes"),
    }
    got = tf_parse(
        tf,
        paths,
        {
            "ints": tf.io.RaggedFeature(tf.int64),
            "floats": tf.io.RaggedFeature(tf.float32),
            "words": tf.io.RaggedFeature(tf.string),
            "boxes": tf.io.RaggedFeature(tf.float32),
        },
    )
    assert got["ints"] == ints.to_list()
    assert got["floats"] == [[], [], [], [1.5, -0.0, np.float32(np.inf)], []]
    assert got["words"] == words.to_list()
    assert got["boxes"] == [list(np.ravel(r)) for r in boxes]
    ours = tn.read(paths, spec)
    assert ours["ints"] == ints
    assert ours["words"] == words
    assert ours["boxes"] == boxes
    with np.errstate(over="ignore"):
        expected = tn.Ragged(floats.values.astype(np.float32).astype(np.float64), floats.row_splits)
    assert ours["floats"] == expected


RAW_DTYPES = [
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "bool",
    "complex64",
    ">i4",
    ">f8",
]


@pytest.mark.parametrize("dtype", RAW_DTYPES)
def test_raw_encoding(tf, tmp_path, dtype):
    rng = np.random.default_rng(7)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        values = rng.integers(0, 2, (5, 3, 2)).astype(bool)
    elif dt.kind == "c":
        values = (rng.normal(size=(5, 3, 2)) + 1j * rng.normal(size=(5, 3, 2))).astype(dt)
    elif dt.kind == "f":
        values = rng.normal(size=(5, 3, 2)).astype(dt)
    else:
        info = np.iinfo(dt)
        values = rng.integers(info.min, info.max, (5, 3, 2), endpoint=True).astype(dt)
    paths, spec = tn.write(tmp_path / "raw.tfrecord", {"t": values}, encoding="raw", progress=False)
    native = values.astype(dt.newbyteorder("="))
    assert spec == {"t": tn.Raw(native.dtype.name, shape=(3, 2))}
    raw = tf_parse(tf, paths, {"t": tf.io.FixedLenFeature([], tf.string)})["t"]
    decoded = tf.io.decode_raw(raw, tf.dtypes.as_dtype(native.dtype), little_endian=True)
    assert np.array_equal(decoded.numpy().reshape(values.shape), native)
    ours = tn.read(paths, spec)["t"]
    assert ours.dtype == native.dtype and np.array_equal(ours, native)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compression(tf, tmp_path, compression):
    values = np.arange(3000, dtype=np.int32).reshape(1000, 3)
    paths, spec = tn.write(
        tmp_path / "c.tfrecord", {"v": values}, compression=compression, progress=False
    )
    got = tf_parse(tf, paths, {"v": tf.io.FixedLenFeature([3], tf.int64)}, compression)["v"]
    assert np.array_equal(got, values)
    assert np.array_equal(tn.read(paths, spec)["v"], values)


def test_shards_names_order_and_index(tf, tmp_path, tf_read, ref):
    values = np.arange(10, dtype=np.int64) * 1000
    words = [f"w{i}" * i for i in range(10)]
    (tmp_path / "out").mkdir()
    result = tn.write(
        tmp_path / "out" / "data.tfrecord",
        {"v": values, "w": words},
        records_per_shard=3,
        index=True,
        progress=False,
    )
    names = [f"data-0000{k}-of-00004.tfrecord" for k in range(4)]
    assert [os.path.basename(p) for p in result.paths] == names
    assert sorted(os.listdir(tmp_path / "out")) == sorted(names + [n + ".idx" for n in names])
    assert result.records == 10
    assert result.bytes == sum(os.path.getsize(p) for p in result.paths)
    got = tf_parse(
        tf,
        result.paths,
        {"v": tf.io.FixedLenFeature([], tf.int64), "w": tf.io.FixedLenFeature([], tf.string)},
    )
    assert got["v"].tolist() == values.tolist()
    assert got["w"].tolist() == [w.encode() for w in words]
    for path in result.paths:
        lengths = [len(p) for p in tf_read(path)]
        lines = [f"{s} {n + 16}" for s, n in zip(ref.starts(lengths), lengths, strict=True)]
        with open(path + ".idx") as f:
            assert f.read().splitlines() == lines
        # trusted: it tiles the file, headers agree
        index = tn.framing.read_index(path + ".idx", path)
        assert index.offsets.tolist() == list(ref.starts(lengths))
        assert index.lengths.tolist() == lengths


def test_records_are_tensorflows_deterministic_bytes(tf, tmp_path, tf_read):
    columns = {
        "label": np.array([3, -7, 0], np.int64),
        "label_name": ["cat", "dog", ""],
        "x": np.array([[0.5, -1.0], [2.0, 0.0], [1e-3, 7.0]], np.float32),
        "ids": tn.Ragged(np.array([1, 2, 3], np.int64), [0, 3, 3, 3]),
    }
    paths, _ = tn.write(tmp_path / "d.tfrecord", columns, progress=False)
    expected = []
    for i in range(3):
        feature = {
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[columns["label"][i]])),
            "label_name": tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[columns["label_name"][i].encode()])
            ),
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=columns["x"][i])),
            "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=columns["ids"][i])),
        }
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        expected.append(example.SerializeToString(deterministic=True))
    assert tf_read(paths[0]) == expected


def test_streaming_writer_batches_and_examples(tf, tmp_path):
    path = tmp_path / "stream.tfrecord"
    with tn.Writer(path, progress=False, verify=True) as w:
        w.write_batch({"id": np.arange(3), "tokens": np.ones((3, 2), np.int64), "t": ["a"] * 3})
        w.write_example({"id": 3, "tokens": [7, 8, 9], "t": b"b"})  # a longer row: VarLen
        w.write_example({"id": np.int64(4), "tokens": np.array([], np.int64), "t": "c"})
        assert not os.path.exists(path)  # nothing appears before close
    assert w.paths == [os.fspath(path)]
    assert w.spec == {"id": tn.FixedLen((), "int64"), "t": tn.Bytes(), "tokens": tn.VarLen("int64")}
    got = tf_parse(
        tf,
        w.paths,
        {
            "id": tf.io.FixedLenFeature([], tf.int64),
            "tokens": tf.io.RaggedFeature(tf.int64),
            "t": tf.io.FixedLenFeature([], tf.string),
        },
    )
    assert got["id"].tolist() == [0, 1, 2, 3, 4]
    assert got["tokens"] == [[1, 1], [1, 1], [1, 1], [7, 8, 9], []]
    assert got["t"].tolist() == [b"a", b"a", b"a", b"b", b"c"]
    ours = tn.read(w.paths, w.spec)
    assert ours["tokens"].to_list() == got["tokens"]


def test_write_example_values(tf, tmp_path):
    path = tmp_path / "ex.tfrecord"
    with tn.Writer(path, progress=False) as w:
        for i in range(2500):  # more than one buffer of examples
            w.write_example(
                {"i": i, "f": i / 4, "v": np.full(2, i, np.int16), "tags": [b"t", str(i)]}
            )
    assert w.spec == {
        "f": tn.FixedLen((), "float64"),
        "i": tn.FixedLen((), "int64"),
        "tags": tn.VarLen("bytes"),
        "v": tn.FixedLen((2,), "int16"),
    }
    got = tf_parse(
        tf,
        w.paths,
        {
            "i": tf.io.FixedLenFeature([], tf.int64),
            "f": tf.io.FixedLenFeature([], tf.float32),
            "v": tf.io.FixedLenFeature([2], tf.int64),
            "tags": tf.io.FixedLenFeature([2], tf.string),
        },
    )
    assert got["i"].tolist() == list(range(2500))
    assert np.array_equal(got["f"], np.arange(2500) / 4)
    assert np.array_equal(got["v"], np.arange(2500)[:, None].repeat(2, 1))
    assert got["tags"][1234].tolist() == [b"t", b"1234"]


@st.composite
def tables(draw):
    n = draw(st.integers(0, 30))
    columns, features, expected = {}, {}, {}
    for k in range(draw(st.integers(1, 4))):
        name = f"f{k}"
        kind = draw(st.sampled_from(["int", "float", "bytes", "ragged"]))
        shape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        if kind == "int":
            dtype = draw(st.sampled_from(INT_DTYPES))
            info = np.iinfo(dtype)
            hi = min(int(info.max), 2**63 - 1)
            values = rng.integers(info.min, hi, (n, *shape), endpoint=True, dtype=dtype)
            features[name] = ("fixed", shape, "int64")
            expected[name] = values.astype(np.int64)
        elif kind == "float":
            dtype = draw(st.sampled_from(["float16", "float32", "float64"]))
            values = (rng.normal(size=(n, *shape)) * 100).astype(dtype)
            features[name] = ("fixed", shape, "float32")
            expected[name] = values.astype(np.float32)
        elif kind == "bytes":
            values = [rng.bytes(int(rng.integers(0, 20))) for _ in range(n)]
            features[name] = ("fixed", (), "string")
            expected[name] = values
        else:
            lengths = rng.integers(0, 5, n)
            values = tn.Ragged.from_lengths(
                rng.integers(-(2**40), 2**40, int(lengths.sum())), lengths
            )
            features[name] = ("ragged", (), "int64")
            expected[name] = values.to_list()
        columns[name] = values
    return columns, features, expected


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_random_tables_read_back_by_tensorflow(tf, tmp_path_factory, table):
    columns, features, expected = table
    folder = tmp_path_factory.mktemp("tables")
    paths, spec = tn.write(folder / "t.tfrecord", columns, progress=False)
    n = len(next(iter(expected.values())))
    if n == 0:
        assert tn.count_records(paths) == 0
        return
    tf_features = {
        name: tf.io.RaggedFeature(tf.int64)
        if how == "ragged"
        else tf.io.FixedLenFeature(shape, getattr(tf, dtype))
        for name, (how, shape, dtype) in features.items()
    }
    got = tf_parse(tf, paths, tf_features)
    for name, want in expected.items():
        if isinstance(want, np.ndarray):
            assert np.array_equal(got[name], want)
        else:
            assert list(got[name]) == want
    ours = tn.read(paths, spec)
    for name, col in columns.items():
        if isinstance(col, tn.Ragged):
            assert ours[name] == col
        elif isinstance(col, list):
            assert ours[name].to_list() == col
        elif col.dtype.kind == "f":
            assert np.array_equal(ours[name], col.astype(np.float32).astype(col.dtype))
        else:
            assert np.array_equal(ours[name], col)


def test_verify_passes_on_good_output(tmp_path):
    columns = {
        "x": np.arange(20_000, dtype=np.float64).reshape(10_000, 2) / 3,
        "r": tn.Ragged.from_lengths(np.arange(30_000), np.full(10_000, 3)),
        "s": [str(i) for i in range(10_000)],
        "raw": np.arange(10_000, dtype="<u2"),
    }
    result = tn.write(
        tmp_path / "v.tfrecord",
        columns,
        encoding={"raw": "raw"},
        verify=True,
        records_per_shard=4000,
        progress=False,
    )
    assert len(result.paths) == 3 and result.records == 10_000
