"""`.idx` sidecars: one text line per record, ``offset length``, where length counts the
whole frame (header + payload + footer). The format of NVIDIA DALI's tfrecord2idx and
vahidk/tfrecord. A sidecar is trusted only after it tiles its file and a few frame headers
agree with it; otherwise it is ignored (with a warning) and the file is rescanned.

The sidecar of a GZIP / ZLIB file counts offsets in its decompressed stream; it is trusted
only beside a checkpoint sidecar (format/inflate_index.py) that matches the file and whose
decompressed size it tiles, with a few headers read through those checkpoints.

The index of a file in a bucket is kept in a local cache (`cached_index`, under
$TFRECNP_CACHE, else ~/.cache/tfrecnp), keyed by its URL, size and ETag as its listing gave
them: opening it again costs no request for its index, and a changed object (another
ETag or size) is never taken for the old one. A compressed one's `.idx` is trusted beside
checkpoints that match the shard when it tiles their decompressed size (its headers are
checked as records are read: three spot checks would fetch three compressed pieces)."""

from __future__ import annotations

import io
import os
import warnings
from dataclasses import dataclass

import numpy as np

from .._core import encode
from .._util import fs
from .._util.atomic import atomic_output
from .compression import detect_compression
from .frames import HEADER_BYTES, LENGTH_BYTES, OVERHEAD_BYTES, is_frame_header
from .paths import INDEX_SUFFIX, PathLike


@dataclass(frozen=True)
class RecordIndex:
    """Where each record of one file lies: frame offsets and payload lengths (int64)."""

    path: str
    offsets: np.ndarray
    lengths: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def frame_lengths(self) -> np.ndarray:
        """Whole-frame lengths (payload + OVERHEAD_BYTES), as index files store them."""
        return self.lengths + OVERHEAD_BYTES


def index_path(path: PathLike) -> str:
    """The sidecar index of a TFRecord file: the same name with .idx appended."""
    return fs.suffixed(path, INDEX_SUFFIX)


def write_index(index: RecordIndex, out: PathLike | None = None) -> str:
    """Write `offset length` lines (length = whole frame), the format of NVIDIA DALI's
    tfrecord2idx and vahidk/tfrecord. Returns the index file's path."""
    out = fs.resolve(out) if out is not None else index_path(index.path)
    starts = np.ascontiguousarray(index.offsets, np.int64)
    frames = np.ascontiguousarray(index.frame_lengths, np.int64)
    with atomic_output(out) as tmp, fs.open_write(tmp) as f:
        f.write(encode.index_lines(starts, frames))
    return out


def read_index(index_file: PathLike, data_file: PathLike | None = None) -> RecordIndex | None:
    """Read an `offset length` index. With data_file given, returns None (and warns) when
    the index does not describe that file (stale or foreign), so callers rescan."""
    index_file = fs.resolve(index_file)
    if data_file is not None:
        path = fs.resolve(data_file)
    else:
        path = fs.resolve(index_file[: -len(INDEX_SUFFIX)])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an empty index is a valid index of an empty file
            source = io.StringIO(fs.read_text(index_file)) if fs.is_url(index_file) else index_file
            table = np.loadtxt(source, dtype=np.int64, ndmin=2)
        if table.size and table.shape[1] != 2:
            raise ValueError("expected two columns (offset length) per line")
    except ValueError as e:
        if data_file is None:
            raise ValueError(f"{index_file}: {e}") from e
        return _ignore_index(index_file, path)
    table = table.reshape(-1, 2)
    offsets, frames = table[:, 0].copy(), table[:, 1].copy()
    # offsets >= 0: int64 sums wrap, so a tiling that runs past 2^63 could come back
    # negative and end on the file's size
    consistent = bool(
        np.all(frames >= OVERHEAD_BYTES)
        and np.all(offsets >= 0)
        and np.all(offsets[1:] == offsets[:-1] + frames[:-1])
    ) and (len(offsets) == 0 or offsets[0] == 0)
    if data_file is not None:
        end = int(offsets[-1] + frames[-1]) if len(offsets) else 0
        plain = consistent and end == fs.size(path) and _headers_agree(path, offsets, frames)
        if not plain and not (consistent and _inflated_agrees(path, offsets, frames, end)):
            return _ignore_index(index_file, path)
    elif not consistent:
        raise ValueError(f"{index_file}: offsets and lengths do not tile a file")
    return RecordIndex(path, offsets, frames - OVERHEAD_BYTES)


def _ignore_index(index_file: str, path: str) -> None:
    warnings.warn(
        f"ignoring index {index_file}: it does not describe {path} (stale or foreign); rescanning",
        stacklevel=4,
    )


def _headers_agree(path: str, offsets: np.ndarray, frames: np.ndarray) -> bool:
    """Spot-check an index against its file (a few header reads, together): the first,
    middle and last indexed frames must start with a header whose length CRC checks and
    whose length agrees."""
    picks = sorted({0, len(offsets) // 2, len(offsets) - 1}) if len(offsets) else []
    starts = [int(offsets[i]) for i in picks]
    if fs.is_url(path):
        heads = fs.read_ranges(path, starts, [a + HEADER_BYTES for a in starts])
    else:
        with fs.open_read(path) as f:
            heads = []
            for a in starts:
                f.seek(a)
                heads.append(f.read(HEADER_BYTES))
    for i, head in zip(picks, heads, strict=True):
        if not is_frame_header(head):
            return False
        if int.from_bytes(head[:LENGTH_BYTES], "little") != frames[i] - OVERHEAD_BYTES:
            return False
    return True


def cached_index(path: str) -> RecordIndex | None:
    """The index of a remote file cached for its URL, size and ETag, or None."""
    file = fs.cache_file(path, "index", ".npy")
    if file is None or not os.path.exists(file):
        return None
    try:
        table = np.load(file, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if table.ndim != 2 or table.shape[0] != 2 or table.dtype != np.int64:
        return None
    return RecordIndex(path, table[0].copy(), table[1].copy())


def remember_index(index: RecordIndex) -> None:
    """Cache a remote file's index by its URL, size and ETag (nothing when it has no ETag,
    or the cache cannot be written: the index is then fetched again next time)."""
    file = fs.cache_file(index.path, "index", ".npy")
    if file is None:
        return
    data = io.BytesIO()
    np.save(data, np.stack([index.offsets, index.lengths]).astype(np.int64))
    fs.keep_cached(file, data.getvalue())


def _inflated_agrees(path: str, offsets: np.ndarray, frames: np.ndarray, end: int) -> bool:
    """For a GZIP / ZLIB file: its checkpoint sidecar matches it, its decompressed stream
    ends where the index does, and the first, middle and last headers agree (read through
    the checkpoints)."""
    from . import inflate_index

    if not inflate_index.have_rapidgzip():
        return False
    kind = detect_compression(fs.read_head(path, HEADER_BYTES))
    cp = inflate_index.read_checkpoints(path, kind) if kind is not None else None
    if cp is None or cp.inflated_size != end:
        return False
    if fs.is_url(path):  # (reads check each frame they read against the index)
        return True
    inflated = inflate_index.Inflated(cp, inflate_index.SpanCache(0))
    try:
        for i in sorted({0, len(offsets) // 2, len(offsets) - 1}) if len(offsets) else ():
            head = bytearray(HEADER_BYTES)
            if inflated.read_into(memoryview(head), int(offsets[i])) != HEADER_BYTES:
                return False
            if not is_frame_header(bytes(head)):
                return False
            if int.from_bytes(head[:LENGTH_BYTES], "little") != frames[i] - OVERHEAD_BYTES:
                return False
    finally:
        inflated.close()
    return True
