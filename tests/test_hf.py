"""Hugging Face datasets both ways through Arrow: a tfrecnp Dataset as a datasets.Dataset with
mapped Features, a datasets.Dataset (built by HF) written by tn.write and read back equal by
TensorFlow, and the Features with no Example feature refused by column name."""

from __future__ import annotations

import io

import numpy as np
import pytest

import tfrecnp as tn
from tfrecnp.interop.hf import features_of_spec, spec_of_features

datasets = pytest.importorskip("datasets")

N = 60


@pytest.fixture(scope="module")
def shards(tmp_path_factory, tf):
    out = tmp_path_factory.mktemp("hf") / "d.tfrecord"
    with tf.io.TFRecordWriter(str(out)) as w:
        for i in range(N):
            f = {
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 4])),
                "grid": tf.train.Feature(float_list=tf.train.FloatList(value=[i, 1, 2, 3, 4, 5])),
                "tokens": tf.train.Feature(int64_list=tf.train.Int64List(value=list(range(i % 3)))),
                "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[f"t{i}".encode()])),
            }
            w.write(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())
    return str(out)


SPEC = {
    "label": tn.FixedLen((), "int64"),
    "grid": tn.FixedLen((2, 3), "float32"),
    "tokens": tn.VarLen("int64"),
    "text": tn.Bytes(),
}


def test_a_dataset_becomes_an_hf_dataset_with_mapped_features(shards):
    hf = tn.open(shards, SPEC).to_hf(text=["text"])
    assert isinstance(hf, datasets.Dataset)
    assert hf.features == datasets.Features(
        {
            "label": datasets.Value("int64"),
            "grid": datasets.Array2D((2, 3), "float32"),
            "tokens": datasets.LargeList(datasets.Value("int64")),
            "text": datasets.Value("large_string"),
        }
    )
    assert hf[7] == {
        "label": 3,
        "grid": [[7.0, 1.0, 2.0], [3.0, 4.0, 5.0]],
        "tokens": [0],
        "text": "t7",
    }
    grids = hf.with_format("numpy")[:]["grid"]
    assert grids.shape == (N, 2, 3) and grids[:, 0, 0].tolist() == list(range(N))


def test_an_hf_dataset_is_written_and_read_back_by_tensorflow(tmp_path, tf):
    pil = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (N, 5, 4, 3), dtype=np.uint8)
    pngs = []
    for p in pixels:
        buf = io.BytesIO()
        pil.fromarray(p).save(buf, format="PNG")
        pngs.append(buf.getvalue())
    features = datasets.Features(
        {
            "image": datasets.Image(),
            "label": datasets.ClassLabel(names=["cat", "dog", "eel"]),
            "ids": datasets.Sequence(datasets.Value("int64")),
            "caption": datasets.Value("string"),
            "box": datasets.Array2D((2, 2), "float32"),
        }
    )
    hf = datasets.Dataset.from_dict(
        {
            "image": [{"bytes": b, "path": None} for b in pngs],
            "label": [i % 3 for i in range(N)],
            "ids": [list(range(i % 5)) for i in range(N)],
            "caption": [f"c{i}" for i in range(N)],
            "box": [[[i, 0.5], [1.5, -i]] for i in range(N)],
        },
        features=features,
    )
    hf = hf.select(range(N - 1, -1, -1))  # through an indices mapping, as users hold them
    out = tn.write(tmp_path / "hf.tfrecord", hf, progress=False)
    spec = spec_of_features(features)
    assert spec == {
        "image": tn.Image(),
        "label": tn.FixedLen((), "int64"),
        "ids": tn.VarLen("int64"),
        "caption": tn.Text(),  # Value("string")
        "box": tn.FixedLen((2, 2), "float32"),
    }
    parse = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "ids": tf.io.VarLenFeature(tf.int64),
        "caption": tf.io.FixedLenFeature([], tf.string),
        "box": tf.io.FixedLenFeature([2, 2], tf.float32),
    }
    rows = [tf.io.parse_single_example(r, parse) for r in tf.data.TFRecordDataset(out.paths)]
    order = list(range(N - 1, -1, -1))
    assert [int(r["label"]) for r in rows] == [i % 3 for i in order]
    assert [tf.sparse.to_dense(r["ids"]).numpy().tolist() for r in rows] == [
        list(range(i % 5)) for i in order
    ]
    assert [r["caption"].numpy() for r in rows] == [f"c{i}".encode() for i in order]
    assert [r["box"].numpy().tolist() for r in rows] == [[[i, 0.5], [1.5, -i]] for i in order]
    decoded = np.stack([tf.io.decode_png(r["image"]).numpy() for r in rows])
    np.testing.assert_array_equal(decoded, pixels[order])
    back = tn.open(out.paths, spec).to_numpy()  # and tfrecnp reads the images as pixels
    np.testing.assert_array_equal(back["image"], pixels[order])


def test_hf_round_trip_through_tfrecord(tmp_path, shards):
    first = tn.open(shards, SPEC).to_hf()
    out = tn.write(tmp_path / "rt.tfrecord", first, progress=False)
    again = tn.open(out.paths, spec_of_features(first.features)).to_hf()
    assert again.features == first.features
    assert again.to_dict() == first.to_dict()


@pytest.mark.parametrize(
    ("feature", "value", "message"),
    [
        (
            {"a": datasets.Value("int64"), "b": datasets.Value("string")},
            {"a": 1, "b": "x"},
            r"^column 'meta' is a dict of features, which no tf.train.Example feature holds",
        ),
        (
            datasets.Translation(languages=["en", "fr"]),
            {"en": "a", "fr": "b"},
            r"^column 'meta' is an HF Translation, which no tf.train.Example feature holds",
        ),
        (
            datasets.Sequence(datasets.Sequence(datasets.Value("int32"))),
            [[1], [2, 3]],
            r"^column 'meta' is a list of variable lists",
        ),
    ],
)
def test_features_with_no_example_feature_are_named(tmp_path, feature, value, message):
    hf = datasets.Dataset.from_dict(
        {"ok": [1, 2], "meta": [value, value]},
        features=datasets.Features({"ok": datasets.Value("int64"), "meta": feature}),
    )
    with pytest.raises(tn.SchemaError, match=message):
        tn.write(tmp_path / "x.tfrecord", hf, progress=False)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def image_shards(tmp_path_factory, tf):
    """Images of several sizes as TensorFlow encodes them: RGB PNGs, grey PNGs, JPEGs."""
    rng = np.random.default_rng(1)
    out = tmp_path_factory.mktemp("hf_images") / "img.tfrecord"
    blobs = []
    with tf.io.TFRecordWriter(str(out)) as w:
        for i in range(12):
            h, w_ = 5 + i, 9 - i % 4
            channels = 1 if i % 3 == 1 else 3
            pixels = rng.integers(0, 256, (h, w_, channels), dtype=np.uint8)
            if i % 3 == 2:
                blob = tf.io.encode_jpeg(pixels, quality=90).numpy()
            else:
                blob = tf.io.encode_png(pixels).numpy()
            blobs.append(blob)
            f = {
                "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[blob])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"n%d" % i])),
            }
            w.write(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())
    return str(out), blobs


def test_an_image_without_a_size_becomes_an_hf_image(image_shards):
    path, blobs = image_shards
    spec = {"image": tn.Image(3), "label": tn.FixedLen((), "int64"), "name": tn.Bytes()}
    hf = tn.open(path, spec).to_hf(text=True)
    assert hf.features == datasets.Features(
        {
            "image": datasets.Image(mode="RGB"),
            "label": datasets.Value("int64"),
            "name": datasets.Value("large_string"),
        }
    )
    # HF holds the records' encoded bytes as they are ...
    stored = hf.cast_column("image", datasets.Image(decode=False))
    assert [row["image"]["bytes"] for row in stored] == blobs
    assert [row["image"]["path"] for row in stored] == [None] * len(blobs)
    # ... and decodes them to the pixels tfrecnp decodes (Pillow's IDCT for the JPEGs)
    ds = tn.open(path, spec)
    accurate = tn.open(path, {"image": tn.Image(3, dct_method="INTEGER_ACCURATE")})
    for i, row in enumerate(hf):
        got = np.asarray(row["image"])
        want = (accurate if i % 3 == 2 else ds)[i]["image"]
        assert got.shape == want.shape == (5 + i, 9 - i % 4, 3)
        np.testing.assert_array_equal(got, want)
        assert row["label"] == i and row["name"] == f"n{i}"
    grey = tn.open(path, {"image": tn.Image(1)}).to_hf()
    assert grey.features["image"] == datasets.Image(mode="L")
    np.testing.assert_array_equal(
        np.asarray(grey[1]["image"]), ds.select(["image"])[1]["image"][..., :1].squeeze(-1)
    )


def test_hf_images_written_back_read_as_the_same_images(tmp_path, image_shards):
    path, blobs = image_shards
    hf = tn.open(path, {"image": tn.Image(None), "label": tn.FixedLen((), "int64")}).to_hf()
    assert hf.features["image"] == datasets.Image()
    out = tn.write(tmp_path / "back.tfrecord", hf, progress=False)
    assert spec_of_features(hf.features)["image"] == tn.Image()
    back = tn.open(out.paths, {"image": tn.Bytes()}).to_numpy()["image"].to_list()
    assert back == blobs


def test_an_image_without_a_size_maps_to_hf_image_not_an_array():
    assert features_of_spec({"img": tn.Image()})["img"] == datasets.Image(mode="RGB")
    assert features_of_spec({"img": tn.Image(4)})["img"] == datasets.Image(mode="RGBA")
    assert features_of_spec({"img": tn.Image(None)})["img"] == datasets.Image()
    with pytest.raises(
        tn.SchemaError, match=r"^feature 'img' is a tn.Image of float32 pixels without size="
    ):
        features_of_spec({"img": tn.Image(dtype="float32")})
    got = features_of_spec({"img": tn.Image(3, size=(8, 6))})
    assert got["img"] == datasets.Array3D((8, 6, 3), "uint8")
