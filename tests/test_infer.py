"""Schema inference, `tfrecnp inspect` and `tfrecnp head`, on files TensorFlow writes."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecnp as tn
from tfrecnp.cli import main
from tfrecnp.example.infer import infer_spec, inspect

KINDS = {"int64": "int64_list", "float32": "float_list", "bytes": "bytes_list"}


def feature(tf, dtype: str, values):
    if dtype == "int64":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))
    if dtype == "float32":
        return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(values)))


def values(dtype: str, n: int, rng) -> list:
    if dtype == "int64":
        return rng.integers(-(2**62), 2**62, n).tolist()
    if dtype == "float32":
        return rng.random(n).tolist()
    return [rng.bytes(int(k)) for k in rng.integers(0, 9, n)]


def write_examples(tf, path, records: list[dict]) -> str:
    with tf.io.TFRecordWriter(str(path)) as w:
        for rec in records:
            feats = {name: feature(tf, dtype, vals) for name, (dtype, vals) in rec.items()}
            w.write(tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString())
    return str(path)


@pytest.fixture
def mixed_file(tf, tmp_path):
    rng = np.random.default_rng(0)
    records = []
    for i in range(200):
        rec = {
            "label": ("int64", [i]),
            "vec": ("float32", rng.random(4).tolist()),
            "tokens": ("int64", list(range(i % 7))),
            "image": ("bytes", [b"\xff\xd8\xff\xe0" + rng.bytes(i % 5)]),
            "raw": ("bytes", [np.arange(10, dtype=np.float32).tobytes()]),
            "words": ("bytes", [b"w"] * (i % 3)),
        }
        if i % 4:
            rec["sometimes"] = ("float32", [0.5])
        records.append(rec)
    return write_examples(tf, tmp_path / "mixed.tfrecord", records)


def test_infer_gives_back_the_written_schema(mixed_file):
    assert infer_spec(mixed_file) == {
        "image": tn.Bytes(),
        "label": tn.FixedLen((), "int64"),
        "raw": tn.Bytes(),
        "sometimes": tn.VarLen("float32"),
        "tokens": tn.VarLen("int64"),
        "vec": tn.FixedLen((4,), "float32"),
        "words": tn.Text(None),  # b"w": UTF-8 text (issue 35)
    }


def test_inspect_notes_images_raw_bytes_and_missing(mixed_file):
    report = inspect(mixed_file)
    assert report.files == [(mixed_file, None, 200, os.path.getsize(mixed_file))]
    notes = {f.name: f.notes for f in report.features}
    assert notes["image"] == ["JPEG images: read pixels with tn.Image()"]
    assert notes["raw"] == [
        "every value is 40 bytes: raw array bytes? e.g. tn.Raw('float32', shape=(10,)) "
        "(or another dtype whose size divides 40)"
    ]
    assert notes["sometimes"] == ["missing from 25% of records"]
    stats = {f.name: f for f in report.features}
    assert (stats["tokens"].count_min, stats["tokens"].count_max) == (0, 6)
    assert stats["sometimes"].present == 0.75
    np.testing.assert_array_equal(stats["label"].example, 0)
    assert stats["image"].example.startswith(b"\xff\xd8\xff\xe0")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    schema=st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.tuples(st.sampled_from(sorted(KINDS)), st.one_of(st.integers(1, 5), st.none())),
        min_size=1,
        max_size=8,
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_infer_random_schemas(tf, tmp_path_factory, schema, seed):
    """Fixed-count features come back FixedLen, varying ones VarLen, with the right dtype."""
    rng = np.random.default_rng(seed)
    n = 12
    records = [{} for _ in range(n)]
    expected = {}
    for name, (dtype, count) in schema.items():
        if count is None:
            counts = rng.integers(0, 6, n)
            counts[:2] = [0, 3]  # two lengths at least: truly variable
            expected[name] = tn.VarLen(dtype)
        else:
            counts = [count] * n
            expected[name] = tn.FixedLen(() if count == 1 else (count,), dtype)
        for rec, k in zip(records, counts, strict=True):
            rec[name] = (dtype, values(dtype, int(k), rng))
    path = write_examples(tf, tmp_path_factory.mktemp("s") / "r.tfrecord", records)
    assert infer_spec(path) == expected
    columns = tn.read(path)  # spec=None infers; every record decodes with it
    assert set(columns) == set(expected)
    for name, (dtype, count) in schema.items():
        written = [rec[name][1] for rec in records]
        if dtype == "float32":  # float_list holds float32
            written = [np.float32(row).tolist() for row in written]
        if count == 1:
            written = [row[0] for row in written]
        assert _rows(columns[name]) == written, name


def _rows(column) -> list:
    """A decoded column as plain Python rows (bytes columns hold one value per row here)."""
    if isinstance(column, np.ndarray):
        return column.tolist()
    rows = column.to_list()
    return [r.tolist() if isinstance(r, np.ndarray) else r for r in rows]


def test_infer_sequence_examples(tf, tmp_path):
    path = str(tmp_path / "seq.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for i in range(30):
            ex = tf.train.SequenceExample()
            ex.context.feature["id"].int64_list.value.append(i)
            frames = ex.feature_lists.feature_list["frames"]
            for _ in range(i % 4):
                frames.feature.add().float_list.value.extend([1.0, 2.0, 3.0])
            words = ex.feature_lists.feature_list["words"]
            for t in range(i % 3):
                words.feature.add().bytes_list.value.extend([b"a"] * (t + 1))
            w.write(ex.SerializeToString())
    spec = infer_spec(path)
    assert spec == tn.Sequence(
        context={"id": tn.FixedLen((), "int64")},
        sequence={"frames": tn.FixedLen((3,), "float32"), "words": tn.VarLen("bytes")},
    )
    assert tn.read(path)["frames"].lengths.tolist() == [i % 4 for i in range(30)]


def test_a_name_both_in_context_and_feature_lists_is_a_schema_error(tf, tmp_path):
    # found by fuzz/fuzz_decode.py: the Sequence spec's own ValueError came out untyped
    path = str(tmp_path / "seq.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        ex = tf.train.SequenceExample()
        ex.context.feature["x"].int64_list.value.append(1)
        ex.feature_lists.feature_list["x"].feature.add().float_list.value.append(2.0)
        w.write(ex.SerializeToString())
    with pytest.raises(
        tn.SchemaError, match=r"feature 'x' is both a context feature and a feature list in "
    ):
        infer_spec(path)


def test_infer_samples_across_files(tf, tmp_path):
    a = write_examples(tf, tmp_path / "a.tfrecord", [{"x": ("int64", [1])}] * 5)
    b = write_examples(tf, tmp_path / "b.tfrecord", [{"x": ("int64", [1]), "y": ("bytes", [b"z"])}])
    assert infer_spec([a, b]) == {"x": tn.FixedLen((), "int64"), "y": tn.Text(None)}
    assert inspect(str(tmp_path)).features[1].notes == [
        "missing from 83% of records",
        "UTF-8 text: read as str (tn.Bytes() keeps the bytes)",
    ]


def test_mixed_kinds_is_a_schema_error(tf, tmp_path):
    path = write_examples(
        tf, tmp_path / "m.tfrecord", [{"x": ("int64", [1])}, {"x": ("float32", [1.0])}]
    )
    with pytest.raises(tn.SchemaError, match=r"feature 'x' holds float_list and int64_list in"):
        infer_spec(path)


def test_empty_file_cannot_be_inferred(tmp_path):
    path = tmp_path / "empty.tfrecord"
    path.write_bytes(b"")
    with pytest.raises(tn.SchemaError, match="holds no records to infer a spec from"):
        infer_spec(path)


def test_cli_inspect_table_and_spec_json(mixed_file, capsys, tmp_path):
    assert main(["inspect", mixed_file]) == 0
    out = capsys.readouterr().out
    assert f"{mixed_file}: 200 records" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line[:1].isalpha()}
    assert "tn.FixedLen((4,), 'float32')" in rows["vec"] and "4/4/4" in rows["vec"]
    assert "JPEG images" in rows["image"] and "75%" in rows["sometimes"]
    assert main(["inspect", mixed_file, "--json"]) == 0
    spec_text = capsys.readouterr().out
    assert tn.spec_from_json(spec_text) == infer_spec(mixed_file)
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(spec_text)
    assert main(["head", mixed_file, "-n", "3", "--spec", str(spec_file)]) == 0
    out = capsys.readouterr().out
    assert out.count("record ") == 3 and "record 2 of" in out
    assert re.search(r"\n  tokens +int64\[2\] \[0, 1\]\n", out)


def test_cli_head_json(mixed_file, capsys):
    assert main(["head", mixed_file, "-n", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["record"] for r in rows] == [0, 1]
    assert rows[1]["label"] == 1 and rows[1]["tokens"] == [0]
    assert rows[0]["words"] == []


def test_wide_records_are_sampled_less(tmp_path):
    """1 000 features a record: 250 records are surveyed (250 000 pairs), not all 1 024, and
    the spec still covers every feature."""
    import protowire as pw

    record = pw.delimited(
        1,
        b"".join(
            pw.delimited(1, pw.entry(f"f{i}", pw.feature(pw.FLOAT, [0.5]))) for i in range(1000)
        ),
    )
    path = tmp_path / "wide.tfrecord"
    with tn.RecordWriter(path) as w:
        for _ in range(1024):
            w.write(record)
    report = inspect(path)
    assert report.sampled == 250
    assert report.spec == {f"f{i}": tn.FixedLen((), "float32") for i in range(1000)}


def test_inspect_reads_box_lists_as_rows_of_four(tmp_path, capsys):
    rng = np.random.default_rng(0)
    lengths = np.array([4, 8, 0, 4, 12] * 8)
    boxes = tn.Ragged.from_lengths(rng.random(lengths.sum(), dtype=np.float32), lengths)
    points = tn.Ragged.from_lengths(rng.random(lengths.sum(), dtype=np.float32), lengths)
    path = tmp_path / "boxes.tfrecord"
    tn.write(path, {"image/object/bbox": boxes, "points": points}, progress=False)
    spec = infer_spec(path)
    assert spec["image/object/bbox"] == tn.VarLen("float32", inner_shape=(4,))
    assert spec["points"] == tn.VarLen("float32")  # not named like boxes: flat
    got = tn.read(path, spec)["image/object/bbox"]
    assert got.to_list() == [np.asarray(r).reshape(-1, 4).tolist() for r in boxes.to_list()]
    assert main(["inspect", str(path)]) == 0
    assert "boxes: every length is a multiple of 4, read as rows of 4" in capsys.readouterr().out


def test_the_raw_hint_names_a_spec_that_reads_the_bytes(tmp_path, capsys):
    rng = np.random.default_rng(1)
    data = rng.random((30, 3, 4), dtype=np.float32)
    path = tmp_path / "raw.tfrecord"
    cols = {"data": data, "pair": np.zeros((30, 2), np.uint8), "odd": np.zeros((30, 9), np.uint8)}
    tn.write(path, cols, encoding=dict.fromkeys(cols, "raw"), progress=False)
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    hint = "every value is 48 bytes: raw array bytes? e.g. tn.Raw('float32', shape=(12,))"
    assert hint in out
    assert "every value is 9 bytes: raw array bytes? e.g. tn.Raw('uint8', shape=(9,))" in out
    assert "every value is 2 bytes" not in out  # two bytes is more likely text than an array
    suggested = {"data": tn.Raw("float32", shape=(12,))}
    assert np.array_equal(tn.read(path, suggested)["data"], data.reshape(30, 12))


def test_demo_takes_json(tmp_path, capsys):
    assert main(["demo", "--records", "100", "--out", str(tmp_path / "d"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["records"] == 100
    assert doc["steps"][0].startswith("wrote ") and any("saved" in s for s in doc["steps"])


def _damaged(tmp_path, n: int = 50, bad: int = 5) -> tuple[str, np.ndarray]:
    """A file of n records whose record `bad` has bits flipped in its payload, and the
    labels of the records that survive."""
    rng = np.random.default_rng(3)
    cols = {"label": np.arange(n), "x": rng.random((n, 3)).astype(np.float32)}
    path = tn.write(tmp_path / "damaged.tfrecord", cols, progress=False).paths[0]
    index = tn.framing.scan_file(path)
    with open(path, "r+b") as f:
        f.seek(int(index.offsets[bad]) + 12 + int(index.lengths[bad]) // 2)
        byte = f.read(1)[0]
        f.seek(-1, 1)
        f.write(bytes([byte ^ 0xFF]))
    return path, np.delete(np.arange(n), bad)


DAMAGED_SPEC = {"label": tn.FixedLen((), "int64"), "x": tn.FixedLen((3,), "float32")}


def test_inference_honours_on_error_on_a_damaged_record(tmp_path):
    import warnings

    path, _ = _damaged(tmp_path)
    with pytest.raises(tn.CorruptRecordError, match="record 5"):
        infer_spec(path)
    with pytest.raises(tn.CorruptRecordError, match="record 5"):
        infer_spec(path, on_error="raise")
    with warnings.catch_warnings():
        warnings.simplefilter("error", tn.CorruptRecordWarning)  # skip is silent
        assert infer_spec(path, on_error="skip") == DAMAGED_SPEC
        assert inspect(path, on_error="skip").spec == DAMAGED_SPEC
    with pytest.warns(tn.CorruptRecordWarning, match=r"CRC mismatch .* record 5 "):
        assert infer_spec(path, on_error="warn") == DAMAGED_SPEC


def test_open_and_read_without_a_spec_honour_on_error(tmp_path):
    path, kept = _damaged(tmp_path)
    with pytest.raises(tn.CorruptRecordError, match="record 5"):
        tn.open(path)
    with pytest.raises(tn.CorruptRecordError, match="record 5"):
        tn.read(path)
    np.testing.assert_array_equal(tn.open(path, on_error="skip").to_numpy()["label"], kept)
    np.testing.assert_array_equal(tn.read(path, on_error="skip")["label"], kept)
    with pytest.warns(tn.CorruptRecordWarning, match="record 5"):
        np.testing.assert_array_equal(tn.read(path, on_error="warn")["label"], kept)


def test_cli_inspect_and_head_warn_about_damage_in_the_sample(tmp_path, capsys):
    import warnings

    path, _ = _damaged(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["inspect", path]) == 0
        out, err = capsys.readouterr()
        assert "FixedLen((3,), 'float32')" in out
        assert main(["head", path, "-n", "3"]) == 0  # records 0-2 are whole
        out2, err2 = capsys.readouterr()
    assert "record 0" in out2 and "record 2" in out2
    told = err + err2 + "".join(str(w.message) for w in caught)
    assert told.count("CRC mismatch") >= 2 and "record 5" in told


def _proposed_raw(notes: list[str]) -> tn.Raw | None:
    """The tn.Raw(...) that a feature's notes propose, built from the printed code."""
    found = [m for n in notes for m in re.findall(r"tn\.Raw\([^()]*(?:\([^()]*\))?\)", n)]
    return eval(found[0], {"tn": tn}) if found else None


def test_names_of_one_length_are_text_not_raw_bytes(tf, tmp_path):
    """UTF-8 file names that share a byte length are read as tn.Text(), with no raw hint,
    even where the 16 bytes the survey keeps end inside a character."""
    names = [f"Zürich/Bahnhofö_{i:03d}.jpg".encode() for i in range(40)]
    assert len({len(n) for n in names}) == 1
    with pytest.raises(UnicodeDecodeError):
        names[0][:16].decode()
    path = write_examples(
        tf, tmp_path / "names.tfrecord", [{"name": ("bytes", [n])} for n in names]
    )
    report = inspect(path)
    assert report.spec == {"name": tn.Text()}
    assert _proposed_raw(report.features[0].notes) is None, report.features[0].notes
    assert tn.read(path, report.spec)["name"].tolist() == [n.decode() for n in names]


@pytest.fixture
def audioset_like(tf, tmp_path):
    """SequenceExamples shaped like AudioSet's: an 11-byte video id and labels as context,
    and a feature list of 128-byte quantized embeddings, one bytes value per second; plus a
    feature list whose steps differ in length though each record's total is a multiple."""
    rng = np.random.default_rng(3)
    embeddings, path = [], str(tmp_path / "audioset.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(30):
            steps = rng.integers(0, 256, (int(rng.integers(1, 11)), 128), dtype=np.uint8)
            embeddings.append(steps)
            context = tf.train.Features(
                feature={
                    "video_id": feature(tf, "bytes", [b"-%010d" % i]),
                    "labels": feature(tf, "int64", rng.integers(0, 527, 1 + i % 3).tolist()),
                }
            )
            lists = {
                "audio_embedding": [feature(tf, "bytes", [s.tobytes()]) for s in steps],
                "uneven": [feature(tf, "bytes", [bytes(100)]), feature(tf, "bytes", [bytes(156)])],
            }
            lists = tf.train.FeatureLists(
                feature_list={k: tf.train.FeatureList(feature=v) for k, v in lists.items()}
            )
            proto = tf.train.SequenceExample(context=context, feature_lists=lists)
            writer.write(proto.SerializeToString())
    return path, embeddings


def test_feature_list_of_raw_steps_proposes_the_raw_that_reads_them(audioset_like, capsys):
    path, embeddings = audioset_like
    report = inspect(path)
    notes = {f.name: f.notes for f in report.features}
    proposed = _proposed_raw(notes["audio_embedding"])
    assert proposed == tn.Raw("uint8", shape=(128,)), notes["audio_embedding"]
    assert _proposed_raw(notes["uneven"]) is None  # 100 + 156 bytes: not one array size
    assert _proposed_raw(notes["video_id"]) is None  # text
    spec = tn.Sequence(context=report.spec.context, sequence={"audio_embedding": proposed})
    got = tn.read(path, spec)["audio_embedding"]
    assert got.row_splits.tolist() == np.cumsum([0] + [len(e) for e in embeddings]).tolist()
    np.testing.assert_array_equal(got.values, np.concatenate(embeddings))
    assert main(["inspect", path]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("audio_embedding"))
    assert "tn.Raw('uint8', shape=(128,)) per step" in line
