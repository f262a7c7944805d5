"""tf.train.SequenceExample written by tn.write (sequence=): TensorFlow reads it back equal,
byte for byte what TensorFlow's deterministic serialization gives; a saved .h5 / .zarr /
.npz of a SequenceExample dataset converts back to the same records."""

import numpy as np
import pytest

import tfrecnp as tn

N = 60


@pytest.fixture(scope="module")
def source(tf, tf_write, tmp_path_factory):
    """TensorFlow-written SequenceExamples: context id / name, feature lists of 3 floats per
    step, of int64 lists and of bytes lists, with empty steps and records without steps."""
    rng = np.random.default_rng(11)
    payloads = []
    for i in range(N):
        ex = tf.train.SequenceExample()
        ex.context.feature["id"].int64_list.value.append(i * 1000 - 7)
        ex.context.feature["name"].bytes_list.value.append(b"record %d" % i)
        pos = ex.feature_lists.feature_list["pos"]
        for _ in range(i % 5):
            pos.feature.add().float_list.value.extend(rng.random(3).astype(np.float32).tolist())
        tok = ex.feature_lists.feature_list["tok"]
        for _ in range(i % 4):
            tok.feature.add().int64_list.value.extend(
                rng.integers(-(1 << 40), 1 << 40, rng.integers(0, 200)).tolist()
            )
        words = ex.feature_lists.feature_list["w"]
        for _ in range(i % 3):
            words.feature.add().bytes_list.value.extend([b"x" * int(k) for k in range(i % 4)])
        payloads.append(ex.SerializeToString(deterministic=True))
    path = tf_write(tmp_path_factory.mktemp("seq") / "seq.tfrecord", payloads)
    return path, payloads


SPEC = tn.Sequence(
    {"id": tn.FixedLen((), "int64"), "name": tn.Bytes()},
    {"pos": tn.FixedLen((3,), "float32"), "tok": tn.VarLen("int64"), "w": tn.VarLen("bytes")},
)
LISTS = ["pos", "tok", "w"]


def _tf_parse(tf, path):
    ctx = {"id": tf.io.FixedLenFeature([], tf.int64), "name": tf.io.FixedLenFeature([], tf.string)}
    seq = {
        "pos": tf.io.FixedLenSequenceFeature([3], tf.float32),
        "tok": tf.io.RaggedFeature(tf.int64),
        "w": tf.io.RaggedFeature(tf.string),
    }
    raw = next(iter(tf.data.TFRecordDataset(path).batch(10 * N)))
    context, lists, _ = tf.io.parse_sequence_example(
        raw, context_features=ctx, sequence_features=seq
    )
    return {k: v.numpy().tolist() for k, v in context.items()}, {
        "pos": lists["pos"].numpy().tolist(),
        "tok": lists["tok"].to_list(),
        "w": lists["w"].to_list(),
    }


def test_write_sequence_examples_reads_back_in_tensorflow(tf, source, tmp_path):
    path, payloads = source
    cols = tn.read(path, SPEC)
    out = tn.write(tmp_path / "back.tfrecord", cols, sequence=LISTS, progress=False, verify=True)
    assert out.spec == SPEC
    assert _tf_parse(tf, out.paths[0]) == _tf_parse(tf, path)
    assert list(tn.iter_records(out.paths[0])) == payloads  # TensorFlow's deterministic bytes
    back = tn.read(out.paths[0], out.spec)
    assert back["id"].tolist() == cols["id"].tolist()
    assert all(back[k] == cols[k] for k in ["name", *LISTS])


def test_writer_streams_sequence_examples_in_batches(tf, source, tmp_path):
    path, payloads = source
    ds = tn.open(path, SPEC)
    with tn.Writer(tmp_path / "s.tfrecord", sequence=LISTS, progress=False) as w:
        for batch in ds.batches(7):
            w.write_batch(batch)
    assert w.spec == SPEC
    assert list(tn.iter_records(w.paths[0])) == payloads


@pytest.mark.parametrize("name", ["seq.h5", "seq.zarr", "seq.npz", "seq_npy"])
def test_saved_sequence_dataset_converts_back(tf, source, tmp_path, name):
    path, payloads = source
    saved = tn.convert(path, tmp_path / name, spec=SPEC, progress=False)
    loaded = tn.load(saved)
    assert loaded.spec == SPEC
    out = tn.write(tmp_path / "w.tfrecord", dict(loaded), sequence=LISTS, progress=False)
    assert list(tn.iter_records(out.paths[0])) == payloads
    out = tn.convert(saved, tmp_path / "c.tfrecord", progress=False)
    assert out.spec == SPEC
    assert list(tn.iter_records(out.paths[0])) == payloads


def test_lists_of_lists_without_sequence_say_how(source, tmp_path):
    path, _ = source
    saved = tn.convert(path, tmp_path / "s.h5", spec=SPEC, progress=False)
    cols = {"tok": tn.load(saved)["tok"]}  # a lazy HDF5 column of rows of rows
    with pytest.raises(tn.SchemaError, match=r"^feature 'tok' is a Ragged of Ragged rows, .*"):
        tn.write(tmp_path / "x.tfrecord", cols, progress=False)
    with pytest.raises(tn.SchemaError, match=r"sequence=\['tok'\]"):
        tn.write(tmp_path / "x.tfrecord", {"tok": tn.read(path, SPEC)["tok"]}, progress=False)
    with pytest.raises(tn.SchemaError, match=r"^sequence feature 'id' is a ndarray; a feature"):
        tn.write(tmp_path / "x.tfrecord", {"id": np.arange(3)}, sequence=["id"], progress=False)
    with pytest.raises(KeyError, match=r"sequence names feature 'nope'"):
        tn.write(tmp_path / "x.tfrecord", {"id": np.arange(3)}, sequence=["nope"], progress=False)


def test_each_sequence_example_by_index_equals_its_row(source):
    path, _ = source
    ds = tn.open(path, SPEC)
    whole = ds[:]
    for i in range(N):
        for name, value in ds[i].items():
            expected = whole[name][i]
            if isinstance(expected, (bytes, np.generic)):
                assert type(value) is type(expected) and value == expected
            else:
                assert _rows(value) == _rows(expected), (i, name)


def _rows(value) -> list:
    """A (possibly nested) value as plain lists, to compare Ragged rows."""
    if isinstance(value, tn.Ragged):
        return [_rows(value[k]) for k in range(len(value))]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return list(value)
