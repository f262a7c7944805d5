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

import numpy as np
import pytest
import tensorflow_datasets as tfds
from tfds_builders import N_TEST, N_TRAIN, Kinds, build, tfds_records

import tfrecnp as tn
from tfrecnp.cli.main import main
from tfrecnp.example.columns import BytesColumn, Ragged

LEFT = {"seq_fimg"}  # read as its wire features: see tfds_features' docstring
N_MORE = 24


class More(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """The rarer features: tensors of several unknown dimensions, float32 images, Sequences
    of encoded tensors and of Sequences of images, optional features, every dtype."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        f = tfds.features
        img = f.Image(shape=(3, 2, 3))
        return tfds.core.DatasetInfo(
            builder=self,
            features=f.FeaturesDict(
                {
                    "dyn_bytes": f.Tensor(shape=(None, None, 3), dtype=np.uint8, encoding="bytes"),
                    "dyn_zlib": f.Tensor(shape=(None, 2, None), dtype=np.float32, encoding="zlib"),
                    "fimage": f.Image(shape=(4, 5, 1), dtype=np.float32),
                    "fvar": f.Image(shape=(None, None, 1), dtype=np.float32),
                    "seq_raw": f.Sequence(f.Tensor(shape=(2,), dtype=np.int16, encoding="bytes")),
                    "seq_zlib": f.Sequence(f.Tensor(shape=(3,), dtype=np.float32, encoding="zlib")),
                    "pair_raw": f.Sequence(
                        f.Tensor(shape=(2, 2), dtype=np.uint16, encoding="bytes"), length=2
                    ),
                    "seq_seq_img": f.Sequence(f.Sequence(img)),
                    "seq_dict": f.Sequence({"img": img, "lab": f.ClassLabel(num_classes=3)}),
                    "opt_int": f.Scalar(np.int64, optional=True),
                    "opt_vec": f.Tensor(shape=(2,), dtype=np.float32, optional=True),
                    "opt_text": f.Scalar(np.str_, optional=True),
                    "opt_f64": f.Tensor(shape=(), dtype=np.float64, optional=True),
                    "opt_u64": f.Tensor(shape=(), dtype=np.uint64, optional=True),
                    "u64": np.uint64,
                    "u64v": f.Tensor(shape=(3,), dtype=np.uint64),
                    "u64r": f.Tensor(shape=(None,), dtype=np.uint64),
                    "i8": f.Tensor(shape=(2,), dtype=np.int8),
                    "u32": np.uint32,
                    "bools": f.Tensor(shape=(2,), dtype=np.bool_),
                    "f16": f.Tensor(shape=(2,), dtype=np.float16),
                    "f64": f.Tensor(shape=(None,), dtype=np.float64),
                    "seq_fimg": f.Sequence(f.Image(shape=(2, 2, 1), dtype=np.float32)),
                }
            ),
        )

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        rng = np.random.default_rng(5)
        img = lambda: rng.integers(0, 255, (3, 2, 3), dtype=np.uint8)  # noqa: E731
        for i in range(N_MORE):
            k = i % 4
            yield (
                i,
                {
                    "dyn_bytes": rng.integers(0, 255, (k + 1, 3 - k % 3, 3), dtype=np.uint8),
                    "dyn_zlib": rng.standard_normal((k, 2, 1 + i % 3)).astype(np.float32),
                    "fimage": rng.standard_normal((4, 5, 1)).astype(np.float32),
                    "fvar": rng.standard_normal((1 + k, 2, 1)).astype(np.float32),
                    "seq_raw": rng.integers(-9, 9, (k, 2), dtype=np.int16),
                    "seq_zlib": rng.standard_normal((k, 3)).astype(np.float32),
                    "pair_raw": rng.integers(0, 65535, (2, 2, 2), dtype=np.uint16),
                    "seq_seq_img": [[img() for _ in range(j)] for j in range(k)],
                    "seq_dict": {
                        "img": [img() for _ in range(k)],
                        "lab": [j % 3 for j in range(k)],
                    },
                    "opt_int": None if i % 3 == 0 else i,
                    "opt_vec": None if i % 2 else [i, -i],
                    "opt_text": None if i % 4 == 1 else f"t{i}",
                    "opt_f64": None if i % 2 else i / 7,
                    "opt_u64": None if i % 2 else np.uint64(2**64 - 1 - i),
                    "u64": np.uint64(2**64 - 1 - i),
                    "u64v": np.array([i, 2**63 + i, 2**64 - 1], np.uint64),
                    "u64r": np.array([2**64 - 1 - j for j in range(k)], np.uint64),
                    "i8": np.array([-128 + i, 127 - i], np.int8),
                    "u32": np.uint32(2**32 - 1 - i),
                    "bools": np.array([i % 2, 1], np.bool_),
                    "f16": np.array([i / 3, -65504], np.float16),
                    "f64": np.arange(k) / 3,
                    "seq_fimg": rng.standard_normal((k, 2, 2, 1)).astype(np.float32),
                },
            )


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    return build(Kinds, tmp_path_factory.mktemp("tfds"), shards=3)


@pytest.fixture(scope="module")
def kinds_records(kinds):
    return {split: tfds_records(kinds, split) for split in ("train", "test")}


@pytest.fixture(scope="module")
def more(tmp_path_factory):
    return build(More, tmp_path_factory.mktemp("more"))


@pytest.fixture(scope="module")
def more_records(more):
    return tfds_records(more, "train")


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


MORE = {
    "several unknown dimensions": ["dyn_bytes", "dyn_zlib"],
    "float32 images": ["fimage", "fvar"],
    "sequences of encoded tensors": ["seq_raw", "seq_zlib", "pair_raw"],
    "sequences of sequences of images": ["seq_seq_img"],
    "sequences of dicts of images": ["seq_dict/img", "seq_dict/lab"],
    "optional": ["opt_int", "opt_vec", "opt_text", "opt_f64", "opt_u64"],
    "uint64": ["u64", "u64v", "u64r"],
    "other dtypes": ["i8", "u32", "bools", "f16", "f64"],
}


@pytest.mark.parametrize("group", list(MORE))
def test_rarer_features_equal_tfds_by_position_and_in_batches(more, more_records, group):
    names = MORE[group]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none of these is left as its wire features
        warnings.filterwarnings("ignore", "float32 images 'fvar' of a batch differ")
        warnings.filterwarnings("ignore", "TFDS feature 'seq_fimg'")  # the one left: below
        ds = tn.open(more.data_dir, split="train").select(names)
        for i, rec in enumerate(more_records):
            got = ds[i]
            for name in names:
                assert_same(name, got[name], rec[name])
        rows = []
        for batch in ds.batches(5):  # blocks of several records, joined and finished
            rows += [{k: col[j] for k, col in batch.items()} for j in range(len(batch[names[0]]))]
    assert len(rows) == len(more_records)
    for got, rec in zip(rows, more_records, strict=True):
        for name in names:
            assert_same(name, got[name], rec[name])


def test_rarer_feature_columns(more, more_records):
    ds = open_quiet(more.data_dir, split="train")
    batch = ds[0:4]
    assert batch["dyn_bytes"].dtype == object  # one array per record, each of its own shape
    assert [a.shape for a in batch["dyn_bytes"]] == [r["dyn_bytes"].shape for r in more_records[:4]]
    assert batch["u64"].dtype == np.uint64 and batch["fimage"].shape == (4, 4, 5, 1)
    assert isinstance(batch["seq_seq_img"], Ragged) and isinstance(
        batch["seq_seq_img"].values, Ragged
    )
    assert batch["seq_seq_img"].values.values.shape[1:] == (3, 2, 3)
    assert batch["pair_raw"].shape == (4, 2, 2, 2) and batch["pair_raw"].dtype == np.uint16
    assert isinstance(batch["seq_zlib"], Ragged) and batch["seq_zlib"].values.shape[1:] == (3,)
    assert ds.features["opt_int"].describe() == "Scalar(int64, (), optional)"


def test_joined_features_in_tfds_interleaved_order(kinds, kinds_records):
    ds = open_quiet(kinds.data_dir, split="train[3:]").select(["dyn", "text"])
    want = tfds_records(kinds, "train[3:]")
    assert ds.spec["dyn"].spell().startswith("ShapedTensor('uint8', (None, None)")
    got = [row for b in ds.batches(8) for row in zip(b["dyn"], b["text"].to_list(), strict=True)]
    assert [t for _, t in got] == [w["text"] for w in want]
    for (dyn, _), rec in zip(got, want, strict=True):
        assert_same("dyn", dyn, rec["dyn"])
    shuffled = [t for b in ds.batches(8, shuffle=True, seed=3) for t in b["text"].to_list()]
    assert sorted(shuffled) == sorted(w["text"] for w in want)


def test_a_feature_that_cannot_be_decoded_is_its_raw_bytes_with_a_warning(more, more_records):
    with pytest.warns(
        UserWarning, match=r"TFDS feature 'seq_fimg' \(Image\): a Sequence of float32 images"
    ):
        ds = tn.open(more.data_dir, split="train")
    assert ds.spec["seq_fimg"] == tn.VarLen("bytes")
    for i, rec in enumerate(more_records):
        pngs = ds[i]["seq_fimg"]  # TFDS's 4-channel PNGs of the float32 pixels' bytes
        assert len(pngs) == len(rec["seq_fimg"])
        for png, want in zip(pngs, rec["seq_fimg"], strict=True):
            pixels = tn.Image(4).finish(BytesColumn.from_list([png]))[0]
            np.testing.assert_array_equal(pixels.view("<f4"), want)


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
    info["fileFormat"] = "parquet"  # (array_record folders are read: tests/test_arrayrecord.py)
    (folder / "dataset_info.json").write_text(json.dumps(info))
    with pytest.raises(tn.SchemaError, match=r"prepared by TFDS as Parquet .*pyarrow"):
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
    got = [ds[i]["text"] for i in range(len(ds))]
    assert all(type(v) is bytes for v in got) and got == want  # its raw bytes
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


def test_cli_inspect_head_convert(kinds, more, tmp_path, capsys):
    assert main(["inspect", str(kinds.data_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"kinds 1.2.0 ({kinds.data_dir}): {N_TRAIN + N_TEST} records")
    assert re.search(rf"\nsplit +records +shards +size\ntrain +{N_TRAIN} +3 +[\d.]+ KiB\n", out)
    assert re.search(rf"\ntest +{N_TEST} +3 ", out)
    assert re.search(r"\nname +TFDS feature +notes\n", out)
    assert re.search(r"\nlabel +ClassLabel\(int64, \(\), 3 classes\) +\[cat, dog, bird\]\n", out)
    assert re.search(r"\nobjects/bbox +BBoxFeature\(float32, \(None, 4\)\)\n", out)
    assert re.search(r"\ndyn +Tensor\(uint8, \(None, None\), encoding=zlib\)\n", out)
    assert main(["inspect", str(more.data_dir)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\nopt_int +Scalar\(int64, \(\), optional\)\n", out)
    assert re.search(
        r"\nseq_fimg +Sequence\(Image\(float32, \(2, 2, 1\)\)\) +read as its wire features: a "
        r"Sequence of float32 images",
        out,
    )
    assert main(["head", str(kinds.data_dir), "--split", "test", "-n", "2"]) == 0
    out = capsys.readouterr().out
    assert "b'test h\\xc3\\xa9llo " in out
    assert re.search(r"^record 0 of split 'test'\n  audio +int64\[\d+\]", out)
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


def test_rarer_features_saved_load_back_in_a_fresh_process(more, more_records, tmp_path):
    names = ["u64", "fimage", "seq_raw", "pair_raw", "opt_int", "seq_seq_img"]
    out = (
        open_quiet(more.data_dir, split="train")
        .select(names)
        .save(tmp_path / "more.h5", progress=False)
    )
    code = (
        f"import tfrecnp as tn; b = tn.load({str(out)!r}); "
        "print(b.records, b['u64'][-1], float(b['fimage'][0].sum()))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    last, first = more_records[-1], more_records[0]
    want = f"{N_MORE} {last['u64']} {float(first['fimage'].sum())}"
    assert run.stdout.strip() == want, run.stderr[-400:]


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


def test_to_ray_reads_a_whole_split(ray_local, more, more_records):
    names = ["u64", "seq_raw", "opt_int", "f16"]
    ds = open_quiet(more.data_dir, split="train").select(names)
    rows = ds.to_ray().take_all()  # one shard: the records in TFDS's order
    assert len(rows) == len(more_records)
    for got, rec in zip(rows, more_records, strict=True):
        for name in names:
            assert_same(name, np.asarray(got[name]).reshape(np.shape(rec[name])), rec[name])
    whole = open_quiet(more.data_dir, split="train")
    with pytest.raises(ValueError, match=r"'dyn_bytes', 'dyn_zlib', 'seq_seq_img' join several"):
        whole.to_ray()
    with pytest.raises(ValueError, match=r"to_ray reads whole shards; split 'train\[:5\]'"):
        open_quiet(more.data_dir, split="train[:5]").select(["u64"]).to_ray()
