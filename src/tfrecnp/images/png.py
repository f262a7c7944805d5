"""One PNG -> pixels as TensorFlow's decode_png gives them (libpng's transformations).

Pillow unfilters and inflates; this module reproduces what TensorFlow asks libpng to do on
top (`CommonInitDecode` in tensorflow/core/lib/png/png_io.cc), in libpng's order:

1. the samples as stored, 8 or 16 bits (a palette expanded, with its tRNS as alpha; grey of
   1, 2 or 4 bits scaled to 8);
2. alpha kept when an even channel count is asked for (or added as the maximum), dropped
   when an odd one is;
3. colour -> grey (`channels=1`) with `png_set_rgb_to_gray(1, 0.299, 0.587)`: coefficients
   9797, 19234, 3737 in 1/32768ths; at 8 bits truncated, at 16 bits rounded; when the file
   has a gamma (gAMA, or sRGB: 0.45455) libpng weighs linearised values through its gamma
   tables, rebuilt here from its formulas; grey -> RGB repeats;
4. 16 -> 8 bits keeps the high byte; 8 -> 16 bits is v * 257.

Pillow gives only the high byte of 16-bit colour samples: the full ones come from decoding
again with the tile's raw mode swapped (the same row bytes, so the same unfiltering):
"RGB;16L" reads the low bytes of big-endian samples. A grey + alpha image (4 bytes a pixel)
is read as the 8-bit RGBA image its IHDR would describe with colour type 6 and depth 8: the
same row bytes and filter stride, so Pillow hands its bytes over as they are.
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# png_set_rgb_to_gray(png, 1, 0.299, 0.587): red and green in 1/32768ths, truncated by
# png_set_rgb_to_gray_fixed; blue is what makes 32768.
GREY_RED, GREY_GREEN = 29900 * 32768 // 100000, 58700 * 32768 // 100000
GREY_BLUE = 32768 - GREY_RED - GREY_GREEN
FP_1 = 100000  # libpng's fixed-point 1.0
SRGB_GAMMA = 45455  # the file gamma an sRGB chunk stands for
GAMMA_THRESHOLD = 5000  # png_gamma_significant: within 5% of 1.0 is no correction
MAX_GAMMA_8 = 11  # significant bits libpng keeps of a 16-bit sample bound for 8 bits

__all__ = ["PngInfo", "decode_png", "png_info"]


class PngInfo:
    """What the chunks before the image data say: size, depth, colour type, gamma, sBIT."""

    __slots__ = ("color", "depth", "gamma", "height", "interlace", "sbit", "width")

    def __init__(self, width, height, depth, color, interlace, gamma, sbit):
        self.width, self.height, self.depth, self.color = width, height, depth, color
        self.interlace, self.gamma, self.sbit = interlace, gamma, sbit


def png_info(data: memoryview | bytes) -> PngInfo | None:
    """The IHDR and the gamma / sBIT chunks before the first IDAT, or None when the bytes
    do not start like a PNG (the decoder then says what is wrong)."""
    if bytes(data[:8]) != PNG_MAGIC or len(data) < 33 or bytes(data[12:16]) != b"IHDR":
        return None
    w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", bytes(data[16:29]))
    gamma, srgb, sbit = 0, False, 0
    pos, end = 33, len(data)
    while pos + 8 <= end:
        length = int.from_bytes(bytes(data[pos : pos + 4]), "big")
        kind = bytes(data[pos + 4 : pos + 8])
        if kind in (b"IDAT", b"IEND") or pos + 8 + length > end:
            break
        body = bytes(data[pos + 8 : pos + 8 + min(length, 4)])
        if kind == b"gAMA" and length == 4:
            value = int.from_bytes(body, "big")
            gamma = value if 16 <= value <= 625_000_000 else gamma  # libpng's range
        elif kind == b"sRGB":
            srgb = True
        elif kind == b"sBIT" and length:
            sbit = max(body[:3]) if color & 2 else body[0]
        pos += 12 + length
    return PngInfo(w, h, depth, color, interlace, SRGB_GAMMA if srgb else gamma, sbit)


def decode_png(
    info: PngInfo | None,
    channels: int | None,
    bits: int,
    samples: Callable[[], np.ndarray],
    load: Callable[[str | None, bytes | None], Any],
) -> np.ndarray:
    """One PNG -> [h, w, c] uint8 (bits=8) or uint16 (bits=16), as decode_png(channels=,
    dtype=). `samples()` gives the 8-bit samples as Pillow expands them (uint8 [h, w, k],
    k = 1..4); `load(raw_mode, head)` the Pillow image decoded with another raw mode (None:
    its own) or with its first 33 bytes (signature and IHDR) replaced by `head`; 16-bit
    samples are read from those here."""
    if info is not None and info.depth == 16:
        a = _samples16(load, info)
        depth = 16
    else:
        a, depth = samples(), 8
    k = a.shape[2]
    c = k if channels is None else channels
    out = a if c == k else _convert(a, c, depth, bits, info)
    if depth == 16 and bits == 8:
        return (out >> 8).astype(np.uint8)
    if depth == 8 and bits == 16:
        return out.astype(np.uint16) * np.uint16(257)
    return np.ascontiguousarray(out)


def _convert(a: np.ndarray, c: int, depth: int, bits: int, info: PngInfo | None) -> np.ndarray:
    """k samples a pixel -> c, in libpng's order: alpha, then grey <-> colour."""
    k = a.shape[2]
    colour, alpha = (a[:, :, : k - 1], a[:, :, k - 1 :]) if k in (2, 4) else (a, None)
    if c % 2 == 0 and alpha is None:
        alpha = np.full((*a.shape[:2], 1), (1 << depth) - 1, a.dtype)
    elif c % 2:
        alpha = None
    if c < 3 and colour.shape[2] == 3:
        colour = _rgb_to_grey(colour, depth, bits, info)
    elif c >= 3 and colour.shape[2] == 1:
        colour = np.repeat(colour, 3, axis=2)
    return colour if alpha is None else np.concatenate([colour, alpha], axis=2)


def _samples16(load: Callable[[str | None, bytes | None], Any], info: PngInfo) -> np.ndarray:
    """A 16-bit PNG's samples, uint16 [h, w, k] (see the module docstring)."""
    color = info.color
    if color == 0:  # Pillow keeps 16-bit grey whole (mode I;16 / I)
        a = np.asarray(load(None, None)).astype(np.uint32)
        return np.clip(a, 0, 65535).astype(np.uint16)[:, :, None]
    if color == 4:  # bytes: grey high, grey low, alpha high, alpha low
        ihdr = struct.pack(">IIBBBBB", info.width, info.height, 8, 6, 0, 0, info.interlace)
        head = PNG_MAGIC + _chunk(b"IHDR", ihdr)
        b = np.asarray(load(None, head)).astype(np.uint16)
        return np.stack([b[:, :, 0] << 8 | b[:, :, 1], b[:, :, 2] << 8 | b[:, :, 3]], axis=2)
    mode = "RGBA" if color == 6 else "RGB"
    hi = np.asarray(load(f"{mode};16B", None)).astype(np.uint16)
    return hi << 8 | np.asarray(load(f"{mode};16L", None))


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _rgb_to_grey(rgb: np.ndarray, depth: int, bits: int, info: PngInfo | None) -> np.ndarray:
    """libpng's png_do_rgb_to_gray on [h, w, 3] samples of `depth` bits."""
    r, g, b = (rgb[:, :, i].astype(np.uint32) for i in range(3))
    gamma = info.gamma if info is not None else 0
    equal = (r == g) & (r == b)
    if not _significant(gamma):  # no gamma tables: the plain weighted sum
        grey = GREY_RED * r + GREY_GREEN * g + GREY_BLUE * b
        if depth == 16:
            grey += 16384
        return (grey >> 15).astype(rgb.dtype)[:, :, None]
    screen = _reciprocal(gamma)
    to_linear, from_linear = _reciprocal(gamma), _reciprocal(screen)
    correction = _reciprocal2(screen, gamma)
    if depth == 8:
        to1, from1 = _table8(to_linear), _table8(from_linear)
        same = _table8(correction)
    else:
        shift = _gamma_shift(info, bits)
        to1, from1 = _table16(shift, to_linear), _table16(shift, from_linear)
        if bits == 8:
            same = _table16to8(shift, _reciprocal(correction))
        else:
            same = _table16(shift, correction)
        r, g, b = r >> shift, g >> shift, b >> shift
    linear = (GREY_RED * to1[r] + GREY_GREEN * to1[g] + GREY_BLUE * to1[b] + 16384) >> 15
    if depth == 16:
        linear >>= shift
    grey = np.where(equal, same[r], from1[linear])
    return grey.astype(rgb.dtype)[:, :, None]


def _significant(gamma: int) -> bool:
    """png_gamma_significant; 0 (no gamma chunk) means both file and screen are 1.0."""
    return gamma != 0 and abs(gamma - FP_1) > GAMMA_THRESHOLD


def _reciprocal(a: int) -> int:
    return math.floor(1e10 / a + 0.5)


def _reciprocal2(a: int, b: int) -> int:
    return math.floor(1e15 / a / b + 0.5)


def _gamma_shift(info: PngInfo, bits: int) -> int:
    """png_build_gamma_table's gamma_shift: the insignificant low bits of a 16-bit sample."""
    shift = 16 - info.sbit if 0 < info.sbit < 16 else 0
    if bits == 8:
        shift = max(shift, 16 - MAX_GAMMA_8)
    return min(shift, 8)


@lru_cache(maxsize=64)
def _table8(gamma: int) -> np.ndarray:
    """png_build_8bit_table: floor(255 * (v / 255) ** gamma + 0.5), 0 and 255 kept."""
    v = np.arange(256, dtype=np.float64)
    if not _significant(gamma):
        return np.arange(256, dtype=np.uint32)
    out = np.floor(255 * np.power(v / 255.0, gamma * 0.00001) + 0.5)
    out[0], out[255] = 0, 255
    return out.astype(np.uint32)


@lru_cache(maxsize=64)
def _table16(shift: int, gamma: int) -> np.ndarray:
    """png_build_16bit_table, indexed by the sample >> shift."""
    top = (1 << (16 - shift)) - 1
    ig = np.arange(top + 1, dtype=np.float64)
    if _significant(gamma):
        out = np.floor(65535.0 * np.power(ig * (1.0 / top), gamma * 0.00001) + 0.5)
    elif shift:
        out = (np.arange(top + 1, dtype=np.uint64) * 65535 + (1 << (15 - shift))) // top
    else:
        out = ig
    return out.astype(np.uint32)


@lru_cache(maxsize=64)
def _table16to8(shift: int, gamma: int) -> np.ndarray:
    """png_build_16to8_table (16-bit samples bound for 8 bits), indexed by sample >> shift."""
    top = (1 << (16 - shift)) - 1
    table = np.full(top + 1, 65535, np.uint32)
    last = 0
    for i in range(255):
        out = i * 257
        bound = _correct16(out + 128, gamma)
        bound = (bound * top + 32768) // 65535 + 1
        if bound > last:
            table[last:bound] = out
            last = bound
    return table


def _correct16(value: int, gamma: int) -> int:
    """png_gamma_16bit_correct."""
    if 0 < value < 65535:
        return math.floor(65535 * math.pow(value / 65535.0, gamma * 0.00001) + 0.5)
    return value
