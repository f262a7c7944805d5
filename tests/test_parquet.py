"""Parquet both ways: TFRecord (written by TensorFlow) -> Parquet -> TFRecord read back equal
by TensorFlow; Parquet and Feather written by pyarrow, pandas and DuckDB opened as
datasets; tn.write of Arrow tables; what TFRecord cannot hold refused by column name."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tfrecnp as tn

N = 700


def values(i: int) -> dict:
    return {
        "label": i % 5,
        "x": [i * 0.25, -1.5, float(i)],
        "tokens": [i * 10 + k for k in range(i % 6)],
        "name": f"row-{i}".encode(),
        "blob": bytes([i % 256, 0, 255]) * (i % 3),
    }


def expected() -> dict[str, list]:
    rows = [values(i) for i in range(N)]
    return {k: [r[k] for r in rows] for k in rows[0]}


@pytest.fixture(scope="module")
def shards(tmp_path_factory, tf):
    out = tmp_path_factory.mktemp("pq")
    for k, ids in enumerate((range(0, 400), range(400, N))):
        with tf.io.TFRecordWriter(str(out / f"data-{k}.tfrecord")) as w:
            for i in ids:
                v = values(i)
                f = {
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[v["label"]])),
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=v["x"])),
                    "tokens": tf.train.Feature(int64_list=tf.train.Int64List(value=v["tokens"])),
                    "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[v["name"]])),
                    "blob": tf.train.Feature(bytes_list=tf.train.BytesList(value=[v["blob"]])),
                }
                w.write(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())
    return out


SPEC = {
    "label": tn.FixedLen((), "int64"),
    "x": tn.FixedLen((3,), "float32"),
    "tokens": tn.VarLen("int64"),
    "name": tn.Bytes(),
    "blob": tn.Bytes(),
}


def tf_rows(tf, paths) -> dict[str, list]:
    """The records as TensorFlow parses them."""
    features = {
        "label": tf.io.FixedLenFeature([], tf.int64),
        "x": tf.io.FixedLenFeature([3], tf.float32),
        "tokens": tf.io.VarLenFeature(tf.int64),
        "name": tf.io.FixedLenFeature([], tf.string),
        "blob": tf.io.FixedLenFeature([], tf.string),
    }
    out = {k: [] for k in features}
    for raw in tf.data.TFRecordDataset([str(p) for p in paths]):
        ex = tf.io.parse_single_example(raw, features)
        out["label"].append(int(ex["label"]))
        out["x"].append(ex["x"].numpy().tolist())
        out["tokens"].append(tf.sparse.to_dense(ex["tokens"]).numpy().tolist())
        out["name"].append(ex["name"].numpy())
        out["blob"].append(ex["blob"].numpy())
    return out


def test_tfrecord_to_parquet_to_tfrecord_reads_back_equal_in_tensorflow(shards, tmp_path, tf):
    parquet = tn.convert(
        str(shards),
        str(tmp_path / "out.parquet"),
        spec=SPEC,
        row_group_bytes=8 << 10,
        text=["name"],
        progress=False,
    )
    meta = pq.ParquetFile(parquet).metadata
    assert meta.num_rows == N and meta.num_row_groups > 3  # row groups of about 8 KiB
    table = pq.read_table(parquet)  # pyarrow reads what we wrote
    assert table.schema.field("name").type == pa.large_string()
    assert table.column("tokens").to_pylist() == expected()["tokens"]
    out = tn.convert(
        parquet, str(tmp_path / "back.tfrecord"), records_per_shard=300, progress=False
    )
    assert [os.path.basename(p) for p in out.paths] == [
        f"back-0000{k}-of-00003.tfrecord" for k in range(3)
    ]
    got = tf_rows(tf, out.paths)
    want = expected()
    assert got == {k: [v if k != "x" else [float(f) for f in v] for v in want[k]] for k in want}


def test_a_folder_of_part_files(shards, tmp_path):
    out = tn.convert(
        str(shards),
        str(tmp_path / "parts") + "/",
        spec=SPEC,
        file_bytes=20 << 10,
        row_group_bytes=5 << 10,
        progress=False,
    )
    parts = sorted(os.listdir(out))
    assert len(parts) > 2 and parts[0] == "part-00000.parquet"
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]  # no leftovers
    ds = tn.open(out)
    assert len(ds) == N
    assert ds.to_arrow().column("label").to_pylist() == expected()["label"]
    with pytest.raises(FileExistsError, match=r"exists; pass overwrite=True"):
        tn.convert(str(shards), out, spec=SPEC, format="parquet", progress=False)


def test_a_failed_conversion_leaves_nothing(shards, tmp_path):
    with pytest.raises(tn.SchemaError, match=r"^feature 'blob' was asked for as text"):
        tn.convert(
            str(shards),
            str(tmp_path / "out.parquet"),
            spec=SPEC,
            text=["blob"],
            row_group_bytes=4 << 10,
            progress=False,
        )
    assert os.listdir(tmp_path) == []


def test_parquet_written_by_pandas_opens_with_its_values(tmp_path):
    pd = pytest.importorskip("pandas")
    want = expected()
    frame = pd.DataFrame(
        {
            "label": want["label"],
            "name": [v.decode() for v in want["name"]],
            "score": np.arange(N) / 4,
            "tokens": want["tokens"],
        }
    )
    path = tmp_path / "pandas.parquet"
    frame.to_parquet(path, row_group_size=128)
    ds = tn.open(path)
    assert ds.spec == {
        "label": tn.FixedLen((), "int64"),
        "name": tn.Bytes(),
        "score": tn.FixedLen((), "float64"),
        "tokens": tn.VarLen("int64"),
    }
    assert len(ds) == N
    assert ds[N - 1]["name"] == want["name"][N - 1]
    batch = ds[[650, 3, 129]]
    assert batch["label"].tolist() == [want["label"][i] for i in (650, 3, 129)]
    assert [t.tolist() for t in batch["tokens"]] == [want["tokens"][i] for i in (650, 3, 129)]
    got = [v for b in ds.batches(100, shuffle=True, seed=3) for v in b["score"].tolist()]
    assert sorted(got) == (np.arange(N) / 4).tolist() and got != sorted(got)
    frame.to_feather(tmp_path / "pandas.feather")
    assert tn.open(tmp_path / "pandas.feather").to_pandas()["name"].tolist() == [
        v for v in want["name"]
    ]


def test_parquet_written_by_duckdb_opens_with_its_values(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "duck.parquet"
    duckdb.sql(
        "select i as id, [i, i + 1] as pair, 'v' || i::varchar as tag, i / 2 as half "
        "from range(1000) t(i)"
    ).write_parquet(str(path), row_group_size=200)
    ds = tn.open(path)
    assert len(ds) == 1000
    cols = ds.to_numpy()
    np.testing.assert_array_equal(cols["id"], np.arange(1000))
    assert [r.tolist() for r in cols["pair"][:2]] == [[0, 1], [1, 2]]
    assert cols["tag"][999] == b"v999"
    np.testing.assert_array_equal(cols["half"], np.arange(1000) / 2)


def test_write_takes_an_arrow_table_read_back_by_tensorflow(tmp_path, tf):
    want = expected()
    table = pa.table(
        {
            "label": pa.array(want["label"], pa.int64()),
            "x": pa.array(want["x"], pa.list_(pa.float32(), 3)),
            "tokens": pa.array(want["tokens"], pa.list_(pa.int64())),
            "name": pa.array([v.decode() for v in want["name"]]),
            "blob": pa.array(want["blob"], pa.binary()),
        }
    )
    out = tn.write(tmp_path / "t.tfrecord", table, progress=False)
    assert out.spec["x"] == tn.FixedLen((3,), "float32")
    assert out.spec["tokens"] == tn.VarLen("int64")
    got = tf_rows(tf, out.paths)
    assert got["tokens"] == want["tokens"] and got["name"] == want["name"]
    assert got["blob"] == want["blob"] and got["label"] == want["label"]


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (
            pa.array([{"a": i, "b": "x"} for i in range(4)]),
            r"^column 'meta' has Arrow type struct<a: int64, b: string>, a struct",
        ),
        (pa.array([{"k": 1}] * 4, pa.map_(pa.string(), pa.int64())), r"^column 'meta' .*a map"),
        (pa.array([1.5, 2.5, 3.5, 4.5]).cast(pa.decimal128(5, 2)), r"^column 'meta' .*decimal"),
    ],
)
def test_a_column_with_no_tfrecord_kind_is_named(tmp_path, column, message):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"ok": range(4), "meta": column}), path)
    with pytest.raises(tn.SchemaError, match=message):
        tn.open(path)
    with pytest.raises(tn.SchemaError, match=message):
        tn.convert(path, str(tmp_path / "out.tfrecord"), progress=False)
    assert tn.open(path, spec=["ok"]).to_numpy()["ok"].tolist() == [0, 1, 2, 3]
    assert not [n for n in os.listdir(tmp_path) if n != "bad.parquet"]


def test_nulls_among_numbers_are_named_when_read(tmp_path):
    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"v": pa.array([1, None, 3])}), path)
    with pytest.raises(tn.SchemaError, match=r"^column 'v' holds 1 nulls among its 3 rows"):
        tn.open(path).to_numpy()
