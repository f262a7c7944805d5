"""tn.Image against TensorFlow's decoders and tf.image.resize, on images TensorFlow and
Pillow encoded, of every kind: RGB, grey, RGBA, grey + alpha, palette (with and without
transparency), 16-bit PNG, CMYK and progressive JPEG.

TF settings compared against: tf.io.decode_jpeg with the same dct_method (tn.Image's default,
"INTEGER_FAST", is decode_jpeg's and decode_image's), decode_png. More cases (sizes,
subsampling, 16-bit, gamma) are in test_images_tf.py. Bounds where not exact:
- a palette PNG without transparency read with channels=4: TF fills alpha with a stray
  value (not 255), so only the colour channels are compared, and ours must be 255;
- resize "area" when enlarging: within 2e-5 of [0, 1] (TF sums in another order), so uint8
  may round the other way (within 1). Bilinear and nearest: within 2e-7 of [0, 1] (float
  rounding of the same formula); uint8 exact.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import tfrecnp as tn
from tfrecnp.example.columns import BytesColumn
from tfrecnp.example.image import ImageDecodeError, decode_images
from tfrecnp.images import codecs as image_codecs

RNG = np.random.default_rng(13)


def pixels(h: int, w: int, c: int, seed: int = 0) -> np.ndarray:
    """Smooth gradients plus noise: real-looking for JPEG, every value for PNG."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack(
        [x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) * 3 % 256, x * y % 256], -1
    )[:, :, :c]
    return np.clip(base + rng.integers(-30, 30, base.shape), 0, 255).astype(np.uint8)


def pil_bytes(im: PILImage.Image, fmt: str, **options) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **options)
    return buf.getvalue()


def kinds(tf) -> dict[str, bytes]:
    """name -> encoded image; the name says who encoded it and what it holds."""
    rgb, grey, rgba, la = (pixels(40, 56, c, c) for c in (3, 1, 4, 2))
    wide = (rgb.astype(np.uint16) * 257 + RNG.integers(0, 257, rgb.shape)).astype(np.uint16)
    wide1 = (grey.astype(np.uint16) * 257 + RNG.integers(0, 257, grey.shape)).astype(np.uint16)
    palette = PILImage.fromarray(rgb).quantize(16)
    return {
        "tf-jpeg-rgb": tf.io.encode_jpeg(rgb).numpy(),
        "tf-jpeg-grey": tf.io.encode_jpeg(grey).numpy(),
        "tf-jpeg-progressive": tf.io.encode_jpeg(rgb, progressive=True).numpy(),
        "pil-jpeg-rgb": pil_bytes(PILImage.fromarray(rgb), "JPEG", quality=90),
        "pil-jpeg-444": pil_bytes(PILImage.fromarray(rgb), "JPEG", subsampling=0),
        "pil-jpeg-progressive": pil_bytes(PILImage.fromarray(rgb), "JPEG", progressive=True),
        "pil-jpeg-grey": pil_bytes(PILImage.fromarray(grey[:, :, 0]), "JPEG"),
        "pil-jpeg-cmyk": pil_bytes(PILImage.fromarray(rgba, "CMYK"), "JPEG"),
        "tf-png-rgb": tf.io.encode_png(rgb).numpy(),
        "tf-png-rgba": tf.io.encode_png(rgba).numpy(),
        "tf-png-grey": tf.io.encode_png(grey).numpy(),
        "tf-png-grey-alpha": tf.io.encode_png(la).numpy(),
        "tf-png-16bit": tf.io.encode_png(wide).numpy(),
        "tf-png-16bit-grey": tf.io.encode_png(wide1).numpy(),
        "pil-png-rgb": pil_bytes(PILImage.fromarray(rgb), "PNG"),
        "pil-png-palette": pil_bytes(palette, "PNG"),
        "pil-png-palette-transparent": pil_bytes(palette, "PNG", transparency=3),
        "pil-png-grey-alpha": pil_bytes(PILImage.fromarray(la, "LA"), "PNG"),
    }


KIND_NAMES = [
    "tf-jpeg-rgb",
    "tf-jpeg-grey",
    "tf-jpeg-progressive",
    "pil-jpeg-rgb",
    "pil-jpeg-444",
    "pil-jpeg-progressive",
    "pil-jpeg-grey",
    "pil-jpeg-cmyk",
    "tf-png-rgb",
    "tf-png-rgba",
    "tf-png-grey",
    "tf-png-grey-alpha",
    "tf-png-16bit",
    "tf-png-16bit-grey",
    "pil-png-rgb",
    "pil-png-palette",
    "pil-png-palette-transparent",
    "pil-png-grey-alpha",
]


@pytest.fixture(scope="module")
def encoded(tf):
    return kinds(tf)


def ours(data: bytes, spec: tn.Image) -> np.ndarray:
    return decode_images(BytesColumn.from_list([data]), spec)[0]


def tf_decode(tf, data: bytes, channels: int, dct_method: str = "INTEGER_FAST") -> np.ndarray:
    if data[:3] == b"\xff\xd8\xff":
        return tf.io.decode_jpeg(data, channels=channels, dct_method=dct_method).numpy()
    return tf.io.decode_png(data, channels=channels).numpy()


@pytest.fixture(params=["simplejpeg", "pillow"])
def jpeg_decoder(request, monkeypatch):
    """Either JPEG path: simplejpeg when installed, Pillow without it."""
    if request.param == "pillow":
        monkeypatch.setattr(image_codecs, "_simplejpeg", False)
    return request.param


@pytest.mark.parametrize("dct_method", ["INTEGER_FAST", "INTEGER_ACCURATE"])
@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("kind", KIND_NAMES)
def test_decode_equals_tensorflow(tf, encoded, kind, channels, dct_method, jpeg_decoder):
    data = encoded[kind]
    jpeg = "jpeg" in kind
    if not jpeg and (jpeg_decoder == "pillow" or dct_method != "INTEGER_FAST"):
        return  # PNG takes one path
    if (jpeg and channels == 4) or (kind == "pil-jpeg-cmyk" and channels == 1):
        return  # decode_jpeg takes channels 0, 1, 3; CMYK -> grey is refused by TF
    spec = tn.Image(channels, dct_method=dct_method)
    want = tf_decode(tf, data, channels, dct_method)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = ours(data, spec)
    assert got.shape == want.shape and got.dtype == np.uint8
    diff = np.abs(got.astype(int) - want.astype(int))
    if channels == 4 and "palette" in kind and "transparent" not in kind:
        assert diff[:, :, :3].max() == 0 and (got[:, :, 3] == 255).all()
    else:
        assert diff.max() == 0, kind


def test_decode_image_auto_channels(tf, encoded):
    """channels=None keeps what is stored, as tf.io.decode_image(channels=0) does; the
    default dct_method gives decode_image's pixels (it has no dct_method: the fast IDCT)."""
    for kind in ("tf-jpeg-rgb", "tf-jpeg-grey", "tf-png-rgba", "tf-png-grey-alpha"):
        data = encoded[kind]
        got = ours(data, tn.Image(None))
        want = tf.io.decode_image(data).numpy()
        np.testing.assert_array_equal(got, want, err_msg=kind)


def test_the_two_dct_methods_differ(tf, encoded):
    """Why dct_method is an option: the fast and the accurate IDCT disagree, and each
    setting follows its own (so the exact tests above compare the right pair)."""
    data = encoded["pil-jpeg-rgb"]
    fast = tf.io.decode_jpeg(data, channels=3).numpy()
    accurate = tf.io.decode_jpeg(data, channels=3, dct_method="INTEGER_ACCURATE").numpy()
    assert np.abs(fast.astype(int) - accurate).max() > 0
    np.testing.assert_array_equal(ours(data, tn.Image()), fast)
    np.testing.assert_array_equal(ours(data, tn.Image(dct_method="INTEGER_ACCURATE")), accurate)


def test_batch_and_dataset(tf, tmp_path):
    """A TFRecord of TF-encoded JPEGs opens as one [n, h, w, 3] array per batch."""
    images = np.stack([pixels(32, 48, 3, s) for s in range(20)])
    blobs = [tf.io.encode_jpeg(im).numpy() for im in images]
    path = str(tmp_path / "img.tfrecord")
    tn.write(path, {"image": BytesColumn.from_list(blobs), "label": np.arange(20)})
    ds = tn.open(path, spec={"image": tn.Image(), "label": tn.FixedLen((), "int64")})
    batches = list(ds.batches(8))
    assert [b["image"].shape for b in batches] == [(8, 32, 48, 3)] * 2 + [(4, 32, 48, 3)]
    got = np.concatenate([b["image"] for b in batches])
    want = np.stack([tf_decode(tf, b, 3) for b in blobs])
    np.testing.assert_array_equal(got, want)
    assert ds[3]["image"].shape == (32, 48, 3)


@pytest.mark.parametrize("method", ["bilinear", "nearest", "area"])
@pytest.mark.parametrize("size", [(20, 24), (100, 130), (45, 77), (32, 48)])
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_resize_matches_tf(tf, method, size, dtype):
    images = np.stack([pixels(32, 48, 3, s) for s in range(3)])
    blobs = BytesColumn.from_list([tf.io.encode_png(im).numpy() for im in images])
    got = decode_images(blobs, tn.Image(3, size, resize=method, dtype=dtype))
    assert got.shape == (3, *size, 3) and got.dtype == np.dtype(dtype)
    if dtype == "float32":  # seed 001's order: convert_image_dtype, then resize
        want = tf.image.resize(tf.image.convert_image_dtype(images, tf.float32), size, method)
        bound = 2e-5 if method == "area" else 2e-7
        np.testing.assert_allclose(got, want.numpy(), rtol=0, atol=bound)
    else:
        want = np.clip(np.rint(tf.image.resize(images, size, method).numpy()), 0, 255)
        diff = np.abs(got.astype(float) - want)
        assert diff.max() <= (1 if method == "area" else 0)


def test_float_scale(tf, encoded):
    data = encoded["tf-png-rgb"]
    got = ours(data, tn.Image(dtype="float32"))
    want = tf.image.convert_image_dtype(tf.io.decode_png(data, channels=3), tf.float32).numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-7)
    np.testing.assert_allclose(ours(data, tn.Image(dtype="float32", scale=1.0)), want * 255, 1e-5)


def test_varying_sizes_come_back_as_a_list_column(tf):
    sizes = [(20, 30), (31, 17), (20, 30)]
    blobs = BytesColumn.from_list([tf.io.encode_jpeg(pixels(h, w, 3)).numpy() for h, w in sizes])
    said = r"differ in size \(\[20, 30, 3\], \[31, 17, 3\]\).*tn.Image\(size=\(20, 30\)\)"
    with pytest.warns(UserWarning, match=said):
        col = decode_images(blobs, tn.Image())
    assert col.dtype == object and [im.shape for im in col] == [(*s, 3) for s in sizes]
    dense = decode_images(blobs, tn.Image(size=(16, 16)))
    assert dense.shape == (3, 16, 16, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        png = [tf.io.encode_png(pixels(h, w, 1)).numpy() for h, w in sizes]
        col = decode_images(BytesColumn.from_list(png[:1] + png[2:]), tn.Image(1))
    assert col.shape == (2, 20, 30, 1)


def _hinted_image(message: str) -> str:
    """The tn.Image(...) code a message tells the user to give."""
    return re.search(r"give (tn\.Image\((?:[^()]|\([^()]*\))*\))", message, re.I).group(1)


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        (tn.Image(1), tn.Image(1, (20, 30))),
        (tn.Image(dtype="float32", scale=2.0), tn.Image(3, (20, 30), dtype="float32", scale=2.0)),
        (tn.Image(None, resize="area"), tn.Image(None, (20, 30), resize="area")),
    ],
)
def test_mixed_sizes_hint_is_code_that_reads_them(tf, spec, want):
    """The warning's spec runs as Python and keeps the user's other arguments."""
    c = spec.channels or 3
    blobs = BytesColumn.from_list(
        [tf.io.encode_png(pixels(h, w, c)).numpy() for h, w in [(20, 30), (31, 17)]]
    )
    with pytest.warns(UserWarning, match="differ in size") as caught:
        decode_images(blobs, spec)
    hinted = eval(_hinted_image(str(caught[0].message)), {"tn": tn})
    assert hinted == want
    assert decode_images(blobs, hinted).shape == (2, 20, 30, c)


def test_spec_json_and_spelling():
    spec = {"image": tn.Image(1, (64, 32), resize="area", dtype="float32", scale=2.0)}
    text = tn.spec_to_json(spec)
    assert tn.spec_from_json(text) == spec
    assert json.loads(text)["features"]["image"]["type"] == "Image"
    assert repr(spec["image"]) == (
        "Image(channels=1, size=(64, 32), resize='area', dtype='float32', scale=2.0)"
    )
    assert tn.Image().spell() == "tn.Image()"
    with pytest.raises(ValueError, match="channels must be 1, 3, 4 or None"):
        tn.Image(2)
    with pytest.raises(ValueError, match="resize must be one of"):
        tn.Image(size=(2, 2), resize="cubic")
    with pytest.raises(
        ValueError,
        match=re.escape("Image dtype must be one of ('uint8', 'uint16', 'float32'), not 'float64'"),
    ):
        tn.Image(dtype="float64")
    with pytest.raises(ValueError, match="unknown dtype 'u1,,'"):  # a spec file's junk
        tn.spec_from_json(text.replace('"float32"', '"u1,,"'))


# -- errors -------------------------------------------------------------------------------


def _dataset_with(tmp_path, tf, bad: dict[int, bytes], n: int = 6) -> str:
    blobs = [tf.io.encode_jpeg(pixels(16, 16, 3, i)).numpy() for i in range(n)]
    for i, b in bad.items():
        blobs[i] = b
    path = str(tmp_path / "bad.tfrecord")
    tn.write(path, {"image": BytesColumn.from_list(blobs), "label": np.arange(n)})
    return path


SPEC = {"image": tn.Image(), "label": tn.FixedLen((), "int64")}


@pytest.mark.parametrize("how", ["truncated", "garbage", "png-truncated"])
def test_corrupt_image_is_a_typed_error(tf, tmp_path, how):
    good = tf.io.encode_jpeg(pixels(16, 16, 3)).numpy()
    bad = {
        "truncated": good[: len(good) // 2],
        "garbage": b"\xff\xd8\xff" + bytes(range(200)),
        "png-truncated": tf.io.encode_png(pixels(16, 16, 3)).numpy()[:60],
    }[how]
    with pytest.raises(tf.errors.InvalidArgumentError):  # TensorFlow refuses it too
        tf.io.decode_image(bad).numpy()
    path = _dataset_with(tmp_path, tf, {4: bad})
    with pytest.raises(ImageDecodeError) as info:
        tn.read(path, spec=SPEC)
    error = info.value
    assert isinstance(error, tn.CorruptRecordError) and isinstance(error, ValueError)
    assert error.path == path and error.record == 4
    message = str(error)
    assert message.startswith("feature 'image' holds a ")
    assert "that does not decode (" in message
    assert f"at {path} record 4;" in message and "on_error='skip'" in message


def _claiming(blob: bytes, h: int, w: int) -> bytes:
    """The image with its header's size changed (JPEG SOF0, PNG IHDR), the rest kept."""
    data = bytearray(blob)
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        data[16:20], data[20:24] = w.to_bytes(4, "big"), h.to_bytes(4, "big")
    else:
        at = data.find(b"\xff\xc0")
        data[at + 5 : at + 7], data[at + 7 : at + 9] = h.to_bytes(2, "big"), w.to_bytes(2, "big")
    return bytes(data)


@pytest.mark.parametrize("fmt", ["jpeg", "png"])
@pytest.mark.parametrize("size", [None, (8, 8)])
def test_a_header_claiming_a_giant_image_allocates_nothing(tf, tmp_path, fmt, size):
    encode = tf.io.encode_jpeg if fmt == "jpeg" else tf.io.encode_png
    good = encode(pixels(16, 16, 3)).numpy()
    h = w = 65_000 if fmt == "jpeg" else 2**31 - 1
    path = _dataset_with(tmp_path, tf, {3: _claiming(good, h, w)}, n=6)
    spec = {"image": tn.Image(size=size), "label": tn.FixedLen((), "int64")}
    with pytest.raises(ImageDecodeError) as info:
        tn.read(path, spec=spec)
    assert info.value.record == 3
    assert f"an image whose header claims {w}x{h} pixels, more than the" in str(info.value)
    ds = tn.open(path, spec=spec, on_error="skip")
    labels = np.concatenate([b["label"] for b in ds.batches(4)])
    assert labels.tolist() == [0, 1, 2, 4, 5]


def test_on_error_skip_drops_the_record(tf, tmp_path):
    good = tf.io.encode_jpeg(pixels(16, 16, 3)).numpy()
    path = _dataset_with(tmp_path, tf, {1: good[:100], 4: b"not an image"}, n=10)
    ds = tn.open(path, spec=SPEC, on_error="skip")
    batches = list(ds.batches(4))
    labels = np.concatenate([b["label"] for b in batches])
    assert labels.tolist() == [0, 2, 3, 5, 6, 7, 8, 9]
    assert [len(b["label"]) for b in batches] == [4, 4]
    assert np.concatenate([b["image"] for b in batches]).shape == (8, 16, 16, 3)
    assert [(c.path, c.record) for c in ds.corruptions] == [(path, 1), (path, 4)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        list(tn.open(path, spec=SPEC, on_error="warn").batches(4))
    said = [str(w.message) for w in caught if w.category is tn.CorruptRecordWarning]
    assert [m.rsplit(" at ", 1)[1] for m in said] == [
        f"{path} record 1; skipped the record",
        f"{path} record 4; skipped the record",
    ]


def test_on_error_skip_in_a_shuffle_buffer_of_big_images(tf, tmp_path):
    """Images of 4 KiB and more leave a shuffle pool where it holds them (a RecordBatch over
    its buffers); a bad one is still dropped and named."""
    rng = np.random.default_rng(0)
    noise = [rng.integers(0, 256, (48, 48, 3), dtype=np.uint8) for _ in range(40)]
    blobs = [tf.io.encode_png(x).numpy() for x in noise]
    assert min(len(b) for b in blobs) >= 4096
    blobs[13] = blobs[13][:200]
    path = str(tmp_path / "big.tfrecord")
    tn.write(path, {"image": BytesColumn.from_list(blobs), "label": np.arange(40)})
    ds = tn.open(path, spec=SPEC, on_error="skip")
    batches = list(ds.batches(4, shuffle=16, seed=2))
    labels = np.concatenate([b["label"] for b in batches])
    assert sorted(labels.tolist()) == [i for i in range(40) if i != 13]
    assert labels.tolist() != sorted(labels.tolist())
    images = np.concatenate([b["image"] for b in batches])
    assert all(np.array_equal(images[k], noise[i]) for k, i in enumerate(labels.tolist()))
    assert [(c.path, c.record) for c in ds.corruptions] == [(path, 13)]


def test_unexpected_channel_count(tf, tmp_path):
    blobs = [tf.io.encode_png(pixels(8, 8, c)).numpy() for c in (3, 3, 4)]
    path = str(tmp_path / "mixed.tfrecord")
    tn.write(path, {"image": BytesColumn.from_list(blobs)})
    with pytest.raises(tn.SchemaError) as info:
        tn.read(path, spec={"image": tn.Image(None, (8, 8))})
    assert str(info.value) == (
        "feature 'image' holds an image with 4 channels where the batch has 3; give "
        f"tn.Image(channels=4, size=(8, 8)) or another fixed channel count to convert every "
        f"image, at {path} record 2"
    )
    hinted = eval(_hinted_image(str(info.value)), {"tn": tn})
    assert hinted == tn.Image(4, (8, 8))  # the user's size kept
    assert tn.read(path, spec={"image": hinted})["image"].shape == (3, 8, 8, 4)
    with pytest.raises(tn.SchemaError, match="holds an image with 4 channels where the batch"):
        tn.read(path, spec={"image": tn.Image(None)})
    assert tn.read(path, spec={"image": tn.Image(4)})["image"].shape == (3, 8, 8, 4)


# -- preview: the contact sheet -----------------------------------------------------------


def test_preview_contact_sheet(tf, tmp_path, capsys):
    from tfrecnp.cli.main import main
    from tfrecnp.cli.preview import CAPTION, TILE

    colours = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (220, 220, 40), (250, 250, 250)]
    sizes = [(64, 64), (40, 90), (90, 40), (128, 128), (20, 30)]
    blobs = [
        tf.io.encode_png(np.full((h, w, 3), c, np.uint8)).numpy()
        for c, (h, w) in zip(colours, sizes, strict=True)
    ]
    path = str(tmp_path / "faces.tfrecord")
    tn.write(path, {"label": np.arange(5) * 7, "image": BytesColumn.from_list(blobs)})
    sheet = str(tmp_path / "sheet.png")
    args = ["preview", path, "--label", "label", "-o", sheet, "-n", "5", "--json"]
    assert main(args) == 0
    said = json.loads(capsys.readouterr().out)
    assert said == {
        "output": sheet,
        "feature": "image",
        "images": 5,
        "width": 3 * TILE,
        "height": 2 * (TILE + CAPTION),
        "columns": 3,
    }
    with PILImage.open(sheet) as im:
        assert im.format == "PNG" and im.size == (3 * TILE, 2 * (TILE + CAPTION))
        pixels_ = np.asarray(im.convert("RGB"))
    for k, colour in enumerate(colours):
        x, y = (k % 3) * TILE, (k // 3) * (TILE + CAPTION)
        centre = pixels_[y + TILE // 2, x + TILE // 2]
        assert tuple(centre) == colour, k
        caption = pixels_[y + TILE : y + TILE + CAPTION, x : x + TILE]
        assert (caption.max(axis=2) > 200).any(), f"no caption text under tile {k}"
    # a wide image fills the tile's width, not its height: the corners stay background
    assert tuple(pixels_[2, TILE + 2]) == (24, 24, 24)
    assert tuple(pixels_[TILE // 2, TILE + 2]) == colours[1]
    # the sixth cell is empty
    assert (pixels_[TILE + CAPTION :, 2 * TILE :] == 24).all()
    # without --feature the image feature is found; text output names the sheet
    assert main(["preview", path, "-o", sheet]) == 0
    assert "5 images of 'image'" in capsys.readouterr().out
    # as a subprocess, with the package this test imports
    env = dict(os.environ, PYTHONPATH=str(Path(tn.__file__).parents[1]))
    done = subprocess.run(
        [sys.executable, "-m", "tfrecnp", "preview", path, "-n", "2", "-o", sheet],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{sheet}: 2 images of 'image', {2 * TILE}x{TILE + CAPTION} pixels\n"
    with PILImage.open(sheet) as im:
        assert im.size == (2 * TILE, TILE + CAPTION)
    assert main(["preview", path, "--feature", "label", "-o", sheet]) == 2
    assert "holds" in capsys.readouterr().err


# -- writing images ------------------------------------------------------------------------


def test_write_png_and_jpeg(tf, tmp_path):
    images = np.stack([pixels(24, 40, 3, s) for s in range(10)])
    grey = images[:, :, :, 0]
    path = str(tmp_path / "png.tfrecord")
    paths, spec = tn.write(
        path, {"image": images, "grey": grey}, encoding={"image": "png", "grey": "png"}
    )
    assert spec == {"image": tn.Image(3), "grey": tn.Image(1)}
    back = tn.read(paths, spec)
    np.testing.assert_array_equal(back["image"], images)
    np.testing.assert_array_equal(back["grey"], grey[..., None])
    raw = tn.read(paths, {"image": tn.Bytes()})["image"]
    np.testing.assert_array_equal(tf.io.decode_png(raw[3]).numpy(), images[3])

    path = str(tmp_path / "jpeg.tfrecord")
    for quality, bound in (("jpeg", 12.0), ("jpeg:50", 16.0)):  # noisy pixels: large errors
        paths, spec = tn.write(path, {"image": images}, encoding={"image": quality}, verify=True)
        back = tn.read(paths, spec)["image"]
        assert np.abs(back.astype(int) - images).mean() < bound
        raw = tn.read(paths, {"image": tn.Bytes()})["image"]
        want = tf.io.decode_jpeg(raw[7]).numpy()
        np.testing.assert_array_equal(back[7], want)
    small = len(raw.data)
    tn.write(path, {"image": images}, encoding={"image": "jpeg:95"})
    assert len(tn.read(path, {"image": tn.Bytes()})["image"].data) > small


def test_write_image_errors(tmp_path):
    path = str(tmp_path / "x.tfrecord")
    with pytest.raises(tn.SchemaError, match=r"takes uint8 images \[n, h, w, c\].*float32"):
        tn.write(path, {"image": np.zeros((2, 4, 4, 3), np.float32)}, encoding={"image": "png"})
    with pytest.raises(tn.SchemaError, match="JPEG has no alpha channel; use 'png'"):
        tn.write(path, {"image": np.zeros((2, 4, 4, 4), np.uint8)}, encoding={"image": "jpeg"})
    with pytest.raises(ValueError, match="'jpeg', 'jpeg:QUALITY'"):
        tn.write(path, {"image": np.zeros((2, 4, 4, 3), np.uint8)}, encoding={"image": "jpeg:x"})


def test_to_tf_carries_images(tf, tmp_path):
    images = np.stack([pixels(16, 24, 3, s) for s in range(10)])
    path = str(tmp_path / "tf.tfrecord")
    tn.write(path, {"image": images}, encoding={"image": "png"})
    ds = tn.open(path, spec={"image": tn.Image(3, size=(8, 12), dtype="float32")})
    tds = ds.to_tf(batch_size=4)
    assert tds.element_spec["image"].shape.as_list() == [None, 8, 12, 3]
    got = np.concatenate([b["image"].numpy() for b in tds])
    want = tf.image.resize(tf.image.convert_image_dtype(images, tf.float32), (8, 12)).numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-7)


def test_varying_sizes_across_blocks(tf, tmp_path, monkeypatch):
    """Blocks of one size each, and one mixed, join into one object column of images."""
    from tfrecnp.data import blocks

    monkeypatch.setattr(blocks, "BLOCK_BYTES", 1)  # a block per batch
    sizes = [(16, 16)] * 6 + [(24, 20)] * 6
    images = [pixels(h, w, 3, i) for i, (h, w) in enumerate(sizes)]
    path = str(tmp_path / "sizes.tfrecord")
    tn.write(
        path, {"image": BytesColumn.from_list([tf.io.encode_png(im).numpy() for im in images])}
    )
    ds = tn.open(path, spec={"image": tn.Image()})
    with pytest.warns(UserWarning, match="differ in size"):
        batches = [b["image"] for b in ds.batches(4)]
    assert [b.dtype == object for b in batches] == [False, True, False]
    with pytest.warns(UserWarning, match="differ in size"):
        whole = ds.to_numpy()["image"]
    assert whole.dtype == object and len(whole) == 12
    for got, want in zip(whole, images, strict=True):
        np.testing.assert_array_equal(got, want)


def test_missing_or_wrong_kind_names_the_image_spec(tmp_path):
    path = str(tmp_path / "m.tfrecord")
    tn.write(path, {"label": np.arange(3)})
    with pytest.raises(tn.SchemaError) as info:
        tn.read(path, spec={"image": tn.Image()})
    assert str(info.value) == (
        f"feature 'image' is missing at {path} record 0; tn.Image() needs a value in every "
        "record (select the records that have one, or read it as tn.VarLen('bytes'))"
    )
    with pytest.raises(tn.SchemaError, match=r"where tn.Image\(\) expects a bytes_list"):
        tn.read(path, spec={"label": tn.Image()})


def test_image_is_a_context_feature():
    spec = tn.Sequence({"image": tn.Image()}, {"tokens": tn.VarLen("int64")})
    assert spec.context["image"] == tn.Image()
    with pytest.raises(ValueError, match=r"'frames': tn.Image\(\) is read once per record"):
        tn.Sequence({}, {"frames": tn.Image()})
