"""What a file that is not TFRecord is, from its first bytes, and which call reads it: so
that `tn.open("labels.npy")` or `tfrecnp inspect dataset_info.json` says "this is an .npy
array" rather than reporting a CRC mismatch."""

from __future__ import annotations

import zlib

from .._core import framing
from .._util import fs
from .compression import WBITS, detect_compression
from .frames import HEADER_BYTES, is_frame_header

NPY_MAGIC = b"\x93NUMPY"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
ZIP_MAGIC = b"PK\x03\x04"
PROBE_BYTES = 64 << 10  # how much of a file is looked at to say what it is


def what_is(path: str) -> str | None:
    """A sentence saying what the file is and how to read it, for a file whose first frame
    is not a TFRecord frame; None when its first bytes are nothing known (then it may well
    be a TFRecord file with a damaged first header: a frame starts later in its first bytes)."""
    if fs.isdir(path):
        names = {fs.basename(p) for p in fs.listdir(path)}
        names |= {n for n in (".zarray", ".zgroup") if fs.exists(fs.join(path, n))}
        if {"zarr.json", ".zarray", ".zgroup"} & names:
            return "it is a Zarr store: tn.open(path) reads it as a dataset of arrays"
        return "it is a folder"
    head = fs.read_head(path, PROBE_BYTES)
    if len(head) < HEADER_BYTES:
        # a truncated TFRecord file, unless it is text (a short JSON file): 8 bytes of a
        # header are a little-endian length whose top bytes are zero, so never all text
        return _say_text(head) if len(head) >= 8 else None
    if head.startswith(NPY_MAGIC):
        return (
            "it is a .npy array file: tn.open(path) reads it as a dataset (memory-mapped), "
            "tn.convert(path, 'out.tfrecord') writes it as TFRecords"
        )
    if head.startswith(ZIP_MAGIC):
        return (
            "it is a zip archive (.npz?): tn.open(path) reads it as a dataset of arrays, "
            "tn.convert(path, 'out.tfrecord') writes TFRecords"
        )
    if head.startswith(HDF5_MAGIC):
        return (
            "it is an HDF5 file: tn.open(path, key=...) reads it as a dataset of arrays, "
            "tn.convert(path, 'out.tfrecord', key=...) writes TFRecords"
        )
    kind = detect_compression(head[:HEADER_BYTES])
    if kind is not None:
        try:
            inner = zlib.decompressobj(WBITS[kind]).decompress(head, PROBE_BYTES)
        except zlib.error:
            return None  # damage for the reader to report
        if len(inner) < HEADER_BYTES or is_frame_header(inner) or _frame_follows(inner):
            return None
        return f"it is {kind} data, but what it holds is not TFRecords ({_text_or_hex(inner)})"
    said = _say_text(head)
    if said is not None:
        return said
    if _frame_follows(head):
        return None  # a TFRecord file whose first header is damaged
    return (
        f"its first bytes ({head[:HEADER_BYTES].hex(' ')}) are not a TFRecord frame, and no frame "
        f"starts in its first {len(head):,} bytes (raw numbers? np.fromfile(path, dtype) or "
        "np.memmap read them; tn.convert writes TFRecords from a .npy)"
    )


def _say_text(head: bytes) -> str | None:
    text = _as_text(head)
    if text is None:
        return None
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        return "it is JSON text (a dataset description?), read it with json.load"
    return f"it is text ({stripped[:40]!r}...)"


def _frame_follows(data: bytes) -> bool:
    """Whether a whole frame (or one that runs past data) starts anywhere after byte 0."""
    if len(data) <= HEADER_BYTES:
        return False
    status, _ = framing.find_frame(memoryview(data), 1)
    return status != framing.NOT_FOUND


def _as_text(head: bytes) -> str | None:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        try:  # a multi-byte character cut at the end of the sample
            text = head[:-3].decode("utf-8")
        except UnicodeDecodeError:
            return None
    printable = sum(ch.isprintable() or ch in "\r\n\t" for ch in text)
    return text if text and printable >= 0.95 * len(text) else None


def _text_or_hex(data: bytes) -> str:
    text = _as_text(data)
    return f"text {text[:30]!r}..." if text else f"first bytes {data[:HEADER_BYTES].hex(' ')}"
