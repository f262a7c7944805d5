"""ArrayRecord files (google/array_record, on Riegeli/records): the footer's chunk index,
chunks read by position, simple chunks decoded into the one payload type (`RecordBatch`).

The facts (Riegeli's ``doc/riegeli_records_file_format.md``, array_record's
``cpp/layout.proto`` and ``cpp/array_record_reader.cc``):

- A Riegeli file is 64 KiB blocks; a 24-byte block header begins each, and chunks run
  across them. A chunk is a 40-byte header (header_hash, data_size, data_hash, chunk_type,
  num_records in 7 bytes, decoded_data_size; hashes are HighwayHash-64 keyed with
  'Riegeli/records\\n' twice), then its data. The first 64 bytes of every file are fixed
  (`SIGNATURE`).
- ArrayRecord writes data chunks of `group_size` records each, then a footer chunk
  (record 0 a ``RiegeliFooterMetadata``, then one ``ArrayRecordFooter{chunk_offset,
  decoded_data_size, num_records}`` per data chunk) and, at the start of the last block, a
  postscript chunk (``RiegeliPostscript{footer_offset, magic}``, three copies).
- A simple chunk (type 'r'): a compression byte (0 none, 'b' brotli, 'z' zstd, 's' snappy),
  a varint size of the compressed record sizes, those sizes (varints), then the
  compressed values; a compressed block starts with its decompressed size (varint).
  Transposed chunks ('t', written with ``transpose:true``) are refused by name.

The byte work (hashes, block headers, varints) is the compiled core's (`_core.riegeli`);
decompressors come from the ``arrayrecord`` extra (zstandard, brotli, cramjam for snappy),
imported when a chunk needs them. Every chunk's header hash and data hash are checked
before its bytes are used: damage is a `CorruptRecordError` naming the file, the chunk's
byte offset and the records it holds.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core import riegeli
from .._util import fs
from .._util.optional import require
from ..errors import CorruptRecordError, SchemaError
from .payloads import Origins, RecordBatch

__all__ = [
    "SIGNATURE",
    "ArrayRecordFile",
    "is_array_record",
    "riegeli_hash",
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
HINT = "pass on_error='skip' to read the other chunks' records"
_STATUS = {
    riegeli.OUTSIDE: "chunk cut short (the file is truncated or its footer is damaged)",
    riegeli.HEADER_HASH: "chunk header hash mismatch",
    riegeli.DATA_SIZE: "chunk data size runs past the chunk",
    riegeli.DATA_HASH: "chunk data hash mismatch",
}


def riegeli_hash(data: bytes | np.ndarray | memoryview) -> int:
    """HighwayHash-64 of data as Riegeli keys it (the compiled core's)."""
    return riegeli.riegeli_hash(np.frombuffer(data, np.uint8))


def is_array_record(path: Any) -> bool:
    """Whether the file begins with the Riegeli/records signature."""
    try:
        return fs.read_head(path, len(SIGNATURE)) == SIGNATURE
    except (OSError, ValueError):
        return False


# --- decompression -----------------------------------------------------------------------

_local = threading.local()


def _zstd() -> Any:
    d = getattr(_local, "zstd", None)
    if d is None:  # a decompressor per thread (they are not shared between threads)
        d = _local.zstd = require("zstandard", "arrayrecord").ZstdDecompressor()
    return d


def _decompress(kind: int, block: np.ndarray) -> np.ndarray:
    """A compressed block (its decompressed size, a varint, then the codec's bytes) ->
    those bytes; ValueError when the block is malformed or decompresses to another size."""
    if kind == 0:
        return block
    size, at = riegeli.varint(block, 0)
    if at < 0:
        raise ValueError("the compressed block's size is malformed")
    body = block[at:]
    if kind == ord("z"):
        out = _zstd().decompress(body, max_output_size=max(size, 1))
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
    sizes = _decompress(kind, data[at : at + sizes_len])
    values = _decompress(kind, data[at + sizes_len :])
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


# --- a file ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Footer:
    """A file's chunk index: chunk k begins at offsets[k], ends at ends[k], and holds
    records firsts[k] .. firsts[k + 1]."""

    offsets: np.ndarray
    ends: np.ndarray
    firsts: np.ndarray
    writer_options: str
    size: int

    @property
    def records(self) -> int:
        return int(self.firsts[-1])

    @property
    def group_size(self) -> int:
        return int(self.firsts[1]) if len(self.firsts) > 1 else 0


class ArrayRecordFile:
    """One ArrayRecord file, read by position: its footer read once (`footer`), chunks
    read, checked and decoded (`read_chunks`). Thread-safe (positioned reads); a pickle
    or a fork opens the file anew."""

    def __init__(self, path: Any, footer: Footer | None = None):
        self.path = path
        self._fd: int | None = None
        self._pid = -1
        self._footer = footer

    def __getstate__(self) -> dict:
        return {"path": self.path, "_footer": self._footer}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"], state["_footer"])

    def __repr__(self) -> str:
        return f"ArrayRecordFile({str(self.path)!r})"

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None and self._pid == os.getpid():
            os.close(fd)

    def read(self, start: int, stop: int) -> np.ndarray:
        """File bytes start..stop (fewer at the end of the file)."""
        if stop <= start:
            return np.empty(0, np.uint8)
        if fs.is_url(self.path):
            return np.frombuffer(fs.read_ranges(self.path, [start], [stop])[0], np.uint8)
        if self._fd is None or self._pid != os.getpid():
            self._fd, self._pid = os.open(self.path, os.O_RDONLY), os.getpid()
        out = np.empty(stop - start, np.uint8)
        view, got = memoryview(out), 0
        while got < len(out):
            n = os.preadv(self._fd, [view[got:]], start + got)
            if n <= 0:
                break
            got += n
        return out[:got]

    def _bad(self, reason: str, offset: int, record: int = -1) -> CorruptRecordError:
        return CorruptRecordError(
            reason, path=str(self.path), record=record, offset=offset, hint=HINT
        )

    # -- the footer ---------------------------------------------------------------------

    @property
    def footer(self) -> Footer:
        if self._footer is None:
            self._footer = self._read_footer()
        return self._footer

    def _one_chunk(self, begin: int, end: int, what: str) -> tuple[np.ndarray, np.ndarray]:
        buf = self.read(begin, end)
        values, offsets, error = self._decode(buf, begin, np.array([begin]), np.array([end]))[0]
        if error is not None:
            raise self._bad(f"the {what} is damaged: {error.reason}", begin)
        return values, offsets

    def _read_footer(self) -> Footer:
        size = fs.size(self.path) if fs.is_url(self.path) else os.path.getsize(self.path)
        head = self.read(0, len(SIGNATURE)).tobytes()
        if head != SIGNATURE:
            raise SchemaError(
                f"{self.path} is not an ArrayRecord file: it does not begin with the "
                "Riegeli/records signature"
            )
        if size < BLOCK:
            raise self._bad(
                f"an ArrayRecord file is at least 64 KiB (its postscript fills the last block); "
                f"this one has {size} bytes: it was cut short",
                size,
            )
        values, offsets = self._one_chunk(size - BLOCK, size, "postscript")
        fields = np.zeros((len(offsets) - 1, 2), np.uint64)
        if not len(fields) or riegeli.uint_fields(values, offsets, fields) >= 0:
            raise self._bad("the postscript is malformed", size - BLOCK)
        footer_at, magic = (int(v) for v in fields[0])
        if magic != MAGIC or not 0 < footer_at <= size - BLOCK:
            raise self._bad(
                f"the postscript names no footer (magic {magic:#x}, footer offset {footer_at})",
                size - BLOCK,
            )
        values, offsets = self._one_chunk(footer_at, size - BLOCK, "footer")
        n = len(offsets) - 1
        meta = _metadata(values[offsets[0] : offsets[1]].tobytes()) if n else None
        if meta is None:
            raise self._bad("the footer holds no ArrayRecord metadata", footer_at)
        version, num_chunks, num_records, options = meta
        if version != 1 or num_chunks != n - 1:
            raise self._bad(
                f"the footer says version {version} and {num_chunks} chunks, and lists {n - 1}",
                footer_at,
            )
        index = np.zeros((n - 1, 3), np.uint64)
        if riegeli.uint_fields(values, offsets[1:], index) >= 0:
            raise self._bad("the footer's chunk index is malformed", footer_at)
        index = index.astype(np.int64)
        starts = index[:, 0]
        ends = np.append(starts[1:], footer_at)
        firsts = np.concatenate([[0], np.cumsum(index[:, 2])]).astype(np.int64)
        early = len(starts) and starts[0] < len(SIGNATURE)
        if np.any(ends <= starts) or early or firsts[-1] != num_records:
            raise self._bad("the footer's chunk index is inconsistent", footer_at)
        return Footer(starts, ends, firsts, options, size)

    # -- chunks -------------------------------------------------------------------------

    def chunk_of(self, records: np.ndarray) -> np.ndarray:
        """The chunk holding each record number."""
        return np.searchsorted(self.footer.firsts, records, "right") - 1

    def read_chunks(
        self, k0: int, k1: int, check: bool = True
    ) -> list[tuple[RecordBatch | None, CorruptRecordError | None]]:
        """Chunks k0..k1, read with one positioned read: for each, (its records as a packed
        batch, None), or (None, the damage that keeps it from being read)."""
        f = self.footer
        if k0 >= k1:
            return []
        begins, ends = f.offsets[k0:k1], f.ends[k0:k1]
        buf = self.read(int(begins[0]), int(ends[-1]))
        out = []
        for k, (values, offsets, error) in zip(
            range(k0, k1), self._decode(buf, int(begins[0]), begins, ends, check), strict=True
        ):
            if error is None:
                first = int(f.firsts[k])
                n = len(offsets) - 1
                if n != int(f.firsts[k + 1]) - first:
                    said = int(f.firsts[k + 1]) - first
                    error = self._chunk_error(f"chunk holds {n} records, the footer says {said}", k)
                else:
                    origins = Origins.run(str(self.path), first, n)
                    out.append((RecordBatch(values, offsets, origins), None))
                    continue
            out.append((None, error if error.path else self._chunk_error(error.reason, k)))
        return out

    def _chunk_error(self, reason: str, k: int) -> CorruptRecordError:
        f = self.footer
        a, b = int(f.firsts[k]), int(f.firsts[k + 1])
        records = f"record {a}" if b - a == 1 else f"records {a}..{b - 1}"
        at = int(f.offsets[k])
        return self._bad(f"{reason} (chunk {k} at byte {at}, holding {records})", at, a)

    def _decode(
        self, buf: np.ndarray, base: int, begins: np.ndarray, ends: np.ndarray, check: bool = True
    ) -> list:
        """(values, offsets, None) or (None, None, error) per chunk; errors made here carry
        no path (the caller names the chunk)."""
        begins = np.ascontiguousarray(begins, np.int64)
        ends = np.ascontiguousarray(ends, np.int64)
        n = len(begins)
        out = np.empty(int(ends[-1] - begins[0]) if n else 0, np.uint8)
        info = np.zeros((n, riegeli.INFO_FIELDS), np.int64)
        riegeli.unblock_chunks(buf, base, begins, ends, out, info, check)
        results: list = []
        for k in range(n):
            start, size, kind, records, decoded, status = info[k].tolist()
            if status != riegeli.OK:
                results.append((None, None, CorruptRecordError(_STATUS[status])))
                continue
            if kind == TRANSPOSED:
                raise SchemaError(
                    f"{self.path} holds transposed chunks (written with the 'transpose:true' "
                    "option); tfrecnp reads ArrayRecord files of simple chunks, the writer's "
                    "default: rewrite it without transpose (or read it with array_record)"
                )
            if kind != SIMPLE:
                why = f"chunk type {kind:#x} where records were expected"
                results.append((None, None, CorruptRecordError(why)))
                continue
            try:
                values, offsets = decode_simple(out[start : start + size], records, decoded)
            except ValueError as e:
                results.append((None, None, CorruptRecordError(f"chunk data undecodable: {e}")))
                continue
            except ImportError:
                raise
            except Exception as e:  # a codec's own error on damaged bytes
                results.append((None, None, CorruptRecordError(f"chunk data undecodable: {e}")))
                continue
            results.append((values, offsets, None))
        return results


def _metadata(msg: bytes) -> tuple[int, int, int, str] | None:
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
