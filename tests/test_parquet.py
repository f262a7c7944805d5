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
        "name": tn.Text(),  # a string column is text
        "score": tn.FixedLen((), "float64"),
        "tokens": tn.VarLen("int64"),
    }
    assert len(ds) == N
    assert ds[N - 1]["name"] == want["name"][N - 1].decode()
    batch = ds[[650, 3, 129]]
    assert batch["label"].tolist() == [want["label"][i] for i in (650, 3, 129)]
    assert [t.tolist() for t in batch["tokens"]] == [want["tokens"][i] for i in (650, 3, 129)]
    got = [v for b in ds.batches(100, shuffle=True, seed=3) for v in b["score"].tolist()]
    assert sorted(got) == (np.arange(N) / 4).tolist() and got != sorted(got)
    frame.to_feather(tmp_path / "pandas.feather")
    assert tn.open(tmp_path / "pandas.feather").to_pandas()["name"].tolist() == [
        v.decode() for v in want["name"]
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
    assert cols["tag"][999] == "v999"
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
    with pytest.raises(tn.SchemaError, match=r"^column 'v' row 1 of .*nulls.parquet is null"):
        tn.open(path).to_numpy()


def parse_all(tf, paths, features) -> dict[str, np.ndarray]:
    """Every record of the files through tf.io.parse_example, in batches, concatenated; a
    tf.io.RaggedFeature as its flat values, and its row lengths under "<name>.lengths"."""
    parts: dict[str, list] = {}
    for raw in tf.data.TFRecordDataset([str(p) for p in paths]).batch(1000):
        for k, v in tf.io.parse_example(raw, features).items():
            if isinstance(v, tf.RaggedTensor):
                parts.setdefault(k + ".lengths", []).append(v.row_lengths().numpy())
                v = v.flat_values
            parts.setdefault(k, []).append(v.numpy())
    return {k: np.concatenate(v) for k, v in parts.items()}


def test_write_streams_a_parquet_folder_read_back_by_tensorflow(tmp_path, tf):
    import pyarrow.dataset as pds

    want = expected()
    folder = tmp_path / "in"
    folder.mkdir()
    for k, (a, b) in enumerate(((0, 250), (250, 600), (600, N))):
        pq.write_table(
            pa.table(
                {
                    "label": pa.array(want["label"][a:b], pa.int64()),
                    "x": pa.array(want["x"][a:b], pa.list_(pa.float32(), 3)),
                    "tokens": pa.array(want["tokens"][a:b], pa.list_(pa.int64())),
                    "name": pa.array([v.decode() for v in want["name"][a:b]]),
                }
            ),
            folder / f"part-{k}.parquet",
            row_group_size=64,
        )
    out = tn.write(tmp_path / "t.tfrecord", pds.dataset(folder), progress=False, verify=True)
    assert out.records == N and out.spec["tokens"] == tn.VarLen("int64")
    got = parse_all(
        tf,
        out.paths,
        {
            "label": tf.io.FixedLenFeature([], tf.int64),
            "x": tf.io.FixedLenFeature([3], tf.float32),
            "tokens": tf.io.RaggedFeature(tf.int64),
            "name": tf.io.FixedLenFeature([], tf.string),
        },
    )
    np.testing.assert_array_equal(got["label"], want["label"])
    np.testing.assert_array_equal(got["x"], np.array(want["x"], np.float32))
    assert got["name"].tolist() == want["name"]
    assert got["tokens.lengths"].tolist() == [len(t) for t in want["tokens"]]
    assert got["tokens"].tolist() == [v for t in want["tokens"] for v in t]


def batch_of(first: int, rows: int) -> pa.RecordBatch:
    """Rows first.. of id, x (16 halves of id) and tokens (10 * id + 0, 1, ..., id % 7
    values), in Arrow's pool."""
    ids = np.arange(first, first + rows, dtype=np.int64)
    values = pa.array(token_values(ids))
    offsets = np.concatenate([[0], np.cumsum(ids % 7)])
    # concat_arrays copies into Arrow's memory pool, which the tests below watch.
    return pa.record_batch(
        {
            "id": pa.concat_arrays([pa.array(ids)]),
            "x": pa.concat_arrays(
                [pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(ids, 16) * 0.5), 16)]
            ),
            "tokens": pa.concat_arrays([pa.LargeListArray.from_arrays(offsets, values)]),
        }
    )


def token_values(ids: np.ndarray) -> np.ndarray:
    """The tokens of these rows, back to back."""
    lengths = ids % 7
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(ids * 10, lengths) + np.arange(int(lengths.sum())) - starts


def check_streamed(tf, out, n: int) -> None:
    """The files hold batch_of(0, n)'s values, as TensorFlow parses them."""
    assert out.records == n
    got = parse_all(
        tf,
        out.paths,
        {
            "id": tf.io.FixedLenFeature([], tf.int64),
            "x": tf.io.FixedLenFeature([16], tf.float32),
            "tokens": tf.io.RaggedFeature(tf.int64),
        },
    )
    ids = np.arange(n)
    np.testing.assert_array_equal(got["id"], ids)
    np.testing.assert_array_equal(got["x"], np.repeat(ids, 16).reshape(-1, 16) * 0.5)
    np.testing.assert_array_equal(got["tokens.lengths"], ids % 7)
    np.testing.assert_array_equal(got["tokens"], token_values(ids))


def test_write_pulls_a_record_batch_reader_a_batch_at_a_time(tmp_path, tf):
    """A reader over a generator: the Arrow memory live while it makes each batch stays at
    a batch or two (reading the table first would hold all forty)."""
    rows, batches = 4096, 40
    live = []

    def make():
        for k in range(batches):
            live.append(pa.total_allocated_bytes())
            yield batch_of(k * rows, rows)

    schema = batch_of(0, 1).schema
    reader = pa.RecordBatchReader.from_batches(schema, make())
    out = tn.write(tmp_path / "s.tfrecord", reader, progress=False)
    one = batch_of(0, rows).nbytes
    assert len(live) == batches and max(live) < 3 * one
    check_streamed(tf, out, rows * batches)


# A pool that watches Arrow's peak memory; kept for the session, since buffers it handed
# out may outlive the test that set it.
WATCHED_POOL = pa.proxy_memory_pool(pa.default_memory_pool())


def test_write_streams_a_parquet_dataset_in_bounded_memory(tmp_path, tf, monkeypatch):
    """tn.write of pyarrow.dataset.dataset(folder): Arrow's peak memory stays at a few
    batches of the size asked, far below the table's."""
    import pyarrow.dataset as pds

    from tfrecnp.interop import arrow

    rows, files = 12_000, 4
    folder = tmp_path / "in"
    folder.mkdir()
    for k in range(files):
        pq.write_table(
            pa.Table.from_batches([batch_of(k * rows, rows)]),
            folder / f"part-{k}.parquet",
            row_group_size=1000,
        )
    table_bytes = pds.dataset(folder).to_table().nbytes
    monkeypatch.setattr(arrow, "STREAM_BYTES", 256 << 10)
    dataset = pds.dataset(folder)
    before = pa.default_memory_pool()
    pa.set_memory_pool(WATCHED_POOL)
    try:
        base = WATCHED_POOL.bytes_allocated()
        out = tn.write(tmp_path / "p.tfrecord", dataset, progress=False)
        peak = WATCHED_POOL.max_memory() - base
    finally:
        pa.set_memory_pool(before)
    assert peak < table_bytes / 4, (peak, table_bytes)
    check_streamed(tf, out, rows * files)


def test_write_takes_a_hive_partitioned_dataset_with_its_keys(tmp_path, tf):
    import pyarrow.dataset as pds

    ids = np.arange(300)
    table = pa.table({"id": ids, "label": ids % 3, "tokens": [list(range(i % 4)) for i in ids]})
    pq.write_to_dataset(table, tmp_path / "hive", partition_cols=["label"])
    dataset = pds.dataset(tmp_path / "hive", partitioning="hive")
    out = tn.write(tmp_path / "h.tfrecord", dataset, progress=False)
    got = parse_all(
        tf,
        out.paths,
        {
            "id": tf.io.FixedLenFeature([], tf.int64),
            "label": tf.io.FixedLenFeature([], tf.int64),
            "tokens": tf.io.RaggedFeature(tf.int64),
        },
    )
    order = np.argsort(got["id"])
    np.testing.assert_array_equal(got["id"][order], ids)
    np.testing.assert_array_equal(got["label"][order], ids % 3)  # from the folder names
    np.testing.assert_array_equal(got["tokens.lengths"][order], ids % 4)


def listed(fs, url: str) -> list[str]:
    """Every name under url, hidden ones included, relative to it."""
    root = fs._strip_protocol(url).rstrip("/")
    return sorted(p[len(root) + 1 :] for p in fs.find(root)) if fs.exists(root) else []


def test_parquet_to_memory_urls_appears_whole(shards, memfs):
    out = tn.convert(str(shards), "memory://out/part.parquet", spec=SPEC, progress=False)
    assert out == "memory://out/part.parquet"
    assert listed(memfs, "memory://out") == ["part.parquet"]  # no temporary left
    with memfs.open("memory://out/part.parquet", "rb") as f:
        table = pq.read_table(f)
    assert table.column("tokens").to_pylist() == expected()["tokens"]
    parts = tn.convert(
        str(shards),
        "memory://out/parts/",
        spec=SPEC,
        file_bytes=20 << 10,
        row_group_bytes=5 << 10,
        progress=False,
    )
    names = listed(memfs, parts)
    assert len(names) > 2 and names == [f"part-{k:05d}.parquet" for k in range(len(names))]
    ds = tn.open("memory://out/parts/")
    assert ds.to_arrow().column("label").to_pylist() == expected()["label"]
    with pytest.raises(FileExistsError, match=r"^memory://out/parts exists; pass overwrite"):
        tn.convert(str(shards), "memory://out/parts/", spec=SPEC, format="parquet")
    again = dict(spec=SPEC, format="parquet", overwrite=True, progress=False)
    tn.convert(str(shards), "memory://out/parts/", **again)
    assert listed(memfs, "memory://out/parts") == ["part-00000.parquet"]


def text_then_not(n: int) -> dict:
    """Names that are UTF-8 for the first rows and not for the last one."""
    names = [f"name-{i}".encode() for i in range(n - 1)] + [b"\xff"]
    return {"id": np.arange(n), "name": tn.BytesColumn.from_list(names)}


def test_a_failed_parquet_upload_leaves_nothing(memfs):
    for dst in ("memory://bad/one.parquet", "memory://bad/parts/"):
        with pytest.raises(tn.SchemaError, match=r"^feature 'name' was asked for as text"):
            tn.convert(
                text_then_not(5000),
                dst,
                format="parquet",
                text=["name"],
                row_group_bytes=4 << 10,
                progress=False,
            )
        assert listed(memfs, "memory://bad") == []


def test_parquet_to_s3(shards, s3):
    url = s3.url("pq/out.parquet")
    tn.convert(str(shards), url, spec=SPEC, storage_options=s3.options, progress=False)
    assert listed(s3.fs, s3.url("pq")) == ["out.parquet"]
    ds = tn.open(url, storage_options=s3.options)
    assert ds.to_arrow().column("tokens").to_pylist() == expected()["tokens"]
    with pytest.raises(tn.SchemaError, match=r"^feature 'name' was asked for as text"):
        tn.convert(
            text_then_not(5000),
            s3.url("bad/parts/"),
            format="parquet",
            text=["name"],
            row_group_bytes=4 << 10,
            storage_options=s3.options,
            progress=False,
        )
    assert listed(s3.fs, s3.url("bad")) == []


# --- row groups encoded side by side (issue 35, item 7) ------------------------------------


def test_row_groups_encoded_side_by_side_make_the_file_one_writer_makes(shards, tmp_path):
    """Several encoders at once write, byte for byte, the file one pyarrow ParquetWriter
    writes in this thread (threads=1): the same row groups, in order, one footer."""
    options = dict(spec=SPEC, text=["name"], row_group_bytes=4 << 10, progress=False)
    one = tn.convert(str(shards), str(tmp_path / "one.parquet"), threads=1, **options)
    for threads in (2, 3):
        out = tn.convert(
            str(shards), str(tmp_path / f"{threads}.parquet"), threads=threads, **options
        )
        assert pq.read_table(out).equals(pq.read_table(one))
        with open(out, "rb") as a, open(one, "rb") as b:
            assert a.read() == b.read()
    f = pq.ParquetFile(out)
    groups = f.metadata.num_row_groups
    assert groups > 3
    # in order: each group starts at the row after the last one's (x[2] is the row number)
    starts = [f.read_row_group(k, columns=["x"]).column("x")[0].as_py()[2] for k in range(groups)]
    rows = [f.metadata.row_group(k).num_rows for k in range(groups)]
    assert starts == [float(r) for r in np.cumsum([0, *rows[:-1]])]


def test_row_groups_side_by_side_read_by_duckdb_polars_and_pandas(shards, tmp_path):
    out = tn.convert(
        str(shards),
        str(tmp_path / "out.parquet"),
        spec=SPEC,
        text=["name"],
        row_group_bytes=4 << 10,
        threads=2,
        progress=False,
    )
    assert pq.ParquetFile(out).metadata.num_row_groups > 3
    want = expected()
    duckdb = pytest.importorskip("duckdb")
    got = duckdb.sql(f"select label, tokens, name, length(name) from '{out}'").fetchall()
    assert [r[0] for r in got] == want["label"]
    assert [r[1] for r in got] == want["tokens"]
    assert [r[2] for r in got] == [n.decode() for n in want["name"]]
    pl = pytest.importorskip("polars")
    frame = pl.read_parquet(out)
    assert frame["label"].to_list() == want["label"]
    assert frame["x"].to_list() == [[float(v) for v in x] for x in want["x"]]
    assert frame["blob"].to_list() == want["blob"]
    pd = pytest.importorskip("pandas")
    assert pd.read_parquet(out)["label"].tolist() == want["label"]


def test_part_files_encoded_side_by_side_are_those_of_one_writer(shards, tmp_path):
    options = dict(spec=SPEC, file_bytes=20 << 10, row_group_bytes=5 << 10, progress=False)
    one = tn.convert(str(shards), str(tmp_path / "one") + "/", threads=1, **options)
    two = tn.convert(str(shards), str(tmp_path / "two") + "/", threads=2, **options)
    names = sorted(os.listdir(two))
    assert len(names) > 2 and names == sorted(os.listdir(one))
    for name in names:
        with open(os.path.join(one, name), "rb") as a, open(os.path.join(two, name), "rb") as b:
            assert a.read() == b.read()
    assert tn.open(two).to_arrow().column("label").to_pylist() == expected()["label"]


def chunks(path, column: str) -> list:
    """Each row group's column chunk metadata of this leaf column of a Parquet file."""
    meta = pq.ParquetFile(path).metadata
    i = next(k for k in range(meta.num_columns) if meta.schema.column(k).path == column)
    return [meta.row_group(g).column(i) for g in range(meta.num_row_groups)]


def stored_as(path, column: str) -> set[tuple[str, str]]:
    """(encoding of the values, codec) of a leaf column in each row group."""
    out = set()
    for chunk in chunks(path, column):
        encodings = set(chunk.encodings) - {"RLE"}  # (RLE: the levels')
        if chunk.has_dictionary_page:
            assert encodings & {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}
            encodings = {"dictionary"}
        assert len(encodings) == 1, encodings
        out.add((encodings.pop(), chunk.compression))
    return out


def test_each_column_gets_the_cheapest_encoding_near_the_smallest(tmp_path):
    """Row ids and token ids of a large vocabulary are delta-packed; labels, tags and
    words of a skewed vocabulary get a dictionary; random floats are stored plain and
    uncompressed (zstd saves under a tenth), captions plain with zstd. No column takes
    more than a tenth over pyarrow's dictionary + zstd, and DuckDB, polars and pandas read
    the values back."""
    n = 20_000
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 30, n)
    values = int(lengths.sum())
    kinds = rng.integers(0, 3, n)
    columns = {
        "id": np.arange(n),
        "label": rng.integers(0, 10, n),
        "vec": rng.standard_normal((n, 8)).astype(np.float32),
        "tag": tn.BytesColumn.from_list([[b"cat", b"dog", b"emu"][k] for k in kinds]),
        "caption": tn.BytesColumn.from_list([f"caption {i}".encode() for i in range(n)]),
        "tokens": tn.Ragged.from_lengths(rng.integers(0, 50_000, values), lengths),
        "words": tn.Ragged.from_lengths(np.minimum(rng.zipf(1.2, values), 50_000), lengths),
    }
    out = tn.convert(
        columns, str(tmp_path / "out.parquet"), row_group_bytes=1 << 20, progress=False
    )
    assert pq.ParquetFile(out).metadata.num_row_groups > 3
    want = {
        "id": {("DELTA_BINARY_PACKED", "ZSTD")},
        "label": {("dictionary", "ZSTD")},
        "vec.list.element": {("PLAIN", "UNCOMPRESSED")},
        "tag": {("dictionary", "ZSTD")},
        "caption": {("PLAIN", "ZSTD")},
        "tokens.list.element": {("DELTA_BINARY_PACKED", "UNCOMPRESSED")},
        "words.list.element": {("dictionary", "ZSTD")},
    }
    assert {column: stored_as(out, column) for column in want} == want
    # min / max for the columns of one value per row (readers skip row groups by them), none
    # for list items
    group = pq.ParquetFile(out).metadata.row_group(0)
    first = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
    assert sorted(path for path, c in first.items() if c.is_stats_set) == [
        "caption",
        "id",
        "label",
        "tag",
    ]
    assert (first["id"].statistics.min, first["id"].statistics.max) == (0, group.num_rows - 1)
    usual = str(tmp_path / "usual.parquet")
    pq.write_table(
        pq.read_table(out),
        usual,
        row_group_size=pq.ParquetFile(out).metadata.row_group(0).num_rows,
        compression="zstd",
    )
    for column in want:
        ours = sum(c.total_compressed_size for c in chunks(out, column))
        theirs = sum(c.total_compressed_size for c in chunks(usual, column))
        assert ours <= 1.1 * theirs, (column, ours, theirs)
    tokens = columns["tokens"]
    duckdb = pytest.importorskip("duckdb")
    got = duckdb.sql(f"select id, label, tag, caption, tokens, words from '{out}'").fetchall()
    assert [r[0] for r in got] == list(range(n))
    assert [r[1] for r in got] == columns["label"].tolist()
    assert [r[2] for r in got] == columns["tag"].to_list()
    assert [r[3] for r in got] == columns["caption"].to_list()
    assert [r[4] for r in got] == [tokens[i].tolist() for i in range(n)]
    assert [r[5] for r in got] == [columns["words"][i].tolist() for i in range(n)]
    pl = pytest.importorskip("polars")
    frame = pl.read_parquet(out)
    assert frame["tokens"].to_list() == [tokens[i].tolist() for i in range(n)]
    assert np.array_equal(np.array(frame["vec"].to_list(), np.float32), columns["vec"])
    pd = pytest.importorskip("pandas")
    assert pd.read_parquet(out)["id"].tolist() == list(range(n))


@pytest.mark.parametrize(("codec", "stored"), [("snappy", "SNAPPY"), (None, "UNCOMPRESSED")])
def test_a_codec_given_compresses_every_column(shards, tmp_path, codec, stored):
    out = tn.convert(
        str(shards),
        str(tmp_path / "out.parquet"),
        spec=SPEC,
        parquet_compression=codec,
        row_group_bytes=4 << 10,
        progress=False,
    )
    meta = pq.ParquetFile(out).metadata
    assert meta.num_row_groups > 3
    for g in range(meta.num_row_groups):
        for i in range(meta.num_columns):
            assert meta.row_group(g).column(i).compression == stored
    assert pq.read_table(out).column("tokens").to_pylist() == expected()["tokens"]


def test_threads_must_be_positive(shards, tmp_path):
    with pytest.raises(ValueError, match=r"^threads must be 1 or more, not 0"):
        tn.convert(str(shards), str(tmp_path / "out.parquet"), spec=SPEC, threads=0)
    assert os.listdir(tmp_path) == []


def test_the_footer_codec_writes_back_what_it_reads(tmp_path):
    """The Thrift compact protocol of Parquet footers, read and written back unchanged:
    a footer pyarrow wrote (statistics, nested and string columns, key-value metadata),
    and a struct of every kind, with field ids far apart and long lists."""
    from tfrecnp.data import parquet_write as pw

    table = pa.table(
        {
            "a": pa.array([1, None, 3], pa.int64()),
            "s": pa.array(["x", "yy", None]),
            "l": pa.array([[1.5], [], None], pa.large_list(pa.float32())),
            "d": pa.array(["p", "q", "p"]).dictionary_encode(),
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=2, write_page_index=True)
    data = path.read_bytes()
    size = int.from_bytes(data[-8:-4], "little")
    footer = data[-8 - size : -8]
    fields, end = pw._read_struct(footer, 0)
    assert end == size and pw._write_struct(fields) == footer
    made = [
        [1, pw._TRUE, None],
        [2, pw._FALSE, None],
        [3, pw._BYTE, 7],
        [20, pw._I16, -3],
        [21, pw._I32, 1 << 20],
        [400, pw._I64, -(1 << 40)],
        [401, pw._DOUBLE, b"\x00\x00\x00\x00\x00\x00\xf8\x3f"],
        [402, pw._BINARY, b"x" * 200],
        [403, pw._LIST, (pw._I32, list(range(-10, 20)))],
        [404, pw._SET, (pw._BINARY, [b"a", b""])],
        [405, pw._MAP, (pw._BINARY, pw._I64, [(b"k", 1), (b"j", -1)])],
        [406, pw._MAP, (0, 0, [])],
        [407, pw._STRUCT, [[1, pw._I64, 5], [17, pw._STRUCT, []]]],
        [408, pw._LIST, (pw._TRUE, [1, 2, 1])],
    ]
    raw = pw._write_struct(made)
    assert pw._read_struct(raw, 0) == (made, len(raw))
