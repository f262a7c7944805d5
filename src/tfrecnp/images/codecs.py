"""One image's bytes <-> pixels: the JPEG / PNG decoders, header sniffing, and encoding.

- JPEG: simplejpeg (libjpeg-turbo) when installed, decoding into the caller's buffer;
  Pillow otherwise, and for CMYK / YCCK JPEGs. simplejpeg is the faster (measured:
  benchmarks/CONSTANTS.md, example.image).
- PNG: Pillow inflates and unfilters, `images.png` applies libpng's transformations as
  TensorFlow asks for them (exact grey, 16-bit samples).
- Whatever else Pillow opens (GIF, BMP, ...): Pillow.

Pixels follow TensorFlow's decoders: `channels` converts like decode_jpeg / decode_png
(`channels=`). A JPEG becomes grey as libjpeg's luma. Grey -> RGB repeats, alpha is dropped
or added as the maximum, a palette expands (with its transparency as alpha), and CMYK
(Adobe, inverted) becomes RGB as c * k // 255.

JPEG's IDCT is `dct_method`, as decode_jpeg's: "INTEGER_FAST" (libjpeg's fast integer
IDCT: what decode_jpeg without dct_method, decode_image and so tensorflow-datasets give) or
"INTEGER_ACCURATE" (the accurate one: what Pillow, OpenCV and simplejpeg give by default).
Both keep TensorFlow's fancy upsampling of subsampled chroma. simplejpeg gives either
exactly (fastdct=). Pillow gives the fast IDCT only through its draft flag, which also turns
fancy upsampling off (chroma repeated): where chroma is subsampled, Pillow is asked for
YCbCr, and `_ycc_to_rgb` upsamples the stored chroma and converts it as libjpeg-turbo does,
so either path equals TensorFlow exactly.

`bits=16` gives uint16, as decode_png(dtype=tf.uint16) / decode_image(dtype=tf.uint16):
a 16-bit PNG whole, an 8-bit one as v * 257, anything else (JPEG, GIF, ...) as v << 8
(decode_image's convert_image_dtype).

A header's size is read before anything is allocated for it, and refused beyond
MAX_IMAGE_PIXELS. Failures raise `_ImageFailure`, which `image.decode_images` gathers per
batch into one ImageDecodeError or SchemaError.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from .._util.optional import require
from .._util.threads import CPUS, executor
from .png import decode_png, png_info

__all__ = [
    "decode_image",
    "encode_image",
    "encode_images",
    "image_format",
    "read_header",
]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# The most pixels one image may claim: Pillow's own decompression-bomb limit (twice its
# warning level). A header is a few bytes; without a limit it could ask for any allocation.
MAX_IMAGE_PIXELS = 2 * 89_478_485
JPEG_MAGIC = b"\xff\xd8\xff"
DCT_METHODS = ("INTEGER_FAST", "INTEGER_ACCURATE")  # decode_jpeg's; the first its default

_simplejpeg: Any = None  # the module, False when it is not installed


def image_format(data: bytes | memoryview | np.ndarray) -> str | None:
    """ "jpeg", "png", or None, from the first bytes."""
    head = bytes(data[:8])
    if head.startswith(JPEG_MAGIC):
        return "jpeg"
    if head == PNG_MAGIC:
        return "png"
    return None


def _sj() -> Any:
    global _simplejpeg
    if _simplejpeg is None:
        try:
            import simplejpeg
        except ImportError:
            simplejpeg = False
        _simplejpeg = simplejpeg
    return _simplejpeg


def _pil() -> Any:
    return require("PIL.Image", "images")


class _ImageFailure(Exception):
    """An image that does not decode (reason) or has the wrong channel count (schema)."""

    def __init__(self, reason: str, schema: bool = False):
        super().__init__(reason)
        self.schema = schema


def read_header(data: memoryview) -> tuple[int, int, int] | None:
    """(height, width, channels as stored) from the header without decoding, or None."""
    head = bytes(data[:33])
    if head[:8] == PNG_MAGIC and len(head) >= 29 and head[12:16] == b"IHDR":
        w = int.from_bytes(head[16:20], "big")
        h = int.from_bytes(head[20:24], "big")
        color = head[25]
        c = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}.get(color)
        if c is None:
            return None
        if color == 3 and b"tRNS" in bytes(data[:4096]):
            c = 4  # a palette with transparency expands to RGBA
        return (*_plausible(h, w), c)
    sj = _sj()
    if head.startswith(JPEG_MAGIC) and sj:
        try:
            h, w, space, _ = sj.decode_jpeg_header(data)
        except ValueError:
            return None
        return (*_plausible(h, w), 1 if space == "Gray" else 3)  # CMYK / YCCK become RGB
    return None


def _plausible(h: int, w: int) -> tuple[int, int]:
    """(h, w) as a header claims them, refused beyond MAX_IMAGE_PIXELS (raises _ImageFailure)."""
    if h * w > MAX_IMAGE_PIXELS:
        raise _ImageFailure(
            f"an image whose header claims {w}x{h} pixels, more than the "
            f"{MAX_IMAGE_PIXELS:,} one may hold (Pillow's decompression-bomb limit): it is "
            "damaged or hostile"
        )
    return h, w


def _pil_open(
    data: memoryview, channels: int | None, *, fast: bool = False, raw: str | None = None
) -> Any:
    """A loaded Pillow image. fast: the JPEG's fast IDCT where Pillow can give TensorFlow's
    pixels with it (see the module docstring); raw: another raw mode for the tile."""
    PIL = _pil()
    try:
        im = PIL.open(io.BytesIO(data))
        if raw is not None:
            tile = im.tile[0]
            im.tile = [tile._replace(args=raw) if hasattr(tile, "_replace") else (*tile[:3], raw)]
        if im.format == "JPEG":
            if channels == 1 and im.mode in ("RGB", "YCbCr"):
                im.draft("L", im.size)  # libjpeg's own luma, as TensorFlow's decode_jpeg gives
            if fast:
                _pil_fast_dct(im)
        im.load()
    except (OSError, ValueError, SyntaxError, EOFError, IndexError, KeyError) as e:
        raise _ImageFailure(_what(data, e)) from None
    except PIL.DecompressionBombError as e:
        raise _ImageFailure(str(e)) from None
    return im


def _pil_fast_dct(im: Any) -> None:
    """Turn on Pillow's draft flag (libjpeg's fast IDCT, no fancy upsampling); where chroma
    is subsampled, ask for YCbCr too, so `_ycc_to_rgb` can upsample and convert it."""
    layer = getattr(im, "layer", [])
    ids = [c if isinstance(c, str) else chr(c) for c, _, _, _ in layer]
    stored_rgb = im.info.get("adobe_transform") == 0 or ids == ["R", "G", "B"]
    if im.mode != "L" and len({f[1:3] for f in layer}) > 1 and not stored_rgb:
        im.draft("YCbCr", im.size)
    im.decoderconfig = (*(im.decoderconfig or (1,))[:1], 1)


# libjpeg's YCbCr -> RGB tables (jdcolor.c, build_ycc_rgb_table): 16-bit fixed point.
_X = np.arange(256, dtype=np.int64) - 128
_FIX = {k: int(k * 65536 + 0.5) for k in (1.40200, 1.77200, 0.71414, 0.34414)}
_CR_R = (_FIX[1.40200] * _X + 32768) >> 16
_CB_B = (_FIX[1.77200] * _X + 32768) >> 16
_CR_G = -_FIX[0.71414] * _X
_CB_G = -_FIX[0.34414] * _X + 32768


def _ycc_to_rgb(im: Any) -> np.ndarray:
    """A JPEG Pillow decoded as YCbCr with the draft flag (fast IDCT, chroma repeated) ->
    RGB as libjpeg-turbo gives it with fancy upsampling (jdsample.c) and its integer
    colour conversion (jdcolor.c): what decode_jpeg(dct_method="INTEGER_FAST") gives."""
    a = np.asarray(im)
    h, w = a.shape[:2]
    hmax = max(f[1] for f in im.layer)
    vmax = max(f[2] for f in im.layer)
    planes = [a[:, :, 0].astype(np.int64)]
    for ci in (1, 2):
        hf, vf = hmax // im.layer[ci][1], vmax // im.layer[ci][2]
        small = a[::vf, ::hf, ci].astype(np.int64)  # the component as stored
        planes.append(_fancy_upsample(small, hf, vf)[:h, :w])
    y, cb, cr = planes
    rgb = np.stack([y + _CR_R[cr], y + ((_CB_G[cb] + _CR_G[cr]) >> 16), y + _CB_B[cb]], axis=2)
    return np.clip(rgb, 0, 255).astype(np.uint8)


def _fancy_upsample(x: np.ndarray, hf: int, vf: int) -> np.ndarray:
    """libjpeg-turbo's upsampling of one component by (hf, vf): triangle filters for 2x1,
    1x2 and 2x2 (edges repeated; 2x1 and 2x2 only when wider than 2), else repetition."""
    if (hf, vf) not in ((2, 1), (1, 2), (2, 2)) or (hf == 2 and x.shape[1] <= 2):
        return np.repeat(np.repeat(x, vf, axis=0), hf, axis=1)
    if vf == 2:  # each output row: 3 x its own input row + the nearer neighbour row
        above = np.concatenate([x[:1], x[:-1]])
        below = np.concatenate([x[1:], x[-1:]])
        upper, lower = 3 * x + above, 3 * x + below
        if hf == 1:
            return _interleave((upper + 1) >> 2, (lower + 2) >> 2, axis=0)
        rows = _interleave(upper, lower, axis=0)
        left = np.concatenate([rows[:, :1], rows[:, :-1]], axis=1)
        right = np.concatenate([rows[:, 1:], rows[:, -1:]], axis=1)
        return _interleave((3 * rows + left + 8) >> 4, (3 * rows + right + 7) >> 4, axis=1)
    left = np.concatenate([x[:, :1], x[:, :-1]], axis=1)
    right = np.concatenate([x[:, 1:], x[:, -1:]], axis=1)
    return _interleave((3 * x + left + 1) >> 2, (3 * x + right + 2) >> 2, axis=1)


def _interleave(even: np.ndarray, odd: np.ndarray, axis: int) -> np.ndarray:
    out = np.stack([even, odd], axis=axis + 1)
    shape = list(even.shape)
    shape[axis] *= 2
    return out.reshape(shape)


def _what(data: memoryview, error: BaseException) -> str:
    kind = {"jpeg": "a JPEG", "png": "a PNG"}.get(image_format(data) or "", "an image")
    text = str(error).strip() or type(error).__name__
    return f"{kind} that does not decode ({text})"


def _pil_array(im: Any) -> tuple[np.ndarray, str]:
    """A Pillow image -> (uint8 [h, w, k] array, what it holds: L, LA, RGB, RGBA, CMYK)."""
    mode = im.mode
    if mode == "1":
        im, mode = im.convert("L"), "L"
    elif mode in ("P", "PA"):
        has_alpha = mode == "PA" or "transparency" in im.info
        mode = "RGBA" if has_alpha else "RGB"
        im = im.convert(mode)
    elif mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        a = np.asarray(im)
        if mode == "I":  # 16-bit PNGs open as I in some Pillow versions
            a = np.clip(a, 0, 65535)
        return (a.astype(np.uint32) >> 8).astype(np.uint8)[:, :, None], "L"
    elif mode in ("YCbCr", "LAB", "HSV"):
        im, mode = im.convert("RGB"), "RGB"
    elif mode not in ("L", "LA", "RGB", "RGBA", "CMYK"):
        im, mode = im.convert("RGBA"), "RGBA"
    a = np.asarray(im)
    return (a[:, :, None] if a.ndim == 2 else a), mode


def _to_channels(a: np.ndarray, mode: str, channels: int | None) -> np.ndarray:
    """Convert like TensorFlow's decoders do (see the module docstring); PNG is images.png's."""
    if mode == "CMYK":  # Pillow un-inverts Adobe CMYK; TensorFlow gives c * k / 255
        inv = 255 - a.astype(np.uint16)
        rgb = inv[:, :, :3] * inv[:, :, 3:4] // 255
        a, mode = rgb.astype(np.uint8), "RGB"
    k = a.shape[2]
    if channels is None or channels == k:
        return a
    colour = a[:, :, :3] if k >= 3 else a[:, :, :1]
    if channels == 1:
        if k < 3:
            return a[:, :, :1]
        # a JPEG decoded by Pillow in draft("L") is already luma; other formats: Rec. 601
        w = np.array([299, 587, 114], np.uint32)
        return ((colour.astype(np.uint32) @ w + 500) // 1000).astype(np.uint8)[:, :, None]
    if colour.shape[2] == 1:
        colour = np.repeat(colour, 3, axis=2)
    if channels == 3:
        return colour
    alpha = a[:, :, k - 1 : k] if k in (2, 4) else np.full((*a.shape[:2], 1), 255, np.uint8)
    return np.concatenate([colour, alpha], axis=2)


_SJ_SPACE = {1: "GRAY", 3: "RGB", 4: "RGBA"}


def decode_image(
    data: memoryview,
    channels: int | None,
    out: np.ndarray | None = None,
    *,
    dct_method: str = "INTEGER_FAST",
    bits: int = 8,
) -> np.ndarray:
    """One image -> [h, w, c], uint8 (bits=8) or uint16 (bits=16); decoded into `out` when
    it is given and fits (then `out` is returned). Raises _ImageFailure."""
    fast = dct_method == "INTEGER_FAST"
    sj = _sj()
    if sj and bytes(data[:3]) == JPEG_MAGIC:
        try:
            h, w, space, _ = sj.decode_jpeg_header(data)
        except ValueError as e:
            raise _ImageFailure(_what(data, e)) from None
        _plausible(h, w)
        if space not in ("CMYK", "YCCK"):
            c = channels if channels is not None else (1 if space == "Gray" else 3)
            fits = bits == 8 and out is not None and out.shape == (h, w, c)
            try:
                a = sj.decode_jpeg(
                    data, _SJ_SPACE[c], fastdct=fast, buffer=out if fits else None
                ).reshape(h, w, c)
            except ValueError as e:
                raise _ImageFailure(_what(data, e)) from None
            return a if bits == 8 else _widen(a, out)
    info = png_info(data)
    if info is not None:
        _plausible(info.height, info.width)  # its claimed size, before Pillow allocates
        a = decode_png(
            info,
            channels,
            bits,
            lambda: _pil_array(_pil_open(data, None))[0],
            lambda raw, head: _pil_open(data if head is None else head + data[33:], None, raw=raw),
        )
    else:
        im = _pil_open(data, channels, fast=fast)
        if im.mode == "YCbCr" and im.format == "JPEG":  # fast IDCT, chroma to upsample
            a, mode = _ycc_to_rgb(im), "RGB"
        else:
            a, mode = _pil_array(im)
        a = _to_channels(a, mode, channels)
        if bits == 16:
            return _widen(a, out)
    if out is not None and out.shape == a.shape and out.dtype == a.dtype:
        out[...] = a
        return out
    return a


def _widen(a: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """uint8 -> uint16 as decode_image(dtype=tf.uint16) converts a JPEG: v << 8."""
    if out is not None and out.shape == a.shape and out.dtype == np.uint16:
        np.left_shift(a, 8, out=out, dtype=np.uint16)
        return out
    return a.astype(np.uint16) << 8


def encode_image(img: np.ndarray, fmt: str, *, quality: int = 95) -> bytes:
    """One uint8 [h, w, c] (c 1, 3 or 4; or [h, w]) array -> JPEG or PNG bytes."""
    PIL = _pil()
    a = np.asarray(img)
    if a.dtype != np.uint8:
        raise ValueError(f"images to encode must be uint8, not {a.dtype}")
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] not in (3, 4)):
        raise ValueError(f"an image to encode is [h, w, 1 / 3 / 4], not {list(img.shape)}")
    buf = io.BytesIO()
    im = PIL.fromarray(np.ascontiguousarray(a))
    if fmt == "jpeg":
        if im.mode == "RGBA":
            raise ValueError("JPEG has no alpha channel; encode RGBA images as 'png'")
        im.save(buf, "JPEG", quality=int(quality))
    elif fmt == "png":
        im.save(buf, "PNG")
    else:
        raise ValueError(f"image format must be 'jpeg' or 'png', not {fmt!r}")
    return buf.getvalue()


def encode_images(images: np.ndarray, fmt: str, *, quality: int = 95) -> list[bytes]:
    """uint8 [n, h, w, c] -> n JPEG / PNG byte strings, encoded in threads (Pillow's
    encoders release the GIL)."""
    out: list[bytes] = [b""] * len(images)

    def one(i: int) -> None:
        out[i] = encode_image(images[i], fmt, quality=quality)

    if len(images) < 2 or CPUS < 2:
        for i in range(len(images)):
            one(i)
    else:
        list(executor("image").map(one, range(len(images))))
    return out
