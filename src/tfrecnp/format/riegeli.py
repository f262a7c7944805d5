"""Riegeli's records files as ArrayRecord writes them: the fixed signature, 64 KiB blocks,
chunk headers, and simple chunks (a compression byte, the records' sizes, their values),
decoded into records' bytes and offsets. `arrayrecord` builds the files on these chunks:
the footer's index, reads by position, the records as the one payload type.

The byte work (hashes, block headers, varints) is the compiled core's (`_core.riegeli`);
decompressors come from the ``arrayrecord`` extra (zstandard, brotli, cramjam for snappy),
imported when a chunk needs them, one per thread.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .._core import framing, riegeli
from .._util.offsets import offsets_of
from .._util.optional import require

__all__ = [
    "BLOCK",
    "BLOCK_HEADER",
    "CHUNK_HEADER",
    "CHUNK_STATUS",
    "CODECS",
    "MAGIC",
    "SIGNATURE",
    "SIMPLE",
    "TRANSPOSED",
    "decode_simple",
    "decode_simple_chunks",
    "footer_metadata",
    "riegeli_hash",
    "zstd_decompressor",
]

BLOCK = 1 << 16
BLOCK_HEADER = 24
CHUNK_HEADER = 40
MAGIC = 0x71930E704FDAE05E  # RiegeliPostscript.magic
SIGNATURE = bytes.fromhex(
    "83af70d10d884a3f0000000000000000400000000000000091bac23c9287e1a9"
    "0000000000000000e19f13c0e9b1c37273000000000000000000000000000000"
)
SIMPLE, TRANSPOSED = ord("r"), ord("t")
CODECS = {0: "uncompressed", ord("b"): "brotli", ord("z"): "zstd", ord("s"): "snappy"}
CHUNK_STATUS = {
    riegeli.OUTSIDE: "chunk cut short (the file is truncated or its footer is damaged)",
    riegeli.HEADER_HASH: "chunk header hash mismatch",
    riegeli.DATA_SIZE: "chunk data size runs past the chunk",
    riegeli.DATA_HASH: "chunk data hash mismatch",
}


def riegeli_hash(data: bytes | np.ndarray | memoryview) -> int:
    """HighwayHash-64 of data as Riegeli keys it (the compiled core's)."""
    return riegeli.riegeli_hash(np.frombuffer(data, np.uint8))


_local = threading.local()


def zstd_decompressor() -> Any:
    d = getattr(_local, "zstd", None)
    if d is None:  # a decompressor per thread (they are not shared between threads)
        d = _local.zstd = require("zstandard", "arrayrecord").ZstdDecompressor()
    return d


def decompress(kind: int, block: np.ndarray, most: int) -> np.ndarray:
    """A compressed block (its decompressed size, a varint, then the codec's bytes) ->
    those bytes; ValueError when the block is malformed, declares more than `most` bytes
    (checked before anything is allocated) or decompresses to another size."""
    if kind == 0:
        return block
    size, at = riegeli.varint(block, 0)
    if at < 0:
        raise ValueError("the compressed block's size is malformed")
    if size > most:
        raise ValueError(f"a compressed block declares {size} bytes, the chunk holds {most}")
    body = block[at:]
    if kind == ord("z"):
        out = zstd_decompressor().decompress(body, max_output_size=max(size, 1))
    elif kind == ord("b"):
        out = require("brotli", "arrayrecord").decompress(body.tobytes())
    elif kind == ord("s"):
        out = require("cramjam", "arrayrecord").snappy.decompress_raw(body.tobytes())
        out = bytes(out)
    else:
        raise ValueError(f"unknown compression type {kind:#x}")
    if len(out) != size:
        raise ValueError(f"the block decompressed to {len(out)} bytes, its header says {size}")
    return np.frombuffer(out, np.uint8)


def decode_simple(
    data: np.ndarray, num_records: int, decoded_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """A simple chunk's data -> (its records' bytes back to back, their offsets);
    ValueError when it does not hold what its header says."""
    if not len(data):
        raise ValueError("the chunk has no data")
    kind = int(data[0])
    if kind not in CODECS:
        raise ValueError(f"unknown compression type {kind:#x}")
    sizes_len, at = riegeli.varint(data, 1)
    if at < 0 or sizes_len > len(data) - at:
        raise ValueError("the record sizes' length is malformed")
    sizes = decompress(kind, data[at : at + sizes_len], 10 * num_records)
    values = decompress(kind, data[at + sizes_len :], decoded_size)
    offsets = np.empty(num_records + 1, np.int64)
    used = riegeli.sizes_to_offsets(sizes, offsets)
    if used != len(sizes):
        raise ValueError(f"the record sizes do not describe {num_records} records")
    if int(offsets[-1]) != len(values) or len(values) != decoded_size:
        raise ValueError(
            f"the records add up to {int(offsets[-1])} bytes, the values hold {len(values)}, "
            f"the header says {decoded_size}"
        )
    return values, offsets


def decode_simple_chunks(
    out: np.ndarray, info: np.ndarray, layout: np.ndarray
) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """Simple chunks laid out in `out` -> (their records' bytes back to back, the records'
    n + 1 offsets, {chunk: why} for chunks whose data do not hold what their headers say).
    Chunks all zstd or all uncompressed are decompressed and their sizes decoded at once;
    others (brotli, snappy, a mix), and any batch that does not add up, chunk by chunk."""
    kinds = set(layout[:, 0].tolist())
    n_records = info[:, 3]
    # declared sizes agree with the headers before anything is allocated for them
    fits = np.all(layout[:, 6] == info[:, 4]) and np.all(layout[:, 3] <= 10 * n_records)
    if fits and len(kinds) == 1 and kinds <= {0, ord("z")}:
        kind = kinds.pop()
        sizes = _gather_blocks(out, layout[:, 1], layout[:, 2], layout[:, 3], kind)
        values = _gather_blocks(out, layout[:, 4], layout[:, 5], layout[:, 6], kind)
        if sizes is not None and values is not None:
            offsets = np.empty(int(n_records.sum()) + 1, np.int64)
            used = riegeli.sizes_to_offsets(sizes, offsets)
            ends = offsets[offsets_of(n_records)[1:]]
            adds_up = used == len(sizes) and np.array_equal(ends, np.cumsum(info[:, 4]))
            if adds_up and np.array_equal(info[:, 4], layout[:, 6]):
                return values, offsets, {}
    # chunk by chunk: slower, and says which chunk is wrong
    parts, sizes_list, bad = [], [], {}
    for j in range(len(info)):
        start, size = int(info[j, 0]), int(info[j, 1])
        try:
            v, o = decode_simple(out[start : start + size], int(info[j, 3]), int(info[j, 4]))
        except ImportError:
            raise
        except Exception as e:  # ValueError, or a codec's own error on damaged bytes
            bad[j] = str(e)
            continue
        parts.append(v)
        sizes_list.append(np.diff(o))
    if bad:
        return np.empty(0, np.uint8), np.zeros(1, np.int64), bad
    values = np.concatenate(parts) if parts else np.empty(0, np.uint8)
    lengths = np.concatenate(sizes_list) if sizes_list else np.empty(0, np.int64)
    return values, offsets_of(lengths), {}


def _gather_blocks(
    out: np.ndarray, starts: np.ndarray, lengths: np.ndarray, sizes: np.ndarray, kind: int
) -> np.ndarray | None:
    """Blocks of out, back to back: as they are (kind 0), or zstd frames decompressed in
    one call into a buffer of the sizes their prefixes declare (None when they decompress
    to other sizes)."""
    starts = np.ascontiguousarray(starts, np.int64)
    lengths = np.ascontiguousarray(lengths, np.int64)
    packed = np.empty(int(lengths.sum()), np.uint8)
    framing.gather_ranges(out, starts, lengths, packed)
    if kind == 0:
        return packed
    total = int(sizes.sum())
    into = np.empty(total, np.uint8)
    if not len(packed):
        return into if total == 0 else None
    try:
        reader = zstd_decompressor().stream_reader(packed, read_across_frames=True)
        view, got = memoryview(into), 0
        while got < total:
            k = reader.readinto(view[got:])
            if not k:
                break
            got += k
        extra = reader.read(1)
    except Exception:  # a frame the codec refuses: found again chunk by chunk
        return None
    return into if got == total and not extra else None


def footer_metadata(msg: bytes) -> tuple[int, int, int, str] | None:
    """RiegeliFooterMetadata -> (version, num_chunks, num_records, writer_options), or None
    when it holds no array_record_metadata (field 1)."""
    inner = _fields(msg).get(1)
    if not isinstance(inner, bytes):
        return None
    f = _fields(inner)
    options = f.get(4, b"")
    return (
        int(f.get(1, 0)),
        int(f.get(2, 0)),
        int(f.get(3, 0)),
        options.decode("utf-8", "replace") if isinstance(options, bytes) else "",
    )


def _fields(msg: bytes) -> dict[int, int | bytes]:
    """The varint and length-delimited fields of a small message (the last of each wins)."""
    data = np.frombuffer(msg, np.uint8)
    out: dict[int, int | bytes] = {}
    p = 0
    while p < len(data):
        key, p = riegeli.varint(data, p)
        if p < 0:
            break
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, p = riegeli.varint(data, p)
            if p < 0:
                break
            out[field] = value
        elif wire == 2:
            n, p = riegeli.varint(data, p)
            if p < 0 or n > len(data) - p:
                break
            out[field] = msg[p : p + n]
            p += n
        elif wire == 1:
            p += 8
        elif wire == 5:
            p += 4
        else:
            break
    return out
