"""Resizing as tf.image.resize (half-pixel centres, no antialias): "bilinear", "nearest" or
"area", for tn.Image(size=...).

Bilinear runs in the compiled core without the GIL (`_core.resize`); nearest and area are
NumPy over source rows and weights computed once per (input, output) length and cached.
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
    """fn(img uint8 [h, w, c], out [H, W, c]): img resized to size = (H, W) by method
    ("bilinear", "nearest", "area") into out, of dtype uint8 (rounded, clipped) or float32
    (multiplied by scale)."""
    H, W = size
    dtype, scale = np.dtype(dtype), np.float32(scale)

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
