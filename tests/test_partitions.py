"""Row partitions, padding defaults and required feature lists (issue 24) through the
whole path: tfrecnp's own spelling, spec files, datasets, to_tf / to_torch / pad=, with
TensorFlow's parse_example as the oracle for values and messages asserted as text."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecnp as tn

KEY = "objects/keypoints"
LENGTHS = KEY + "/ragged_row_lengths_0"


def _f(tf, kind, *v):
    if kind == "f":
        return tf.train.Feature(float_list=tf.train.FloatList(value=v))
    if kind == "i":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=v))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=v))


def _example(tf, **features) -> bytes:
    feats = {k.replace("__", "/"): v for k, v in features.items()}
    return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()


@pytest.fixture(scope="module")
def keypoints(tf, tf_write, tmp_path_factory):
    """TFDS's layout of a Sequence of lists: flat values plus ragged_row_lengths_0."""
    rng = np.random.default_rng(0)
    payloads = []
    for i in range(50):
        lengths = rng.integers(0, 4, size=int(rng.integers(0, 4)))
        values = rng.random(2 * int(lengths.sum())).astype(np.float32)
        payloads.append(
            _example(
                tf,
                label=_f(tf, "i", i),
                objects__keypoints=_f(tf, "f", *values),
                objects__keypoints__ragged_row_lengths_0=_f(tf, "i", *lengths),
            )
        )
    path = tf_write(tmp_path_factory.mktemp("kp") / "kp.tfrecord", payloads)
    return path, payloads


NATIVE = {
    "label": tn.FixedLen((), "int64"),
    "kp": tn.VarLen("float32", (2,), partitions=[tn.VarLen.RowLengths(LENGTHS)], key=KEY),
}


def _tf_spec(tf):
    ragged = tf.io.RaggedFeature
    return {
        "label": tf.io.FixedLenFeature((), tf.int64),
        "kp": ragged(
            tf.float32,
            value_key=KEY,
            partitions=[ragged.RowLengths(LENGTHS), ragged.UniformRowLength(2)],
            row_splits_dtype=tf.int64,
        ),
    }


def test_native_spelling_equals_tensorflow_spec_and_json(tf):
    assert tn.spec_from_tf(_tf_spec(tf)) == NATIVE
    assert tn.spec_from_json(tn.spec_to_json(NATIVE)) == NATIVE
    assert eval(NATIVE["kp"].spell(), {"tn": tn}) == NATIVE["kp"]
    assert NATIVE["kp"].spell() == (
        "tn.VarLen('float32', inner_shape=(2,), partitions=[tn.VarLen.RowLengths("
        "'objects/keypoints/ragged_row_lengths_0')], key='objects/keypoints')"
    )


def test_dataset_batches_and_records_match_parse_example(tf, keypoints):
    path, payloads = keypoints
    ds = tn.open(path, spec=NATIVE)
    want = tf.io.parse_example(payloads, _tf_spec(tf))
    got = ds.to_numpy()
    assert got["kp"].ragged_rank == 2
    assert got["kp"].to_list() == want["kp"].to_list()
    for batch, start in zip(ds.batches(16), range(0, 50, 16), strict=True):
        assert batch["kp"].to_list() == want["kp"][start : start + 16].to_list()
    assert ds[7]["kp"].to_list() == want["kp"][7].to_list()
    order = [b["label"].tolist() for b in ds.batches(10, shuffle=True, seed=1)]
    shuffled = next(ds.batches(10, shuffle=True, seed=1))
    assert shuffled["kp"].to_list() == [want["kp"][i].to_list() for i in order[0]]


def test_to_tf_gives_the_ragged_tensor_of_parse_example(tf, keypoints):
    path, payloads = keypoints
    want = tf.io.parse_example(payloads[:8], _tf_spec(tf))["kp"]
    got = next(iter(tn.open(path, spec=NATIVE).to_tf(batch_size=8)))["kp"]
    assert isinstance(got, tf.RaggedTensor) and got.ragged_rank == 2
    assert got.to_list() == want.to_list()


def test_to_torch_carries_two_levels_and_refuses_more(tf, tmp_path, tf_write, keypoints):
    torch = pytest.importorskip("torch")
    path, payloads = keypoints
    batch = next(iter(tn.open(path, spec=NATIVE).to_torch(batch_size=8)))
    want = tf.io.parse_example(payloads[:8], _tf_spec(tf))["kp"]
    assert torch.equal(batch["kp_offsets"], torch.from_numpy(want.row_splits.numpy()))
    assert torch.equal(batch["kp_inner_offsets"], torch.from_numpy(want.values.row_splits.numpy()))
    deeper = {
        "kp": tn.VarLen(
            "float32",
            (2,),
            partitions=[tn.VarLen.UniformRowLength(1), tn.VarLen.RowLengths(LENGTHS)],
            key=KEY,
        )
    }
    with pytest.raises(ValueError) as e:
        next(iter(tn.open(path, spec=deeper).to_torch(batch_size=8)))
    assert str(e.value) == (
        "column 'kp' has 3 ragged levels; tensors carry two ('kp_offsets', "
        "'kp_inner_offsets'): read it with ds.batches() or ds.to_tf(), or with fewer partitions"
    )


def test_pad_leaves_rows_of_rows_alone_and_says_so(keypoints):
    path, _ = keypoints
    ds = tn.open(path, spec=NATIVE)
    assert isinstance(next(ds.batches(8, pad=True))["kp"], tn.Ragged)
    with pytest.raises(ValueError, match="'kp' decodes to rows of rows"):
        next(ds.batches(8, pad={"kp": 4}))
    # the column pads itself level by level, as tf.RaggedTensor.to_tensor
    batch = next(ds.batches(8))["kp"]
    want = batch.to_list()
    dense = batch.to_padded(value=-1.0)
    for r, row in enumerate(want):
        for j, obj in enumerate(row):
            assert dense[r, j, : len(obj)].tolist() == obj


def test_bad_partition_names_feature_partition_and_record(tf):
    good = _example(
        tf,
        objects__keypoints=_f(tf, "f", 1, 2, 3, 4),
        **{"objects__keypoints__ragged_row_lengths_0": _f(tf, "i", 1, 1)},
    )
    bad = _example(
        tf,
        objects__keypoints=_f(tf, "f", 1, 2, 3, 4),
        **{"objects__keypoints__ragged_row_lengths_0": _f(tf, "i", 1, 2)},
    )
    with pytest.raises(tn.SchemaError) as e:
        tn.decode([good, bad], {"kp": NATIVE["kp"]})
    assert str(e.value) == (
        "feature 'kp' (tn.VarLen('float32', inner_shape=(2,), partitions=[tn.VarLen.RowLengths("
        "'objects/keypoints/ragged_row_lengths_0')], key='objects/keypoints')): row lengths "
        "'objects/keypoints/ragged_row_lengths_0' do not fit: the row lengths add up to 3 but "
        "there are 2 at <memory> record 1; the partition features must describe the values, "
        "as tf.io.parse_example requires"
    )
    assert isinstance(e.value, ValueError)


def test_a_key_read_two_ways_is_refused_when_the_spec_is_compiled():
    spec = {
        LENGTHS: tn.FixedLen((2,), "int64"),
        "kp": NATIVE["kp"],
    }
    with pytest.raises(ValueError) as e:
        tn.Decoder(spec)
    assert str(e.value) == (
        "feature 'kp' reads feature 'objects/keypoints/ragged_row_lengths_0' as "
        "tn.VarLen('int64'), but the spec reads it as tn.FixedLen((2,), 'int64') too; a key "
        "is read once, so read it as tn.VarLen('int64') for both"
    )
    # the same list read as the same kind is shared: one core entry, two columns
    shared = {LENGTHS: tn.VarLen("int64"), "kp": NATIVE["kp"]}
    assert len(tn.Decoder(shared)._features) == 2


def test_one_list_cut_two_ways_is_read_once(tf, tf_write, tmp_path):
    """Issue 35: two RaggedFeatures on key "r" with different uniform rows (TensorFlow
    parses it once, then partitions it per feature) were refused as a key read twice."""
    ragged = tf.io.RaggedFeature
    tf_spec = {
        "q": ragged(
            tf.float32,
            value_key="r",
            partitions=[ragged.UniformRowLength(2), ragged.UniformRowLength(1)],
        ),
        "r": ragged(tf.float32, partitions=[ragged.UniformRowLength(3)]),
    }
    spec = {"q": tn.VarLen("float32", (2, 1), key="r"), "r": tn.VarLen("float32", (3,))}
    assert tn.spec_from_tf(tf_spec) == spec
    payloads = [_example(tf, r=_f(tf, "f", *range(6 * (i % 3)))) for i in range(10)]
    path = tf_write(tmp_path / "r.tfrecord", payloads)
    ds = tn.open(path, spec=spec)
    want = tf.io.parse_example(payloads, tf_spec)
    for batch, start in zip(ds.batches(4), range(0, 10, 4), strict=True):
        for name in spec:
            assert batch[name].to_list() == want[name][start : start + 4].to_list(), name
    got = ds.to_numpy()
    assert got["q"].flat_values.shape[1:] == (2, 1) and got["r"].flat_values.shape[1:] == (3,)
    assert ds[2]["r"].tolist() == want["r"][2].numpy().tolist()
    assert len(tn.Decoder(spec)._features) == 1  # one core entry, two columns
    # a narrowed dtype beside the flat read is that list cast: one entry too
    ints = {"n": tn.VarLen("int32", (2,)), "m": tn.VarLen("int64", key="n")}
    assert len(tn.Decoder(ints)._features) == 1
    got = tn.decode([_example(tf, n=_f(tf, "i", 1, 2, 3, 4))], ints)
    assert got["n"].flat_values.dtype == np.int32 and got["n"].to_list() == [[[1, 2], [3, 4]]]
    assert got["m"].to_list() == [[1, 2, 3, 4]]
    # values that do not make rows of 3: the error names the feature and the record
    bad = [payloads[1], _example(tf, r=_f(tf, "f", 1, 2, 3, 4))]
    with pytest.raises(tn.SchemaError, match=r"feature 'r' .* <memory> record 1"):
        tn.decode(bad, spec)


def test_same_name_in_context_and_lists_one_value_per_step(tf):
    """Issue 35: context feature x beside feature list x of one value per step
    (FixedLenSequenceFeature((1,))): each step is a (1,) row, as TensorFlow's dense
    [records, steps, 1] holds it, and pad= gives that dense array."""

    def seq(x, steps):
        return tf.train.SequenceExample(
            context=tf.train.Features(feature={"x": _f(tf, "i", x)}),
            feature_lists=tf.train.FeatureLists(
                feature_list={"x": tf.train.FeatureList(feature=[_f(tf, "i", v) for v in steps])}
            ),
        ).SerializeToString()

    records = [seq(7, [1, 2]), seq(8, [3]), seq(9, [])]
    context = {"x": tf.io.FixedLenFeature((), tf.int64)}
    sequence = {"x": tf.io.FixedLenSequenceFeature((1,), tf.int64)}
    want_context, want, _ = tf.io.parse_sequence_example(records, context, sequence)
    got = tn.decode(records, (context, sequence))
    assert list(got) == ["context/x", "x"]
    assert got["context/x"].tolist() == want_context["x"].numpy().tolist()
    x = got["x"]
    assert x.ragged_rank == 1 and x.flat_values.shape == (3, 1)  # steps of shape (1,)
    assert x.to_padded().tolist() == want["x"].numpy().tolist()
    for r, record in enumerate(records):
        _, one = tf.io.parse_single_sequence_example(record, context, sequence)
        alone = tn.decode([record], (context, sequence))["x"][0]
        assert alone.tolist() == one["x"].numpy().tolist()
        assert alone.shape == x[r].shape == tuple(one["x"].shape)


def test_var_len_default_pads_each_batch_as_parse_example(tf, tf_write, tmp_path):
    payloads = [_example(tf, w=_f(tf, "i", *range(i % 4))) for i in range(20)]
    path = tf_write(tmp_path / "w.tfrecord", payloads)
    tf_spec = {
        "w": tf.io.FixedLenSequenceFeature((), tf.int64, allow_missing=True, default_value=-7)
    }
    ds = tn.open(path, spec=tf_spec)
    assert ds.spec == {"w": tn.VarLen("int64", default=-7)}
    for start, batch in zip(range(0, 20, 6), ds.batches(6), strict=True):
        want = tf.io.parse_example(payloads[start : start + 6], tf_spec)["w"].numpy()
        np.testing.assert_array_equal(batch["w"], want)
    # pad= pads with the default too, and gives the lengths
    padded = next(ds.batches(6, pad={"w": 5}))
    assert padded["w"].tolist()[1] == [0, -7, -7, -7, -7]
    assert padded["w_length"].tolist() == [0, 1, 2, 3, 0, 1]


def test_required_feature_list_native_and_message(tf):
    def seq(lists):
        return tf.train.SequenceExample(
            feature_lists=tf.train.FeatureLists(
                feature_list={k: tf.train.FeatureList(feature=v) for k, v in lists.items()}
            )
        ).SerializeToString()

    records = [seq({"a": [_f(tf, "i", 1)], "b": [_f(tf, "i", 2)]}), seq({"b": []})]
    spec = tn.Sequence(sequence={"a": tn.FixedLen((), "int64"), "b": tn.VarLen("int64")})
    assert tn.decode(records, spec)["a"].to_list() == [[1], []]  # not required: zero steps
    required = tn.Sequence(sequence=spec.sequence, required=["a"])
    with pytest.raises(tn.SchemaError) as e:
        tn.decode(records, required)
    assert str(e.value) == (
        "feature list 'a' is missing at <memory> record 1, and the spec requires it "
        "(TensorFlow's FixedLenSequenceFeature with allow_missing=False); select the records "
        "that have it, or leave it out of required= (allow_missing=True) to read zero steps"
    )
    # present with zero steps is present, as TensorFlow has it
    empty = tn.Sequence(sequence=spec.sequence, required=["b"])
    assert tn.decode(records, empty)["b"].to_list() == [[[2]], []]
    assert tn.spec_from_json(tn.spec_to_json(required)) == required


def test_same_name_in_context_and_lists_through_to_tf(tf, tf_write, tmp_path):
    payloads = [
        tf.train.SequenceExample(
            context=tf.train.Features(feature={"x": _f(tf, "i", i)}),
            feature_lists=tf.train.FeatureLists(
                feature_list={"x": tf.train.FeatureList(feature=[_f(tf, "i", i)] * i)}
            ),
        ).SerializeToString()
        for i in range(4)
    ]
    path = tf_write(tmp_path / "s.tfrecord", payloads)
    spec = tn.Sequence({"x": tn.FixedLen((), "int64")}, {"x": tn.FixedLen((), "int64")})
    got = next(iter(tn.open(path, spec=spec).to_tf(batch_size=4)))
    assert got["context/x"].numpy().tolist() == [0, 1, 2, 3]
    assert got["x"].to_list() == [[], [1], [2, 2], [3, 3, 3]]


def test_bytes_rows_of_a_shape_through_to_tf(tf, tf_write, tmp_path):
    payloads = [
        _example(tf, w=_f(tf, "b", *[b"%d" % k for k in range(2 * (i % 3))])) for i in range(6)
    ]
    path = tf_write(tmp_path / "b.tfrecord", payloads)
    spec = {"w": tn.VarLen("bytes", (2,))}
    got = next(iter(tn.open(path, spec=spec).to_tf(batch_size=6)))["w"]
    want = tf.io.parse_example(
        payloads,
        {"w": tf.io.RaggedFeature(tf.string, partitions=[tf.io.RaggedFeature.UniformRowLength(2)])},
    )["w"]
    assert got.to_list() == want.to_list()
