"""Which folders are TFDS's, and what a user may say of one: a folder is read as a prepared
tensorflow-datasets folder only when its dataset_info.json and features.json are as TFDS
writes them (by content), else as the folder of TFRecord shards it is; spec= on a real TFDS
folder replaces the features it names (as TFDS's decoders= does), the rest as TFDS decodes
them; `tfrecnp inspect` names Sequence levels; a custom connector gives its raw bytes."""

from __future__ import annotations

import json
import re
import shutil
import warnings

import numpy as np
import pytest
import tensorflow_datasets as tfds
from tfds_builders import N_TEST, N_TRAIN, Kinds, build, flat, tfds_records

import tfrecnp as tn
from tfrecnp.cli.main import main
from tfrecnp.cli.tfds import looks_like_tfds
from tfrecnp.data.tfds import is_tfds_folder

N_TOY = 64


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    return build(Kinds, tmp_path_factory.mktemp("tfds_kinds"), shards=2)


@pytest.fixture(scope="module")
def toy(tmp_path_factory, tf):
    """Shards TensorFlow wrote, beside another tool's dataset_info.json and features.json."""
    folder = tmp_path_factory.mktemp("toy")
    for k in range(2):
        with tf.io.TFRecordWriter(str(folder / f"toy-train-{k:05d}.tfrecord")) as w:
            for i in range(k * 32, (k + 1) * 32):
                f = {
                    "x": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                    "y": tf.train.Feature(float_list=tf.train.FloatList(value=[i, -i, 0.5])),
                }
                w.write(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())
    (folder / "dataset_info.json").write_text(json.dumps({"name": "toy", "splits": {"train": 64}}))
    (folder / "features.json").write_text(json.dumps({"x": "int64", "y": "float32[3]"}))
    return folder


def test_a_folder_with_another_tools_metadata_reads_as_its_shards(toy, tf):
    assert not is_tfds_folder(toy) and not looks_like_tfds(str(toy))
    with pytest.warns(
        UserWarning,
        match=r"passed over 2 files that are not TFRecord shards: dataset_info.json "
        r"\(by its name\), features.json \(by its name\)",
    ):
        ds = tn.open(toy)
    assert ds.spec == {"x": tn.FixedLen((), "int64"), "y": tn.FixedLen((3,), "float32")}
    cols = ds.to_numpy()
    assert cols["x"].tolist() == list(range(N_TOY))
    np.testing.assert_array_equal(cols["y"][:, 1], -np.arange(N_TOY, dtype=np.float32))
    with pytest.warns(UserWarning, match=r"passed over 2 files"):
        picked = tn.open(toy, spec={"x": tn.FixedLen((), "int64")})
    assert len(picked) == N_TOY and picked[5] == {"x": 5}


def test_split_on_a_folder_that_is_not_tfds_says_so(toy):
    with pytest.raises(
        tn.SchemaError,
        match=r"is not a folder tensorflow-datasets prepared: its dataset_info.json has "
        r'"splits" as a dict \(\{"train": 64\}\), where TFDS writes a list of '
        r"\{name, shardLengths\}; open it without split=",
    ):
        tn.open(toy, split="train")


def test_version_folders_with_other_metadata_are_not_tfds(toy, tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(toy, root / "1.0.0")
    assert not is_tfds_folder(root) and not looks_like_tfds(str(root))
    assert not is_tfds_folder(root / "1.0.0")


def test_cli_inspect_of_such_a_folder_shows_its_shards(toy, capsys):
    with pytest.warns(UserWarning, match=r"passed over 2 files"):
        assert main(["inspect", str(toy)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"toy-train-00000.tfrecord: 32 records", out)
    assert re.search(r"toy-train-00001.tfrecord: 32 records", out)
    assert "TFDS" not in out


def test_tfds_metadata_is_known_by_content(kinds, tmp_path):
    assert is_tfds_folder(kinds.data_dir) and looks_like_tfds(kinds.data_dir)
    # a real folder, its splits rewritten as another tool would: no longer TFDS
    folder = tmp_path / "copy"
    shutil.copytree(kinds.data_dir, folder)
    info = json.loads((folder / "dataset_info.json").read_text())
    assert isinstance(info["splits"], list) and "shardLengths" in info["splits"][0]
    info["splits"] = {s["name"]: sum(map(int, s["shardLengths"])) for s in info["splits"]}
    (folder / "dataset_info.json").write_text(json.dumps(info))
    assert not is_tfds_folder(folder)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ds = tn.open(folder)
    assert len(ds) == N_TRAIN + N_TEST
    assert any("dataset_info.json (by its name)" in str(w.message) for w in seen)


def test_spec_replaces_the_features_it_names(kinds):
    skip = tfds.decode.SkipDecoding()
    decoded = builder_records(kinds, "train", {"image": skip, "jpeg": skip})
    want = tfds_records(kinds, "train")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = tn.open(kinds.data_dir, split="train", spec={"image": tn.Bytes(), "jpeg": tn.Bytes()})
    assert ds.spec["image"] == tn.Bytes() and ds.spec["jpeg"] == tn.Bytes()
    assert isinstance(ds.spec["gray"], tn.Image)  # the rest: as features.json says
    for i in (0, 1, N_TRAIN - 1):
        row = ds[i]
        assert row["jpeg"] == decoded[i]["jpeg"] and row["image"] == decoded[i]["image"]
        assert row["jpeg"][:2] == b"\xff\xd8"  # JPEG bytes, undecoded
        np.testing.assert_array_equal(row["gray"], want[i]["gray"])
        assert row["label"] == want[i]["label"]
        assert row["objects/bbox"].tolist() == want[i]["objects/bbox"].tolist()
    batch = next(iter(ds.batches(8)))
    assert batch["jpeg"].to_list() == [r["jpeg"] for r in decoded[:8]]


def test_spec_takes_tensorflow_features_and_names_what_is_not_there(kinds, tf):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = tn.open(
            kinds.data_dir, split="test", spec={"label": tf.io.FixedLenFeature([], tf.int64)}
        )
        assert ds[0]["label"] == tfds_records(kinds, "test")[0]["label"]
        with pytest.raises(KeyError, match=r"spec= names 'nope', which TFDS kinds 1.2.0 does not"):
            tn.open(kinds.data_dir, split="test", spec={"nope": tn.Bytes()})


def test_inspect_names_sequence_levels(kinds, capsys):
    assert main(["inspect", str(kinds.data_dir)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\nobjects +Sequence\(FeaturesDict\)\nobjects/bbox +BBoxFeature", out)
    assert re.search(r"\nwords +Sequence\(Text\(bytes, \(\)\)\)\n", out)
    assert re.search(r"\ntokens +Sequence\(Sequence\(Tensor\(int64, \(\)\)\)\)\n", out)
    assert re.search(r"\npair +Sequence\(Tensor\(float32, \(\)\), length=2\)\n", out)
    assert re.search(r"\nlabel +ClassLabel\(int64, \(\), 3 classes\)", out)  # not in one
    assert main(["inspect", str(kinds.data_dir), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["sequences"]["objects"] == [None] and doc["sequences"]["pair"] == [2]
    assert doc["sequences"]["tokens"] == [None, None]


def test_a_custom_connector_gives_its_raw_bytes(kinds, tmp_path):
    folder = tmp_path / "custom"
    shutil.copytree(kinds.data_dir, folder)
    feats = json.loads((folder / "features.json").read_text())
    node = feats["featuresDict"]["features"]["text"]
    node.clear()
    node.update({"pythonClassName": "my_project.features.Custom", "custom": {"x": 1}})
    (folder / "features.json").write_text(json.dumps(feats))
    with pytest.warns(UserWarning, match=r"TFDS feature 'text' \(Custom\): unknown TFDS feature"):
        ds = tn.open(folder, split="train")
    want = [r["text"] for r in tfds_records(kinds, "train")]
    assert ds.spec["text"] == tn.Bytes()
    assert [ds[i]["text"] for i in range(len(ds))] == want
    assert ds.to_numpy()["text"].to_list() == want
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the user said how to read it: no warning
        again = tn.open(folder, split="train", spec={"text": tn.VarLen("bytes")})
    assert again[0]["text"].tolist() == [want[0]]


def builder_records(builder, split: str, decoders: dict) -> list[dict]:
    """The split as tfds.as_numpy gives it with these decoders, flattened."""
    ds = builder.as_dataset(split=split, shuffle_files=False, decoders=decoders)
    return [flat(r) for r in tfds.as_numpy(ds)]


def test_to_hf_of_a_tfds_folder_gives_images_and_class_labels(tmp_path):
    datasets = pytest.importorskip("datasets")
    builder = tfds.testing.DummyMnist(data_dir=str(tmp_path))
    builder.download_and_prepare(file_format="tfrecord")
    want = tfds_records(builder, "train")
    ds = tn.open(builder.data_dir, split="train")
    hf = ds.to_hf()
    assert hf.features["label"] == datasets.ClassLabel(names=[str(i) for i in range(10)])
    assert hf.features["image"] == datasets.Image(mode="L")
    for i in (0, 7):
        np.testing.assert_array_equal(np.asarray(hf[i]["image"]), want[i]["image"][..., 0])
        assert hf[i]["label"] == want[i]["label"]
