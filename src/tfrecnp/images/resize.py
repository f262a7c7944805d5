"""Resizing as tf.image.resize (half-pixel centres, no antialias): "bilinear", "nearest" or
"area", for tn.Image(size=...).

Bilinear runs in the compiled core without the GIL (`_core.resize`) for uint8 images (and
in NumPy, in the same float order, for the rare uint16 ones); nearest and area are NumPy over
source rows and weights computed once per (input, output) length and cached.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._core import resize as _resize

__all__ = ["resizer"]


def resizer(
    size: tuple[int, int], method: str, dtype: str, scale: float
) -> Callable[[np.ndarray, np.ndarray], None]:
    """fn(img [h, w, c], out [H, W, c]): img resized to size = (H, W) by method
    ("bilinear", "nearest", "area") into out, of dtype uint8 or uint16 (img of the same
    dtype; rounded half to even, clipped) or float32 (img uint8, multiplied by scale)."""
    H, W = size
    dtype, scale = np.dtype(dtype), np.float32(scale)
    whole = dtype.kind == "u"

    def store(values: np.ndarray, out: np.ndarray) -> None:
        if whole:
            np.clip(np.rint(values, out=values), 0, np.iinfo(dtype).max, out=values)
            out[...] = values
        else:
            np.multiply(values, scale, out=out)

    def resize(img: np.ndarray, out: np.ndarray) -> None:
        h, w = img.shape[:2]
        if (h, w) == (H, W):
            store(img.astype(np.float32), out) if not whole else out.__setitem__(..., img)
            return
        if method == "nearest":
            ys, xs = _nearest(h, H), _nearest(w, W)
            picked = img[ys][:, xs]
            if whole:
                out[...] = picked
            else:
                np.multiply(picked, scale, out=out)
            return
        if method == "area":
            ay, ax = _area(h, H), _area(w, W)
            rows = np.tensordot(ay, img.astype(np.float32), axes=(1, 0))  # [H, w, c]
            values = np.einsum("xw,hwc->hxc", ax, rows)
        elif img.dtype != np.uint8:  # uint16: the core's formula and float order, in NumPy
            values = _bilinear_numpy(img, *_bilinear(h, H), *_bilinear(w, W))
        else:  # the core, without the GIL: one pass, no temporaries
            src = np.ascontiguousarray(img)
            if dtype == np.uint8:
                _resize.bilinear_u8(src, out, *_bilinear(h, H), *_bilinear(w, W))
            else:
                _resize.bilinear_f32(src, out, *_bilinear(h, H), *_bilinear(w, W), scale)
            return
        store(values, out)

    return resize


def _bilinear_numpy(img, y0, y1, fy, x0, x1, fx) -> np.ndarray:
    """top = tl + (tr - tl) * fx, bottom likewise, top + (bottom - top) * fy, in float32."""
    a = img.astype(np.float32)
    fx, fy = fx[None, :, None], fy[:, None, None]
    top = a[y0][:, x0] + (a[y0][:, x1] - a[y0][:, x0]) * fx
    bottom = a[y1][:, x0] + (a[y1][:, x1] - a[y1][:, x0]) * fx
    return top + (bottom - top) * fy


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
