"""The Arrow door: records written by TensorFlow read out as Arrow (table, stream), pandas,
polars and DuckDB, with the plain Arrow types of tfrecnp.interop.arrow; columns <-> Arrow
zero-copy where the layouts agree; types TFRecord cannot hold refused by column name."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import tfrecnp as tn
from tfrecnp.interop.arrow import from_arrow, spec_of_arrow, to_arrow

N = 500


def values(i: int) -> dict:
    """Record i as plain Python values (what the test expects back)."""
    return {
        "label": i % 3,
        "x": [float(i), i + 0.5, -float(i), 1.0, 2.0, 3.0],
        "tokens": list(range(i % 4)),
        "name": f"rec-{i}".encode(),
        "blob": bytes([i % 256, 255, 0]),
    }


SPEC = {
    "label": tn.FixedLen((), "int64"),
    "x": tn.FixedLen((2, 3), "float32"),
    "tokens": tn.VarLen("int64"),
    "name": tn.Bytes(),
    "blob": tn.Bytes(),
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory, tf):
    """Two shards written by TensorFlow."""
    out = tmp_path_factory.mktemp("arrow")
    for shard, ids in enumerate((range(0, 300), range(300, N))):
        with tf.io.TFRecordWriter(str(out / f"part-{shard}.tfrecord")) as w:
            for i in ids:
                v = values(i)
                feature = {
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[v["label"]])),
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=v["x"])),
                    "tokens": tf.train.Feature(int64_list=tf.train.Int64List(value=v["tokens"])),
                    "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[v["name"]])),
                    "blob": tf.train.Feature(bytes_list=tf.train.BytesList(value=[v["blob"]])),
                }
                ex = tf.train.Example(features=tf.train.Features(feature=feature))
                w.write(ex.SerializeToString())
    return out


def expected(names=None) -> dict[str, list]:
    rows = [values(i) for i in range(N)]
    return {k: [r[k] for r in rows] for k in (names or SPEC)}


def test_to_arrow_types_and_values(folder):
    table = tn.open(folder, SPEC).to_arrow(text=["name"])
    assert isinstance(table, pa.Table)
    assert table.schema.field("label").type == pa.int64()
    assert table.schema.field("x").type == pa.list_(pa.list_(pa.float32(), 3), 2)
    assert table.schema.field("tokens").type == pa.large_list(pa.int64())
    assert table.schema.field("name").type == pa.large_string()
    assert table.schema.field("blob").type == pa.large_binary()
    want = expected()
    got = table.to_pydict()
    assert got["label"] == want["label"]
    assert [[v for row in r for v in row] for r in got["x"]] == want["x"]
    assert got["tokens"] == want["tokens"]
    assert got["name"] == [v.decode() for v in want["name"]]
    assert got["blob"] == want["blob"]


def test_the_reader_streams_batches_of_the_size_asked(folder):
    reader = tn.open(folder, SPEC).arrow_reader(128)
    assert isinstance(reader, pa.RecordBatchReader)
    sizes = [b.num_rows for b in reader]
    assert sizes == [128, 128, 128, 116]


def test_batches_are_cut_across_the_blocks_they_come_in():
    from tfrecnp.adapters.arrow import arrow_reader

    sizes, first = [3, 1, 1, 7, 0, 2], 0
    blocks = []
    for n in sizes:
        ids = np.arange(first, first + n)
        blocks.append({"id": ids, "t": tn.Ragged.from_lengths(np.repeat(ids, ids % 3), ids % 3)})
        first += n
    reader = arrow_reader(iter(blocks), lambda: blocks[4], batch_size=4)
    got = list(reader)
    assert [b.num_rows for b in got] == [4, 4, 4, 2]
    table = pa.Table.from_batches(got)
    ids = np.arange(14)
    assert table.column("id").to_pylist() == ids.tolist()
    assert table.column("t").to_pylist() == [[int(i)] * (i % 3) for i in ids]


def test_the_reader_of_no_records_still_has_the_schema(folder):
    reader = tn.open(folder, SPEC).take(0).arrow_reader()
    assert reader.schema.names == list(SPEC)
    assert reader.read_all().num_rows == 0


def test_batches_outlive_the_pass_that_made_them(folder):
    """Arrow buffers wrap the decoder's arrays: holding them must keep those arrays from
    being reused by later blocks."""
    ds = tn.open(folder, SPEC)
    batches = list(ds.arrow_reader(50))
    for _ in range(2):
        for _ in ds.batches(50):
            pass
    got = pa.Table.from_batches(batches).to_pydict()
    assert got["tokens"] == expected()["tokens"]
    assert got["blob"] == expected()["blob"]


def test_text_that_is_not_utf8_names_the_feature(folder):
    with pytest.raises(tn.SchemaError, match=r"^feature 'blob' was asked for as text"):
        tn.open(folder, SPEC).to_arrow(text=["blob"])


def test_to_arrow_checks_memory_first(folder):
    with pytest.raises(
        tn.MemoryBudgetError, match=r"^to_arrow\(\) would need about .*arrow_reader"
    ):
        tn.open(folder, SPEC).to_arrow(max_bytes=1000)


def test_to_pandas(folder):
    frame = tn.open(folder, SPEC).to_pandas(text=["name"])
    assert list(frame.columns) == list(SPEC)
    assert frame["label"].tolist() == expected()["label"]
    assert frame["name"].tolist() == [v.decode() for v in expected()["name"]]
    assert [list(r) for r in frame["tokens"]] == expected()["tokens"]


def test_duckdb_queries_a_folder_through_the_stream(folder):
    duckdb = pytest.importorskip("duckdb")
    ds = tn.open(folder, SPEC)  # noqa: F841 (DuckDB finds it by name)
    rows = duckdb.sql("select label, count(*) from ds group by 1 order by 1").fetchall()
    labels = expected()["label"]
    assert rows == [(k, labels.count(k)) for k in range(3)]
    ((total,),) = duckdb.sql("select sum(len(tokens)) from ds").fetchall()
    assert total == sum(len(t) for t in expected()["tokens"])


def test_polars_reads_the_stream(folder):
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame(tn.open(folder, SPEC).select(["label", "tokens"]))
    assert frame["label"].to_list() == expected()["label"]
    assert frame["tokens"].to_list() == expected()["tokens"]


# -- columns <-> Arrow, directly --------------------------------------------------------------


def test_columns_round_trip_through_arrow_without_copies():
    cols = {
        "x": np.arange(24, dtype=np.float32).reshape(4, 3, 2),
        "t": tn.Ragged.from_list([[1], [], [2, 3], [4]], np.int64),
        "b": tn.BytesColumn.from_list([b"a", b"bb", b"", b"\xff"]),
        "flag": np.array([True, False, True, True]),
    }
    batch = to_arrow(cols)
    x_values = batch.column("x").values.values
    assert x_values.buffers()[1].address == cols["x"].ctypes.data
    t = batch.column("t")
    assert t.offsets.buffers()[1].address == cols["t"].row_splits.ctypes.data
    assert batch.column("b").buffers()[2].address == cols["b"].data.ctypes.data
    back = from_arrow(batch)
    assert np.shares_memory(back["x"], cols["x"])
    assert np.shares_memory(back["t"].values, cols["t"].values)
    np.testing.assert_array_equal(back["x"], cols["x"])
    assert back["t"] == cols["t"]
    assert back["b"] == cols["b"]
    np.testing.assert_array_equal(back["flag"], cols["flag"])
    assert spec_of_arrow(batch.schema) == {
        "x": tn.FixedLen((3, 2), "float32"),
        "t": tn.VarLen("int64"),
        "b": tn.Bytes(),
        "flag": tn.FixedLen((), "bool"),
    }


def test_an_axis_of_size_zero_keeps_its_rows():
    """FixedLen((2, 0)): every row holds no values, and there are still three rows."""
    cols = {"empty": np.zeros((3, 2, 0), np.float32), "n": np.arange(3)}
    batch = to_arrow(cols)
    assert batch.num_rows == 3
    assert batch.schema.field("empty").type == pa.list_(pa.list_(pa.float32(), 0), 2)
    assert batch.column("empty").to_pylist() == [[[], []]] * 3
    np.testing.assert_array_equal(from_arrow(batch)["empty"], cols["empty"])


@pytest.mark.parametrize(
    ("array", "message"),
    [
        (
            pa.array([{"a": 1, "b": "x"}]),
            r"^column 'bad' has Arrow type struct<a: int64, b: string>, a struct, which one "
            r"tf.train.Example feature cannot hold: flatten it",
        ),
        (
            pa.array([1, None, 3]),
            r"^column 'bad' row 1 is null, a missing feature; give the feature a default "
            r"\(a FixedLen with default= in spec=\), or fill the nulls",
        ),
        (
            pa.array([np.datetime64("2020-01-01", "ms")]),
            r"^column 'bad' has Arrow type timestamp\[ms\], a date / time, .* cast it to int64",
        ),
        (pa.array([None, None]), r"^column 'bad' holds only nulls"),
        (pa.array([[[1], [2, 3]]]), r"^column 'bad' has Arrow type list<item: list<item: int64>>"),
    ],
)
def test_what_tfrecord_cannot_hold_is_refused_by_column(array, message):
    table = pa.table({"ok": pa.array(range(len(array))), "bad": array})
    nested = pa.types.is_list(array.type)  # reads as Ragged of Ragged, but is no one feature
    with pytest.raises(tn.SchemaError, match=message):
        spec_of_arrow(table.schema) if nested else from_arrow(table)
    if not array.null_count and not nested:  # the schema alone is refused alike
        with pytest.raises(tn.SchemaError, match=message):
            spec_of_arrow(table.schema)
