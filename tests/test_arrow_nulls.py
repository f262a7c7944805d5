"""Nulls in files pandas and pyarrow wrote read as pandas and TensorFlow read missing values:
NaN inside float vectors and in float columns (pandas stores its NaN as nulls), an empty row
for a null list, a FixedLen's default for a null value; anything else is a SchemaError
naming column, row and file. Converted to TFRecord, TensorFlow reads the same values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tfrecnp as tn

N = 300


def frame() -> pd.DataFrame:
    """Float vectors holding NaN, lists that are None, NaN among floats, as a pandas user
    holds them."""
    rng = np.random.default_rng(0)
    vecs, tokens, score = [], [], []
    for i in range(N):
        v = rng.normal(size=4)
        if i % 7 == 0:
            v[i % 4] = np.nan
        vecs.append(None if i % 11 == 5 else v)
        tokens.append(None if i % 13 == 3 else list(range(i % 5)))
        score.append(np.nan if i % 9 == 2 else i / 4)
    return pd.DataFrame(
        {"id": np.arange(N), "vec": vecs, "tokens": tokens, "score": score},
    )


@pytest.fixture(scope="module")
def pandas_parquet(tmp_path_factory):
    path = tmp_path_factory.mktemp("nulls") / "frame.parquet"
    frame().to_parquet(path, row_group_size=64)
    schema = pq.read_schema(path)
    assert schema.field("vec").type == pa.list_(pa.float64())
    table = pq.read_table(path)
    # pandas stored its NaN as nulls: inside the vectors, and in the float column
    assert pa.compute.sum(table.column("vec").combine_chunks().values.is_null()).as_py() > 0
    assert table.column("score").null_count == N // 9 + (N % 9 > 2)
    return path


def test_pandas_nan_inside_float_vectors_reads_as_nan(pandas_parquet):
    want = pd.read_parquet(pandas_parquet)
    ds = tn.open(pandas_parquet)
    assert ds.spec["vec"] == tn.VarLen("float64")
    got = ds.to_numpy()
    for i in range(N):
        row = want["vec"][i]
        expect = np.empty(0) if row is None else np.asarray(row, np.float64)
        np.testing.assert_array_equal(got["vec"][i], expect)  # NaN where pandas has NaN
        toks = want["tokens"][i]
        assert got["tokens"][i].tolist() == ([] if toks is None else list(toks))
    np.testing.assert_array_equal(got["score"], want["score"].to_numpy())
    assert np.isnan(got["score"]).sum() == want["score"].isna().sum() > 0
    # by position and shuffled, the same rows
    np.testing.assert_array_equal(ds[14]["vec"], want["vec"][14])
    seen = np.concatenate(
        [b["id"] for b in ds.batches(50, shuffle=True, seed=1)],
    )
    assert sorted(seen.tolist()) == list(range(N))


def test_feather_written_by_pandas_reads_alike(tmp_path):
    path = tmp_path / "frame.feather"
    df = frame()
    df.to_feather(path)
    got = tn.open(path).to_numpy()
    assert np.isnan(got["vec"][0]).sum() == 1
    assert got["vec"][5].tolist() == [] and got["tokens"][3].tolist() == []


def test_converted_to_tfrecord_tensorflow_reads_the_same(tmp_path, pandas_parquet, tf):
    out = tmp_path / "frame.tfrecord"
    tn.convert(pandas_parquet, str(out), progress=False)
    want = tn.open(pandas_parquet).to_numpy()
    raw = next(iter(tf.data.TFRecordDataset(str(out)).batch(N)))
    got = tf.io.parse_example(
        raw,
        {
            "vec": tf.io.VarLenFeature(tf.float32),
            "tokens": tf.io.VarLenFeature(tf.int64),
            "score": tf.io.FixedLenFeature([], tf.float32),
        },
    )
    vec = tf.sparse.to_dense(got["vec"], default_value=-7.0).numpy()
    for i in range(N):
        row = want["vec"][i]
        np.testing.assert_array_equal(vec[i, : len(row)], row.astype(np.float32))
        assert (vec[i, len(row) :] == -7.0).all()  # a null list: no values, as TF reads one
    lengths = np.bincount(got["tokens"].indices.numpy()[:, 0], minlength=N)
    assert lengths.tolist() == [len(want["tokens"][i]) for i in range(N)]
    np.testing.assert_array_equal(got["score"].numpy(), want["score"].astype(np.float32))


def test_a_fixedlen_default_fills_its_null_values_and_rows(tmp_path, tf):
    path = tmp_path / "ints.parquet"
    pq.write_table(
        pa.table(
            {
                "label": pa.array([3, None, 5, None], pa.int64()),
                "name": pa.array(["a", None, "c", "d"]),
                "box": pa.array([[1.0, 2.0], None, [5.0, 6.0], [7.0, 8.0]]),
            }
        ),
        path,
    )
    spec = {
        "label": tn.FixedLen((), "int64", default=-1),
        "name": tn.Bytes(default=b"?"),
        "box": tn.FixedLen((2,), "float32", default=[0.0, 0.5]),
    }
    ds = tn.open(path, spec=spec)
    assert ds.spec["label"] == tn.FixedLen((), "int64", default=-1)
    got = ds.to_numpy()
    assert got["label"].tolist() == [3, -1, 5, -1]
    assert got["name"].to_list() == [b"a", b"?", b"c", b"d"]
    assert got["box"].tolist() == [[1, 2], [0, 0.5], [5, 6], [7, 8]]
    # written back, TensorFlow reads with the same defaults the same values
    out = tmp_path / "ints.tfrecord"
    tn.convert(path, str(out), spec=spec, progress=False)
    raw = next(iter(tf.data.TFRecordDataset(str(out)).batch(4)))
    parsed = tf.io.parse_example(
        raw,
        {
            "label": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
            "name": tf.io.FixedLenFeature([], tf.string, default_value=b"?"),
            "box": tf.io.FixedLenFeature([2], tf.float32, default_value=[0.0, 0.5]),
        },
    )
    assert parsed["label"].numpy().tolist() == [3, -1, 5, -1]
    assert parsed["name"].numpy().tolist() == [b"a", b"?", b"c", b"d"]
    assert parsed["box"].numpy().tolist() == [[1, 2], [0, 0.5], [5, 6], [7, 8]]


def test_a_null_with_no_value_names_column_row_and_file(tmp_path):
    path = tmp_path / "holes.parquet"
    labels = list(range(200))
    labels[130] = None
    lists = [[i, i + 1] for i in range(200)]
    lists[150] = [1, None]
    pq.write_table(
        pa.table({"label": pa.array(labels, pa.int64()), "ids": pa.array(lists)}),
        path,
        row_group_size=64,
    )
    message = (
        rf"^column 'label' row 130 of {path} is null, a missing feature "
        r"\(tn.FixedLen\(\(\), 'int64'\) has no default\); give the feature a default "
        r"\(spec=\{'label': tn.FixedLen\(\(\), 'int64', default=...\)\}\)"
    )
    with pytest.raises(tn.SchemaError, match=message):
        tn.open(path).to_numpy()
    with pytest.raises(tn.SchemaError, match=message):
        tn.open(path)[[5, 130]]
    with pytest.raises(
        tn.SchemaError,
        match=rf"^column 'ids' row 150 of {path} holds a null inside its list of int64; "
        "TFRecord has no null value",
    ):
        tn.open(path, spec=["ids"]).to_numpy()
    assert tn.open(path, spec=["ids"])[:150]["ids"].values.tolist()[-2:] == [149, 150]
    with pytest.raises(tn.SchemaError, match=r"^column 'label' row 1 is null"):
        tn.write(tmp_path / "t.tfrecord", pa.table({"label": pa.array([1, None])}))


def test_a_spec_of_another_shape_than_the_column_is_refused(tmp_path):
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"v": pa.array([[1.0, 2.0], [3.0]])}), path)
    with pytest.raises(tn.SchemaError, match=r"^column 'v' row 1 of .* holds 1 values"):
        tn.open(path, spec={"v": tn.FixedLen((2,), "float32")}).to_numpy()
    with pytest.raises(tn.SchemaError, match=r"^spec gives column 'v' as tn.Bytes\(\)"):
        tn.open(path, spec={"v": tn.Bytes()})
