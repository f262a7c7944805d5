"""Dataset folders hold more than shards (dataset_info.json, a README, a .npy of labels):
directories and globs take the TFRecord shards by their names and their first frame, and
say once what they passed over; a file named explicitly is always read."""

import gzip
import json
import warnings

import numpy as np
import pytest
import tensorflow as tf

import tfrecnp as tn


def _example(i: int) -> bytes:
    feature = {"label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i]))}
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "dataset"
    root.mkdir()
    with tf.io.TFRecordWriter(str(root / "train-00000-of-00002")) as w:
        for i in range(5):
            w.write(_example(i))
    options = tf.io.TFRecordOptions(compression_type="GZIP")
    with tf.io.TFRecordWriter(str(root / "train-00001-of-00002.gz"), options) as w:
        for i in range(5, 9):
            w.write(_example(i))
    (root / "empty.tfrecord").write_bytes(b"")  # a shard with no records
    (root / "dataset_info.json").write_text(json.dumps({"splits": {"train": 9}}))
    (root / "README").write_text("a dataset\n")
    np.save(root / "labels.npy", np.arange(9))
    (root / "notes.dat").write_bytes(b"these are not frames at all, just text" * 4)
    (root / "junk.gz").write_bytes(gzip.compress(b"gzip of something else entirely" * 8))
    return root


def test_a_folder_reads_only_its_shards(folder):
    with pytest.warns(UserWarning, match="passed over 5 files") as caught:
        ds = tn.open(folder)
    message = str(caught[0].message)
    for name in ("dataset_info.json (by its name)", "README (by its name)", "labels.npy"):
        assert name in message
    assert "notes.dat (its first bytes are not a TFRecord frame)" in message
    assert "junk.gz (its first bytes are not a TFRecord frame)" in message
    assert [p.rsplit("/", 1)[1] for p in ds.paths] == [
        "empty.tfrecord",
        "train-00000-of-00002",
        "train-00001-of-00002.gz",
    ]
    assert sorted(ds.to_numpy()["label"].tolist()) == list(range(9))


def test_a_glob_follows_the_same_rule(folder):
    with pytest.warns(UserWarning, match="passed over"):
        reader = tn.RecordReader(str(folder / "*"))
    assert len(list(reader)) == 9


def test_a_folder_of_shards_only_warns_nothing(folder):
    for name in ("dataset_info.json", "README", "labels.npy", "notes.dat", "junk.gz"):
        (folder / name).unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tn.count_records(folder) == 9


def test_a_folder_without_shards_says_what_it_saw(tmp_path):
    (tmp_path / "info.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=r"no TFRecord files among info.json \(by its"):
        tn.open(tmp_path)


def test_a_file_named_explicitly_is_read_as_given(folder):
    with pytest.raises(tn.CorruptRecordError, match=r"notes\.dat record 0"):
        list(tn.RecordReader(folder / "notes.dat"))
