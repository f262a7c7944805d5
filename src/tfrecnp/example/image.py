"""tn.Image: JPEG / PNG bytes -> one [n, h, w, c] array per batch, decoded in threads.

The decoder reads the feature as one bytes value per record (`decode_as`), then `finish`
decodes every image of the batch straight into one preallocated array. The work runs in a
thread pool; the decoders release the GIL, so the threads use every core:

- JPEG: simplejpeg (libjpeg-turbo) when installed, decoding into the batch's own buffer;
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

`size=(h, w)` resizes like tf.image.resize (half-pixel centres, no antialias):
"bilinear", "nearest" or "area"; `dtype="float32"` multiplies by `scale` (default 1/255,
like tf.image.convert_image_dtype). Without `size`, a batch whose images differ in size
comes back as an object array of [h, w, c] arrays, with a warning that says how to get one
array.
"""

from __future__ import annotations

import io
import itertools
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core import resize as _resize
from .._util.optional import require
from .._util.threads import CPUS, executor
from ..errors import ImageDecodeError, SchemaError
from .columns import BytesColumn
from .spec import KIND_BYTES, Feature, FixedLen, dtype_name, register_feature_type

__all__ = [
    "Image",
    "ImageDecodeError",
    "decode_images",
    "encode_image",
    "encode_images",
    "image_format",
]

RESIZE_METHODS = ("bilinear", "nearest", "area")
IMAGE_DTYPES = ("uint8", "float32")
PIECES_PER_THREAD = 4
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# The most pixels one image may claim: Pillow's own decompression-bomb limit (twice its
# warning level). A header is a few bytes; without a limit it could ask for any allocation.
MAX_IMAGE_PIXELS = 2 * 89_478_485
JPEG_MAGIC = b"\xff\xd8\xff"
PNG_GREY = (9798, 19235, 3735)  # 0.299, 0.587, 0.114 in 1/32768ths, as libpng uses them
CORRUPT_HINT = (
    "re-encode the image, or pass on_error='skip' to drop records whose images do not decode"
)

_simplejpeg: Any = None  # the module, False when it is not installed


def image_format(data: bytes | memoryview | np.ndarray) -> str | None:
    """ "jpeg", "png", or None, from the first bytes."""
    head = bytes(data[:8])
    if head.startswith(JPEG_MAGIC):
        return "jpeg"
    if head == PNG_MAGIC:
        return "png"
    return None


@register_feature_type
class Image(Feature):
    """An encoded image (JPEG, PNG) per record -> an ndarray [N, h, w, channels].

    channels: 1, 3 or 4 (converted like tf.io.decode_jpeg / decode_png), or None to keep
    each image's own (a batch must agree). size: (h, w) to resize every image, else all
    images of a batch must share a size to make one array. resize: "bilinear", "nearest"
    or "area", as tf.image.resize. dtype: "uint8" or "float32"; scale: what float pixels
    are multiplied by (default 1/255: [0, 1], like tf.image.convert_image_dtype).
    """

    type_name = "Image"

    def __init__(
        self,
        channels: int | None = 3,
        size: tuple[int, int] | None = None,
        *,
        resize: str = "bilinear",
        dtype: str = "uint8",
        scale: float | None = None,
    ):
        if channels is not None and channels not in (1, 3, 4):
            raise ValueError(f"Image channels must be 1, 3, 4 or None, not {channels!r}")
        if size is not None:
            try:
                h, w = (int(d) for d in size)
            except (TypeError, ValueError):
                raise ValueError(f"Image size must be (height, width), not {size!r}") from None
            if h <= 0 or w <= 0:
                raise ValueError(f"Image size must be positive, not {size!r}")
            size = (h, w)
        if resize not in RESIZE_METHODS:
            raise ValueError(f"Image resize must be one of {RESIZE_METHODS}, not {resize!r}")
        dtype = dtype_name(dtype)
        if dtype not in IMAGE_DTYPES:
            raise ValueError(f"Image dtype must be 'uint8' or 'float32', not {dtype!r}")
        if scale is not None and dtype != "float32":
            raise ValueError("Image scale applies to dtype='float32' only")
        self.channels = channels
        self.size = size
        self.resize = resize
        self.dtype = dtype
        self.scale = None if scale is None else float(scale)

    @property
    def kind(self) -> int:
        return KIND_BYTES

    def decode_as(self) -> Feature:
        return FixedLen((), "bytes")

    def finish(
        self,
        column: Any,
        *,
        name: str = "image",
        where: Callable[[int], tuple[str, int]] | None = None,
    ) -> Any:
        return decode_images(column, self, name=name, where=where)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"type": "Image", "channels": self.channels}
        if self.size is not None:
            out["size"] = list(self.size)
            out["resize"] = self.resize
        out["dtype"] = self.dtype
        if self.scale is not None:
            out["scale"] = self.scale
        return out

    @classmethod
    def from_json(cls, obj: dict) -> Image:
        return cls(
            obj.get("channels", 3),
            obj.get("size"),
            resize=obj.get("resize", "bilinear"),
            dtype=obj.get("dtype", "uint8"),
            scale=obj.get("scale"),
        )

    def spell(self) -> str:
        args = [] if self.channels == 3 else [f"channels={self.channels!r}"]
        if self.size is not None:
            args.append(f"size={self.size!r}")
            if self.resize != "bilinear":
                args.append(f"resize={self.resize!r}")
        if self.dtype != "uint8":
            args.append(f"dtype={self.dtype!r}")
        if self.scale is not None:
            args.append(f"scale={self.scale!r}")
        return f"tn.Image({', '.join(args)})"

    @property
    def out_scale(self) -> float:
        return 1.0 / 255.0 if self.scale is None else self.scale


# --- decoding a batch ---------------------------------------------------------------------


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


class _Failure(Exception):
    """An image that does not decode (reason) or has the wrong channel count (schema)."""

    def __init__(self, reason: str, schema: bool = False):
        super().__init__(reason)
        self.schema = schema


def _header(data: memoryview) -> tuple[int, int, int] | None:
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
    """(h, w) as a header claims them, refused beyond MAX_IMAGE_PIXELS (raises _Failure)."""
    if h * w > MAX_IMAGE_PIXELS:
        raise _Failure(
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
        raise _Failure(_what(data, e)) from None
    except PIL.DecompressionBombError as e:
        raise _Failure(str(e)) from None
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
    `out` is returned). Raises _Failure."""
    sj = _sj()
    if sj and bytes(data[:3]) == JPEG_MAGIC:
        try:
            h, w, space, _ = sj.decode_jpeg_header(data)
        except ValueError as e:
            raise _Failure(_what(data, e)) from None
        _plausible(h, w)
        if space not in ("CMYK", "YCCK"):
            c = channels if channels is not None else (1 if space == "Gray" else 3)
            target = out if out is not None and out.shape == (h, w, c) else None
            try:
                return sj.decode_jpeg(data, _SJ_SPACE[c], buffer=target).reshape(h, w, c)
            except ValueError as e:
                raise _Failure(_what(data, e)) from None
    png = bytes(data[:8]) == PNG_MAGIC
    if png:
        _header(data)  # its claimed size, before Pillow allocates for it
    a, mode = _pil_array(_pil_open(data, channels))
    a = _to_channels(a, mode, channels, png)
    if out is not None and out.shape == a.shape:
        out[...] = a
        return out
    return a


def decode_images(
    column: BytesColumn,
    spec: Image,
    *,
    name: str = "image",
    where: Callable[[int], tuple[str, int]] | None = None,
) -> np.ndarray:
    """Every image of a bytes column -> [n, h, w, c] (or an object array of [h, w, c]
    arrays when sizes differ and spec.size is None)."""
    data, offsets = column.data, column.offsets
    n = len(column)
    view = memoryview(data)
    dtype = np.dtype(spec.dtype)

    def blob(i: int) -> memoryview:
        return view[int(offsets[i]) : int(offsets[i + 1])]

    failures: dict[int, _Failure] = {}
    if spec.size is not None:
        h, w = spec.size
        c = spec.channels
        if c is None:
            first = _headers(blob, 1, failures)[0] if n else None
            c = _channels_of(first, blob(0), failures, 0) if n else 3
        out = np.empty((n, h, w, c), dtype)
        resize = _resizer(spec)

        def one(i: int) -> None:
            img = decode_image(blob(i), spec.channels)
            if img.shape[2] != c:
                raise _Failure(_channel_message(img.shape[2], c, spec), schema=True)
            resize(img, out[i])

    else:
        heads = _headers(blob, n, failures)
        if failures:
            _raise(failures, spec, name, where)
        if any(hd is None for hd in heads):  # a format we cannot size up front: decode all
            images: list = [None] * n
            _run(lambda i: images.__setitem__(i, decode_image(blob(i), spec.channels)), n, failures)
            heads = [None if im is None else im.shape for im in images]
            ok = [i for i in range(n) if i not in failures]
            shapes = {images[i].shape for i in ok}
            if failures:
                _raise(failures, spec, name, where)
            if len(shapes) > 1:
                return _uneven([images[i] for i in range(n)], spec, shapes)
            out = np.stack(images).astype(dtype, copy=False) if n else _empty(spec)
            if dtype == np.float32:
                out *= np.float32(spec.out_scale)
            return out
        shapes = {(hd[0], hd[1], spec.channels or hd[2]) for hd in heads}
        if len(shapes) > 1 and len({s[:2] for s in shapes}) == 1:  # channels=None, mixed
            c = heads[0][2]
            bad = next(i for i, hd in enumerate(heads) if hd[2] != c)
            _raise(
                {bad: _Failure(_channel_message(heads[bad][2], c, spec), True)}, spec, name, where
            )
        if len(shapes) > 1:
            sizes = {s[:2] for s in shapes}
            images = [None] * n
            _run(lambda i: images.__setitem__(i, _finish_one(blob(i), spec)), n, failures)
            if failures:
                _raise(failures, spec, name, where)
            shapes = {im.shape for im in images}
            if len(sizes) > 1 or len(shapes) > 1:
                return _uneven(images, spec, shapes)
        if not n:
            return _empty(spec)
        (h, w, c) = next(iter(shapes))
        out = np.empty((n, h, w, c), dtype)
        scratch = threading.local()

        def one(i: int) -> None:
            target = out[i]
            if dtype == np.uint8:
                img = decode_image(blob(i), spec.channels, target)
            else:
                buf = getattr(scratch, "buf", None)
                if buf is None or buf.shape != (h, w, c):
                    buf = scratch.buf = np.empty((h, w, c), np.uint8)
                img = decode_image(blob(i), spec.channels, buf)
            if img.shape != (h, w, c):
                if img.shape[2] != c:
                    raise _Failure(_channel_message(img.shape[2], c, spec), schema=True)
                raise _Failure(
                    f"an image of {img.shape[1]}x{img.shape[0]} pixels where its "
                    f"header says {w}x{h}"
                )
            if dtype == np.uint8:
                if img.base is not target.base or img.ctypes.data != target.ctypes.data:
                    target[...] = img
            else:
                np.multiply(img, np.float32(spec.out_scale), out=target)

    _run(one, n, failures)
    if failures:
        _raise(failures, spec, name, where)
    return out


def _finish_one(data: memoryview, spec: Image) -> np.ndarray:
    img = decode_image(data, spec.channels)
    if spec.dtype == "float32":
        return img.astype(np.float32) * np.float32(spec.out_scale)
    return img


def _headers(blob: Callable[[int], memoryview], n: int, failures: dict) -> list:
    """Each image's header, (h, w, c) or None; implausible sizes go to failures."""
    heads: list = [None] * n
    for i in range(n):
        try:
            heads[i] = _header(blob(i))
        except _Failure as e:
            failures[i] = e
    return heads


def _channels_of(head, data, failures, i) -> int:
    if head is not None:
        return head[2]
    try:
        return decode_image(data, None).shape[2]
    except _Failure as e:
        failures[i] = e
        return 3


def _channel_message(found: int, expected: int, spec: Image) -> str:
    fixed = _respelled(spec, channels=found if found in (1, 3, 4) else 3)
    return (
        f"an image with {found} channel{'s' if found != 1 else ''} where the batch has "
        f"{expected}; give {fixed} or another fixed channel count to convert every image"
    )


def _respelled(spec: Image, **changes: Any) -> str:
    """The code of spec with some arguments changed: hints print code that runs."""
    args = {"channels": spec.channels, "size": spec.size, "resize": spec.resize}
    args |= {"dtype": spec.dtype, "scale": spec.scale} | changes
    return Image(**args).spell()


def _empty(spec: Image) -> np.ndarray:
    h, w = spec.size or (0, 0)
    return np.empty((0, h, w, spec.channels or 3), spec.dtype)


def _uneven(images: list, spec: Image, shapes: set) -> np.ndarray:
    out = np.empty(len(images), object)
    out[:] = [
        im
        if spec.dtype == "uint8" or im.dtype == np.float32
        else im.astype(np.float32) * np.float32(spec.out_scale)
        for im in images
    ]
    listed = ", ".join(str(list(s)) for s in sorted(shapes)[:4])
    more = ", ..." if len(shapes) > 4 else ""
    h, w = images[0].shape[:2]
    warnings.warn(
        f"images of a batch differ in size ({listed}{more}); they come back as an object "
        f"array of [h, w, c] arrays. Give {_respelled(spec, size=(h, w))} (or another size) "
        "to resize them into one [n, h, w, c] array",
        stacklevel=4,
    )
    return out


def _run(fn: Callable[[int], Any], n: int, failures: dict[int, _Failure]) -> None:
    """fn(i) for every i in threads (pieces of consecutive rows); failures collected."""

    def piece(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            try:
                fn(i)
            except _Failure as e:
                failures[i] = e

    workers = CPUS
    pieces = min(n, workers * PIECES_PER_THREAD) if workers > 1 and n > 1 else 1
    if pieces <= 1:
        piece(0, n)
        return
    bounds = np.linspace(0, n, pieces + 1).astype(int).tolist()
    futures = [executor("image").submit(piece, a, b) for a, b in itertools.pairwise(bounds)]
    for f in futures:
        f.result()


def _raise(failures: dict[int, _Failure], spec: Image, name: str, where) -> None:
    rows = sorted(failures)
    first = failures[rows[0]]
    path, record = where(rows[0]) if where is not None else ("<memory>", rows[0])
    more = f" (and {len(rows) - 1} more in this batch)" if len(rows) > 1 else ""
    reason = f"feature {name!r} holds {first}{more}"
    if first.schema:
        raise SchemaError(f"{reason}, at {path} record {record}")
    error = ImageDecodeError(reason, path=path, record=record, hint=CORRUPT_HINT)
    error.rows = rows
    error.reasons = {r: f"feature {name!r} holds {failures[r]}" for r in rows}
    error.feature = name
    raise error


# --- resizing, as tf.image.resize -----------------------------------------------------


def _resizer(spec: Image) -> Callable[[np.ndarray, np.ndarray], None]:
    """fn(img uint8 [h, w, c], out [H, W, c]) for spec.size / resize / dtype / scale."""
    H, W = spec.size  # type: ignore[misc]
    method, dtype, scale = spec.resize, np.dtype(spec.dtype), np.float32(spec.out_scale)

    def store(values: np.ndarray, out: np.ndarray) -> None:
        if dtype == np.uint8:
            np.clip(np.rint(values, out=values), 0, 255, out=values)
            out[...] = values
        else:
            np.multiply(values, scale, out=out)

    def resize(img: np.ndarray, out: np.ndarray) -> None:
        h, w = img.shape[:2]
        if (h, w) == (H, W):
            store(img.astype(np.float32), out) if dtype != np.uint8 else out.__setitem__(..., img)
            return
        if method == "nearest":
            ys, xs = _nearest(h, H), _nearest(w, W)
            picked = img[ys][:, xs]
            if dtype == np.uint8:
                out[...] = picked
            else:
                np.multiply(picked, scale, out=out)
            return
        if method == "area":
            ay, ax = _area(h, H), _area(w, W)
            rows = np.tensordot(ay, img.astype(np.float32), axes=(1, 0))  # [H, w, c]
            values = np.einsum("xw,hwc->hxc", ax, rows)
        else:  # the core, without the GIL: one pass, no temporaries
            src = np.ascontiguousarray(img)
            if dtype == np.uint8:
                _resize.bilinear_u8(src, out, *_bilinear(h, H), *_bilinear(w, W))
            else:
                _resize.bilinear_f32(src, out, *_bilinear(h, H), *_bilinear(w, W), scale)
            return
        store(values, out)

    return resize


_cache: dict[tuple, Any] = {}


def _cached(fn: Callable) -> Callable:
    def wrapped(n_in: int, n_out: int) -> Any:
        key = (fn.__name__, n_in, n_out)
        hit = _cache.get(key)
        if hit is None:
            hit = _cache[key] = fn(n_in, n_out)
        return hit

    wrapped.__name__ = fn.__name__
    return wrapped


@_cached
def _bilinear(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TensorFlow's resize_bilinear(half_pixel_centers=True) source rows and weights."""
    scale = np.float32(n_in / n_out)
    pos = (np.arange(n_out, dtype=np.float32) + np.float32(0.5)) * scale - np.float32(0.5)
    floor = np.floor(pos)
    lo = np.maximum(floor, 0).astype(np.intp)
    hi = np.minimum(np.ceil(pos), n_in - 1).astype(np.intp)
    return lo, hi, (pos - floor).astype(np.float32)


@_cached
def _nearest(n_in: int, n_out: int) -> np.ndarray:
    """TensorFlow's resize_nearest_neighbor(half_pixel_centers=True) source rows."""
    scale = np.float32(n_in / n_out)
    pos = np.floor((np.arange(n_out, dtype=np.float32) + np.float32(0.5)) * scale)
    return np.minimum(pos, n_in - 1).astype(np.intp)


@_cached
def _area(n_in: int, n_out: int) -> np.ndarray:
    """TensorFlow's resize_area weights: each output pixel averages the input pixels its
    box [i * s, (i + 1) * s) covers, by the fraction covered."""
    s = n_in / n_out
    out = np.zeros((n_out, n_in), np.float64)
    for i in range(n_out):
        a, b = i * s, (i + 1) * s
        for j in range(int(np.floor(a)), min(int(np.ceil(b)), n_in)):
            out[i, j] = min(b, j + 1) - max(a, j)
    return (out / s).astype(np.float32)


# --- encoding (tn.write's encoding={"image": "jpeg"}) ------------------------------------


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
