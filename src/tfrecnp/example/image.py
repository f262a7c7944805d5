"""tn.Image: JPEG / PNG bytes -> one [n, h, w, c] array per batch, decoded in threads.

The decoder reads the feature as one bytes value per record (`decode_as`), then `finish`
decodes every image of the batch straight into one preallocated array. The work runs in a
thread pool; the decoders release the GIL, so the threads use every core. One image's
decoders, header sniffing and encoding are `tfrecnp.images.codecs` (pixels as TensorFlow's
decode_jpeg / decode_png give them); the resize is `tfrecnp.images.resize`.

`size=(h, w)` resizes like tf.image.resize (half-pixel centres, no antialias):
"bilinear", "nearest" or "area"; `dtype="float32"` multiplies by `scale` (default 1/255,
like tf.image.convert_image_dtype); `dtype="uint16"` keeps a 16-bit PNG's samples whole.
`dct_method` is decode_jpeg's. Without `size`, a batch whose images differ in size comes
back as an object array of [h, w, c] arrays, with a warning that says how to get one array.
"""

from __future__ import annotations

import itertools
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .._util.threads import CPUS, executor
from ..errors import ImageDecodeError, SchemaError
from ..images.codecs import (
    DCT_METHODS,
    _ImageFailure,
    decode_image,
    encode_image,
    encode_images,
    image_format,
    read_header,
)
from ..images.resize import resizer
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
IMAGE_DTYPES = ("uint8", "uint16", "float32")
PIECES_PER_THREAD = 4
CORRUPT_HINT = (
    "re-encode the image, or pass on_error='skip' to drop records whose images do not decode"
)


@register_feature_type
class Image(Feature):
    """An encoded image (JPEG, PNG) per record -> an ndarray [N, h, w, channels].

    Pixels equal TensorFlow's decoders: tf.io.decode_image / decode_jpeg / decode_png
    with the same channels, dct_method and dtype.

    Parameters
    ----------
    channels : 1, 3 or 4 (converted like tf.io.decode_jpeg / decode_png), or None to keep
        each image's own, as decode_image(channels=0) does (a grey + alpha PNG gives 2; a
        batch must agree).
    size : (h, w) to resize every image, else all images of a batch must share a size to
        make one array.
    resize : "bilinear", "nearest" or "area", as tf.image.resize.
    dtype : "uint8"; "uint16", as decode_png(dtype=tf.uint16) / decode_image(dtype=
        tf.uint16): a 16-bit PNG's samples whole, an 8-bit PNG's times 257, a JPEG's
        shifted left by 8; or "float32", the uint8 pixels times `scale`.
    scale : what float pixels are multiplied by (default 1/255: [0, 1], like
        tf.image.convert_image_dtype).
    dct_method : JPEG's IDCT, as decode_jpeg's. "INTEGER_FAST" (the default) is what
        decode_jpeg without dct_method, decode_image, Keras' image_dataset_from_directory
        and tensorflow-datasets (tfds.as_numpy) give, so data read here equals what a
        TensorFlow pipeline fed a model. "INTEGER_ACCURATE" equals
        decode_jpeg(dct_method="INTEGER_ACCURATE") and what Pillow, OpenCV and simplejpeg
        give by default; the two differ by a few levels.
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
        dct_method: str = "INTEGER_FAST",
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
            raise ValueError(f"Image dtype must be one of {IMAGE_DTYPES}, not {dtype!r}")
        if scale is not None and dtype != "float32":
            raise ValueError("Image scale applies to dtype='float32' only")
        if dct_method not in DCT_METHODS:
            raise ValueError(
                f"Image dct_method must be one of {DCT_METHODS} (tf.io.decode_jpeg's), "
                f"not {dct_method!r}"
            )
        self.dct_method = dct_method
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
        if self.dct_method != DCT_METHODS[0]:
            out["dct_method"] = self.dct_method
        return out

    @classmethod
    def from_json(cls, obj: dict) -> Image:
        return cls(
            obj.get("channels", 3),
            obj.get("size"),
            resize=obj.get("resize", "bilinear"),
            dtype=obj.get("dtype", "uint8"),
            scale=obj.get("scale"),
            dct_method=obj.get("dct_method", DCT_METHODS[0]),
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
        if self.dct_method != DCT_METHODS[0]:
            args.append(f"dct_method={self.dct_method!r}")
        return f"tn.Image({', '.join(args)})"

    @property
    def out_scale(self) -> float:
        return 1.0 / 255.0 if self.scale is None else self.scale


# --- decoding a batch ---------------------------------------------------------------------


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
    bits = 16 if dtype == np.uint16 else 8

    def blob(i: int) -> memoryview:
        return view[int(offsets[i]) : int(offsets[i + 1])]

    def decode(i: int, into: np.ndarray | None = None) -> np.ndarray:
        return decode_image(blob(i), spec.channels, into, dct_method=spec.dct_method, bits=bits)

    failures: dict[int, _ImageFailure] = {}
    if spec.size is not None:
        h, w = spec.size
        c = spec.channels
        if c is None:
            first = _headers(blob, 1, failures)[0] if n else None
            c = _channels_of(first, decode, failures, 0) if n else 3
        out = np.empty((n, h, w, c), dtype)
        resize = resizer(spec.size, spec.resize, spec.dtype, spec.out_scale)

        def one(i: int) -> None:
            img = decode(i)
            if img.shape[2] != c:
                raise _ImageFailure(_channel_message(img.shape[2], c, spec), schema=True)
            resize(img, out[i])

    else:
        heads = _headers(blob, n, failures)
        if failures:
            _raise(failures, spec, name, where)
        if any(hd is None for hd in heads):  # a format we cannot size up front: decode all
            images: list = [None] * n
            _run(lambda i: images.__setitem__(i, decode(i)), n, failures)
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
                {bad: _ImageFailure(_channel_message(heads[bad][2], c, spec), True)},
                spec,
                name,
                where,
            )
        if len(shapes) > 1:
            sizes = {s[:2] for s in shapes}
            images = [None] * n
            _run(lambda i: images.__setitem__(i, _finish_one(decode(i), spec)), n, failures)
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
            if dtype != np.float32:
                img = decode(i, target)
            else:
                buf = getattr(scratch, "buf", None)
                if buf is None or buf.shape != (h, w, c):
                    buf = scratch.buf = np.empty((h, w, c), np.uint8)
                img = decode(i, buf)
            if img.shape != (h, w, c):
                if img.shape[2] != c:
                    raise _ImageFailure(_channel_message(img.shape[2], c, spec), schema=True)
                raise _ImageFailure(
                    f"an image of {img.shape[1]}x{img.shape[0]} pixels where its "
                    f"header says {w}x{h}"
                )
            if dtype != np.float32:
                if img.base is not target.base or img.ctypes.data != target.ctypes.data:
                    target[...] = img
            else:
                np.multiply(img, np.float32(spec.out_scale), out=target)

    _run(one, n, failures)
    if failures:
        _raise(failures, spec, name, where)
    return out


def _finish_one(img: np.ndarray, spec: Image) -> np.ndarray:
    if spec.dtype == "float32":
        return img.astype(np.float32) * np.float32(spec.out_scale)
    return img


def _headers(blob: Callable[[int], memoryview], n: int, failures: dict) -> list:
    """Each image's header, (h, w, c) or None; implausible sizes go to failures."""
    heads: list = [None] * n
    for i in range(n):
        try:
            heads[i] = read_header(blob(i))
        except _ImageFailure as e:
            failures[i] = e
    return heads


def _channels_of(head, decode, failures, i) -> int:
    if head is not None:
        return head[2]
    try:
        return decode(i).shape[2]
    except _ImageFailure as e:
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
    args |= {"dtype": spec.dtype, "scale": spec.scale, "dct_method": spec.dct_method} | changes
    return Image(**args).spell()


def _empty(spec: Image) -> np.ndarray:
    h, w = spec.size or (0, 0)
    return np.empty((0, h, w, spec.channels or 3), spec.dtype)


def _uneven(images: list, spec: Image, shapes: set) -> np.ndarray:
    out = np.empty(len(images), object)
    out[:] = [
        im
        if spec.dtype != "float32" or im.dtype == np.float32
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


def _run(fn: Callable[[int], Any], n: int, failures: dict[int, _ImageFailure]) -> None:
    """fn(i) for every i in threads (pieces of consecutive rows); failures collected."""

    def piece(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            try:
                fn(i)
            except _ImageFailure as e:
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


def _raise(failures: dict[int, _ImageFailure], spec: Image, name: str, where) -> None:
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
