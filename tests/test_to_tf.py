"""ds.to_tf(): the same batches, values and element_spec as TensorFlow's own pipeline
(TFRecordDataset -> batch -> parse_example) on TF-written files; arrays through to_tf equal
the arrays; model.fit trains from it."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecnp as tn

N = 203  # not a multiple of the batch sizes used


def _example(tf, i: int, rng) -> bytes:
    F = tf.train
    k = int(rng.integers(0, 7))
    f = {
        "label": F.Feature(int64_list=F.Int64List(value=[i])),
        "x": F.Feature(float_list=F.FloatList(value=rng.random(3).tolist())),
        "id": F.Feature(bytes_list=F.BytesList(value=[b"id-%d" % i])),
        "tokens": F.Feature(int64_list=F.Int64List(value=rng.integers(0, 99, k).tolist())),
        "boxes": F.Feature(float_list=F.FloatList(value=rng.random(4 * (k % 3)).tolist())),
        "names": F.Feature(bytes_list=F.BytesList(value=[b"n" * j for j in range(k % 4)])),
    }
    return F.Example(features=F.Features(feature=f)).SerializeToString()


@pytest.fixture(scope="module")
def records(tf, tf_write, tmp_path_factory):
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("to_tf") / "mixed.tfrecord"
    return tf_write(path, [_example(tf, i, rng) for i in range(N)])


def _tf_features(tf):
    # int64 row splits: tfrecnp's (TensorFlow's RaggedFeature defaults to int32)
    return {
        "label": tf.io.FixedLenFeature([], tf.int64),
        "x": tf.io.FixedLenFeature([3], tf.float32),
        "id": tf.io.FixedLenFeature([], tf.string),
        "tokens": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64),
        "boxes": tf.io.RaggedFeature(
            tf.float32,
            partitions=[tf.io.RaggedFeature.UniformRowLength(4)],
            row_splits_dtype=tf.int64,
        ),
        "names": tf.io.RaggedFeature(tf.string, row_splits_dtype=tf.int64),
    }


def _tf_pipeline(tf, path, batch_size, drop_remainder=False):
    data = tf.data.TFRecordDataset(path).batch(batch_size, drop_remainder=drop_remainder)
    return data.map(lambda s: tf.io.parse_example(s, _tf_features(tf)))


def _same(tf, ours, theirs):
    assert set(ours) == set(theirs)
    for name in theirs:
        a, b = ours[name], theirs[name]
        if isinstance(b, tf.RaggedTensor):
            assert isinstance(a, tf.RaggedTensor), name
            assert a.to_list() == b.to_list(), name
        else:
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


@pytest.mark.parametrize("batch_size", [1, 32, 64])
@pytest.mark.parametrize("drop_remainder", [False, True])
def test_batches_and_element_spec_match_tensorflow(tf, records, batch_size, drop_remainder):
    ds = tn.open(records, tn.spec_from_tf(_tf_features(tf)))
    ours = ds.to_tf(batch_size, drop_remainder=drop_remainder)
    theirs = _tf_pipeline(tf, records, batch_size, drop_remainder)
    assert ours.element_spec == theirs.element_spec
    got, want = list(ours), list(theirs)
    assert len(got) == len(want) == (N // batch_size if drop_remainder else -(-N // batch_size))
    for a, b in zip(got, want, strict=True):
        _same(tf, a, b)


def test_unbatched_records_match_tensorflow(tf, records):
    ds = tn.open(records, tn.spec_from_tf(_tf_features(tf)))
    ours = list(ds.to_tf())
    theirs = list(
        tf.data.TFRecordDataset(records).map(
            lambda s: tf.io.parse_single_example(s, _tf_features(tf))
        )
    )
    assert len(ours) == len(theirs) == N
    for a, b in zip(ours, theirs, strict=True):
        for name in b:
            want = b[name].to_list() if isinstance(b[name], tf.RaggedTensor) else b[name].numpy()
            got = a[name].to_list() if isinstance(a[name], tf.RaggedTensor) else a[name].numpy()
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=name)


def test_padding_matches_padded_rows(tf, records):
    ds = tn.open(records, tn.spec_from_tf(_tf_features(tf)))
    for pad in ({"tokens": 5}, {"tokens": None}, {"tokens": (9, -1)}):
        batches = list(ds.to_tf(32, pad=pad, truncate=True))
        want = list(ds.batches(32, pad=pad, truncate=True))
        assert len(batches) == len(want)
        for a, b in zip(batches, want, strict=True):
            np.testing.assert_array_equal(a["tokens"].numpy(), b["tokens"])
            np.testing.assert_array_equal(a["tokens_length"].numpy(), b["tokens_length"])
    spec = ds.to_tf(32, pad={"tokens": 5}, drop_remainder=True).element_spec
    assert spec["tokens"] == tf.TensorSpec((32, 5), tf.int64)
    assert spec["tokens_length"] == tf.TensorSpec((32,), tf.int64)
    with pytest.raises(KeyError, match="nope"):
        ds.to_tf(32, pad={"nope": 3})
    # errors raised while reading reach the caller through tf.data, which wraps them in an
    # InvalidArgumentError that keeps tfrecnp's message
    with pytest.raises(tf.errors.InvalidArgumentError, match="SchemaError: feature 'tokens'"):
        list(ds.to_tf(32, pad={"tokens": 1}))


def test_shuffle_is_a_permutation(tf, records):
    ds = tn.open(records, {"label": tn.FixedLen((), "int64")})
    labels = np.concatenate([b["label"].numpy() for b in ds.to_tf(16, shuffle=True, seed=3)])
    assert sorted(labels.tolist()) == list(range(N))
    assert labels.tolist() != list(range(N))
    again = np.concatenate([b["label"].numpy() for b in ds.to_tf(16, shuffle=True, seed=3)])
    np.testing.assert_array_equal(labels, again)


def test_arrays_through_to_tf(tf, tmp_path):
    rng = np.random.default_rng(1)
    x = rng.random((1000, 4, 3), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    ds = tn.open(tmp_path / "x.npy")
    data = ds.to_tf(64, drop_remainder=True)
    assert data.element_spec == {"x": tf.TensorSpec((64, 4, 3), tf.float32)}
    got = np.concatenate([b["x"].numpy() for b in data])
    np.testing.assert_array_equal(got, x[: 1000 - 1000 % 64])
    cols = {
        "tokens": tn.Ragged(np.arange(10, dtype=np.int32), [0, 3, 3, 10]),
        "blob": np.array([b"a", b"", b"ccc"], dtype=object),
        "steps": tn.Ragged(tn.Ragged(np.arange(6.0), [0, 2, 2, 6]), [0, 1, 3, 3]),
    }
    records = list(tn.open(cols).to_tf())
    assert [r["tokens"].numpy().tolist() for r in records] == [[0, 1, 2], [], [3, 4, 5, 6, 7, 8, 9]]
    assert [r["blob"].numpy() for r in records] == [b"a", b"", b"ccc"]
    assert [r["steps"].to_list() for r in records] == [[[0.0, 1.0]], [[], [2.0, 3.0, 4.0, 5.0]], []]


def test_model_fit_runs_an_epoch(tf, tmp_path):
    rng = np.random.default_rng(2)
    x = rng.random((256, 8), dtype=np.float32)
    y = (x.sum(axis=1) > 4).astype(np.int64)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    tn.write(tmp_path / "train.tfrecord", {"x": x, "y": y})
    data = tn.open(tmp_path / "train.tfrecord").to_tf(32, shuffle=True, seed=0)
    data = data.map(lambda b: (b["x"], b["y"]))
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(2)])
    model.compile("sgd", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(data, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
