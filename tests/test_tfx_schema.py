"""TFX / TF Metadata schemas as specs: schemas built with TF Metadata's own protos (and written
by its text_format), read with tensorflow-transform's schema_as_feature_spec rules, checked
against tf.io.parse_example with the TensorFlow feature spec those rules give (written out by
hand here: tensorflow-transform does not install beside this TensorFlow); specs written as
schemas that TF Metadata parses and that read back as the same spec."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format
from tensorflow_metadata.proto.v0 import schema_pb2

import tfrecnp as tn
from tfrecnp.cli.main import main

N = 60


def _feature(tf, kind: str, values):
    if kind == "int":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    if kind == "float":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


def record(tf, i: int) -> bytes:
    rng = np.random.default_rng(i)
    k = i % 4
    f = {
        "age": _feature(tf, "int", [i]),
        "vec": _feature(tf, "float", (np.arange(6) * i).tolist()),
        "words": _feature(tf, "bytes", [b"w%d" % j for j in range(i % 3)]),
        "old": _feature(tf, "float", [1.5]),
        "gone": _feature(tf, "int", [1]),
        "idx": _feature(tf, "int", sorted(rng.choice(10, k, replace=False).tolist())),
        "val": _feature(tf, "float", rng.random(k).tolist()),
        "rv": _feature(tf, "float", np.arange(2 * (k + i % 2), dtype=float).tolist()),
        "rl": _feature(tf, "int", [k, i % 2] if k + i % 2 else []),
    }
    if i % 3:
        f["d"] = _feature(tf, "int", [i, -i])
    return tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString()


def build_schema() -> schema_pb2.Schema:
    """The schema with TF Metadata's protos: what TFX's SchemaGen / TFDV hand users."""
    s = schema_pb2.Schema()

    def add(name, kind, **fields):
        f = s.feature.add(name=name, type=kind)
        for k, v in fields.items():
            getattr(f, k).CopyFrom(v) if hasattr(v, "CopyFrom") else setattr(f, k, v)
        return f

    always = schema_pb2.FeaturePresence(min_fraction=1.0, min_count=1)
    add("age", schema_pb2.INT, presence=always, shape=schema_pb2.FixedShape())
    add(
        "vec",
        schema_pb2.FLOAT,
        presence=always,
        shape=schema_pb2.FixedShape(dim=[schema_pb2.FixedShape.Dim(size=d) for d in (2, 3)]),
    )
    add("words", schema_pb2.BYTES)
    add("old", schema_pb2.FLOAT, lifecycle_stage=schema_pb2.DEPRECATED)
    add("gone", schema_pb2.INT, deprecated=True)
    add("idx", schema_pb2.INT, int_domain=schema_pb2.IntDomain(min=0, max=9))
    add("val", schema_pb2.FLOAT)
    sparse = s.sparse_feature.add(name="sp", is_sorted=True)
    sparse.index_feature.add(name="idx")
    sparse.value_feature.name = "val"
    add("d", schema_pb2.INT, value_count=schema_pb2.ValueCount(min=2, max=2))
    add("rv", schema_pb2.FLOAT)
    add("rl", schema_pb2.INT)
    group = s.tensor_representation_group[""]
    dense = group.tensor_representation["d"].dense_tensor
    dense.column_name = "d"
    dense.shape.dim.add(size=2)
    dense.default_value.int_value = 7
    ragged = group.tensor_representation["r"].ragged_tensor
    ragged.feature_path.step.append("rv")
    ragged.partition.add(row_length="rl")
    ragged.partition.add(uniform_row_length=2)
    return s


def tf_spec(tf) -> dict:
    """What tensorflow-transform's schema_as_feature_spec gives for build_schema(), by its
    rules (tfx_bsl's tensor representations), written out by hand."""
    return {
        "age": tf.io.FixedLenFeature([], tf.int64),
        "vec": tf.io.FixedLenFeature([2, 3], tf.float32),
        "words": tf.io.VarLenFeature(tf.string),
        "sp": tf.io.SparseFeature(["idx"], "val", tf.float32, [10], already_sorted=True),
        "d": tf.io.FixedLenFeature([2], tf.int64, default_value=[7, 7]),
        "r": tf.io.RaggedFeature(
            tf.float32,
            value_key="rv",
            partitions=[
                tf.io.RaggedFeature.RowLengths("rl"),
                tf.io.RaggedFeature.UniformRowLength(2),
            ],
        ),
    }


@pytest.fixture(scope="module")
def data(tmp_path_factory, tf):
    folder = tmp_path_factory.mktemp("tfx")
    payloads = [record(tf, i) for i in range(N)]
    with tf.io.TFRecordWriter(str(folder / "data.tfrecord")) as w:
        for p in payloads:
            w.write(p)
    schema = folder / "schema.pbtxt"
    schema.write_text(text_format.MessageToString(build_schema()))
    return folder, payloads


def test_schema_reads_as_tensorflow_transform_maps_it(data, tf):
    folder, payloads = data
    spec = tn.spec_from_schema(folder / "schema.pbtxt")
    assert spec == {
        "d": tn.FixedLen((2,), "int64", default=[7, 7]),
        "r": tn.VarLen(
            "float32",
            partitions=[tn.VarLen.RowLengths("rl"), tn.VarLen.UniformRowLength(2)],
            key="rv",
        ),
        "sp": tn.VarLen("float32", key="val"),
        "idx": tn.VarLen("int64"),
        "age": tn.FixedLen((), "int64"),
        "vec": tn.FixedLen((2, 3), "float32"),
        "words": tn.VarLen("bytes"),
    }
    assert "old" not in spec and "gone" not in spec  # DEPRECATED, deprecated: skipped
    want = tf.io.parse_example(payloads, tf_spec(tf))
    for got in (
        tn.read(str(folder / "data.tfrecord"), spec=str(folder / "schema.pbtxt")),
        tn.open(folder / "data.tfrecord", spec=folder / "schema.pbtxt").to_numpy(),
        tn.open(folder / "data.tfrecord", spec=build_schema()).to_numpy(),  # the message
    ):
        np.testing.assert_array_equal(got["age"], want["age"].numpy())
        np.testing.assert_array_equal(got["vec"], want["vec"].numpy())
        np.testing.assert_array_equal(got["d"], want["d"].numpy())
        assert got["r"].to_list() == want["r"].to_list()
        words = tf.RaggedTensor.from_sparse(want["words"]).to_list()
        assert got["words"].to_list() == words
        dense = np.zeros((N, 10), np.float32)  # the sparse feature, made dense as TF does
        for row in range(N):
            dense[row, got["idx"][row]] = got["sp"][row]
        np.testing.assert_array_equal(dense, tf.sparse.to_dense(want["sp"]).numpy())


def test_cli_takes_a_schema_as_spec(data, tmp_path):
    folder, _ = data
    out = tmp_path / "out"
    code = main(
        ["convert", str(folder / "data.tfrecord"), str(out), "--spec", str(folder / "schema.pbtxt")]
    )
    assert code == 0
    arrays = tn.load(out)
    assert sorted(arrays.keys()) == ["age", "d", "idx", "r", "sp", "vec", "words"]
    np.testing.assert_array_equal(arrays["age"][:], np.arange(N))


def test_legacy_schema_uses_value_counts(tmp_path, tf):
    text = """
    generate_legacy_feature_spec: true
    feature { name: "one" type: INT value_count { min: 1 max: 1 } presence { min_fraction: 0.5 } }
    feature { name: "three" type: FLOAT value_count { min: 3 max: 3 }
              presence { min_fraction: 1.0 } }
    feature { name: "some" type: BYTES value_count { min: 1 max: 4 } }
    feature { name: "label" type: BYTES value_count { min: 1 max: 1 } presence { min_fraction: 0 } }
    """
    # (generate_legacy_feature_spec is in Google's own Schema proto, not the open-source
    # one: tfx_bsl applies these rules when the field exists, and so do we)
    path = tmp_path / "legacy.pbtxt"
    path.write_text(text)
    spec = tn.spec_from_schema(path)
    assert spec == {
        "one": tn.FixedLen((), "int64", default=-1),
        "three": tn.FixedLen((3,), "float32"),
        "some": tn.VarLen("bytes"),
        "label": tn.FixedLen((), "bytes", default=b""),
    }
    feats = {
        "one": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
        "three": tf.io.FixedLenFeature([3], tf.float32),
        "some": tf.io.VarLenFeature(tf.string),
        "label": tf.io.FixedLenFeature([], tf.string, default_value=b""),
    }
    records = []
    for i in range(8):
        f = {"three": _feature(tf, "float", [i, i + 0.5, -i]), "some": _feature(tf, "b", [b"s"])}
        if i % 2:
            f["one"] = _feature(tf, "int", [i])
            f["label"] = _feature(tf, "b", [b"x%d" % i])
        records.append(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())
    want = tf.io.parse_example(records, feats)
    got = tn.Decoder(spec).decode(records)
    np.testing.assert_array_equal(got["one"], want["one"].numpy())
    np.testing.assert_array_equal(got["three"], want["three"].numpy())
    assert got["label"].to_list() == want["label"].numpy().tolist()


def test_spec_written_as_schema_is_parsed_by_tf_metadata_and_reads_back(tmp_path, data, tf):
    folder, payloads = data
    spec = {
        "age": tn.FixedLen((), "int64"),
        "vec": tn.FixedLen((2, 3), "float32"),
        "words": tn.VarLen("bytes"),
        "d": tn.FixedLen((2,), "int64", default=7),
        "r": tn.VarLen(
            "float32",
            partitions=[tn.VarLen.RowLengths("rl"), tn.VarLen.UniformRowLength(2)],
            key="rv",
        ),
        "caption": tn.Text(),
        'name "q" é': tn.FixedLen((), "bytes", default=b"\x00?"),
    }
    path = tmp_path / "schema.pbtxt"
    text = tn.spec_to_schema(spec, path)
    assert path.read_text() == text
    parsed = schema_pb2.Schema()
    text_format.Parse(text, parsed)  # TF Metadata's own parser takes it
    names = {f.name for f in parsed.feature}
    assert {"age", "vec", "words", "d", "rv", "rl", "caption", 'name "q" é'} <= names
    reps = parsed.tensor_representation_group[""].tensor_representation
    assert reps["d"].dense_tensor.default_value.int_value == 7
    back = tn.spec_from_schema(text_format.MessageToString(parsed))  # TF Metadata's text
    for name in ("age", "vec", "words", "d", "r"):
        assert back[name] == spec[name], name
    assert back["caption"] == tn.Bytes()  # stored as BYTES: the schema says no more
    assert back['name "q" é'] == spec['name "q" é']
    cols = tn.read(str(folder / "data.tfrecord"), spec={k: back[k] for k in ("age", "d", "r")})
    want = tf.io.parse_example(payloads, {k: tf_spec(tf)[k] for k in ("age", "d", "r")})
    np.testing.assert_array_equal(cols["d"], want["d"].numpy())
    assert cols["r"].to_list() == want["r"].to_list()


def test_what_a_schema_cannot_say_is_named(tmp_path):
    with pytest.raises(tn.SchemaError, match=r"feature 'x' has a shape but presence"):
        tn.spec_from_schema('feature { name: "x" type: INT shape { } }\n')
    with pytest.raises(tn.SchemaError, match=r"'s' is a STRUCT"):
        tn.spec_from_schema('feature { name: "s" type: STRUCT }\n')
    bad = tmp_path / "bad.pbtxt"
    bad.write_text('feature {\n  name: "x"\n  type: INT\n')
    with pytest.raises(tn.SchemaError, match=r"bad.pbtxt line \d+: a message is not closed"):
        tn.open(bad, spec=bad)
    with pytest.raises(tn.SchemaError, match=r"sparse_feature 'sp' reads feature 'i'"):
        tn.spec_from_schema(
            'feature { name: "v" type: FLOAT }\n'
            'sparse_feature { name: "sp" index_feature { name: "i" } '
            'value_feature { name: "v" } }\n'
        )
    with pytest.raises(tn.SchemaError, match="VarLen default"):
        tn.spec_to_schema({"v": tn.VarLen("int64", default=0)})
    with pytest.raises(FileNotFoundError, match="no such schema file"):
        tn.spec_from_schema(tmp_path / "missing.pbtxt")


def test_a_tfdv_style_schema_with_domains_and_environments_reads():
    """What TFDV's infer_schema writes beside the features: schema-level string domains,
    domain references, float / int domains, comparators, environments, annotations."""
    s = schema_pb2.Schema()
    s.default_environment.extend(["TRAINING", "SERVING"])
    s.string_domain.add(name="colors", value=["red", "grün", 'say "hi"'])
    f = s.feature.add(name="color", type=schema_pb2.BYTES, domain="colors")
    f.presence.min_fraction = 1.0
    f.presence.min_count = 1
    f.shape.dim.add(size=1)
    f.drift_comparator.infinity_norm.threshold = 0.01
    f = s.feature.add(name="score", type=schema_pb2.FLOAT)
    f.float_domain.min, f.float_domain.max = -1e-3, float("inf")
    f.value_count.min, f.value_count.max = 1, 3
    f.not_in_environment.append("SERVING")
    f = s.feature.add(name="label", type=schema_pb2.INT)
    f.int_domain.is_categorical = True
    f.annotation.tag.append("target")
    f.presence.min_fraction = 1.0
    f.shape.SetInParent()
    spec = tn.spec_from_schema(text_format.MessageToString(s))
    assert spec == {
        "color": tn.FixedLen((1,), "bytes"),
        "score": tn.VarLen("float32"),
        "label": tn.FixedLen((), "int64"),
    }
    assert tn.spec_from_schema(text_format.MessageToString(s, as_one_line=True)) == spec
