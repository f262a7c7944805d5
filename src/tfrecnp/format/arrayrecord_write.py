"""Writing ArrayRecord files (google/array_record, on Riegeli/records): `ArrayRecordWriter`,
the one writer of ArrayRecord in tfrecnp, laid out as array-record's own writer lays out a
file for the same options:

- the 64-byte signature (a block header and a signature chunk);
- data chunks of `group_size` records each, simple chunks (type 'r'): a compression byte,
  the varint size of the compressed record sizes, those (varints, compressed), then the
  records' bytes compressed; a compressed block begins with its decompressed size (a
  varint), an uncompressed one does not;
- the footer chunk (compressed like the data): a ``RiegeliFooterMetadata`` record, then one
  ``ArrayRecordFooter{chunk_offset, decoded_data_size, num_records}`` per data chunk; a
  padding chunk (type 'p') to the next 64 KiB boundary; the postscript chunk
  (uncompressed: ``RiegeliPostscript{footer_offset, magic}``), padded to the boundary
  after it, so the postscript fills the last block;
- every chunk a 40-byte header with its hashes, a 24-byte block header at every 64 KiB
  boundary, zeros after a chunk until a chunk may begin (at least as many bytes as it has
  records): the compiled core's `riegeli.lay_chunks`, buffers in and out, GIL released.

Options as array-record spells them: group_size (default 1, what TFDS writes and
array-record's default) and compression ("zstd:3" by default, with zstd's window_log 20 as
array-record sets it; "zstd:N", "brotli[:N]" (6 by default), "snappy", "uncompressed").
Codecs come from the ``arrayrecord`` extra (zstandard, brotli, cramjam), imported when a
file needs them. The file is written under a hidden temporary name and renamed when
complete (`publish`); `abort` removes it.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from .._core import framing, riegeli
from .._util import fs
from .._util.atomic import CloseOrAbort, build_name, naming_write_errors, require_folder
from .._util.optional import require
from .paths import PathLike
from .riegeli import BLOCK, CHUNK_HEADER, MAGIC, SIGNATURE

__all__ = ["ArrayRecordWriter", "parse_compression", "writer_options"]

SIMPLE, PADDING = ord("r"), ord("p")
DEFAULT_COMPRESSION = "zstd:3"
ZSTD_WINDOW_LOG = 20  # array-record's default for zstd
FLUSH_BYTES = 4 << 20  # record bytes gathered before their chunks are written
FLUSH_RECORDS = 1 << 16  # or records (small ones, written one at a time, cost more)
_CODES = {"uncompressed": 0, "zstd": ord("z"), "brotli": ord("b"), "snappy": ord("s")}
_LEVELS = {"zstd": 3, "brotli": 6}


def parse_compression(compression: str | None) -> tuple[str, int | None]:
    """ "zstd:3" / "brotli" / "snappy" / "uncompressed" (None: zstd:3) -> (codec, level)."""
    text = DEFAULT_COMPRESSION if compression is None else str(compression).strip().lower()
    codec, _, level = text.partition(":")
    if codec in ("none", ""):
        codec = "uncompressed"
    if codec not in _CODES or (level and codec not in _LEVELS):
        raise ValueError(
            f"ArrayRecord compression {compression!r}: give 'zstd' or 'zstd:N' (default "
            "zstd:3), 'brotli' or 'brotli:N', 'snappy' or 'uncompressed'"
        )
    if not level:
        return codec, _LEVELS.get(codec)
    try:
        n = int(level)
    except ValueError:
        n = -1
    low, high = (-131072, 22) if codec == "zstd" else (0, 11)
    if not low <= n <= high:
        raise ValueError(
            f"ArrayRecord compression {compression!r}: {codec} levels run {low}..{high}"
        )
    return codec, n


def writer_options(group_size: int, codec: str, level: int | None) -> str:
    """The options string array-record's writer (0.8's Python ArrayRecordWriter) records in
    the footer for these options; max_parallelism:1, as this writer is sequential."""
    text = f"group_size:{group_size},transpose:false,pad_to_block_boundary:false"
    if codec == "uncompressed" or codec == "snappy":
        return f"{text},{codec},max_parallelism:1"
    text += f",{codec}:{level}"
    if codec == "zstd":
        text += f",window_log:{ZSTD_WINDOW_LOG}"
    return text + ",max_parallelism:1"


def _varints(values: np.ndarray) -> bytes:
    """Unsigned varint64s of the values, back to back."""
    return _varints_sized(values)[0]


def _varints_sized(values: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Unsigned varint64s of the values, back to back, and where each begins (n + 1)."""
    v = np.asarray(values, np.uint64)
    if not len(v):
        return b"", np.zeros(1, np.int64)
    nbytes = np.ones(len(v), np.int64)
    for k in range(1, 10):
        nbytes += v >= np.uint64(1 << (7 * k))
    out = np.zeros(int(nbytes.sum()), np.uint8)
    at = np.concatenate([[0], np.cumsum(nbytes)[:-1]])
    rest = v.copy()
    for k in range(int(nbytes.max())):
        live = nbytes > k
        byte = (rest[live] & np.uint64(0x7F)).astype(np.uint8)
        more = nbytes[live] > k + 1
        out[at[live] + k] = byte | (more.astype(np.uint8) << 7)
        rest[live] >>= np.uint64(7)
    return out.tobytes(), np.append(at, len(out))


def _varint(n: int) -> bytes:
    """One unsigned varint64."""
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _message(fields: list[tuple[int, int | bytes]]) -> bytes:
    """A protobuf message of varint and bytes fields, in the order given."""
    out = bytearray()
    for number, value in fields:
        if isinstance(value, bytes):
            out += _varint(number << 3 | 2) + _varint(len(value)) + value
        else:
            out += _varint(number << 3) + _varint(value)
    return bytes(out)


class _Codec:
    """One codec's compress(bytes) -> bytes, made once per writer."""

    def __init__(self, codec: str, level: int | None):
        self.code = _CODES[codec]
        if codec == "zstd":
            zstd = require("zstandard", "arrayrecord")
            params = zstd.ZstdCompressionParameters.from_level(
                level, window_log=ZSTD_WINDOW_LOG, write_content_size=True
            )
            self.compress = zstd.ZstdCompressor(compression_params=params).compress
        elif codec == "brotli":
            brotli = require("brotli", "arrayrecord")
            self.compress = lambda b: brotli.compress(b, quality=level)
        elif codec == "snappy":
            snappy = require("cramjam", "arrayrecord").snappy
            self.compress = lambda b: bytes(snappy.compress_raw(b))
        else:
            self.compress = None

    def block(self, data: bytes) -> bytes:
        """A compressed block: its decompressed size, then the codec's bytes (as it is,
        uncompressed)."""
        if self.compress is None:
            return data
        return _varint(len(data)) + self.compress(data)

    def simple_chunk(self, sizes: np.ndarray, values: bytes) -> bytes:
        """A simple chunk's data: compression byte, the sizes' block with its length, the
        values' block."""
        return self.chunk_of(_varints(sizes), values)

    def chunk_of(self, sizes: Any, values: Any) -> bytes:
        """simple_chunk of the record sizes as varints already (bytes-like parts)."""
        if self.compress is None:
            return b"".join((b"\0", _varint(len(sizes)), sizes, values))
        head = self.block(sizes)
        return b"".join((bytes([self.code]), _varint(len(head)), head, self.block(values)))


class ArrayRecordWriter(CloseOrAbort):
    """Writes one ArrayRecord file under a hidden temporary name, renamed on a clean close.

    Use as a context manager, or as `RecordWriter` is used by a caller writing several
    files: `write_batch(data, offsets)` appends records, `finish()` completes the file
    under its temporary name `tmp`, `publish(name)` moves it into place, `abort()` removes
    it. ``records`` counts the records written.
    """

    def __init__(
        self,
        path: PathLike,
        *,
        group_size: int = 1,
        compression: str | None = None,
        storage_options: dict | None = None,
    ):
        self.path = fs.resolve(path, storage_options)
        self.check_options(group_size, compression)
        self.group_size = int(group_size)
        self.codec, self.level = parse_compression(compression)
        self.options = writer_options(self.group_size, self.codec, self.level)
        self._codec = _Codec(self.codec, self.level)
        require_folder(self.path)
        self.tmp = build_name(self.path)
        self.records = 0
        self.position = 0
        self.finished = False
        self._chunks: list[tuple[int, int, int]] = []  # (offset, decoded size, records)
        # records not yet in a chunk: segments of (their bytes, their lengths)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending_bytes = 0
        self._pending_records = 0
        self._raw = None
        self.closed = False
        with naming_write_errors(self.path):
            try:
                self._raw = fs.open_write(self.tmp)
                self._raw.write(SIGNATURE)
                self.position = len(SIGNATURE)
            except BaseException:
                self.abort()
                raise

    @staticmethod
    def check_options(group_size: int = 1, compression: str | None = None) -> None:
        """ValueError when the options are not ones this writer takes."""
        if not isinstance(group_size, (int, np.integer)) or not 1 <= group_size < 2**31:
            raise ValueError(f"group_size must be an int from 1 to 2**31 - 1, not {group_size!r}")
        parse_compression(compression)

    def write(self, payload: bytes | bytearray | memoryview) -> None:
        """Append one record."""
        self._check_open()
        data = np.frombuffer(bytes(payload), np.uint8)
        self._pending.append((data, np.array([len(data)], np.int64)))
        self._pending_bytes += len(data)
        self._pending_records += 1
        self.records += 1
        self._maybe_flush()

    def write_batch(self, data: Any, offsets: Any) -> None:
        """Append records data[offsets[i]:offsets[i + 1]] (a uint8 buffer, n + 1 offsets)."""
        self._check_open()
        data = np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) else data
        buf = memoryview(np.ascontiguousarray(data.reshape(-1).view(np.uint8)))
        offsets = np.asarray(offsets, np.int64)
        if offsets.ndim != 1 or len(offsets) < 1 or np.any(np.diff(offsets) < 0):
            raise ValueError("write_batch offsets must be n + 1 non-decreasing record boundaries")
        if len(offsets) > 1 and (offsets[0] < 0 or offsets[-1] > len(buf)):
            raise ValueError(f"write_batch offsets run outside the {len(buf)} bytes of data")
        n = len(offsets) - 1
        if n < 1:
            return
        a, b = int(offsets[0]), int(offsets[-1])
        self._pending.append((np.array(buf[a:b], np.uint8), np.diff(offsets)))  # copied
        self._pending_bytes += b - a
        self._pending_records += n
        self.records += n
        self._maybe_flush()

    def finish(self) -> None:
        """Write the last chunk, the footer and the postscript and close the file, still
        under its temporary name `tmp`."""
        if self.finished or self.closed:
            return
        try:
            self._flush(final=True)
            index = np.array(self._chunks, np.int64).reshape(-1, 3)
            meta = _message(
                [
                    (1, 1),  # version
                    (2, len(index)),
                    (3, int(index[:, 2].sum())),
                    (4, self.options.encode()),
                ]
            )
            head = _message([(1, meta)])
            # each entry: fields 1, 2, 3 (tags 8, 16, 24: one byte each) with their varints
            fields = np.empty((len(index), 6), np.uint64)
            fields[:, 0::2] = [8, 16, 24]
            fields[:, 1::2] = index
            entries, at = _varints_sized(fields.reshape(-1))
            sizes = np.append(len(head), np.diff(at[::6]))
            footer_at = self.position
            chunk = self._codec.simple_chunk(sizes, head + entries)
            self._write_chunks(
                *_joined([chunk]),
                np.array([SIMPLE], np.uint8),
                np.array([len(sizes)], np.int64),
                np.array([len(head) + len(entries)], np.int64),
                False,
            )
            self._pad()
            post = _message([(1, footer_at), (2, MAGIC)])
            posts = [post] * 3
            data = _Codec("uncompressed", None).simple_chunk(_sizes(posts), b"".join(posts))
            self._lay([data], [posts], note=False)
            self._pad()
            self._raw.close()
        except BaseException:
            self.abort()
            raise
        self.finished = True

    def publish(self, path: PathLike | None = None) -> str:
        """Finish if need be, then move the file to `path` (by default the writer's)."""
        if self.closed:
            raise ValueError(f"writer for {self.path} is closed")
        self.finish()
        target = fs.resolve(path) if path is not None else self.path
        try:
            if self.tmp != target:
                fs.replace(self.tmp, target)
        except BaseException:
            self.abort()
            raise
        self.closed = True
        self.path = target
        return target

    def close(self) -> None:
        if not self.closed:
            self.publish()

    def abort(self) -> None:
        """Drop everything written: the temporary file is removed."""
        if self.closed:
            return
        self.closed = True
        self._pending.clear()
        try:
            if self._raw is not None and not self.finished:
                fs.discard(self._raw)
        finally:
            with contextlib.suppress(OSError):
                fs.remove(self.tmp)

    # internals -------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed or self.finished:
            raise ValueError(f"writer for {self.path} is closed")

    def _maybe_flush(self) -> None:
        """Chunks written once enough records wait (a few MiB, or FLUSH_RECORDS of them)."""
        n = self._pending_records
        if n >= self.group_size and (self._pending_bytes >= FLUSH_BYTES or n >= FLUSH_RECORDS):
            self._flush(final=False)

    def _flush(self, final: bool) -> None:
        """Pending records into chunks of group_size (the last may be short when final)."""
        g, n = self.group_size, self._pending_records
        whole = n if final else n // g * g
        if not whole:
            return
        parts, self._pending = self._pending, []
        values = parts[0][0] if len(parts) == 1 else np.concatenate([p[0] for p in parts])
        lengths = parts[0][1] if len(parts) == 1 else np.concatenate([p[1] for p in parts])
        del parts
        ends = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        if whole < n:  # the rest waits for the next flush
            self._pending = [(values[ends[whole] :].copy(), lengths[whole:].copy())]
        self._pending_records = n - whole
        self._pending_bytes = int(ends[-1] - ends[whole])
        lengths = lengths[:whole]
        at = np.append(np.arange(0, whole, g), whole)  # the chunks' first records
        varints, starts = _varints_sized(lengths)
        s_len = np.diff(starts[at])  # each chunk's record sizes, as varints
        v_len = np.diff(ends[at])  # each chunk's records' bytes
        if self._codec.compress is None:
            data, offsets = _uncompressed_chunks(
                varints, starts[at], s_len, values, ends[at], v_len
            )
        else:
            sizes, vals = memoryview(varints), memoryview(values)
            sv, vv = starts[at].tolist(), ends[at].tolist()
            chunk_of = self._codec.chunk_of
            datas = [
                chunk_of(sizes[sv[k] : sv[k + 1]], vals[vv[k] : vv[k + 1]])
                for k in range(len(at) - 1)
            ]
            data, offsets = _joined(datas)
        counts = np.diff(at).astype(np.int64)
        types = np.full(len(counts), SIMPLE, np.uint8)
        self._write_chunks(data, offsets, types, counts, v_len.astype(np.int64), True)

    def _lay(self, datas: list[bytes], groups: list[list[bytes]], note: bool = True) -> None:
        """Simple chunks of these datas (holding the groups' records) written at the end
        of the file; noted in the footer's index when note (data chunks)."""
        counts = np.array([len(g) for g in groups], np.int64)
        decoded = np.array([sum(map(len, g)) for g in groups], np.int64)
        types = np.full(len(datas), SIMPLE, np.uint8)
        self._write_chunks(*_joined(datas), types, counts, decoded, note)

    def _write_chunks(
        self,
        data: np.ndarray,
        offsets: np.ndarray,
        types: np.ndarray,
        counts: np.ndarray,
        decoded: np.ndarray,
        note: bool,
    ) -> None:
        """Chunks data[offsets[k]:offsets[k + 1]] laid out (the core) and written."""
        size = riegeli.chunks_size(offsets, counts, self.position)
        out = np.empty(size, np.uint8)
        begins = np.empty(len(types), np.int64)
        used = riegeli.lay_chunks(data, offsets, types, counts, decoded, self.position, out, begins)
        if used != size:
            raise AssertionError(f"laid {used} bytes of chunks, expected {size}")
        self._raw.write(out)
        self.position += size
        if note:
            self._chunks.extend(
                zip(begins.tolist(), decoded.tolist(), counts.tolist(), strict=True)
            )

    def _pad(self) -> None:
        """A padding chunk to the next 64 KiB boundary, as array-record pads before and
        after the postscript."""
        pos = self.position
        if pos % BLOCK == 0:
            return
        end = pos + BLOCK - pos % BLOCK
        if end - pos < CHUNK_HEADER:
            end += BLOCK
        # the padding chunk's data: its bytes less its header and the block headers within
        inside = (end - min(end % BLOCK, 24)) - (pos - min(pos % BLOCK, 24))
        length = inside - (end // BLOCK - pos // BLOCK) * 24 - CHUNK_HEADER
        zero = np.zeros(1, np.int64)
        data, offsets = np.zeros(length, np.uint8), np.array([0, length], np.int64)
        self._write_chunks(data, offsets, np.array([PADDING], np.uint8), zero, zero.copy(), False)
        if self.position != end:
            raise AssertionError(f"padded to {self.position}, expected {end}")


def _joined(datas: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Parts back to back, and where each begins (n + 1)."""
    offsets = np.zeros(len(datas) + 1, np.int64)
    np.cumsum([len(d) for d in datas], out=offsets[1:])
    return np.frombuffer(b"".join(datas), np.uint8), offsets


def _uncompressed_chunks(
    varints: bytes,
    s_at: np.ndarray,
    s_len: np.ndarray,
    values: np.ndarray,
    v_at: np.ndarray,
    v_len: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Uncompressed simple chunks' data, all at once: chunk k is the compression byte 0,
    the varint s_len[k], varints[s_at[k]:][:s_len[k]], values[v_at[k]:][:v_len[k]]. The
    compression byte and the length are varints too, made together; then the three parts
    of every chunk are gathered in one core call."""
    n = len(s_len)
    pairs = np.zeros(2 * n, np.uint64)
    pairs[1::2] = s_len
    heads, h_at = _varints_sized(pairs)
    h_at = h_at[0::2]
    src = np.concatenate([np.frombuffer(heads, np.uint8), np.frombuffer(varints, np.uint8), values])
    starts = np.empty((n, 3), np.int64)
    lengths = np.empty((n, 3), np.int64)
    starts[:, 0], lengths[:, 0] = h_at[:-1], np.diff(h_at)
    starts[:, 1], lengths[:, 1] = len(heads) + s_at[:-1], s_len
    starts[:, 2], lengths[:, 2] = len(heads) + len(varints) + v_at[:-1], v_len
    out = np.empty(int(lengths.sum()), np.uint8)
    framing.gather_ranges(src, starts.reshape(-1), lengths.reshape(-1), out)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths.sum(axis=1), out=offsets[1:])
    return out, offsets


def _sizes(records: list[bytes]) -> np.ndarray:
    return np.fromiter(map(len, records), np.int64, len(records))
