"""`tfrecnp demo`: the main job end to end on a built-in sample, saying what it did and how fast.

It writes a TFRecord file of tf.train.Example records (an encoded image, a label, a list of
tokens, a raw float32 embedding), counts it from its frame headers, reads it back checking
every CRC and comparing every value with what was written, converts it to a folder of .npy
files, loads that memory-mapped and compares again, and streams shuffled, padded batches.
Needs only NumPy: images are JPEG when Pillow is installed, PNG (written here) otherwise.
"""

from __future__ import annotations

import io
import os
import struct
import time
import zlib
from collections.abc import Callable

import numpy as np

from .._util.text import format_count, format_size
from ..arrays.load import load
from ..data.opener import open as open_dataset
from ..example.columns import BytesColumn, Ragged
from ..example.write import write
from ..format.index import index_path
from ..format.reader import scan_file

__all__ = ["encode_png", "run_demo", "sample_columns"]

IMAGE_SIZE = 32
DISTINCT_IMAGES = 64
MAX_TOKENS = 48
EMBEDDING = 16


def encode_png(pixels: np.ndarray) -> bytes:
    """An RGB uint8 [h, w, 3] image as PNG bytes (8-bit truecolor, no filtering)."""
    h, w, _ = pixels.shape
    rows = np.zeros((h, 1 + 3 * w), np.uint8)  # each row: filter byte 0, then its pixels
    rows[:, 1:] = pixels.reshape(h, 3 * w)

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
        + chunk(b"IEND", b"")
    )


def _images(rng: np.random.Generator) -> tuple[list[bytes], str]:
    """DISTINCT_IMAGES small pictures (4 x 4 blocks of colour), encoded, and the format."""
    try:
        from PIL import Image
    except ImportError:
        Image = None
    block = IMAGE_SIZE // 4
    out = []
    for _ in range(DISTINCT_IMAGES):
        colors = rng.integers(0, 256, (4, 4, 3))
        pixels = np.kron(colors, np.ones((block, block, 1), np.int64)).astype(np.uint8)
        if Image is not None:
            buf = io.BytesIO()
            Image.fromarray(pixels).save(buf, "JPEG", quality=90)
            out.append(buf.getvalue())
        else:
            out.append(encode_png(pixels))
    return out, "JPEG" if Image is not None else "PNG"


def sample_columns(records: int, seed: int = 0) -> tuple[dict, str]:
    """The demo's columns ({image, label, tokens, embedding}) and the image format."""
    rng = np.random.default_rng(seed)
    images, kind = _images(rng)
    labels = rng.integers(0, DISTINCT_IMAGES, records)
    lengths = rng.integers(0, MAX_TOKENS, records)
    columns = {
        "image": BytesColumn.from_list([images[i] for i in labels.tolist()]),
        "label": labels,
        "tokens": Ragged.from_lengths(rng.integers(1, 30_000, int(lengths.sum())), lengths),
        "embedding": rng.standard_normal((records, EMBEDDING), dtype=np.float32),
    }
    return columns, kind


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return bool(np.array_equal(np.asarray(a), b))
    return bool(a == b)


def run_demo(out: str, records: int, say: Callable[[str], object] = print) -> int:
    """Run the demo into the folder `out`, telling each step to `say`; returns the exit
    status (0 when all matched)."""
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "sample.tfrecord")
    columns, kind = sample_columns(records)

    if os.path.exists(index_path(path)):  # a sidecar of an earlier sample would be stale
        os.remove(index_path(path))
    started = time.perf_counter()
    result = write(path, columns, encoding={"embedding": "raw"}, progress=False)
    wrote = time.perf_counter() - started
    size = os.path.getsize(path)
    say(
        f"wrote    {path}: {format_count(records)} records, {format_size(size)} in "
        f"{wrote:.3f}s ({IMAGE_SIZE}x{IMAGE_SIZE} {kind} images, labels, lists of 0-"
        f"{MAX_TOKENS - 1} tokens, {EMBEDDING} float32s as raw bytes)"
    )

    started = time.perf_counter()
    count = len(scan_file(path, use_index=False))
    say(
        f"counted  {format_count(count)} records from frame headers in "
        f"{time.perf_counter() - started:.3f}s"
    )

    ds = open_dataset(path, result.spec)
    started = time.perf_counter()
    decoded = ds.to_numpy()
    checked = time.perf_counter() - started
    same = all(_same(decoded[name], col) for name, col in columns.items())
    say(
        f"verified every CRC and payload in {checked:.3f}s ({size / checked / 1e6:,.0f} MB/s), "
        f"decoding every feature with {', '.join(f'{k}: {f!r}' for k, f in result.spec.items())}"
        f": {'all records match' if same else 'MISMATCH'}"
    )

    folder = os.path.join(out, "sample-npy")
    started = time.perf_counter()
    ds.save(folder, overwrite=True, progress=False)
    saved = time.perf_counter() - started
    names = sorted(os.listdir(folder))
    say(
        f"saved    {folder}/ in {saved:.3f}s ({format_count(round(records / saved))} records/s, "
        f"{size / saved / 1e6:,.0f} MB/s): {', '.join(names)}"
    )

    started = time.perf_counter()
    with load(folder) as arrays:
        loaded_same = all(_same(arrays[name], col) for name, col in columns.items())
        kinds = ", ".join(f"{name}: {type(col).__name__}" for name, col in arrays.items())
    say(
        f"loaded   {folder}/ memory-mapped ({kinds}) and compared in "
        f"{time.perf_counter() - started:.3f}s: {'same as written' if loaded_same else 'MISMATCH'}"
    )

    started = time.perf_counter()
    seen = 0
    for batch in ds.batches(1024, shuffle=10_000, seed=0, pad={"tokens": MAX_TOKENS}):
        seen += len(batch["label"])
    streamed = time.perf_counter() - started
    say(
        f"streamed {format_count(seen)} records as batches of 1024, shuffled through a "
        f"10 000-record buffer, tokens padded to {MAX_TOKENS} (+ tokens_length), in "
        f"{streamed:.3f}s "
        f"({format_count(round(seen / streamed))} records/s)"
    )
    ok = same and loaded_same and count == records and seen == records
    return 0 if ok else 1
