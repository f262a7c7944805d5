"""One image's bytes <-> pixels: the JPEG / PNG decoders, header sniffing, and encoding.

- JPEG: simplejpeg (libjpeg-turbo) when installed, decoding into the caller's buffer;
  Pillow otherwise, and for CMYK / YCCK JPEGs. simplejpeg is the faster (measured:
  benchmarks/CONSTANTS.md, example.image).
- PNG (and whatever else Pillow opens, e.g. GIF / BMP): Pillow.

Pixels follow TensorFlow's decoders: `channels` converts like decode_jpeg / decode_png
(`channels=`). A JPEG becomes grey as libjpeg's luma; a PNG with weights 0.299, 0.587,
0.114 (libpng applies them to gamma-decoded values, so TensorFlow's grey differs by up to
1). Grey -> RGB repeats, alpha is dropped or added as 255, a palette expands (with its
transparency as alpha), 16-bit samples keep their high byte, and CMYK (Adobe, inverted)
becomes RGB as c * k // 255. JPEG pixels are libjpeg-turbo's accurate integer IDCT, equal
to TensorFlow's decode_jpeg with dct_method="INTEGER_ACCURATE".

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
PNG_GREY = (9798, 19235, 3735)  # 0.299, 0.587, 0.114 in 1/32768ths, as libpng uses them

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


def _pil_open(data: memoryview, channels: int | None) -> Any:
    PIL = _pil()
    try:
        im = PIL.open(io.BytesIO(data))
        if im.format == "JPEG" and channels == 1 and im.mode in ("RGB", "YCbCr"):
            im.draft("L", im.size)  # libjpeg's own luma, as TensorFlow's decode_jpeg gives
        im.load()
    except (OSError, ValueError, SyntaxError, EOFError, IndexError, KeyError) as e:
        raise _ImageFailure(_what(data, e)) from None
    except PIL.DecompressionBombError as e:
        raise _ImageFailure(str(e)) from None
    return im


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


def _to_channels(a: np.ndarray, mode: str, channels: int | None, png: bool) -> np.ndarray:
    """Convert like TensorFlow's decoders do (see the module docstring)."""
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
        if not png:  # a JPEG decoded by Pillow in draft("L") is already luma
            w = np.array([299, 587, 114], np.uint32)
            return ((colour.astype(np.uint32) @ w + 500) // 1000).astype(np.uint8)[:, :, None]
        r, g, b = (colour[:, :, i].astype(np.uint32) for i in range(3))
        grey = (PNG_GREY[0] * r + PNG_GREY[1] * g + PNG_GREY[2] * b + 16384) >> 15
        return grey.astype(np.uint8)[:, :, None]
    if colour.shape[2] == 1:
        colour = np.repeat(colour, 3, axis=2)
    if channels == 3:
        return colour
    alpha = a[:, :, k - 1 : k] if k in (2, 4) else np.full((*a.shape[:2], 1), 255, np.uint8)
    return np.concatenate([colour, alpha], axis=2)


_SJ_SPACE = {1: "GRAY", 3: "RGB", 4: "RGBA"}


def decode_image(data: memoryview, channels: int | None, out: np.ndarray | None = None):
    """One image -> uint8 [h, w, c]; decoded into `out` when it is given and fits (then
    `out` is returned). Raises _ImageFailure."""
    sj = _sj()
    if sj and bytes(data[:3]) == JPEG_MAGIC:
        try:
            h, w, space, _ = sj.decode_jpeg_header(data)
        except ValueError as e:
            raise _ImageFailure(_what(data, e)) from None
        _plausible(h, w)
        if space not in ("CMYK", "YCCK"):
            c = channels if channels is not None else (1 if space == "Gray" else 3)
            target = out if out is not None and out.shape == (h, w, c) else None
            try:
                return sj.decode_jpeg(data, _SJ_SPACE[c], buffer=target).reshape(h, w, c)
            except ValueError as e:
                raise _ImageFailure(_what(data, e)) from None
    png = bytes(data[:8]) == PNG_MAGIC
    if png:
        read_header(data)  # its claimed size, before Pillow allocates for it
    a, mode = _pil_array(_pil_open(data, channels))
    a = _to_channels(a, mode, channels, png)
    if out is not None and out.shape == a.shape:
        out[...] = a
        return out
    return a


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
