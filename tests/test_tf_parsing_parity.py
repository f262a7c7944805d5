"""TensorFlow's own parsing tests, re-created case by case with TensorFlow as the oracle.

The cases are those of tensorflow/python/kernel_tests/io_ops/parsing_ops_test.py and
parse_single_example_op_test.py (TensorFlow 2.21): the same records and the same
tf.io feature specs, written again here. Instead of TensorFlow's hand-written expected
values, each case runs tf.io.parse_example (or parse_sequence_example) and
tf.io.parse_single_example on every record, then tfrecnp on the same payloads with the same
spec objects, and asserts equal values, or that both refuse (tfrecnp with a ValueError that
names the feature, and the record when a record is at fault).

tfrecnp's columns differ in form where the decoding guide (docs/guides/decode.md) says so,
and are compared in that form: a VarLenFeature (a SparseTensor in TensorFlow) is a Ragged,
compared padded; a FixedLenSequenceFeature without default_value is a Ragged, compared
padded with zeros (with a default_value, tfrecnp pads as TensorFlow does). SparseFeature is
out of scope: those cases check that it is refused by name, and that the spec the guide
gives instead reads the same indices and values.
"""

from __future__ import annotations

import numpy as np
import pytest

import tfrecnp as tn
from tfrecnp.example.spec import as_spec

CASES = {"methods": set(), "cases": 0}


@pytest.fixture(scope="module", autouse=True)
def _count():
    yield
    print(
        f"\nTensorFlow parsing parity: {len(CASES['methods'])} test methods, "
        f"{CASES['cases']} cases, all equal"
    )


@pytest.fixture
def method(request):
    CASES["methods"].add(request.node.originalname)


# --- records, written by TensorFlow's protos ----------------------------------------------


def _pb(tf):
    return tf.train


def floats(tf, *v):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(v)))


def ints(tf, *v):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(v)))


def strs(tf, *v):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(v)))


def nothing(tf):
    return tf.train.Feature()  # a feature whose kind is not set


def example(tf, features=None) -> bytes:
    return tf.train.Example(features=tf.train.Features(feature=features or {})).SerializeToString()


def sequence_example(tf, context=None, lists=None) -> bytes:
    return tf.train.SequenceExample(
        context=tf.train.Features(feature=context or {}),
        feature_lists=tf.train.FeatureLists(
            feature_list={k: tf.train.FeatureList(feature=v) for k, v in (lists or {}).items()}
        ),
    ).SerializeToString()


# --- comparison ---------------------------------------------------------------------------


def _tf_value(tf, value):
    """A TensorFlow result as (nested lists, numpy dtype or "bytes", dense?)."""
    if isinstance(value, tf.SparseTensor):
        value = tf.sparse.to_dense(value)
    if isinstance(value, tf.RaggedTensor):
        dtype = value.dtype
        return value.to_list(), dtype, False
    return value.numpy().tolist(), value.dtype, True


def _ours(column, dense: bool, pad):
    if isinstance(column, tn.Ragged):
        if dense:
            return column.to_padded(value=pad).tolist()
        return column.to_list()
    if isinstance(column, tn.BytesColumn):
        return column.to_list()
    return np.asarray(column).tolist()


def _dtype_of(column):
    if isinstance(column, tn.Ragged):
        column = column.flat_values
    if isinstance(column, tn.BytesColumn) or column.dtype == object:
        return "bytes"
    return np.dtype(column.dtype)


def _same(tf, name, tf_value, column):
    want, tf_dtype, dense = _tf_value(tf, tf_value)
    got = _ours(column, dense, b"" if tf_dtype == tf.string else 0)
    assert got == want, f"{name}: tfrecnp {got!r} != TensorFlow {want!r}"
    expected = "bytes" if tf_dtype == tf.string else np.dtype(tf_dtype.as_numpy_dtype)
    assert _dtype_of(column) == expected, name
    CASES["cases"] += 1


def _raises(tf, run) -> bool:
    try:
        run()
    except (tf.errors.InvalidArgumentError, ValueError):
        return True
    return False


def _refused_both(tf, run_tf, run_tn, names, record, run_tf_single=None):
    """TensorFlow refuses (the batch, or the record at fault on its own), and so does
    tfrecnp, naming the feature (and the record). TensorFlow 2.21's parse_example checks
    RaggedFeature partitions against the batch's totals only, so a record whose partition
    does not fit its own values passes there when its neighbours make up the difference
    (later TensorFlow refuses it: testSerializedContainingMisalignedRaggedFeatureRowLengths);
    parse_single_example refuses it, and tfrecnp checks each record as that does."""
    assert _raises(tf, run_tf) or (run_tf_single is not None and _raises(tf, run_tf_single))
    with pytest.raises(ValueError) as e:
        run_tn()
    text = str(e.value)
    assert any(repr(n) in text for n in names), text
    if record is not None:
        assert f"record {record}" in text, text
    CASES["cases"] += 1


def check_example(tf, records, features, *, error=None, record=None, single=True):
    """parse_example (and parse_single_example per record) against tn.decode.

    error: the feature names a refusal may name (TensorFlow must refuse too); record: the
    record an error must name."""
    if error is not None:
        _refused_both(
            tf,
            lambda: tf.io.parse_example(records, features),
            lambda: tn.decode(records, features),
            error,
            record,
            None
            if record is None
            else lambda: tf.io.parse_single_example(records[record], features),
        )
        return
    want = tf.io.parse_example(records, features)
    got = tn.decode(records, features)
    assert list(got) == list(features)
    for name in features:
        _same(tf, name, want[name], got[name])
    if not single:
        return
    for r in records:
        one = tf.io.parse_single_example(r, features)
        ours = tn.decode([r], features)
        for name in features:
            want_one, _, dense = _tf_value(tf, one[name])
            column = ours[name]
            row = column[0]
            if isinstance(column, tn.Ragged):
                row = column.to_padded().tolist()[0] if dense else column.to_list()[0]
            elif isinstance(row, np.ndarray):
                row = row.tolist()
            elif isinstance(row, np.generic):
                row = row.item()
            assert row == want_one, f"{name} (single): {row!r} != {want_one!r}"
            CASES["cases"] += 1


def check_sequence(tf, records, context, sequence, *, error=None, record=None, singles=None):
    """parse_sequence_example (and parse_single_sequence_example, on the records numbered
    in singles, default all) against tn.decode."""
    if error is not None:
        _refused_both(
            tf,
            lambda: tf.io.parse_sequence_example(records, context, sequence),
            lambda: tn.decode(records, (context, sequence)),
            error,
            record,
            None
            if record is None
            else lambda: tf.io.parse_single_sequence_example(records[record], context, sequence),
        )
        for r in records:
            try:
                tf.io.parse_single_sequence_example(r, context, sequence)
            except (tf.errors.InvalidArgumentError, ValueError):
                with pytest.raises(ValueError):
                    tn.decode([r], (context, sequence))
        return
    want_context, want_lists, _ = tf.io.parse_sequence_example(records, context, sequence)
    spec = as_spec((context, sequence))
    got = tn.decode(records, spec)
    for name in context:
        _same(tf, name, want_context[name], got[spec.context_column(name)])
    for name in sequence:
        _same(tf, name, want_lists[name], got[name])
    for r in records if singles is None else [records[k] for k in singles]:
        one_context, one_lists = tf.io.parse_single_sequence_example(r, context, sequence)
        ours = tn.decode([r], spec)
        for name, value, key in [
            *((n, one_context[n], spec.context_column(n)) for n in context),
            *((n, one_lists[n], n) for n in sequence),
        ]:
            want_one, _, dense = _tf_value(tf, value)
            column = ours[key]
            if isinstance(column, tn.Ragged):
                row = column.to_padded().tolist()[0] if dense else column.to_list()[0]
            else:
                row = np.asarray(column).tolist()[0]
            assert row == want_one, f"{name} (single): {row!r} != {want_one!r}"
            CASES["cases"] += 1


# --- parsing_ops_test.py: ParseExampleTest -----------------------------------------------


def _defaults_spec(tf, rng):
    return {
        "st_a": tf.io.VarLenFeature(tf.int64),
        "a": tf.io.FixedLenFeature((1, 3), tf.int64, default_value=[0, 42, 0]),
        "b": tf.io.FixedLenFeature(
            (3, 3), tf.string, default_value=rng.random((3, 3)).astype(bytes)
        ),
        "c:has_a_tricky_name": tf.io.FixedLenFeature(
            (2,), tf.float32, default_value=rng.random(2).astype(np.float32)
        ),
    }


def test_empty_serialized_with_all_defaults(tf, method):
    check_example(tf, [b"", b""], _defaults_spec(tf, np.random.default_rng(1)))


def test_empty_serialized_without_defaults_should_fail(tf, method):
    spec = {
        "st_a": tf.io.VarLenFeature(tf.int64),
        "a": tf.io.FixedLenFeature((1, 3), tf.int64, default_value=[0, 42, 0]),
        "c": tf.io.FixedLenFeature((2,), tf.float32),
    }
    key_without_value = example(tf, {"c": nothing(tf)})
    check_example(tf, [key_without_value], spec, error=["c"], record=0)
    check_example(tf, [b"", b""], spec, error=["c"], record=0)


def test_dense_not_matching_shape_should_fail(tf, method):
    records = [example(tf, {"a": floats(tf, 1, 1, 3)}), example(tf, {"a": floats(tf, -1, -1)})]
    spec = {"a": tf.io.FixedLenFeature((1, 3), tf.float32)}
    check_example(tf, records, spec, error=["a"], record=1)


def test_dense_default_no_shape_should_fail(tf, method):
    records = [example(tf, {"a": floats(tf, 1, 1, 3)})]
    check_example(tf, records, {"a": tf.io.FixedLenFeature(None, tf.float32)}, error=["a"])


def test_serialized_containing_sparse(tf, method):
    records = [
        example(tf, {"st_c": floats(tf, 3, 4)}),
        example(tf, {"st_c": floats(tf)}),
        example(tf, {"st_d": nothing(tf)}),
        example(tf, {"st_c": floats(tf, 1, 2, -1), "st_d": strs(tf, b"hi")}),
    ]
    spec = {"st_c": tf.io.VarLenFeature(tf.float32), "st_d": tf.io.VarLenFeature(tf.string)}
    check_example(tf, records, spec)


def _sparse_equivalent(tf, records, index_keys, value_key, dtype, size):
    """A SparseFeature is refused by name; the guide's equivalent spec (one VarLen per
    index key and one for the values) reads the indices and values TensorFlow sorts."""
    sparse = tf.io.SparseFeature(index_keys, value_key, dtype, size)
    with pytest.raises(ValueError, match=r"'sp': SparseFeature .* is not supported"):
        tn.decode(records, {"sp": sparse})
    want = tf.io.parse_example(records, {"sp": sparse})["sp"]
    keys = [index_keys] if isinstance(index_keys, str) else list(index_keys)
    spec = {k: tn.VarLen("int64") for k in keys} | {value_key: tn.VarLen(dtype.name)}
    got = tn.decode(records, spec)
    indices, values = [], []
    for r in range(len(records)):
        idx = np.stack([got[k][r] for k in keys], axis=1) if len(got[value_key][r]) else []
        order = np.lexsort(np.asarray(idx).T[::-1]) if len(idx) else []
        indices += [[r, *map(int, idx[i])] for i in order]
        values += [got[value_key][r][i] for i in order]
    assert indices == want.indices.numpy().tolist()
    assert [v if isinstance(v, bytes) else float(v) for v in values] == want.values.numpy().tolist()
    CASES["cases"] += 1


def test_serialized_containing_sparse_feature(tf, method):
    records = [
        example(tf, {"val": floats(tf, 3, 4), "idx": ints(tf, 5, 10)}),
        example(tf, {"val": floats(tf), "idx": ints(tf)}),
        example(tf, {"val": nothing(tf)}),
        example(tf, {"val": floats(tf, 1, 2, -1), "idx": ints(tf, 0, 9, 3)}),
    ]
    _sparse_equivalent(tf, records, ["idx"], "val", tf.float32, [13])


def test_serialized_containing_sparse_feature_reuse(tf, method):
    records = [
        example(tf, {"val1": floats(tf, 3, 4), "val2": floats(tf, 5, 6), "idx": ints(tf, 5, 10)}),
        example(tf, {"val1": floats(tf), "idx": ints(tf)}),
    ]
    _sparse_equivalent(tf, records[:1], "idx", "val1", tf.float32, 13)
    _sparse_equivalent(tf, records[:1], "idx", "val2", tf.float32, 7)


def test_serialized_containing_3d_sparse_feature(tf, method):
    records = [
        example(tf, {"val": floats(tf, 3, 4), "idx0": ints(tf, 5, 10), "idx1": ints(tf, 0, 2)}),
        example(tf, {"val": floats(tf), "idx0": ints(tf), "idx1": ints(tf)}),
        example(tf, {"val": nothing(tf)}),
        example(
            tf, {"val": floats(tf, 1, 2, -1), "idx0": ints(tf, 0, 9, 3), "idx1": ints(tf, 1, 0, 2)}
        ),
    ]
    _sparse_equivalent(tf, records, ["idx0", "idx1"], "val", tf.float32, [13, 3])


def _dense_records(tf, second_b=b""):
    return [
        example(tf, {"a": floats(tf, 1, 1), "b*has+a:tricky_name": strs(tf, b"b0_str")}),
        example(tf, {"a": floats(tf, -1, -1), "b*has+a:tricky_name": strs(tf, second_b)}),
    ]


def _dense_spec(tf):
    return {
        "a": tf.io.FixedLenFeature((1, 2, 1), tf.float32),
        "b*has+a:tricky_name": tf.io.FixedLenFeature((1, 1, 1, 1), tf.string),
    }


def test_serialized_containing_dense(tf, method):
    check_example(tf, _dense_records(tf), _dense_spec(tf))


def test_serialized_containing_dense_with_concat(tf, method):
    # two Examples back to back are one Example whose later features win (protobuf merge)
    b = "b*has+a:tricky_name"
    records = [
        example(tf, {"a": floats(tf, 10, 10)})
        + example(tf, {"a": floats(tf, 1, 1), b: strs(tf, b"b0_str")}),
        example(tf, {b: strs(tf, b"b100")})
        + example(tf, {"a": floats(tf, -1, -1), b: strs(tf, b"b1")}),
    ]
    check_example(tf, records, _dense_spec(tf))


def test_serialized_containing_dense_scalar(tf, method):
    records = [example(tf, {"a": floats(tf, 1)}), example(tf)]
    spec = {"a": tf.io.FixedLenFeature((1,), tf.float32, default_value=-1)}
    check_example(tf, records, spec)


def test_serialized_containing_dense_with_defaults(tf, method):
    records = [
        example(tf, {"a": floats(tf, 1, 1)}),
        example(tf, {"b": strs(tf, b"b1")}),
        example(tf, {"b": nothing(tf)}),
    ]
    spec = {
        "a": tf.io.FixedLenFeature((1, 2, 1), tf.float32, default_value=[3.0, -3.0]),
        "b": tf.io.FixedLenFeature((1, 1, 1, 1), tf.string, default_value="tmp_str"),
    }
    check_example(tf, records, spec)


def test_serialized_containing_sparse_and_sparse_feature_and_dense_with_no_default(tf, method):
    records = [
        example(tf, {"c": floats(tf, 3, 4), "val": strs(tf, b"a", b"b"), "idx": ints(tf, 0, 3)}),
        example(tf, {"c": floats(tf, 1, 2), "val": strs(tf, b"c"), "idx": ints(tf, 7)}),
    ]
    rng = np.random.default_rng(2)
    spec = {
        "st_a": tf.io.VarLenFeature(tf.int64),
        "a": tf.io.FixedLenFeature((1, 3), tf.int64, default_value=[1, 2, 3]),
        "b": tf.io.FixedLenFeature(
            (3, 3), tf.string, default_value=rng.random((3, 3)).astype(bytes)
        ),
        "c": tf.io.FixedLenFeature((2,), tf.float32),
    }
    check_example(tf, records, spec)
    _sparse_equivalent(tf, records, "idx", "val", tf.string, 13)


def test_serialized_containing_sparse_and_sparse_feature_with_reuse(tf, method):
    records = [
        example(tf, {"val": strs(tf, b"a", b"b"), "idx": ints(tf, 0, 3)}),
        example(tf, {"val": strs(tf, b"c", b"d"), "idx": ints(tf, 7, 1)}),
    ]
    check_example(tf, records, {"idx": tf.io.VarLenFeature(tf.int64)})
    _sparse_equivalent(tf, records, ["idx"], "val", tf.string, [13])


@pytest.mark.parametrize("batch_size", [1, 10, 20, 100, 256])
def test_serialized_containing_var_len_dense_larger_batch(tf, method, batch_size):
    rng = np.random.default_rng(3456 + batch_size)
    records = []
    for i in range(batch_size):
        words = [b"foo%d" % i, b"bar%d" % i]
        if i and rng.random() < 0.25:
            words.pop()
        if i and rng.random() < 0.25:
            words.pop()
        records.append(example(tf, {"a": ints(tf, i), "b": strs(tf, *words)}))
    spec = {
        "a": tf.io.FixedLenSequenceFeature((), tf.int64, allow_missing=True, default_value=-1),
        "b": tf.io.FixedLenSequenceFeature(
            [], tf.string, allow_missing=True, default_value="default"
        ),
    }
    check_example(tf, records, spec, single=batch_size <= 20)


def _var_len_dense_records(tf):
    return [
        example(tf, {"c": ints(tf, 2)}),
        example(tf, {"a": floats(tf, 1, 1), "b": strs(tf, b"b0_str", b"b1_str")}),
        example(tf, {"a": floats(tf, -1, -1, 2, 2), "b": strs(tf, b"b1")}),
        example(tf, {"a": floats(tf), "c": ints(tf, 3)}),
    ]


def test_serialized_containing_var_len_dense(tf, method):
    records = _var_len_dense_records(tf)
    seq = tf.io.FixedLenSequenceFeature

    def spec(a_default=None, b_shape=(1, 1, 1), **more):
        out = {
            "a": seq((2, 1), tf.float32, allow_missing=True, default_value=a_default),
            "b": seq(b_shape, tf.string, allow_missing=True),
        }
        return out | more

    cd = {"c": seq([], tf.int64, allow_missing=True), "d": seq([], tf.string, allow_missing=True)}
    check_example(tf, records, spec(**cd))
    check_example(tf, records, spec(-2.0, **cd))  # padded with the default, as TensorFlow pads
    check_example(tf, records, spec(b_shape=(2, 1, 1)), error=["b"], record=2)
    check_example(tf, records, spec([], b_shape=(2, 1, 1)), error=["a"])
    check_example(
        tf,
        records,
        {"a": tf.io.FixedLenFeature((None, 2, 1), tf.float32), "b": spec()["b"]},
        error=["a"],
    )
    check_example(
        tf,
        records,
        {"c": tf.io.FixedLenFeature((1, None), tf.int64, default_value=[[1]])},
        error=["c"],
    )
    check_example(
        tf, records, spec(c=seq([], tf.int64, allow_missing=False), d=cd["d"]), error=["c"]
    )


def test_serialized_containing_ragged_feature_with_no_partitions(tf, method):
    records = [
        example(tf, {"rt_c": floats(tf, 3, 4)}),
        example(tf, {"rt_c": floats(tf)}),
        example(tf, {"rt_d": nothing(tf)}),
        example(tf, {"rt_c": floats(tf, 1, 2, -1), "rt_d": strs(tf, b"hi")}),
    ]
    spec = {
        "rt_c": tf.io.RaggedFeature(tf.float32),
        "rt_d": tf.io.RaggedFeature(tf.string, row_splits_dtype=tf.int64),
    }
    check_example(tf, records, spec)
    check_example(tf, records * 64, spec, single=False)


def _partition_records(tf):
    def rec(values, splits, lengths, starts, limits, rowids, empty=False):
        f = nothing(tf) if empty else None
        return example(
            tf,
            {
                "rt_values": f or floats(tf, *values),
                "rt_splits": ints(tf, *splits),
                "rt_lengths": f or ints(tf, *lengths),
                "rt_starts": f or ints(tf, *starts),
                "rt_limits": f or ints(tf, *limits),
                "rt_rowids": f or ints(tf, *rowids),
            },
        )

    return [
        rec([3, 4, 5, 6], [0, 1, 4], [1, 3], [0, 1], [1, 4], [0, 1, 1, 1]),
        rec([], [0], [], [], [], []),
        rec([], [0], [], [], [], [], empty=True),
        rec(
            [1, 2, -1, 8, 9, 5],
            [0, 3, 3, 5, 6],
            [3, 0, 2, 1],
            [0, 3, 3, 5],
            [3, 3, 5, 6],
            [0, 0, 0, 2, 2, 3],
        ),
    ]


def test_serialized_containing_ragged_feature(tf, method):
    ragged = tf.io.RaggedFeature

    def rt(*partitions):
        return ragged(tf.float32, value_key="rt_values", partitions=list(partitions))

    spec = {
        "rt1": rt(ragged.RowSplits("rt_splits")),
        "rt2": rt(ragged.RowLengths("rt_lengths")),
        "rt3": rt(ragged.RowStarts("rt_starts")),
        "rt4": rt(ragged.RowLimits("rt_limits")),
        "rt5": rt(ragged.ValueRowIds("rt_rowids")),
        "uniform1": rt(ragged.UniformRowLength(2)),
        "uniform2": rt(ragged.UniformRowLength(2), ragged.RowSplits("rt_splits")),
    }
    check_example(tf, _partition_records(tf), spec)


def _nested_records(tf, prefix=""):
    return [
        {
            prefix + "values": floats(tf, 1, 2, 3, 4, 5, 6, 7),
            prefix + "lengths_axis2": ints(tf, 1, 2, 0, 1),
            prefix + "lengths_axis3": ints(tf, 1, 2, 1, 3),
            prefix + "splits_axis3": ints(tf, 0, 1, 3, 4, 7),
        },
        {
            prefix + "values": floats(tf, 1, 2, 3, 4, 5, 6, 7, 8),
            prefix + "lengths_axis2": ints(tf, 2, 3),
            prefix + "lengths_axis3": ints(tf, 3, 1, 1, 1, 2),
            prefix + "splits_axis3": ints(tf, 0, 3, 4, 5, 6, 8),
        },
    ]


def _nested_feature(tf, prefix=""):
    ragged = tf.io.RaggedFeature
    return ragged(
        tf.float32,
        value_key=prefix + "values",
        partitions=[
            ragged.UniformRowLength(2),
            ragged.RowLengths(prefix + "lengths_axis2"),
            ragged.RowSplits(prefix + "splits_axis3"),
        ],
        row_splits_dtype=tf.int64,
    )


def test_serialized_containing_nested_ragged_feature(tf, method):
    records = [example(tf, f) for f in _nested_records(tf, "rt_")]
    check_example(tf, records, {"rt1": _nested_feature(tf, "rt_")})


def test_serialized_containing_misaligned_ragged_feature_row_lengths(tf, method):
    records = [
        example(tf, {"rt_values": floats(tf), "rt_lengths": ints(tf, 5)}),
        example(tf, {"rt_values": floats(tf, 1, 2, 3, 4, 5), "rt_lengths": ints(tf)}),
    ]
    ragged = tf.io.RaggedFeature
    spec = {
        "rt": ragged(
            tf.float32,
            value_key="rt_values",
            partitions=[ragged.RowLengths("rt_lengths")],
            validate=True,
        )
    }
    check_example(tf, records, spec, error=["rt"], record=0)


# --- parsing_ops_test.py: ParseSingleExampleTest ------------------------------------------


def test_single_example_with_sparse_and_sparse_feature_and_dense(tf, method):
    record = example(
        tf,
        {
            "c": floats(tf, 3, 4),
            "d": floats(tf, 0.0, 1.0),
            "val": strs(tf, b"a", b"b"),
            "idx": ints(tf, 0, 3),
            "st_a": floats(tf, 3.0, 4.0),
        },
    )
    spec = {
        "st_a": tf.io.VarLenFeature(tf.float32),
        "a": tf.io.FixedLenFeature((1, 3), tf.int64, default_value=[1, 2, 3]),
        "b": tf.io.FixedLenFeature(
            (3, 3), tf.string, default_value=np.random.default_rng(5).random((3, 3)).astype(bytes)
        ),
        "c": tf.io.FixedLenFeature(2, tf.float32),
        "d": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True),
    }
    check_example(tf, [record], spec)
    _sparse_equivalent(tf, [record], ["idx"], "val", tf.string, [13])


def test_single_example_with_all_feature_types(tf, method):
    record = example(
        tf,
        {
            "c": floats(tf, 3, 4),
            "d": floats(tf, 0.0, 1.0),
            "st_a": floats(tf, 3.0, 4.0),
            "rt_1d": floats(tf, 3.0, 4.0),
            "rt_values": floats(tf, 5, 6, 7),
            "rt_splits": ints(tf, 0, 1, 1, 3),
            "rt_lengths": ints(tf, 1, 0, 2),
            "rt_starts": ints(tf, 0, 1, 1),
            "rt_limits": ints(tf, 1, 1, 3),
            "rt_rowids": ints(tf, 0, 2, 2),
            "rt_splits2": ints(tf, 0, 2, 3),
        },
    )
    ragged = tf.io.RaggedFeature

    def rt(*partitions):
        return ragged(tf.float32, value_key="rt_values", partitions=list(partitions))

    spec = {
        "st_a": tf.io.VarLenFeature(tf.float32),
        "c": tf.io.FixedLenFeature(2, tf.float32),
        "d": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True),
        "rt_1d": ragged(tf.float32),
        "rt_2d_with_splits": rt(ragged.RowSplits("rt_splits")),
        "rt_2d_with_lengths": rt(ragged.RowLengths("rt_lengths")),
        "rt_2d_with_starts": rt(ragged.RowStarts("rt_starts")),
        "rt_2d_with_limits": rt(ragged.RowLimits("rt_limits")),
        "rt_2d_with_rowids": rt(ragged.ValueRowIds("rt_rowids")),
        "rt_2d_with_uniform_row_length": rt(ragged.UniformRowLength(1)),
        "rt_3d": rt(ragged.RowSplits("rt_splits2"), ragged.RowSplits("rt_splits")),
        "rt_3d_with_uniform_row_length": rt(
            ragged.UniformRowLength(1), ragged.RowSplits("rt_splits")
        ),
    }
    check_example(tf, [record], spec)


# --- parsing_ops_test.py: ParseSequenceExampleTest ----------------------------------------


def test_fixed_len_sequence_feature_invalid_shapes(tf, method):
    # a negative dimension (TensorFlow refuses it once the shape is read)
    with pytest.raises(ValueError, match="Dimension -1 must be >= 0"):
        tf.TensorShape([-1])
    with pytest.raises(ValueError, match="ints >= 0"):
        tn.spec_from_tf({"n": tf.io.FixedLenSequenceFeature([-1], tf.float32, allow_missing=True)})
    # shape [0] (testFixedLenSequenceFeatureZeroDimDoesNotCrash): TensorFlow 2.21 accepts
    # the spec and its kernel divides by zero; later TensorFlow refuses it, as tfrecnp does
    with pytest.raises(ValueError, match="holds no values"):
        tn.spec_from_tf({"z": tf.io.FixedLenSequenceFeature([0], tf.float32, allow_missing=True)})
    CASES["cases"] += 2


def test_sequence_example_with_sparse_and_dense_context(tf, method):
    record = sequence_example(tf, context={"c": floats(tf, 3, 4), "st_a": floats(tf, 3.0, 4.0)})
    context = {
        "st_a": tf.io.VarLenFeature(tf.float32),
        "a": tf.io.FixedLenFeature((1, 3), tf.int64, default_value=[[1, 2, 3]]),
        "b": tf.io.FixedLenFeature(
            (3, 3), tf.string, default_value=np.random.default_rng(6).random((3, 3)).astype(bytes)
        ),
        "c": tf.io.FixedLenFeature((2,), tf.float32),
    }
    check_sequence(tf, [record], context, {})


def test_sequence_example_with_multiple_size_feature_lists(tf, method):
    record = sequence_example(
        tf,
        lists={
            "a": [ints(tf, -1, 0, 1), ints(tf, 2, 3, 4), ints(tf, 5, 6, 7), ints(tf, 8, 9, 10)],
            "b": [strs(tf, b"r00", b"r01", b"r10", b"r11")],
            "c": [floats(tf, 3, 4), floats(tf, -1, 2)],
        },
    )
    seq = tf.io.FixedLenSequenceFeature
    sequence = {
        "a": seq((1, 3), tf.int64),
        "b": seq((2, 2), tf.string),
        "c": seq(2, tf.float32),
        "d": seq((5,), tf.float32, allow_missing=True),
    }
    check_sequence(tf, [record], {}, sequence)


def _sparse_lists_record(tf):
    return sequence_example(
        tf,
        lists={
            "a": [ints(tf, 3, 4), ints(tf, 1, 0)],
            "st_a": [floats(tf, 3.0, 4.0), floats(tf, 5.0), floats(tf)],
            "st_b": [strs(tf, b"a"), strs(tf), strs(tf), strs(tf, b"b", b"c")],
        },
    )


def _sparse_lists_spec(tf):
    return {
        "st_a": tf.io.VarLenFeature(tf.float32),
        "st_b": tf.io.VarLenFeature(tf.string),
        "st_c": tf.io.VarLenFeature(tf.int64),
        "a": tf.io.FixedLenSequenceFeature((2,), tf.int64),
    }


def test_sequence_example_without_debug_name(tf, method):
    check_sequence(tf, [_sparse_lists_record(tf)], {}, _sparse_lists_spec(tf))


def test_sequence_example_with_sparse_and_dense_feature_lists(tf, method):
    records = [_sparse_lists_record(tf)] * 2
    check_sequence(tf, records, {}, _sparse_lists_spec(tf))


def test_sequence_example_with_empty_feature_in_feature_lists(tf, method):
    record = sequence_example(
        tf, lists={"st_a": [floats(tf, 3.0, 4.0), nothing(tf), floats(tf, 5.0)]}
    )
    check_sequence(tf, [record], {}, {"st_a": tf.io.VarLenFeature(tf.float32)})


def _one_list(tf, *steps):
    return sequence_example(tf, lists={"a": list(steps)})


def test_sequence_example_list_with_inconsistent_data_fails(tf, method):
    record = _one_list(tf, ints(tf, -1, 0), floats(tf, 2, 3))
    spec = {"a": tf.io.FixedLenSequenceFeature((2,), tf.int64)}
    check_sequence(tf, [record], {}, spec, error=["a"], record=0)


def test_sequence_example_list_with_wrong_data_type_fails(tf, method):
    record = _one_list(tf, floats(tf, 2, 3))
    spec = {"a": tf.io.FixedLenSequenceFeature((2,), tf.int64)}
    check_sequence(tf, [record], {}, spec, error=["a"], record=0)


def test_sequence_example_list_with_wrong_sparse_data_type_fails(tf, method):
    record = _one_list(tf, ints(tf, 3, 4), ints(tf, 1, 2), floats(tf, 2.0, 3.0))
    spec = {"a": tf.io.FixedLenSequenceFeature((2,), tf.int64)}
    check_sequence(tf, [record], {}, spec, error=["a"], record=0)


def test_sequence_example_list_with_wrong_shape_fails(tf, method):
    record = _one_list(tf, ints(tf, 2, 3), ints(tf, 2, 3, 4))
    spec = {"a": tf.io.FixedLenSequenceFeature((2,), tf.int64)}
    check_sequence(tf, [record], {}, spec, error=["a"], record=0)


def test_sequence_example_list_with_wrong_shape_fails2(tf, method):
    record = _one_list(tf, ints(tf, 2), ints(tf, 2, 3, 4))
    spec = {"a": tf.io.FixedLenSequenceFeature((2,), tf.int64)}
    check_sequence(tf, [record], {}, spec, error=["a"], record=0)


def test_sequence_example_with_missing_feature_list_fails(tf, method):
    record = sequence_example(tf)
    spec = {"a": tf.io.FixedLenSequenceFeature((2,), tf.int64)}
    check_sequence(tf, [record], {}, spec, error=["a"], record=0)
    # the second of two records lacks it: the error names that one
    present = _one_list(tf, ints(tf, 1, 2))
    check_sequence(tf, [present, record], {}, spec, error=["a"], record=1)


def test_sequence_example_batch(tf, method):
    first = sequence_example(
        tf,
        lists={"a": [ints(tf, -1, 0, 1), ints(tf, 2, 3, 4), ints(tf, 5, 6, 7), ints(tf, 8, 9, 10)]},
    )
    second = sequence_example(
        tf,
        context={"c": floats(tf, 7)},
        lists={"a": [ints(tf, 21, 2, 11)], "b": [ints(tf, 5)]},
    )
    context = {"c": tf.io.FixedLenFeature((), tf.float32, default_value=-1)}
    seq = tf.io.FixedLenSequenceFeature
    sequence = {
        "a": seq((1, 3), tf.int64),
        "b": seq((), tf.int64, allow_missing=True),
        "d": seq((5,), tf.float32, allow_missing=True),
    }
    check_sequence(tf, [first, second], context, sequence)


def test_sequence_serialized_containing_ragged_feature_with_no_partitions(tf, method):
    records = [
        sequence_example(
            tf,
            context={"a": floats(tf, 3, 4)},
            lists={"b": [floats(tf, 5), floats(tf, 3)], "c": [ints(tf, 6, 7, 8, 9)]},
        ),
        sequence_example(
            tf, context={"a": floats(tf, 9)}, lists={"b": [], "c": [ints(tf), ints(tf, 1, 2, 3)]}
        ),
        sequence_example(tf, lists={"b": [floats(tf, 1), floats(tf, 1, 2), floats(tf, 1, 2, 3)]}),
        sequence_example(
            tf, context={"a": nothing(tf)}, lists={"b": [nothing(tf)], "c": [ints(tf, 3, 3, 3)]}
        ),
    ]
    context = {"a": tf.io.RaggedFeature(tf.float32)}
    sequence = {
        "b": tf.io.RaggedFeature(tf.float32),
        "c": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64),
    }
    check_sequence(tf, records, context, sequence)
    check_sequence(tf, records * 64, context, sequence)


def test_sequence_serialized_containing_nested_ragged_feature(tf, method):
    first, _ = _nested_records(tf, "a_")
    records = [
        sequence_example(
            tf,
            context=first,
            lists={
                "b_values": [floats(tf, 1, 2, 3, 4), floats(tf, 2, 4, 6)],
                "b_splits": [ints(tf, 0, 1, 4), ints(tf, 0, 2, 3)],
            },
        ),
        sequence_example(tf),
        sequence_example(
            tf,
            context=_nested_records(tf, "a_")[1],
            lists={
                "b_values": [floats(tf, 9, 8, 7, 6, 5), floats(tf, 4, 3, 2, 1), floats(tf, 0)],
                "b_splits": [ints(tf, 0, 1, 4, 5), ints(tf, 0, 4), ints(tf, 0, 1)],
            },
        ),
    ]
    ragged = tf.io.RaggedFeature
    context = {"a": _nested_feature(tf, "a_")}
    sequence = {
        "b": ragged(tf.float32, value_key="b_values", partitions=[ragged.RowSplits("b_splits")]),
        "c": ragged(tf.float32, value_key="b_values", partitions=[ragged.UniformRowLength(1)]),
    }
    # parse_single_sequence_example fails on the empty record with these partitions (a
    # shape error inside TensorFlow), so the single path runs on the others
    check_sequence(tf, records, context, sequence, singles=[0, 2])


def test_serialized_containing_misaligned_nested_ragged_feature(tf, method):
    record = sequence_example(
        tf,
        lists={
            "b_values": [floats(tf, 1, 2, 3, 4), floats(tf, 2, 4, 6)],
            "b_splits": [ints(tf, 0, 1, 4)],
        },
    )
    ragged = tf.io.RaggedFeature
    sequence = {
        "b": ragged(
            tf.float32,
            value_key="b_values",
            partitions=[ragged.RowSplits("b_splits")],
            validate=True,
        )
    }
    check_sequence(tf, [record], {}, sequence, error=["b"], record=0)


# --- parse_single_example_op_test.py ------------------------------------------------------
# Its ParseExampleTest repeats the cases above one record at a time; check_example runs
# tf.io.parse_single_example on every record of every case, so those are ported with them.
# What it adds:


def test_example_longer_than_spec(tf, method):
    record = example(tf, {"a": strs(tf, b"a", b"b")})
    spec = {"a": tf.io.FixedLenFeature(1, tf.string)}
    check_example(tf, [record], spec, error=["a"], record=0)


# --- the cases beyond TensorFlow's suite --------------------------------------------


def test_one_name_as_context_and_feature_list(tf, method):
    records = [
        sequence_example(tf, context={"x": ints(tf, 7)}, lists={"x": [ints(tf, 1), ints(tf, 2)]}),
        sequence_example(tf, context={"x": ints(tf, 8)}, lists={"x": [ints(tf, 3)]}),
    ]
    context = {"x": tf.io.FixedLenFeature((), tf.int64)}
    sequence = {"x": tf.io.FixedLenSequenceFeature((), tf.int64)}
    check_sequence(tf, records, context, sequence)
    got = tn.decode(records, (context, sequence))
    assert list(got) == ["context/x", "x"]
    # one value per step as a (1,) row: TensorFlow's dense [records, steps, 1]
    check_sequence(tf, records, context, {"x": tf.io.FixedLenSequenceFeature((1,), tf.int64)})
    check_sequence(
        tf,
        records,
        {"x": tf.io.VarLenFeature(tf.int64)},
        {"x": tf.io.FixedLenSequenceFeature((1,), tf.int64, allow_missing=True)},
    )


def test_two_ragged_features_read_one_key_with_different_partitions(tf, method):
    """One list cut two ways: TensorFlow parses key "r" once and partitions it for each
    RaggedFeature; tfrecnp reads it once and reshapes it for each, in either spec order,
    in an Example and per step of a feature list."""
    ragged = tf.io.RaggedFeature
    q = ragged(
        tf.float32,
        value_key="r",
        partitions=[ragged.UniformRowLength(2), ragged.UniformRowLength(1)],
    )
    r = ragged(tf.float32, partitions=[ragged.UniformRowLength(3)])
    records = [
        example(tf, {"r": floats(tf, 1, 2, 3, 4, 5, 6)}),
        example(tf, {"r": floats(tf)}),
        example(tf),
        example(tf, {"r": floats(tf, *range(12))}),
    ]
    check_example(tf, records, {"q": q, "r": r})
    check_example(tf, records, {"r": r, "q": q})
    # values that fit neither cut: both refuse, naming the feature and the record
    odd = example(tf, {"r": floats(tf, 1, 2, 3, 4)})
    check_example(tf, [records[0], odd], {"q": q, "r": r}, error=["q", "r"], record=1)
    lists = [
        sequence_example(tf, lists={"r": [floats(tf, *range(6)), floats(tf)]}),
        sequence_example(tf, lists={"r": [floats(tf, *range(12))]}),
        sequence_example(tf),
    ]
    check_sequence(tf, lists, {}, {"q": q, "r": r})


def test_bad_partitions_are_refused_by_feature_and_record(tf, method):
    ragged = tf.io.RaggedFeature
    fits = {  # a partition of three values into [[1], [2, 3]], by each kind
        ragged.RowSplits: [0, 1, 3],
        ragged.RowLengths: [1, 2],
        ragged.RowStarts: [0, 1],
        ragged.RowLimits: [1, 3],
        ragged.ValueRowIds: [0, 1, 1],
    }
    cases = [
        (ragged.RowSplits, [0, 2, 1, 3]),  # backwards
        (ragged.RowSplits, [0, 1, 2]),  # ends short of the values
        (ragged.RowSplits, [1, 3]),  # does not start at 0
        (ragged.RowLengths, [1, 1]),  # adds up to 2, not 3
        (ragged.RowLengths, [4, -1]),  # a negative length
        (ragged.RowStarts, [1, 2]),  # does not start at 0
        (ragged.RowStarts, [0, 2, 1]),  # backwards
        (ragged.RowLimits, [1, 2]),  # does not end at 3
        (ragged.ValueRowIds, [0, 1]),  # two ids for three values
        (ragged.ValueRowIds, [1, 0, 0]),  # backwards
    ]
    for kind, partition in cases:
        good = example(tf, {"v": floats(tf, 1, 2, 3), "p": ints(tf, *fits[kind])})
        bad = example(tf, {"v": floats(tf, 1, 2, 3), "p": ints(tf, *partition)})
        spec = {"r": ragged(tf.float32, value_key="v", partitions=[kind("p")], validate=True)}
        check_example(tf, [good, bad], spec, error=["r"], record=1)
    three = example(tf, {"v": floats(tf, 1, 2, 3)})
    spec = {"r": ragged(tf.float32, value_key="v", partitions=[ragged.UniformRowLength(2)])}
    check_example(tf, [three], spec, error=["r"], record=0)  # 3 values in rows of 2


def test_fixed_len_sequence_feature_of_bytes_with_a_shape(tf, method):
    records = [
        example(tf, {"w": strs(tf, b"a", b"b", b"c", b"d")}),
        example(tf),
        example(tf, {"w": strs(tf, b"e", b"f")}),
    ]
    seq = tf.io.FixedLenSequenceFeature
    check_example(tf, records, {"w": seq((2,), tf.string, allow_missing=True)})
    check_example(tf, records, {"w": seq((2,), tf.string, allow_missing=True, default_value="-")})
    odd = [example(tf, {"w": strs(tf, b"a", b"b", b"c")})]
    check_example(
        tf,
        records[:1] + odd,
        {"w": seq((2,), tf.string, allow_missing=True)},
        error=["w"],
        record=1,
    )


def test_tfds_keypoints(tf, method):
    """tensorflow-datasets stores a Sequence of lists (keypoints per object) as flat values
    plus ragged_row_lengths_0; its RaggedFeature and tfrecnp's spelling read the same."""
    key = "objects/keypoints"
    records = [
        example(
            tf, {key: floats(tf, *range(10)), key + "/ragged_row_lengths_0": ints(tf, 2, 0, 3)}
        ),
        example(tf, {key: floats(tf), key + "/ragged_row_lengths_0": ints(tf)}),
        example(tf, {key: floats(tf, 1, 2), key + "/ragged_row_lengths_0": ints(tf, 1)}),
    ]
    ragged = tf.io.RaggedFeature
    tf_spec = {
        "keypoints": ragged(
            tf.float32,
            value_key=key,
            partitions=[
                ragged.RowLengths(key + "/ragged_row_lengths_0"),
                ragged.UniformRowLength(2),
            ],
        )
    }
    check_example(tf, records, tf_spec)
    ours = tn.decode(
        records,
        {
            "keypoints": tn.VarLen(
                "float32",
                inner_shape=(2,),
                partitions=[tn.VarLen.RowLengths(key + "/ragged_row_lengths_0")],
                key=key,
            )
        },
    )["keypoints"]
    assert ours.to_list() == tf.io.parse_example(records, tf_spec)["keypoints"].to_list()
    assert ours.ragged_rank == 2 and ours.flat_values.shape == (6, 2)
    CASES["cases"] += 1
