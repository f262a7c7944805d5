"""tn.Text: UTF-8 bytes_list features read as str, TensorFlow the oracle of the bytes; text as
text through every door (Arrow, Parquet, pandas, polars, DuckDB, Hugging Face), str columns
written back as UTF-8 bytes_list, Arrow / Parquet / HF string columns read as text, and
inference proposing Text only for what is text (never images or raw bytes)."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tfrecnp as tn
from tfrecnp.cli.main import main

N = 300
WORDS = ["cat", "héllo wörld", "", "日本語のテキスト", "emoji 🙂 ok", "tab\tand\nlines", "ß"]


def caption(i: int) -> str:
    return f"{WORDS[i % len(WORDS)]} #{i}" if i % 5 else WORDS[i % len(WORDS)]


def tags(i: int) -> list[str]:
    return [WORDS[(i + k) % len(WORDS)] for k in range(i % 4)]


def _example(tf, feats: dict) -> bytes:
    def feature(v):
        if isinstance(v, list) and v and isinstance(v[0], int):
            return tf.train.Feature(int64_list=tf.train.Int64List(value=v))
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=v))

    f = {k: feature(v) for k, v in feats.items()}
    return tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString()


@pytest.fixture(scope="module")
def texts(tmp_path_factory, tf):
    """Captions, tag lists and pairs of names written by TensorFlow, in two shards."""
    folder = tmp_path_factory.mktemp("text")
    for shard, ids in enumerate((range(0, 170), range(170, N))):
        with tf.io.TFRecordWriter(str(folder / f"part-{shard}.tfrecord")) as w:
            for i in ids:
                w.write(
                    _example(
                        tf,
                        {
                            "caption": [caption(i).encode()],
                            "tags": [t.encode() for t in tags(i)],
                            "pair": [f"a{i}".encode(), f"b{i}é".encode()],
                            "id": [i],
                        },
                    )
                )
    return str(folder / "*.tfrecord")


SPEC = {
    "caption": tn.Text(),
    "tags": tn.Text(None),
    "pair": tn.Text((2,)),
    "id": tn.FixedLen((), "int64"),
}


def tf_parsed(tf, pattern: str) -> dict:
    """What tf.io.parse_example gives for the files, as str (TensorFlow's bytes decoded)."""
    files = sorted(tf.io.gfile.glob(pattern))
    feats = {
        "caption": tf.io.FixedLenFeature([], tf.string),
        "tags": tf.io.RaggedFeature(tf.string),
        "pair": tf.io.FixedLenFeature([2], tf.string),
    }
    ds = tf.data.TFRecordDataset(files).batch(1000).map(lambda s: tf.io.parse_example(s, feats))
    (out,) = list(ds.as_numpy_iterator())
    return {
        "caption": [b.decode() for b in out["caption"].tolist()],
        "tags": [[b.decode() for b in row] for row in out["tags"]],
        "pair": [[b.decode() for b in row] for row in out["pair"].tolist()],
    }


def test_text_reads_str_equal_to_tensorflows_bytes_decoded(texts, tf):
    want = tf_parsed(tf, texts)
    cols = tn.read(texts, spec=SPEC)
    assert cols["caption"].dtype == object and cols["caption"].shape == (N,)
    assert all(type(v) is str for v in cols["caption"])
    assert cols["caption"].tolist() == want["caption"] == [caption(i) for i in range(N)]
    assert isinstance(cols["tags"], tn.Ragged)
    assert cols["tags"].to_list() == want["tags"]
    assert cols["pair"].shape == (N, 2) and cols["pair"].tolist() == want["pair"]
    # batches of every size cut the same strings (the buffer is split at char offsets)
    ds = tn.open(texts, spec=SPEC)
    got = [s for b in ds.batches(7) for s in b["caption"].tolist()]
    assert got == want["caption"]
    shuffled = [s for b in ds.batches(16, shuffle=50, seed=1) for s in b["caption"].tolist()]
    assert sorted(shuffled) == sorted(want["caption"])
    assert ds[4]["caption"] == caption(4) and ds[[3, 1]]["tags"].to_list() == [tags(3), tags(1)]


def test_text_default_fills_a_missing_feature(tmp_path, tf):
    path = tmp_path / "x.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as w:
        w.write(_example(tf, {"name": ["é".encode()]}))
        w.write(_example(tf, {"other": [1]}))
    cols = tn.read(path, spec={"name": tn.Text(default="?")})
    assert cols["name"].tolist() == ["é", "?"]
    parsed = tf.io.parse_example(
        [p for p in tf.data.TFRecordDataset(str(path)).as_numpy_iterator()],
        {"name": tf.io.FixedLenFeature([], tf.string, default_value="?")},
    )
    assert [b.decode() for b in parsed["name"].numpy()] == cols["name"].tolist()
    with pytest.raises(tn.SchemaError, match="name"):
        tn.read(path, spec={"name": tn.Text()})


def test_invalid_utf8_names_file_record_and_feature(tmp_path, tf):
    path = tmp_path / "bad.tfrecord"
    # record 2 ends inside a character and record 3 starts with its rest: the two together
    # are UTF-8, each alone is not
    values = [b"ok", "fine é".encode(), b"cut \xc3", b"\xa9 rest", b"\xff bad"]
    with tf.io.TFRecordWriter(str(path)) as w:
        for v in values:
            w.write(_example(tf, {"t": [v]}))
    with pytest.raises(tn.SchemaError) as e:
        tn.read(path, spec={"t": tn.Text()})
    message = str(e.value)
    assert "'t'" in message and "record 2" in message and "bad.tfrecord" in message
    assert "errors='replace'" in message
    cols = tn.read(path, spec={"t": tn.Text(errors="replace")})
    assert cols["t"].tolist() == [v.decode("utf-8", "replace") for v in values]
    assert tn.read(path, spec={"t": tn.Bytes()})["t"].to_list() == values  # bytes kept


def test_spec_json_and_spelling():
    for f in (
        tn.Text(),
        tn.Text(None),
        tn.Text((3,)),
        tn.Text((-1, 2)),
        tn.Text(default="x"),
        tn.Text(errors="replace"),
    ):
        assert tn.spec_from_json(tn.spec_to_json({"f": f}))["f"] == f
        assert eval(f.spell(), {"tn": tn}) == f
    assert tn.Text().spell() == "tn.Text()" and tn.Text(None).spell() == "tn.Text(None)"
    with pytest.raises(ValueError, match="errors"):
        tn.Text(errors="ignore")
    with pytest.raises(ValueError, match="default"):
        tn.Text(None, default="x")
    assert "Text" in tn.__all__


def test_arrow_pandas_polars_duckdb_see_strings(texts, tmp_path):
    import duckdb
    import polars as pl

    ds = tn.open(texts, spec=SPEC)
    table = ds.to_arrow()
    assert table.schema.field("caption").type == pa.large_string()
    assert table.schema.field("tags").type == pa.large_list(pa.large_string())
    assert table.schema.field("pair").type == pa.list_(pa.large_string(), 2)
    assert table.column("caption").to_pylist() == [caption(i) for i in range(N)]
    df = ds.to_pandas()
    assert df["caption"].iloc[1] == caption(1) and isinstance(df["caption"].iloc[1], str)
    assert pl.from_arrow(table)["caption"].dtype == pl.String
    reader = ds.arrow_reader()  # noqa: F841 (DuckDB finds the stream by its name)
    got = duckdb.sql(
        "select id, length(caption) as n, upper(caption) as up from reader order by id"
    ).fetchall()
    assert [(i, n) for i, n, _ in got] == [(i, len(caption(i))) for i in range(N)]
    assert got[1][2] == caption(1).upper()
    # a stream of no records still says string
    (tmp_path / "empty.tfrecord").write_bytes(b"")
    none = tn.open(str(tmp_path / "empty.tfrecord"), spec=SPEC).to_arrow()
    assert none.num_rows == 0 and none.schema.field("caption").type == pa.large_string()
    assert none.schema.field("tags").type == pa.large_list(pa.large_string())


def test_convert_to_parquet_writes_string_and_reads_back_as_text(texts, tmp_path):
    import duckdb

    out = tmp_path / "t.parquet"
    tn.convert(texts, str(out), spec=SPEC)
    schema = pq.read_schema(out)
    assert pa.types.is_large_string(schema.field("caption").type) or pa.types.is_string(
        schema.field("caption").type
    )
    kind = duckdb.sql(f"select typeof(caption) from '{out}' limit 1").fetchall()[0][0]
    assert kind == "VARCHAR"
    back = tn.open(str(out))
    assert back.spec["caption"] == tn.Text() and back.spec["tags"] == tn.Text(None)
    cols = back.to_numpy()
    assert cols["caption"].tolist() == [caption(i) for i in range(N)]
    assert cols["tags"].to_list() == [tags(i) for i in range(N)]
    # asked as bytes, a string column gives its UTF-8 bytes
    raw = tn.open(str(out), spec={"caption": tn.Bytes()}).to_numpy()["caption"]
    assert raw.to_list() == [caption(i).encode() for i in range(N)]


def test_parquet_by_pandas_and_duckdb_reads_as_text_and_writes_utf8(tmp_path, tf):
    import duckdb
    import pandas as pd

    names = [caption(i) for i in range(50)]
    pd.DataFrame({"name": names, "n": np.arange(50)}).to_parquet(tmp_path / "pd.parquet")
    duckdb.sql(
        "copy (select 'row ' || i::varchar || ' ü' as s, [('t' || i::varchar), 'x'] as l "
        f"from range(40) t(i)) to '{tmp_path / 'dd.parquet'}' (format parquet)"
    )
    ds = tn.open(str(tmp_path / "pd.parquet"))
    assert ds.spec["name"] == tn.Text()
    assert ds.to_numpy()["name"].tolist() == names
    dd = tn.open(str(tmp_path / "dd.parquet"))
    assert dd.spec == {"s": tn.Text(), "l": tn.Text(None)}
    assert dd.to_numpy()["l"].to_list()[3] == ["t3", "x"]
    # to TFRecord: bytes_list of UTF-8, as TensorFlow reads them
    out = tmp_path / "pd.tfrecord"
    tn.convert(str(tmp_path / "pd.parquet"), str(out))
    raw = [bytes(p) for p in tf.data.TFRecordDataset(str(out)).as_numpy_iterator()]
    parsed = tf.io.parse_example(raw, {"name": tf.io.FixedLenFeature([], tf.string)})
    assert [b.decode() for b in parsed["name"].numpy()] == names
    assert tn.open(str(out)).spec["name"] == tn.Text()  # inferred back as text


def test_writing_str_columns_gives_utf8_bytes_lists(tmp_path, tf):
    out = tmp_path / "w.tfrecord"
    caps = [caption(i) for i in range(20)]
    obj = np.array(caps, dtype=object)
    result = tn.write(
        str(out),
        {
            "a": caps,
            "b": obj,
            "c": np.array(caps),  # NumPy's own str dtype
            "d": tn.Ragged.from_row_splits(
                np.array([t for i in range(20) for t in tags(i)], object),
                np.cumsum([0] + [len(tags(i)) for i in range(20)]),
            ),
        },
    )
    assert result.spec["a"] == result.spec["b"] == result.spec["c"] == tn.Text()
    assert result.spec["d"] == tn.Text(None)
    raw = [bytes(p) for p in tf.data.TFRecordDataset(str(out)).as_numpy_iterator()]
    parsed = tf.io.parse_example(
        raw,
        {k: tf.io.FixedLenFeature([], tf.string) for k in "abc"}
        | {"d": tf.io.RaggedFeature(tf.string)},
    )
    for k in "abc":
        assert [v.decode() for v in parsed[k].numpy()] == caps
    assert [[v.decode() for v in r] for r in parsed["d"].to_list()] == [tags(i) for i in range(20)]
    back = tn.read(str(out), spec=result.spec)
    assert back["a"].tolist() == caps and back["d"].to_list() == [tags(i) for i in range(20)]


def test_hugging_face_strings_both_ways(texts, tmp_path):
    import datasets

    ds = tn.open(texts, spec={"caption": tn.Text(), "tags": tn.Text(None), "id": SPEC["id"]})
    hf = ds.to_hf()
    assert hf.features["caption"].dtype in ("string", "large_string")
    assert hf[5]["caption"] == caption(5) and hf[5]["tags"] == tags(5)
    src = datasets.Dataset.from_dict(
        {"s": [caption(i) for i in range(30)], "b": [bytes([i, 255]) for i in range(30)]},
        features=datasets.Features({"s": datasets.Value("string"), "b": datasets.Value("binary")}),
    )
    out = tmp_path / "hf.tfrecord"
    tn.write(str(out), src)
    back = tn.open(str(out))
    assert back.spec["s"] == tn.Text() and back.spec["b"] == tn.Bytes()
    assert back.to_numpy()["s"].tolist() == src["s"]


def _jpeg() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)).save(buf, "JPEG")
    return buf.getvalue()


def _png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.full((4, 4), 65, np.uint8)).save(buf, "PNG")
    return buf.getvalue()


def test_inference_proposes_text_only_for_text(tmp_path, tf, capsys):
    path = tmp_path / "mixed.tfrecord"
    rng = np.random.default_rng(0)
    with tf.io.TFRecordWriter(str(path)) as w:
        for i in range(40):
            w.write(
                _example(
                    tf,
                    {
                        "caption": [caption(i).encode()],
                        "file": [f"images/{i:05d}.jpg".encode()],
                        "tags": [t.encode() for t in tags(i)],
                        "jpeg": [_jpeg()],
                        "png": [_png()],
                        "floats": [rng.standard_normal(8).astype(np.float32).tobytes()],
                        "pixels": [rng.integers(0, 128, 64, dtype=np.uint8).tobytes()],  # ASCII!
                        "ints": [np.arange(4, dtype=np.int64).tobytes()],
                        "ascii_ids": [bytes([65 + i % 26, 0, 66])],
                    },
                )
            )
    spec = tn.infer_spec(path)
    assert spec["caption"] == tn.Text() and spec["file"] == tn.Text()
    assert spec["tags"] == tn.Text(None)
    for name in ("jpeg", "png", "floats", "pixels", "ints", "ascii_ids"):
        assert spec[name] == tn.Bytes(), name
    assert tn.read(path)["file"].tolist()[:2] == ["images/00000.jpg", "images/00001.jpg"]
    assert main(["inspect", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "tn.Text()" in shown and "tn.Text(None)" in shown
    assert main(["inspect", str(path), "--json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert as_json["features"]["caption"] == {"type": "Text"}


def test_tfds_text_keeps_bytes_unless_asked(tmp_path):
    import warnings

    from tfds_builders import Contract, build, tfds_records

    builder = build(Contract, tmp_path)
    want = tfds_records(builder, "train")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = tn.open(builder.data_dir, split="train")
        asked = tn.open(builder.data_dir, split="train", spec={"name": tn.Text()})
    assert ds[3]["name"] == want[3]["name"] and isinstance(want[3]["name"], bytes)
    assert asked.spec["name"] == tn.Text()
    cols = asked.to_numpy()
    assert cols["name"].tolist() == [r["name"].decode() for r in want]
    assert cols["id"].tolist() == [r["id"] for r in want]
