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

The chunks themselves (signature, block and chunk headers, simple chunks decoded,
decompression) are `riegeli`'s; this module is the file: its footer, chunks read by
position and in passes, the buffers reads reuse. Every chunk's header hash and data hash
are checked before its bytes are used: damage is a `CorruptRecordError` naming the file,
the chunk's byte offset and the records it holds.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core import framing, riegeli
from .._util import fs
from .._util.offsets import offsets_of
from .._util.optional import require
from .._util.spares import Spares
from ..errors import CorruptRecordError, SchemaError
from .payloads import Origins, RecordBatch
from .riegeli import (  # (the chunks' format; `riegeli` above is the core's byte work)
    BLOCK,
    CHUNK_STATUS,
    MAGIC,
    SIGNATURE,
    SIMPLE,
    TRANSPOSED,
    decode_simple,
    decode_simple_chunks,
    footer_metadata,
    zstd_decompressor,
)

__all__ = [
    "ArrayRecordFile",
    "file_batches",
    "is_array_record",
    "is_array_record_source",
    "list_array_record",
    "rebatch",
]

MERGE_GAP = 4096  # chunks this close are read together, the bytes between them with them
HINT = "pass on_error='skip' to read the other chunks' records"


def is_array_record(path: Any) -> bool:
    """Whether the file begins with the Riegeli/records signature."""
    try:
        return fs.read_head(path, len(SIGNATURE)) == SIGNATURE
    except (OSError, ValueError):
        return False


def _candidates(src: Any) -> list[Any] | None:
    """The files a path, folder or glob names (hidden ones passed over), or None."""
    if fs.isdir(src):
        names = [p for p in fs.listdir(src) if not fs.basename(p).startswith(("_", "."))]
        return sorted(p for p in names if fs.isfile(p))
    if fs.has_magic(src):
        return sorted(p for p in fs.glob(src) if not fs.basename(p).startswith(("_", ".")))
    return [src] if fs.isfile(src) else None


def list_array_record(src: Any, *, warn: bool = False) -> list[Any]:
    """The ArrayRecord files of a file, folder, glob or list of them, in order; [] when any
    part names none. A file is judged by the Riegeli/records signature its first 64 bytes
    hold. A folder or glob is ArrayRecord's when its first file named like a shard
    ("array_record" in the name), else its first file, is one; its other files (a README,
    dataset_info.json) are then passed over, named in a warning when `warn`. A file named
    explicitly must be one."""
    if not isinstance(src, (str, os.PathLike)):
        found: list[Any] = []
        for p in src:
            part = list_array_record(p, warn=warn)
            if not part:
                return []
            found += part
        return found
    names = _candidates(src)
    if not names:
        return []
    named = [p for p in names if "array_record" in fs.basename(p)]
    if not is_array_record((named or names)[0]):
        return []
    if len(names) == 1:
        return names
    found = [p for p in names if is_array_record(p)]
    passed = [fs.basename(p) for p in names if p not in set(found)]
    if passed and warn:
        more = f" and {len(passed) - 8} more" if len(passed) > 8 else ""
        warnings.warn(
            f"{src}: passed over {len(passed)} "
            f"{'files that are' if len(passed) != 1 else 'file that is'} not ArrayRecord: "
            f"{', '.join(passed[:8])}{more}; name a file to read it alone",
            stacklevel=3,
        )
    return found


def is_array_record_source(src: Any, storage_options: dict | None = None) -> bool:
    """Whether src names ArrayRecord files (a file, a folder of shards, a glob, a list)."""
    if isinstance(src, (str, os.PathLike)):
        src = fs.resolve(src, storage_options)
    elif isinstance(src, (list, tuple)) and src:
        src = [fs.resolve(p, storage_options) for p in src]
    else:
        return False
    try:
        return bool(list_array_record(src))
    except (OSError, ValueError):
        return False


# --- reading buffers ---------------------------------------------------------------------

_OPENING = threading.Lock()


SCRATCH_BYTES = 32 << 20  # largest buffer kept for reuse; at most SCRATCH_KEPT of them
SCRATCH_KEPT = 2  # (a chunk read and its copy without block headers: 64 MiB kept at most)
_scratch: list[np.ndarray] = []
_SCRATCH_LOCK = threading.Lock()
# a streamed chunk's values (up to SCRATCH_BYTES), taken back once its pieces are decoded
_VALUES = Spares(limit=SCRATCH_KEPT)


def _after_fork() -> None:
    """In a forked child: a lock another thread of the parent held stays held here."""
    global _SCRATCH_LOCK, _OPENING, _VALUES
    _SCRATCH_LOCK, _OPENING = threading.Lock(), threading.Lock()
    _scratch.clear()
    _VALUES = Spares(limit=SCRATCH_KEPT)


if hasattr(os, "register_at_fork"):  # (not on Windows, which does not fork)
    os.register_at_fork(after_in_child=_after_fork)


def take_scratch(n: int) -> np.ndarray:
    """A uint8 buffer of n bytes (contents undefined) for work that ends before the caller
    returns it (`give_scratch`): buffers kept from earlier reads, so that passes made by
    new threads each time do not fault in fresh pages for every chunk (a tenth of a
    pass's CPU over big groups)."""
    with _SCRATCH_LOCK:
        for j, buf in enumerate(_scratch):
            if len(buf) >= n:
                return _scratch.pop(j)[:n]
    return np.empty(max(n, 1), np.uint8)[:n]


def give_scratch(buf: np.ndarray) -> None:
    """A buffer from `take_scratch`, no longer referred to, kept for the next."""
    base = buf if buf.base is None else buf.base
    if not isinstance(base, np.ndarray) or len(base) > SCRATCH_BYTES:
        return
    with _SCRATCH_LOCK:
        _scratch.append(base)
        _scratch.sort(key=len)
        del _scratch[:-SCRATCH_KEPT]


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
        self._url = fs.is_url(path)
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
        out = np.empty(max(0, stop - start), np.uint8)
        return out[: self.read_into(out, start)] if len(out) else out

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
        """The records of the chunk at begin..end that is not in the index (the footer, the
        postscript): its bytes and offsets."""
        buf = self.read(begin, end)
        out = np.empty(len(buf), np.uint8)
        info = np.zeros((1, riegeli.INFO_FIELDS), np.int64)
        riegeli.unblock_chunks(
            buf, np.zeros(1, np.int64), np.array([begin]), np.array([end]), out, info
        )
        start, size, kind, records, decoded, status = info[0].tolist()
        why = CHUNK_STATUS.get(status) if status != riegeli.OK else None
        if why is None and kind != SIMPLE:
            why = f"chunk type {kind:#x} where a simple chunk was expected"
        if why is None:
            try:
                return decode_simple(out[start : start + size], records, decoded)
            except ImportError:
                raise
            except Exception as e:
                why = f"undecodable: {e}"
        raise self._bad(f"the {what} is damaged: {why}", begin)

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
        meta = footer_metadata(values[offsets[0] : offsets[1]].tobytes()) if n else None
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
        ends = np.append(starts[1:], footer_at) if len(starts) else starts.copy()
        firsts = np.concatenate([[0], np.cumsum(index[:, 2])]).astype(np.int64)
        early = len(starts) and starts[0] < len(SIGNATURE)
        # Riegeli pads a chunk to at least as many bytes as it has records: the counts
        # are bounded by the file's size before anything is allocated for them
        too_many = np.any(index[:, 2] > ends - starts)
        if np.any(ends <= starts) or early or too_many or firsts[-1] != num_records:
            raise self._bad("the footer's chunk index is inconsistent", footer_at)
        return Footer(starts, ends, firsts, options, size)

    # -- chunks -------------------------------------------------------------------------

    def chunk_of(self, records: np.ndarray) -> np.ndarray:
        """The chunk holding each record number."""
        return np.searchsorted(self.footer.firsts, records, "right") - 1

    def chunk_records(self, ks: np.ndarray, check: bool = True) -> ChunkRecords:
        """The records of chunks ks (sorted, unique): read with one positioned read per run
        of neighbouring chunks, hashes checked, decompressed, their record sizes decoded,
        all at once (no Python work per chunk where the chunks are zstd or uncompressed).
        A damaged chunk is left out and its error listed; transposed chunks raise
        SchemaError."""
        f = self.footer
        ks = np.asarray(ks, np.int64)
        begins, ends = f.offsets[ks], f.ends[ks]
        sizes = ends - begins
        # runs: chunks that follow one another, or lie under MERGE_GAP bytes apart (reading
        # the gap costs less than another read), each read with one positioned read
        firsts = np.flatnonzero(np.r_[True, begins[1:] - ends[:-1] > MERGE_GAP])
        stops = np.r_[firsts[1:], len(ks)]
        run_begin = begins[firsts]
        run_len = ends[stops - 1] - run_begin
        run_at = offsets_of(run_len)
        run = np.repeat(np.arange(len(firsts)), stops - firsts)
        at = run_at[run] + (begins - run_begin[run])  # each chunk's place in buf
        buf = take_scratch(int(run_at[-1]))
        got = self._read_runs(buf, run_begin, run_len, run_at[:-1])
        n = len(ks)
        out = np.empty(int(sizes.sum()), np.uint8)
        info = np.zeros((n, riegeli.INFO_FIELDS), np.int64)
        riegeli.unblock_chunks(buf, at, begins, ends, out, info, check)
        give_scratch(buf)
        del buf
        if np.any(got < run_len):  # the file ends inside chunks: those are cut short
            read_to = (run_at[:-1] + got)[run]
            info[at + sizes > read_to, 5] = riegeli.OUTSIDE
        status = info[:, 5]
        if np.any((status == riegeli.OK) & (info[:, 2] == TRANSPOSED)):
            raise SchemaError(
                f"{self.path} holds transposed chunks (written with the 'transpose:true' "
                "option); tfrecnp reads ArrayRecord files of simple chunks, the writer's "
                "default: rewrite it without transpose (or read it with array_record)"
            )
        layout = np.zeros((n, riegeli.LAYOUT_FIELDS), np.int64)
        riegeli.simple_layout(out, info, layout)
        reasons: dict[int, str] = {}
        for k in np.flatnonzero(status != riegeli.OK).tolist():
            reasons[k] = CHUNK_STATUS[int(status[k])]
        for k in np.flatnonzero((status == riegeli.OK) & (layout[:, 7] == 0)).tolist():
            kind = int(info[k, 2])
            reasons[k] = (
                "chunk data undecodable: its layout is malformed"
                if kind == SIMPLE
                else f"chunk type {kind:#x} where records were expected"
            )
        said = f.firsts[ks + 1] - f.firsts[ks]
        for k in np.flatnonzero((info[:, 3] != said) & (layout[:, 7] == 1)).tolist():
            reasons[k] = f"chunk holds {int(info[k, 3])} records, the footer says {int(said[k])}"
        good = np.ones(n, bool)
        good[list(reasons)] = False
        values, offsets, more = decode_simple_chunks(out, info[good], layout[good])
        if more:  # chunks the batched decode found malformed: named, and the rest decoded
            idx = np.flatnonzero(good)
            for j, why in more.items():
                reasons[int(idx[j])] = f"chunk data undecodable: {why}"
            good[list(reasons)] = False
            values, offsets, _ = decode_simple_chunks(out, info[good], layout[good])
        counts = info[good, 3]
        firsts = f.firsts[ks[good]]
        local = np.repeat(firsts - offsets_of(counts)[:-1], counts) + np.arange(
            int(counts.sum()), dtype=np.int64
        )
        batch = RecordBatch(values, offsets, Origins((str(self.path),), local))
        rows = np.full(n, -1, np.int64)
        rows[good] = offsets_of(counts)[:-1]
        errors = [self._chunk_error(why, int(ks[k])) for k, why in sorted(reasons.items())]
        return ChunkRecords(batch, rows, errors)

    def one_chunk(self, k: int, check: bool = True) -> tuple[Any, np.ndarray]:
        """Chunk k's records (bytes, offsets): `ds[i]`'s short path (one read, one core
        call, a decompression per part, no NumPy work but the offsets).
        CorruptRecordError when it is damaged."""
        f = self._footer or self.footer
        begin, end = f.offsets.item(k), f.ends.item(k)
        buf = self._pread(begin, end)
        out, info, layout = riegeli.one_chunk(buf, begin, end, check)
        _, _, kind, records, decoded, status = info
        codec, s_at, s_len, s_size, v_at, v_len, v_size, ok = layout
        said = f.firsts.item(k + 1) - f.firsts.item(k)
        fits = ok and records == said and v_size == decoded and s_size <= 10 * records
        if status != riegeli.OK or kind != SIMPLE or not fits or codec not in (0, ord("z")):
            return self._one_the_long_way(k, check)  # names the damage, or other codecs
        view = memoryview(out)
        if codec == 0:
            sizes, values = out[s_at : s_at + s_len], out[v_at : v_at + v_len]
        else:
            z = zstd_decompressor()
            sizes = z.decompress(view[s_at : s_at + s_len], max_output_size=max(s_size, 1))
            values = z.decompress(view[v_at : v_at + v_len], max_output_size=max(v_size, 1))
        offsets = np.empty(records + 1, np.int64)
        used = riegeli.sizes_to_offsets(sizes, offsets)
        if used != len(sizes) or len(values) != decoded or offsets.item(records) != decoded:
            return self._one_the_long_way(k, check)
        return values, offsets

    def chunk_stream(
        self, k: int, rows: tuple[int, int], step: int, check: bool = True, first: int = 0
    ) -> Iterator[RecordBatch] | None:
        """Rows rows[0]..rows[1] of chunk k, a zstd simple chunk, as RecordBatches of `step`
        records, its values decompressed as the pieces are served (a big group's decode
        starts long before its last byte is decompressed); its hashes are checked and its
        record sizes decoded first. `first`, when smaller: the first piece's records, the
        next ones twice as many each up to `step` (a pass's first decode starts after a
        fraction of a millisecond of decompression, not a block's milliseconds). None
        when the chunk is not that (damaged, another codec, not what the footer says):
        the caller reads it whole, which names the damage. A block of values that does
        not decompress is a CorruptRecordError."""
        f = self._footer or self.footer
        begin, end = f.offsets.item(k), f.ends.item(k)
        buf, out = take_scratch(end - begin), take_scratch(end - begin)
        try:
            buf = buf[: self.read_into(buf, begin)]
            out, info, layout = riegeli.one_chunk(buf, begin, end, check, out)
        finally:
            give_scratch(buf)
        _, _, kind, records, decoded, status = info
        codec, s_at, s_len, s_size, v_at, v_len, v_size, ok = layout
        said = f.firsts.item(k + 1) - f.firsts.item(k)
        fits = ok and records == said and v_size == decoded and s_size <= 10 * records
        sizes = None
        if status == riegeli.OK and kind == SIMPLE and fits and codec == ord("z"):
            try:
                sizes = zstd_decompressor().decompress(
                    memoryview(out)[s_at : s_at + s_len], max_output_size=max(s_size, 1)
                )
            except Exception:  # the long way names it
                sizes = None
        offsets = np.empty(records + 1 if sizes is not None else 1, np.int64)
        if sizes is None or riegeli.sizes_to_offsets(sizes, offsets) != len(sizes):
            give_scratch(out)
            return None
        if offsets[-1] != decoded:
            give_scratch(out)
            return None
        return self._stream(k, out, (v_at, v_len), offsets, rows, max(1, step), first)

    def _stream(
        self,
        k: int,
        out: np.ndarray,
        values: tuple[int, int],
        offsets: np.ndarray,
        rows: tuple[int, int],
        step: int,
        first: int,
    ) -> Iterator[RecordBatch]:
        """`chunk_stream`'s pieces; `out` (the chunk) goes back to the scratch buffers
        when the stream ends."""
        try:
            yield from self._pieces(
                k, memoryview(out)[values[0] : sum(values)], offsets, rows, step, first
            )
        finally:
            give_scratch(out)

    def _pieces(
        self,
        k: int,
        packed: memoryview,
        offsets: np.ndarray,
        rows: tuple[int, int],
        step: int,
        first: int,
    ) -> Iterator[RecordBatch]:
        base = self.footer.firsts.item(k)
        size = min(step, first) if first > 0 else step
        total = int(offsets[-1])
        into = _VALUES.empty(total) if total <= SCRATCH_BYTES else np.empty(total, np.uint8)
        # a decompressor of its own: the thread's is used by other reads between pieces
        reader = require("zstandard", "arrayrecord").ZstdDecompressor().stream_reader(packed)
        view, got = memoryview(into), 0
        r0, stop = rows
        try:
            while r0 < stop:
                r1 = min(stop, r0 + size)
                size = min(step, 2 * size)
                want = int(offsets[r1])
                while got < want:
                    n = reader.readinto(view[got:want])
                    if not n:
                        raise ValueError(f"the values end after {got} bytes of {len(into)}")
                    got += n
                a = int(offsets[r0])
                yield RecordBatch(
                    into[a:want],
                    offsets[r0 : r1 + 1] - a,
                    Origins((str(self.path),), np.arange(base + r0, base + r1, dtype=np.int64)),
                )
                r0 = r1
        except Exception as e:  # ValueError, or the codec's own on bytes it refuses
            raise self._chunk_error(f"chunk data undecodable: {e}", k) from None

    def _pread(self, begin: int, end: int) -> Any:
        """File bytes begin..end (fewer at the end of the file), as bytes when local."""
        if self._url:
            return self.read(begin, end)
        if self._fd is None or self._pid != os.getpid():
            self._open()
        data = os.pread(self._fd, end - begin, begin)
        if len(data) < end - begin:  # a short read: the loop of read_into says how short
            return self.read(begin, end)
        return data

    def _one_the_long_way(self, k: int, check: bool) -> tuple[np.ndarray, np.ndarray]:
        got = self.chunk_records(np.array([k], np.int64), check)
        if got.errors:
            raise got.errors[0]
        return got.batch.data, got.batch.offsets

    def read_chunks(
        self, k0: int, k1: int, check: bool = True
    ) -> list[tuple[RecordBatch | None, CorruptRecordError | None]]:
        """Chunks k0..k1, each as (its records, None) or (None, the damage)."""
        got = self.chunk_records(np.arange(k0, k1, dtype=np.int64), check)
        errors = {e.offset: e for e in got.errors}
        out: list[tuple[RecordBatch | None, CorruptRecordError | None]] = []
        f = self.footer
        for j, k in enumerate(range(k0, k1)):
            row = int(got.rows[j])
            if row < 0:
                out.append((None, errors[int(f.offsets[k])]))
                continue
            n = int(f.firsts[k + 1] - f.firsts[k])
            out.append((got.batch.slice(row, row + n), None))
        return out

    def _read_runs(
        self, buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, at: np.ndarray
    ) -> np.ndarray:
        """Runs of file bytes into buf (run r: lengths[r] bytes from starts[r], to at[r]):
        local files in one core call without the GIL. The bytes read of each."""
        got = np.zeros(len(starts), np.int64)
        if fs.is_url(self.path):  # one request per run, asked for together
            first = starts.tolist()
            stops = (starts + lengths).tolist()
            parts = fs.read_ranges(self.path, first, stops) if first else []
            for r, part in enumerate(parts):
                a = int(at[r])
                buf[a : a + len(part)] = np.frombuffer(part, np.uint8)
                got[r] = len(part)
            return got
        self._open()
        starts, lengths, at = (np.ascontiguousarray(a, np.int64) for a in (starts, lengths, at))
        got[:] = lengths
        first = 0
        while first < len(starts):  # the core reads on to the first run the file cuts short
            try:
                k, n = framing.pread_runs(
                    self._fd, starts[first:], lengths[first:], buf, at[first:]
                )
            except OSError as e:
                raise OSError(e.errno, e.strerror, str(self.path)) from None
            if k < 0:
                break
            got[first + k] = n
            first += k + 1
        return got

    def _open(self) -> None:
        if self._fd is None or self._pid != os.getpid():
            with _OPENING:  # threads reading at once open the file once
                if self._fd is None or self._pid != os.getpid():
                    self._fd, self._pid = os.open(self.path, os.O_RDONLY), os.getpid()

    def read_into(self, out: np.ndarray, start: int) -> int:
        """File bytes from start into out (fewer at the end of the file): bytes read."""
        if fs.is_url(self.path):
            data = fs.read_ranges(self.path, [start], [start + len(out)])[0]
            out[: len(data)] = np.frombuffer(data, np.uint8)
            return len(data)
        self._open()
        view, got = memoryview(out), 0
        while got < len(out):
            n = os.preadv(self._fd, [view[got:]], start + got)
            if n <= 0:
                break
            got += n
        return got

    def _chunk_error(self, reason: str, k: int) -> CorruptRecordError:
        f = self.footer
        a, b = int(f.firsts[k]), int(f.firsts[k + 1])
        records = f"record {a}" if b - a == 1 else f"records {a}..{b - 1}"
        at = int(f.offsets[k])
        return self._bad(f"{reason} (chunk {k} at byte {at}, holding {records})", at, a)


READ_BYTES = 8 << 20  # file bytes of chunks read at a time by `file_batches`


def file_batches(
    files: list[ArrayRecordFile], *, check: bool = True, on_error: str = "raise"
) -> Iterator[RecordBatch]:
    """Every record of the files, in order, as RecordBatches of the chunks of about
    READ_BYTES of file at a time (copies and read-backs: no cache, nothing kept). A
    damaged chunk raises (on_error="raise") or is left out; each file is closed after."""
    for f in files:
        try:
            foot = f.footer
            sizes = foot.ends - foot.offsets
            k, n = 0, len(sizes)
            while k < n:
                stop = k + 1 + int(np.searchsorted(np.cumsum(sizes[k + 1 :]), READ_BYTES))
                got = f.chunk_records(np.arange(k, min(stop, n), dtype=np.int64), check)
                if got.errors and on_error == "raise":
                    raise got.errors[0]
                if len(got.batch.offsets) > 1:
                    yield got.batch
                k = min(stop, n)
        finally:
            f.close()


def rebatch(batches: Iterator[RecordBatch], records: int) -> Iterator[RecordBatch]:
    """The same records in batches of `records` (the last fewer)."""
    held: list[RecordBatch] = []
    have = 0
    for batch in batches:
        while len(batch):
            take = min(len(batch), records - have)
            held.append(batch.slice(0, take))
            have += take
            batch = batch.slice(take, len(batch))
            if have == records:
                yield RecordBatch.concat(held)
                held, have = [], 0
    if held:
        yield RecordBatch.concat(held)


@dataclass(frozen=True)
class ChunkRecords:
    """The records of some chunks of a file, back to back in chunk order (origins: the
    file and record numbers); rows[j], the first row of the j-th chunk asked for (-1: it
    was damaged: see errors)."""

    batch: RecordBatch
    rows: np.ndarray
    errors: list[CorruptRecordError]
