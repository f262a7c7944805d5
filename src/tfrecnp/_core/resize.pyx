# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Bilinear resize of one image, as tf.image.resize(method="bilinear") computes it
(TensorFlow's resize_bilinear with half-pixel centres, no antialias).

uint8 [h, w, c] in; float32 [H, W, c] (times `scale`) or uint8 [H, W, c] (rounded half to
even, clipped) out. The caller gives, per output row and column, the two source rows /
columns and the weight of the second (`tfrecnp.example.image._bilinear`); they are
checked here against the image before the loop runs without the GIL. Per output value:
top = tl + (tr - tl) * fx, bottom = bl + (br - bl) * fx, out = top + (bottom - top) * fy,
in float32, TensorFlow's order.
"""

from libc.math cimport lrintf
from libc.stdint cimport uint8_t

ctypedef Py_ssize_t intp


cdef int _check(const uint8_t[:, :, ::1] src, Py_ssize_t H, Py_ssize_t W, Py_ssize_t c,
                const intp[::1] y0, const intp[::1] y1, const float[::1] fy,
                const intp[::1] x0, const intp[::1] x1, const float[::1] fx) except -1:
    cdef Py_ssize_t h = src.shape[0], w = src.shape[1], i
    if src.shape[2] != c:
        raise ValueError(f"the image has {src.shape[2]} channels, the output {c}")
    if y0.shape[0] != H or y1.shape[0] != H or fy.shape[0] != H:
        raise ValueError("row tables do not match the output height")
    if x0.shape[0] != W or x1.shape[0] != W or fx.shape[0] != W:
        raise ValueError("column tables do not match the output width")
    for i in range(H):
        if not (0 <= y0[i] < h and 0 <= y1[i] < h):
            raise ValueError(f"source row {y0[i]} / {y1[i]} outside the image's {h}")
    for i in range(W):
        if not (0 <= x0[i] < w and 0 <= x1[i] < w):
            raise ValueError(f"source column {x0[i]} / {x1[i]} outside the image's {w}")
    return 0


ctypedef fused out_t:
    float
    uint8_t


cdef void _bilinear(const uint8_t[:, :, ::1] src, out_t[:, :, ::1] out,
                    const intp[::1] y0, const intp[::1] y1, const float[::1] fy,
                    const intp[::1] x0, const intp[::1] x1, const float[::1] fx,
                    float scale) noexcept nogil:
    """The loop both outputs share; float32 values are scaled, uint8 ones rounded half to
    even and clipped (bilinear never leaves 0..255; the clip is for safety)."""
    cdef Py_ssize_t H = out.shape[0], W = out.shape[1], c = out.shape[2], i, j, k
    cdef float top, bottom, wx, wy, v
    cdef long r
    cdef const uint8_t *a
    cdef const uint8_t *b
    cdef const uint8_t *p
    cdef const uint8_t *q
    for i in range(H):
        wy = fy[i]
        for j in range(W):
            wx = fx[j]
            a = &src[y0[i], x0[j], 0]
            b = &src[y0[i], x1[j], 0]
            p = &src[y1[i], x0[j], 0]
            q = &src[y1[i], x1[j], 0]
            for k in range(c):
                top = <float>a[k] + (<float>b[k] - <float>a[k]) * wx
                bottom = <float>p[k] + (<float>q[k] - <float>p[k]) * wx
                v = top + (bottom - top) * wy
                if out_t is float:
                    out[i, j, k] = v * scale
                else:
                    r = lrintf(v)
                    out[i, j, k] = <uint8_t>(0 if r < 0 else (255 if r > 255 else r))


def bilinear_f32(const uint8_t[:, :, ::1] src, float[:, :, ::1] out,
                 const intp[::1] y0, const intp[::1] y1, const float[::1] fy,
                 const intp[::1] x0, const intp[::1] x1, const float[::1] fx,
                 float scale) -> None:
    """src -> out (float32), every value times scale."""
    _check(src, out.shape[0], out.shape[1], out.shape[2], y0, y1, fy, x0, x1, fx)
    with nogil:
        _bilinear(src, out, y0, y1, fy, x0, x1, fx, scale)


def bilinear_u8(const uint8_t[:, :, ::1] src, uint8_t[:, :, ::1] out,
                const intp[::1] y0, const intp[::1] y1, const float[::1] fy,
                const intp[::1] x0, const intp[::1] x1, const float[::1] fx) -> None:
    """src -> out (uint8, rounded half to even)."""
    _check(src, out.shape[0], out.shape[1], out.shape[2], y0, y1, fy, x0, x1, fx)
    with nogil:
        _bilinear(src, out, y0, y1, fy, x0, x1, fx, 1.0)
