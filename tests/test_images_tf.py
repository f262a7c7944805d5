"""tn.Image pixel for pixel against TensorFlow's own decoders, over a grid of generated
images: sizes (odd ones, 1x1, and sizes that are not whole MCUs), every JPEG chroma
subsampling, both IDCTs (`dct_method`), both JPEG paths (simplejpeg, Pillow), grey / grey +
alpha / RGB / RGBA PNGs at 8 and 16 bits, with and without gamma chunks, read as every
channel count and as uint8 / uint16.

The oracle is TensorFlow: decode_jpeg(channels=, dct_method=), decode_png(channels=,
dtype=), decode_image. Every case must be equal, and no decode may warn.
"""

from __future__ import annotations

import io
import re
import struct
import warnings
import zlib

import numpy as np
import pytest
import simplejpeg
from PIL import Image as PILImage

import tfrecnp as tn
from tfrecnp.example.columns import BytesColumn
from tfrecnp.example.image import decode_images
from tfrecnp.images import codecs as image_codecs

SIZES = [(1, 1), (7, 5), (16, 16), (31, 45), (17, 101), (224, 224)]
DCT = ["INTEGER_FAST", "INTEGER_ACCURATE"]


def photo(h: int, w: int, c: int, seed: int) -> np.ndarray:
    """Gradients plus noise: what JPEG is made for, with edges for the chroma filters."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack(
        [x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + 2 * y) * 5 % 256, x * y % 256],
        -1,
    )[:, :, :c]
    return np.clip(base + rng.integers(-40, 40, base.shape), 0, 255).astype(np.uint8)


def jpegs(tf, h: int, w: int) -> dict[str, bytes]:
    """name -> JPEG; names say who encoded it and how its chroma is subsampled."""
    rgb = photo(h, w, 3, h * 1000 + w)
    out = {
        "tf-420": tf.io.encode_jpeg(rgb, quality=90).numpy(),
        "tf-444": tf.io.encode_jpeg(rgb, chroma_downsampling=False).numpy(),
        "tf-progressive": tf.io.encode_jpeg(rgb, progressive=True).numpy(),
        "tf-grey": tf.io.encode_jpeg(rgb[:, :, :1]).numpy(),
    }
    for sub in ("444", "422", "420", "440", "411"):
        out[f"sj-{sub}"] = simplejpeg.encode_jpeg(rgb, 85, "RGB", sub)
    for sub in (0, 1, 2):
        buf = io.BytesIO()
        PILImage.fromarray(rgb).save(buf, "JPEG", quality=80, subsampling=sub)
        out[f"pil-{sub}"] = buf.getvalue()
    return out


def ours(data: bytes, spec: tn.Image) -> np.ndarray:
    return decode_images(BytesColumn.from_list([data]), spec)[0]


def mismatch(got: np.ndarray, want: np.ndarray) -> str | None:
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{got.shape} {got.dtype} where TF gives {want.shape} {want.dtype}"
    if (got != want).any():
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        return f"{int((diff > 0).sum())} values differ, by up to {int(diff.max())}"
    return None


@pytest.fixture(params=["simplejpeg", "pillow"])
def jpeg_path(request, monkeypatch):
    if request.param == "pillow":
        monkeypatch.setattr(image_codecs, "_simplejpeg", False)
    return request.param


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_jpeg_equals_decode_jpeg(tf, size, jpeg_path):
    """Every encoding x channels (None, 1, 3) x dct_method, as decode_jpeg gives it; with
    channels=None and the default, as decode_image gives it (what tfds.as_numpy shows).
    Both paths: Pillow's fast IDCT goes through tfrecnp's own chroma upsampling."""
    bad, cases = [], 0
    for name, data in jpegs(tf, *size).items():
        for channels in (None, 1, 3):
            for dct in DCT:
                want = tf.io.decode_jpeg(data, channels=channels or 0, dct_method=dct).numpy()
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    got = ours(data, tn.Image(channels, dct_method=dct))
                cases += 1
                if (why := mismatch(got, want)) is not None:
                    bad.append(f"{name} channels={channels} {dct}: {why}")
        cases += 1
        if why := mismatch(ours(data, tn.Image(None)), tf.io.decode_image(data).numpy()):
            bad.append(f"{name} vs decode_image: {why}")
    assert cases >= 12 * 3 * 2 and not bad, "\n".join(bad)


@pytest.mark.parametrize("dct", DCT)
def test_cmyk_jpeg_both_idcts(tf, dct):
    """Adobe CMYK goes through Pillow on either path; its IDCT follows dct_method too."""
    for h, w in SIZES[1:5]:
        buf = io.BytesIO()
        PILImage.fromarray(photo(h, w, 4, w), "CMYK").save(buf, "JPEG", quality=85)
        data = buf.getvalue()
        want = tf.io.decode_jpeg(data, channels=3, dct_method=dct).numpy()
        assert mismatch(ours(data, tn.Image(3, dct_method=dct)), want) is None, (h, w)


def test_pillow_fast_idct_upsamples_chroma_like_libjpeg(tf, monkeypatch):
    """Pillow's fast IDCT comes with box-repeated chroma; tfrecnp upsamples the stored
    chroma with libjpeg's triangle filter itself. Without that step the pixels are far off
    (what Pillow alone gives), which is why the grid above covers every subsampling."""
    monkeypatch.setattr(image_codecs, "_simplejpeg", False)
    data = tf.io.encode_jpeg(photo(32, 32, 3, 0)).numpy()
    want = tf.io.decode_jpeg(data, channels=3).numpy()
    np.testing.assert_array_equal(ours(data, tn.Image()), want)
    im = PILImage.open(io.BytesIO(data))
    im.decoderconfig = (1, 1)  # the draft flag alone: fast IDCT, chroma repeated
    im.load()
    assert np.abs(np.asarray(im).astype(int) - want).max() > 8


# -- PNG ----------------------------------------------------------------------------------


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def with_chunks(png: bytes, *chunks: tuple[bytes, bytes]) -> bytes:
    """png with ancillary chunks inserted after its IHDR (TF and Pillow write none)."""
    return png[:33] + b"".join(_chunk(k, b) for k, b in chunks) + png[33:]


def gamma(value: int) -> tuple[bytes, bytes]:
    return b"gAMA", struct.pack(">I", value)


def png_samples(h: int, w: int, c: int, bits: int, seed: int) -> np.ndarray:
    """Random samples over the whole range, the top half of the rows grey (r == g == b),
    which libpng's grey conversion treats apart."""
    rng = np.random.default_rng(seed)
    dtype = np.uint8 if bits == 8 else np.uint16
    a = rng.integers(0, 1 << bits, (h, w, c), dtype=dtype)
    if c >= 3:
        a[: h // 2, :, 1] = a[: h // 2, :, 2] = a[: h // 2, :, 0]
    return a


CHUNKS = {
    "plain": (),
    "gamma-0.45455": (gamma(45455),),
    "gamma-2.2": (gamma(220000),),
    "gamma-1.02": (gamma(102000),),  # within libpng's 5%: no correction
    "sRGB": ((b"sRGB", b"\x00"),),
}


@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize("stored", [1, 2, 3, 4], ids=["grey", "grey-alpha", "rgb", "rgba"])
def test_png_equals_decode_png(tf, stored, bits):
    """Every size x gamma chunk x channels (None, 1, 3, 4) x dtype (uint8, uint16), as
    decode_png(channels=, dtype=) gives it: 16-bit samples whole, grey from colour by
    libpng's fixed-point formula (and its gamma tables when the file has a gamma)."""
    bad, cases = [], 0
    for h, w in SIZES:
        base = tf.io.encode_png(png_samples(h, w, stored, bits, h * w)).numpy()
        for chunk_name, chunks in CHUNKS.items():
            data = with_chunks(base, *chunks)
            for channels in (None, 1, 3, 4):
                for dtype, tf_dtype in (("uint8", tf.uint8), ("uint16", tf.uint16)):
                    want = tf.io.decode_png(data, channels=channels or 0, dtype=tf_dtype)
                    got = ours(data, tn.Image(channels, dtype=dtype))
                    cases += 1
                    if (why := mismatch(got, want.numpy())) is not None:
                        bad.append(f"{h}x{w} {chunk_name} channels={channels} {dtype}: {why}")
    assert cases == len(SIZES) * len(CHUNKS) * 8 and not bad, "\n".join(bad)


def test_sixteen_bit_grey_alpha_keeps_two_channels(tf):
    """channels=None on a 16-bit grey + alpha PNG: two uint16 channels, as decode_png and
    decode_image give them (TensorFlow refuses channels=2, and so does tn.Image)."""
    samples = png_samples(9, 13, 2, 16, 3)
    data = tf.io.encode_png(samples).numpy()
    got = ours(data, tn.Image(None, dtype="uint16"))
    assert got.dtype == np.uint16 and got.shape == (9, 13, 2)
    np.testing.assert_array_equal(got, samples)
    np.testing.assert_array_equal(got, tf.io.decode_image(data, dtype=tf.uint16).numpy())
    np.testing.assert_array_equal(ours(data, tn.Image(None)), samples >> 8)


def test_grey_from_colour_png_is_libpngs_formula(tf):
    """The 8-bit conversion truncates 9797 r + 19234 g + 3737 b over 32768; a rounded
    0.299 / 0.587 / 0.114 (the weights TensorFlow passes) is off by one on many pixels."""
    rgb = png_samples(64, 64, 3, 8, 1)
    data = tf.io.encode_png(rgb).numpy()
    want = tf.io.decode_png(data, channels=1).numpy()
    got = ours(data, tn.Image(1))
    np.testing.assert_array_equal(got, want)
    r, g, b = (rgb[:, :, i].astype(np.int64) for i in range(3))
    rounded = np.rint(0.299 * r + 0.587 * g + 0.114 * b)[:, :, None]
    assert (rounded != want).mean() > 0.2


@pytest.mark.parametrize("chunks", [(), (gamma(45455),), ((b"sRGB", b"\x00"),)])
def test_palette_png_to_grey(tf, chunks):
    """A palette expands to RGB before libpng makes it grey, with the file's gamma."""
    im = PILImage.fromarray(photo(30, 41, 3, 2)).quantize(64)
    buf = io.BytesIO()
    im.save(buf, "PNG")
    data = with_chunks(buf.getvalue(), *chunks)
    for channels in (1, 3):
        want = tf.io.decode_png(data, channels=channels).numpy()
        np.testing.assert_array_equal(ours(data, tn.Image(channels)), want)


def test_sbit_sets_libpngs_gamma_shift(tf):
    """16-bit colour with a gamma and an sBIT chunk: libpng's tables drop the insignificant
    low bits before the lookup; the grey follows."""
    rgb = png_samples(20, 33, 3, 16, 4)
    for sig in (9, 12, 15):
        data = with_chunks(tf.io.encode_png(rgb).numpy(), gamma(45455), (b"sBIT", bytes([sig] * 3)))
        for dtype, tf_dtype in (("uint8", tf.uint8), ("uint16", tf.uint16)):
            want = tf.io.decode_png(data, channels=1, dtype=tf_dtype).numpy()
            assert mismatch(ours(data, tn.Image(1, dtype=dtype)), want) is None, (sig, dtype)


def test_jpeg_as_uint16_is_decode_images(tf):
    """A JPEG read as uint16 is what decode_image(dtype=tf.uint16) gives: v << 8."""
    data = tf.io.encode_jpeg(photo(12, 20, 3, 5)).numpy()
    want = tf.io.decode_image(data, dtype=tf.uint16).numpy()
    np.testing.assert_array_equal(ours(data, tn.Image(dtype="uint16")), want)


def test_uint16_dataset_and_resize(tf, tmp_path):
    """16-bit PNGs through a TFRecord: one [n, h, w, c] uint16 array per batch, whole
    samples; resized like tf.image.resize, rounded half to even into uint16."""
    images = np.stack([png_samples(24, 40, 3, 16, s) for s in range(6)])
    blobs = [tf.io.encode_png(im).numpy() for im in images]
    path = str(tmp_path / "deep.tfrecord")
    tn.write(path, {"image": BytesColumn.from_list(blobs)}, progress=False)
    spec = {"image": tn.Image(3, dtype="uint16")}
    got = tn.read(path, spec)["image"]
    assert got.dtype == np.uint16 and got.shape == (6, 24, 40, 3)
    np.testing.assert_array_equal(got, images)
    for method in ("bilinear", "nearest", "area"):
        resized = tn.read(path, {"image": tn.Image(3, (17, 29), resize=method, dtype="uint16")})
        want = tf.image.resize(images.astype(np.float32), (17, 29), method).numpy()
        want = np.clip(np.rint(want), 0, 65535)
        diff = np.abs(resized["image"].astype(np.float64) - want)
        assert resized["image"].dtype == np.uint16
        assert diff.max() <= (1 if method == "area" else 0), method


# -- the spec -----------------------------------------------------------------------------


def test_dct_method_and_uint16_in_the_spec():
    spec = {"image": tn.Image(1, dtype="uint16", dct_method="INTEGER_ACCURATE")}
    text = tn.spec_to_json(spec)
    assert tn.spec_from_json(text) == spec
    assert (
        spec["image"].spell()
        == "tn.Image(channels=1, dtype='uint16', dct_method='INTEGER_ACCURATE')"
    )
    assert tn.Image() != tn.Image(dct_method="INTEGER_ACCURATE")
    assert tn.Image(dct_method="INTEGER_FAST").spell() == "tn.Image()"  # the default
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Image dct_method must be one of ('INTEGER_FAST', 'INTEGER_ACCURATE') "
            "(tf.io.decode_jpeg's), not 'FLOAT'"
        ),
    ):
        tn.Image(dct_method="FLOAT")


@pytest.mark.parametrize("value", [10, 16, 1000, 625_000_000, 700_000_000])
def test_extreme_gamma_chunks(tf, value):
    """gAMA at and beyond libpng's range (16 .. 625 000 000; outside it is ignored)."""
    for bits in (8, 16):
        data = with_chunks(
            tf.io.encode_png(png_samples(11, 9, 3, bits, value)).numpy(), gamma(value)
        )
        for dtype, tf_dtype in (("uint8", tf.uint8), ("uint16", tf.uint16)):
            want = tf.io.decode_png(data, channels=1, dtype=tf_dtype).numpy()
            assert mismatch(ours(data, tn.Image(1, dtype=dtype)), want) is None, (bits, dtype)


@pytest.mark.parametrize("stored", [2, 3, 4])
def test_damaged_sixteen_bit_png_is_a_typed_error(tf, stored):
    """The second decode of a 16-bit PNG (raw mode swapped) fails as the first would: an
    ImageDecodeError naming the record, not a crash."""
    data = tf.io.encode_png(png_samples(40, 40, stored, 16, 9)).numpy()
    cut = data[: len(data) * 2 // 3]
    column = BytesColumn.from_list([data, cut])
    with pytest.raises(tn.CorruptRecordError, match=r"feature 'image' holds a PNG that does not"):
        decode_images(column, tn.Image(None, dtype="uint16"))
