"""Prepared tensorflow-datasets folders read by their metadata (tfrecnp.data.tfds): every
feature of every record equal to what `tfds.as_numpy(builder.as_dataset(split,
shuffle_files=False))` gives, in its order, for folders written by TFDS's own writer
(tests/tfds_builders.py and tfds.testing.DummyMnist); split slices equal to TFDS's own."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import warnings
import zlib

import numpy as np
import pytest
import tensorflow_datasets as tfds
from tfds_builders import N_TEST, N_TRAIN, Kinds, build, tfds_records

import tfrecnp as tn
from tfrecnp.cli.main import main
from tfrecnp.example.columns import BytesColumn, Ragged

LEFT = {"dyn"}  # read as its wire features: see tfds_features' docstring


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    return build(Kinds, tmp_path_factory.mktemp("tfds"), shards=3)


@pytest.fixture(scope="module")
def kinds_records(kinds):
    return {split: tfds_records(kinds, split) for split in ("train", "test")}


@pytest.fixture(scope="module")
def mnist(tmp_path_factory):
    builder = tfds.testing.DummyMnist(data_dir=str(tmp_path_factory.mktemp("mnist")))
    builder.download_and_prepare(file_format="tfrecord")
    return builder


def open_quiet(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tn.open(path, **kw)


def assert_same(name, got, want):
    """One feature of one record: tfrecnp's value against TFDS's."""
    if hasattr(want, "flat_values"):  # a tf.RaggedTensor: a Sequence of Sequences
        assert isinstance(got, Ragged), name
        assert got.to_list() == want.to_list(), name
        return
    if isinstance(want, (bytes, np.bytes_)):
        assert got == want, name
        return
    want = np.asarray(want)
    got = np.asarray(got)
    if want.dtype == object:
        assert [bytes(v) for v in got.reshape(-1)] == [bytes(v) for v in want.reshape(-1)], name
        assert got.shape == want.shape, name
        return
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    np.testing.assert_array_equal(got, want, err_msg=name)  # JPEG pixels too: the fast IDCT


@pytest.mark.parametrize("split", ["train", "test"])
def test_every_feature_of_every_record_equals_tfds(kinds, kinds_records, split):
    ds = open_quiet(kinds.data_dir, split=split)
    want = kinds_records[split]
    assert len(ds) == len(want) == {"train": N_TRAIN, "test": N_TEST}[split]
    leaves = set(ds.features) - LEFT
    assert leaves == set(want[0]) - LEFT
    for i, rec in enumerate(want):
        got = ds[i]
        for name in leaves:
            assert_same(name, got[name], rec[name])


def test_batches_come_in_tfds_order_with_the_same_values(kinds, kinds_records):
    ds = open_quiet(kinds.data_dir, split="train")
    want = kinds_records["train"]
    rows = []
    for batch in ds.select(["text", "objects/bbox", "video", "zipped"]).batches(16):
        n = len(batch["text"])
        rows += [{k: col[j] for k, col in batch.items()} for j in range(n)]
    assert [r["text"] for r in rows] == [w["text"] for w in want]
    for got, rec in zip(rows, want, strict=True):
        for name in ("objects/bbox", "video", "zipped"):
            assert_same(name, got[name], rec[name])


def test_a_tensor_of_several_unknown_dimensions_is_read_as_its_wire_features(kinds, kinds_records):
    with pytest.warns(UserWarning, match=r"TFDS feature 'dyn' \(Tensor\): encoding=zlib with"):
        ds = tn.open(kinds.data_dir, split="train")
    for i, rec in enumerate(kinds_records["train"]):
        got = ds[i]
        dyn = np.frombuffer(zlib.decompress(got["dyn/value"]), np.uint8)
        np.testing.assert_array_equal(dyn.reshape(got["dyn/shape"]), rec["dyn"])


def test_sequences_of_sequences_are_ragged_of_ragged_columns(kinds, kinds_records):
    ds = open_quiet(kinds.data_dir, split="train")
    want = kinds_records["train"]
    batch = ds[0:10]
    for name in ("tokens", "phrases", "boxes"):
        col = batch[name]
        assert isinstance(col, Ragged) and isinstance(col.values, Ragged), name
        assert col.to_list() == [w[name].to_list() for w in want[:10]], name
    assert ds.features["boxes"].describe() == "BBoxFeature(float32, (None, None, 4))"


def test_class_label_names_and_the_feature_tree(kinds):
    ds = open_quiet(kinds.data_dir, split="train")
    assert ds.features["label"].names == ["cat", "dog", "bird"]
    assert ds.features["objects/label"].names == ["a", "b", "c", "d"]
    assert ds.features["objects/bbox"].describe() == "BBoxFeature(float32, (None, 4))"
    assert ds.info.name == "kinds" and ds.info.version == "1.2.0"
    assert {s: v.num_examples for s, v in ds.info.splits.items()} == {
        "train": N_TRAIN,
        "test": N_TEST,
    }


SPLITS = [
    "train[:10%]",
    "train[33%:67%]",
    "train[-5%:]",
    "test[2:5]",
    "train[-3:]",
    "train[1shard]",
    "train[:-1shard]",
    "train+test",
    "test[:4]+train[60:]",
    "all",
]


@pytest.mark.parametrize("split", SPLITS)
def test_split_slices_and_sums_equal_tfds(kinds, split):
    want = [r["text"] for r in tfds_records(kinds, split)]
    ds = open_quiet(kinds.data_dir, split=split).select(["text"])
    assert len(ds) == len(want)
    assert [bytes(v) for v in ds.to_numpy()["text"].to_list()] == want
    assert [ds[i]["text"] for i in range(len(ds))] == want


def test_a_bad_split_names_the_splits_there_are(kinds):
    with pytest.raises(ValueError, match=r"has no split 'validation'; its splits: train, test"):
        open_quiet(kinds.data_dir, split="validation")
    with pytest.raises(ValueError, match=r"not a TFDS split"):
        open_quiet(kinds.data_dir, split="train[:10%")
    with pytest.raises(ValueError, match=r"pass split="):
        open_quiet(kinds.data_dir)


def test_the_dataset_folder_opens_its_latest_version(kinds, tmp_path):
    folder = tmp_path / "kinds"
    shutil.copytree(kinds.data_dir, folder / "1.2.0")
    shutil.copytree(kinds.data_dir, folder / "1.10.0")  # later than 1.2.0 (not by text)
    (folder / "0.9.0").mkdir()  # no dataset_info.json: not a version
    ds = open_quiet(folder, split="test")
    assert all("/1.10.0/" in p for p in ds.paths)
    assert len(ds) == N_TEST


def test_len_comes_from_the_metadata_without_opening_a_shard(kinds, tmp_path):
    folder = tmp_path / "v"
    shutil.copytree(kinds.data_dir, folder)
    for shard in folder.glob("*-train.tfrecord-*"):
        shard.write_bytes(b"")  # a scan would count 0 records
    ds = open_quiet(folder, split="train[:50%]")
    assert len(ds) == N_TRAIN // 2


def test_other_file_formats_get_a_clear_error(kinds, tmp_path):
    folder = tmp_path / "v"
    shutil.copytree(kinds.data_dir, folder)
    info = json.loads((folder / "dataset_info.json").read_text())
    info["fileFormat"] = "array_record"
    (folder / "dataset_info.json").write_text(json.dumps(info))
    with pytest.raises(tn.SchemaError, match=r"prepared by TFDS as ArrayRecord .*array_record"):
        tn.open(folder, split="train")


def test_an_unknown_feature_is_read_raw_with_a_warning(kinds, kinds_records, tmp_path):
    folder = tmp_path / "v"
    shutil.copytree(kinds.data_dir, folder)
    feats = json.loads((folder / "features.json").read_text())
    node = feats["featuresDict"]["features"]["text"]
    node.clear()
    node.update({"pythonClassName": "my_project.features.Custom", "custom": {"x": 1}})
    (folder / "features.json").write_text(json.dumps(feats))
    with pytest.warns(UserWarning, match=r"TFDS feature 'text' \(Custom\): unknown TFDS feature"):
        ds = tn.open(folder, split="train")
    want = [r["text"] for r in kinds_records["train"]]
    assert [ds[i]["text"].tolist() for i in range(len(ds))] == [[w] for w in want]
    assert ds[0]["label"] == kinds_records["train"][0]["label"]  # the rest reads as ever


def test_mnist_equals_tfds_and_reaches_every_consumer(mnist, tmp_path):
    want = tfds_records(mnist, "train")
    ds = tn.open(mnist.data_dir, split="train")
    assert len(ds) == len(want)
    cols = ds.to_numpy()
    np.testing.assert_array_equal(cols["image"], np.stack([r["image"] for r in want]))
    np.testing.assert_array_equal(cols["label"], [r["label"] for r in want])
    assert ds.features["label"].num_classes == 10
    # shuffled batches hold every record once
    seen = np.concatenate([b["label"] for b in ds.batches(7, shuffle=True, seed=1)])
    assert sorted(seen.tolist()) == sorted(r["label"] for r in want)
    # save / convert and back
    out = ds.save(tmp_path / "out.h5")
    back = tn.load(out)
    np.testing.assert_array_equal(back["image"], cols["image"])
    # the frameworks
    tf_batch = next(iter(ds.to_tf(batch_size=4)))
    np.testing.assert_array_equal(tf_batch["image"].numpy(), cols["image"][:4])
    torch_batch = next(iter(ds.to_torch(batch_size=4)))
    np.testing.assert_array_equal(torch_batch["label"].numpy(), cols["label"][:4])


def test_cli_inspect_head_convert(kinds, tmp_path, capsys):
    assert main(["inspect", str(kinds.data_dir)]) == 0
    out = capsys.readouterr().out
    assert "kinds 1.2.0" in out
    assert f"train  {N_TRAIN} records" in out and f"test  {N_TEST} records" in out
    assert re.search(r"\n  label +ClassLabel\(int64, \(\), 3 classes\)  \[cat, dog, bird\]", out)
    assert re.search(r"\n  objects/bbox +BBoxFeature\(float32, \(None, 4\)\)\n", out)
    assert re.search(
        r"\n  dyn +Tensor\(uint8, \(None, None\), encoding=zlib\)  \(read as its wire", out
    )
    assert main(["head", str(kinds.data_dir), "--split", "test", "-n", "2"]) == 0
    out = capsys.readouterr().out
    assert "b'test h\\xc3\\xa9llo " in out
    target = tmp_path / "test.h5"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        argv = ["convert", str(kinds.data_dir), str(target), "--split", "test[2:]"]
        assert main([*argv, "--select", "label,objects/bbox,tokens"]) == 0
    back = tn.load(target)
    assert back.records == N_TEST - 2
    want = tfds_records(kinds, "test[2:]")
    np.testing.assert_array_equal(back["label"], [r["label"] for r in want])
    assert back["tokens"].to_list() == [r["tokens"].to_list() for r in want]


def test_cli_as_a_subprocess(mnist):
    run = subprocess.run(
        [sys.executable, "-m", "tfrecnp", "inspect", str(mnist.data_dir), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(run.stdout)
    assert got["name"] == "dummy_mnist"
    assert got["splits"]["train"] == len(tfds_records(mnist, "train"))


@pytest.mark.parametrize("name", ["flat", "ragged"])
def test_columns_are_the_kinds_tfrecnp_serves(kinds, name):
    ds = open_quiet(kinds.data_dir, split="test")
    batch = ds[0:3]
    if name == "flat":
        assert isinstance(batch["text"], BytesColumn)
        assert batch["label"].dtype == np.int64
    else:
        assert isinstance(batch["objects/bbox"], Ragged)
        assert isinstance(batch["video"], Ragged)
        assert batch["video"].values.shape[1:] == (4, 4, 3)


def test_a_folder_in_a_bucket_reads_as_a_local_one(mnist):
    import fsspec

    memory = fsspec.filesystem("memory")
    memory.put(str(mnist.data_dir), "/bucket/dummy_mnist/3.0.1", recursive=True)
    ds = tn.open("memory://bucket/dummy_mnist", split="test[:5]")
    local = tn.open(mnist.data_dir, split="test[:5]")
    assert len(ds) == 5
    np.testing.assert_array_equal(ds.to_numpy()["image"], local.to_numpy()["image"])
    np.testing.assert_array_equal(ds[4]["label"], local[4]["label"])


def test_a_saved_split_loads_back_in_a_fresh_process(kinds, tmp_path):
    ds = open_quiet(kinds.data_dir, split="test").select(["video", "zipped", "label"])
    out = ds.save(tmp_path / "test.h5", progress=False)
    code = f"import tfrecnp as tn; print(tn.load({str(out)!r}).records)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.stdout.strip() == str(N_TEST), run.stderr[-300:]


def test_video_and_zlib_tensors_reach_tf(kinds, kinds_records):
    ds = open_quiet(kinds.data_dir, split="test").select(["video", "zipped"])
    batch = next(iter(ds.to_tf(batch_size=2)))
    want = kinds_records["test"][:2]
    np.testing.assert_array_equal(batch["zipped"].numpy(), [r["zipped"] for r in want])
    assert batch["video"][0].numpy().shape == want[0]["video"].shape


def test_convert_takes_a_split(mnist, tmp_path):
    out = tn.convert(mnist.data_dir, tmp_path / "test.npz", split="test[:7]", progress=False)
    back = tn.open(out).to_numpy()
    want = tn.open(mnist.data_dir, split="test[:7]").to_numpy()
    np.testing.assert_array_equal(back["image"], want["image"])
    np.testing.assert_array_equal(back["label"], want["label"])
