"""Parquet and Arrow IPC (Feather v2) files as a Dataset source, and a Dataset as Parquet.

Reading (`ArrowFileSource`, the `Source` contract): a file, a folder of part files or a
glob; the unit of reading is a Parquet row group or an IPC record batch, whose row counts
the footers give without reading data, so `len`, `ds[i]` and shuffles need no pass. A pass
in file order streams each row group in slices of a block (``iter_batches``); reads by
position read the row groups that hold the rows (the last one read is kept per thread, so
``ds[i]`` in a loop reads each group once); ``shuffle=True`` reads a block's rows group
by group in sorted order, then permutes them; ``shuffle=N`` reads blocks from random
places through a pool of N rows. Columns are `tfrecnp.interop.arrow`'s (``from_arrow``):
lists are Ragged, strings bytes; a column TFRecord cannot hold is refused when opened,
naming it. IPC files are memory-mapped: their numbers are views of the map.

Writing (`save_parquet`): row groups of about ROW_GROUP_BYTES of decoded data, each made of
the decoded blocks that hold it (not joined first), encoded ENCODERS at a time (one per
core) while the next is gathered, and appended in order to one file, or to part files of
about ``file_bytes`` each in a folder (`tfrecnp.data.parquet_write`: the same bytes one
pyarrow ParquetWriter writes); each column's encoding and codec chosen by trying them on
its first values; local or at a URL (uploaded as written); under hidden names, renamed
when complete.
Memory: per encoder a row group and its encoding, and the blocks decoded behind them.
"""

from __future__ import annotations

import bisect
import math
import os
import shutil
import threading
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from typing import Any

import numpy as np

from .._util import fs
from .._util.atomic import deferred_interrupt, hidden_sibling, naming_write_errors
from .._util.progress import Progress
from .._util.text import format_count
from .._util.threads import CPUS, close_iterator, ordered_map
from ..errors import SchemaError
from ..example.columns import concat_columns, take_column
from ..example.padding import feature_names
from ..example.spec import FixedLen, VarLen
from ..example.text import Text
from ..format.payloads import Origins
from ..interop.arrow import from_arrow, pyarrow, spec_of_arrow
from .blocks import Block, shuffle_blocks
from .dataset import Batch, Dataset, column_nbytes
from .parquet_write import AUTO, Stitched, column_options, encode, fixed_codec
from .source import Shuffle, Source

__all__ = ["ArrowFileSource", "is_arrow_source", "open_arrow_files", "save_parquet"]

PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
IPC_SUFFIXES = (".arrow", ".feather", ".ipc")
PARQUET_MAGIC = b"PAR1"
IPC_MAGIC = b"ARROW1"
# Decoded bytes per row group written: big enough for scans (hundreds of thousands of small
# rows), small enough that the group, its encoding and the blocks read behind it stay in
# a few hundred MiB ...
ROW_GROUP_BYTES = 24 << 20
ROW_GROUP_ROWS = (64, 1 << 20)  # ... within these many rows (64 images of 1 MiB: a group)
SAMPLE_ROWS = 1024  # rows decoded to estimate sizes
# Row groups encoded at once by default (threads=None: the cores, up to this many); each
# holds a row group and its encoder's working memory (about as much again, and 30 MiB).
ENCODERS = 2
# Writing Parquet decodes blocks of this share of a pass's records: the encoders hold
# their rows anyway, and the blocks read ahead of them, a quarter the bytes, make room
# for the second encoder within the same peak RSS.
DECODE_SHARE = 4


def _kind(path: Any) -> str | None:
    """ "parquet", "ipc" or None, by suffix, else (local files) by magic bytes."""
    name = str(path).lower()
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(IPC_SUFFIXES):
        return "ipc"
    if fs.is_url(path) or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        head = f.read(6)
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    return "ipc" if head == IPC_MAGIC else None


def _list(src: Any) -> list[Any]:
    """The Parquet / IPC files of a file, folder, glob or list (hidden files, _SUCCESS and
    _metadata passed over), in sorted order; [] when src holds none or other files."""
    if not isinstance(src, (str, os.PathLike)):
        found = []
        for p in src:
            part = _list(p)
            if not part:  # not every one: not an Arrow source
                return []
            found += part
        return found
    if fs.isdir(src):
        names = [p for p in fs.listdir(src) if not fs.basename(p).startswith(("_", "."))]
    elif fs.has_magic(src):
        names = fs.glob(src)
    else:
        return [src] if _kind(src) and fs.exists(src) else []
    names = sorted(p for p in names if fs.isfile(p))
    if not names or not all(_kind(p) for p in names):
        return []
    return names


def is_arrow_source(src: Any, storage_options: dict | None = None) -> bool:
    """Whether src names Parquet or Arrow IPC files (a file, folder of parts, glob, list)."""
    if isinstance(src, (str, os.PathLike)):
        src = fs.resolve(src, storage_options)
    elif isinstance(src, (list, tuple)):
        src = [fs.resolve(p, storage_options) for p in src]
    else:
        return False
    try:
        return bool(_list(src))
    except (OSError, ValueError):
        return False


class ArrowFiles:
    """Parquet or IPC files as units (row groups / record batches) of known rows, opened
    once per thread (a pickle or a fork opens its own)."""

    def __init__(self, paths: list[Any]):
        pa = pyarrow()
        self.paths = paths
        kinds = {_kind(p) for p in paths}
        if len(kinds) != 1:
            raise ValueError(
                f"{paths[0]} and the other files mix Parquet and Arrow IPC; open each kind alone"
            )
        self.kind = kinds.pop()
        self._local = threading.local()
        files, units, rows, schema = [], [], [], None
        for k, path in enumerate(paths):
            handle = self._handle(k)
            counts = self._unit_rows(handle)
            here = self._schema(handle)
            if schema is None:
                schema = here
            elif not here.equals(schema):
                raise ValueError(
                    f"{path} has another schema than {paths[0]}: {here} against {schema}; "
                    "part files of one dataset share one schema"
                )
            files += [k] * len(counts)
            units += list(range(len(counts)))
            rows += counts
        self.schema = schema if schema is not None else pa.schema([])
        self.unit_file = np.array(files, np.int64)
        self.unit_index = np.array(units, np.int64)
        self.starts = np.concatenate([[0], np.cumsum(rows, dtype=np.int64)])
        file_rows = np.zeros(len(paths) + 1, np.int64)
        for f, r in zip(files, rows, strict=True):
            file_rows[f + 1] += r
        self.file_starts = np.cumsum(file_rows)

    @property
    def rows(self) -> int:
        return int(self.starts[-1])

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_local"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def close(self) -> None:
        self._local = threading.local()

    def _handle(self, k: int) -> Any:
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            local.pid, local.handles, local.last = os.getpid(), {}, None
        handle = local.handles.get(k)
        if handle is None:
            pa = pyarrow()
            path = self.paths[k]
            source = fs.open_read(path, random=True) if fs.is_url(path) else os.fspath(path)
            if self.kind == "parquet":
                import pyarrow.parquet as pq

                handle = pq.ParquetFile(source)
            else:
                mapped = source if fs.is_url(path) else pa.memory_map(source)
                handle = pa.ipc.open_file(mapped)
            local.handles[k] = handle
        return handle

    def _unit_rows(self, handle: Any) -> list[int]:
        if self.kind == "parquet":
            meta = handle.metadata
            return [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
        return [handle.get_batch(b).num_rows for b in range(handle.num_record_batches)]

    def _schema(self, handle: Any) -> Any:
        return handle.schema_arrow if self.kind == "parquet" else handle.schema

    def read_unit(self, u: int, names: list[str]) -> Any:
        """Unit u's rows, these columns, as an Arrow table (the thread's last one kept)."""
        pa = pyarrow()
        key = (u, tuple(names))
        self._handle(int(self.unit_file[u]))  # (sets up this thread's state)
        last = self._local.last
        if last is not None and last[0] == key:
            return last[1]
        handle = self._handle(int(self.unit_file[u]))
        k = int(self.unit_index[u])
        if self.kind == "parquet":
            table = handle.read_row_group(k, columns=names)
        else:
            table = pa.Table.from_batches([handle.get_batch(k)]).select(names)
        self._local.last = (key, table)
        return table

    def stream(self, a: int, b: int, names: list[str], rows: int) -> Iterator[tuple[int, Any]]:
        """(first row, Arrow table) of about `rows` rows at a time covering rows a..b, in
        file order; Parquet row groups are decoded a slice at a time."""
        u = int(np.searchsorted(self.starts, a, "right")) - 1
        while a < b and u < len(self.unit_file):
            lo, hi = int(self.starts[u]), int(self.starts[u + 1])
            end = min(b, hi)
            if self.kind == "parquet":
                handle = self._handle(int(self.unit_file[u]))
                row = lo
                k = int(self.unit_index[u])
                for part in handle.iter_batches(rows, row_groups=[k], columns=names):
                    n = part.num_rows
                    x, y = max(a, row), min(end, row + n)
                    if x < y:
                        yield x, part.slice(x - row, y - x)
                    row += n
                    if row >= end:
                        break
            else:
                table = self.read_unit(u, names)
                for x in range(a, end, rows):
                    yield x, table.slice(x - lo, min(rows, end - x))
            a, u = end, u + 1

    def where(self, row: int) -> tuple[str, int]:
        """(file, row in that file) of a global row."""
        k = bisect.bisect_right(self.file_starts.tolist(), row) - 1
        return str(self.paths[k]), row - int(self.file_starts[k])


class ArrowFileSource(Source):
    """Parquet / IPC files read with one spec (see the module docstring; `Source` for the
    contract)."""

    def __init__(self, files: ArrowFiles, spec: Any):
        self.files = files
        self.spec = spec
        self._names = feature_names(spec)
        self._sample: tuple[float, int] | None = None

    def select(self, spec: Any) -> ArrowFileSource:
        return ArrowFileSource(self.files, spec)

    @property
    def paths(self) -> list[str]:
        return [str(p) for p in self.files.paths]

    def count(self) -> int:
        return self.files.rows

    def close(self) -> None:
        self.files.close()

    def _columns(self, table: Any, rows: int | np.ndarray = 0) -> Batch:
        """A table's columns; rows: the dataset row of its first row, or of each row (an
        error names the row and file)."""

        def where(row: int) -> str:
            path, here = self.files.where(int(rows + row if np.ndim(rows) == 0 else rows[row]))
            return f"row {here} of {path}"

        return from_arrow(table, self.spec, where=where)

    def empty(self) -> Batch:
        return self._columns(self.files.schema.empty_table().select(self._names))

    # -- by position ----------------------------------------------------------------------

    def read_span(self, a: int, b: int) -> Batch:
        parts = [
            self._columns(t, r) for r, t in self.files.stream(a, b, self._names, max(1, b - a))
        ]
        return self._join(parts) if parts else self.empty()

    def read_ids(self, ids: np.ndarray, what: str) -> Batch:
        ids = np.asarray(ids, np.int64)
        if not len(ids):
            return self.empty()
        order = np.argsort(ids, kind="stable")
        units = np.searchsorted(self.files.starts, ids[order], "right") - 1
        parts = []
        for u in np.unique(units):
            wanted = ids[order][units == u]
            table = self.files.read_unit(int(u), self._names)
            parts.append(self._columns(table.take(wanted - self.files.starts[u]), wanted))
        joined = self._join(parts)
        back = np.empty_like(order)
        back[order] = np.arange(len(order))
        return {name: take_column(col, back) for name, col in joined.items()}

    def _join(self, parts: list[Batch]) -> Batch:
        if len(parts) == 1:
            return parts[0]
        return {name: concat_columns([p[name] for p in parts]) for name in parts[0]}

    # -- blocks ---------------------------------------------------------------------------

    def blocks(
        self,
        start: int,
        stop: int | None,
        block: int,
        shuffle: Shuffle,
        *,
        threads: int | None = None,
        ahead: int = 0,
    ) -> Iterator[Block]:
        a, b = self.span(start, stop)
        rng = shuffle.rng()
        if shuffle.kind == "all":
            for ids, place in self.permuted(a, b, block, rng):
                cols = self.read_ids(ids[place], "batches(shuffle=True)")
                yield Block(cols, len(ids), origins=self._origins(ids[place]))
            return
        if shuffle.kind == "none":
            for row, table in self.files.stream(a, b, self._names, block):
                n = table.num_rows
                cols = self._columns(table, row)
                yield Block(cols, n, origins=self._origins(np.arange(row, row + n)))
            return
        starts = list(range(a, b, block))
        starts = [starts[i] for i in rng.permutation(len(starts))]
        pieces = (self._span_block(s, min(b, s + block)) for s in starts)
        yield from shuffle_blocks(pieces, shuffle.size, rng, block)

    def _span_block(self, a: int, b: int) -> Block:
        return Block(self.read_span(a, b), b - a, origins=self._origins(np.arange(a, b)))

    def _origins(self, rows: np.ndarray) -> Origins:
        """Each row's file and row in that file."""
        starts = self.files.file_starts
        k = np.searchsorted(starts, rows, "right") - 1
        locs = (k.astype(np.int64) << 40) | (rows - starts[k])
        return Origins(tuple(self.paths), locs)

    # -- sizes ----------------------------------------------------------------------------

    def _sampled(self) -> tuple[float, int]:
        """(decoded bytes per row, rows decoded) from the first rows."""
        if self._sample is None:
            n = min(SAMPLE_ROWS, self.count())
            cols = self.read_span(0, n) if n else {}
            size = sum(column_nbytes(c) for c in cols.values())
            self._sample = (size / n if n else 8.0, n)
        return self._sample

    def mean_record_bytes(self, start: int, stop: int | None) -> float:
        return max(1.0, self._sampled()[0])

    def estimate_nbytes(self, start: int, stop: int | None) -> tuple[int, int]:
        a, b = self.span(start, stop)
        per_row, sampled = self._sampled()
        return int(per_row * (b - a)), sampled


class ArrowFileDataset(Dataset):
    """Parquet / Arrow IPC files as a Dataset. Made by `tn.open`."""

    source: ArrowFileSource

    def __repr__(self) -> str:
        names = ", ".join(feature_names(self.spec))
        files = self.source.paths
        where = files[0] if len(files) == 1 else f"{len(files)} {self.source.files.kind} files"
        return f"Dataset({where}, {format_count(len(self))} records: {names})"


def open_arrow_files(
    src: Any, *, spec: Any = None, storage_options: dict | None = None
) -> ArrowFileDataset:
    """Parquet / IPC files (a file, folder of parts, glob or list) as a Dataset; the spec
    comes from the files' schema (`spec_of_arrow`); a spec given (a dict, or a list of
    names) picks columns by name, and only those are read."""
    if isinstance(src, (str, os.PathLike)):
        src = fs.resolve(src, storage_options)
    paths = _list(src)
    if not paths:
        raise FileNotFoundError(f"no Parquet or Arrow IPC files in {src}")
    files = ArrowFiles(paths)
    schema = files.schema
    if spec is not None:  # only the columns named are looked at
        names = list(spec) if isinstance(spec, Mapping) else feature_names(spec)
        missing = [n for n in names if n not in schema.names]
        if missing:
            raise KeyError(
                f"spec names {missing[0]!r}, which {paths[0]} does not hold; it holds "
                f"{', '.join(map(repr, schema.names))}"
            )
        schema = pyarrow().schema([schema.field(n) for n in names])
    full = _given(spec_of_arrow(schema), spec, paths[0])
    return ArrowFileDataset(ArrowFileSource(files, full))


def _given(inferred: dict, spec: Any, path: Any) -> dict:
    """The files' spec, with what a FixedLen given in spec= adds that a schema cannot say:
    its default (what a null, a missing feature, reads as) and its shape over a list column
    (its rows then dense). The files' dtype is kept."""
    if not isinstance(spec, Mapping):
        return inferred
    out = dict(inferred)
    for name, given in spec.items():
        have = inferred[name]
        if isinstance(given, Text) or isinstance(have, Text):
            out[name] = _text_given(name, given, have, path)
            continue
        if not isinstance(given, FixedLen):
            continue
        same_kind = (given.dtype == "bytes") == (have.dtype == "bytes")
        if isinstance(have, FixedLen):
            fits = same_kind and given.shape == have.shape
        else:  # a list column, dense when its rows hold given.shape
            inner = tuple(have.inner_shape)
            tail = given.shape[len(given.shape) - len(inner) :] if inner else ()
            fits = same_kind and have.ragged_rank == 1 and tail == inner
        if not fits:
            raise SchemaError(
                f"spec gives column {name!r} as {given.spell()}, but {path} holds it as "
                f"{have.spell()}; give it that shape"
            )
        default = None if given.default is None else given.default.tolist()
        out[name] = FixedLen(given.shape, have.dtype, default)
    return out


def _text_given(name: str, given: Any, have: Any, path: Any) -> Any:
    """What a string or binary column reads as: tn.Text asked of binary (its UTF-8 checked
    as read), tn.Bytes() asked of a string column (its UTF-8 bytes); other kinds refused.
    Shapes are checked as rows are read (`from_arrow`)."""

    def dtype(f: Any) -> Any:
        return getattr(f.decode_as() if isinstance(f, Text) else f, "dtype", None)

    if not isinstance(given, (Text, FixedLen, VarLen)):
        return have
    if dtype(given) != "bytes" or dtype(have) != "bytes":
        raise SchemaError(
            f"spec gives column {name!r} as {given.spell()}, but {path} holds it as "
            f"{have.spell()}; give it as that kind"
        )
    return given


# --- writing -------------------------------------------------------------------------------


def save_parquet(
    ds: Dataset,
    out: Any,
    *,
    text: Iterable[str] | bool = (),
    row_group_bytes: int = ROW_GROUP_BYTES,
    file_bytes: int | None = None,
    compression: str | None = AUTO,
    threads: int | None = None,
    progress: bool = True,
    overwrite: bool = False,
    storage_options: dict | None = None,
) -> str:
    """Write a Dataset as Parquet: one file, or (file_bytes given, or `out` ending in "/")
    a folder of part files ``part-00000.parquet`` ... of about file_bytes each. Row groups
    hold about row_group_bytes of decoded data (file_bytes too counts decoded bytes: a part
    file is that or less on disk), in the records' order; `threads` of them are encoded at
    once (default: the cores, at most ENCODERS) while the next is decoded, and appended to
    the file in order (`tfrecnp.data.parquet_write`); threads=1 writes them with one
    pyarrow ParquetWriter in this thread, the same file. Each column's encoding and codec
    are chosen on its values in the first row group (`parquet_write.choose_encoding`): the
    cheapest to write of those every common reader decodes, within a tenth of the smallest
    output (a dictionary for labels and tags, delta-packed ids, zstd where it pays);
    compression="zstd" (or another pyarrow codec) compresses every column so. Streams; the
    output appears when complete. text: bytes features written as Parquet strings (UTF-8).
    `out` may be a URL of any fsspec filesystem (storage_options for it): each file is
    uploaded as it is written, in parts, under a hidden name, and moved into place when all
    are complete. Returns its path."""
    workers = min(CPUS, ENCODERS) if threads is None else int(threads)
    if workers < 1:
        raise ValueError(f"threads must be 1 or more, not {threads}")
    target = fs.resolve(out, storage_options)
    remote = fs.is_url(target)
    folder = file_bytes is not None or str(target).endswith(("/", os.sep))
    if folder:
        target = fs.like(target, str(target).rstrip("/" + os.sep))
    if fs.exists(target) and not overwrite:
        raise FileExistsError(f"{target} exists; pass overwrite=True to replace it")
    total, _ = ds.source.progress_totals(ds._start, ds._stop)
    bar = Progress(f"writing {target}", total=total, enabled=progress)
    # decoded blocks as they come, zero-copy, in blocks of a DECODE_SHARE of a pass's
    reader = ds._arrow_stream(max(1, ds._block_records() // DECODE_SHARE), None, text)
    build = hidden_sibling(target)
    made: list[Any] = []
    part: _Part | None = None
    groups: Any = None
    written = 0

    def next_part(options: dict[str, Any], stitched: bool) -> _Part:
        if not folder:
            path = build
        else:
            if not made and not remote:
                os.makedirs(build)
            path = fs.join(build, f"part-{len(made):05d}.parquet")
        made.append(path)
        return _Part(path, reader.schema, options, stitched)

    with naming_write_errors(target):
        try:
            groups = _row_groups(reader, row_group_bytes)
            first = next(groups, None)
            if first is None:  # no records: a file of the schema
                part = next_part({"compression": fixed_codec(compression)}, stitched=False)
                part.write(pyarrow().Table.from_batches([], reader.schema))
            else:
                options = column_options(first, compression)
                groups = _first_then([first], groups)
                del first
                stitched = workers > 1
                if stitched:
                    groups = ordered_map(
                        groups, partial(encode, schema=reader.schema, options=options), workers
                    )
                for group in groups:
                    if part is None:
                        part = next_part(options, stitched)
                        written = 0
                    part.write(group)
                    written += group.nbytes
                    bar.update(group.num_rows, group.nbytes)
                    del group  # not held while the next one is made
                    if folder and file_bytes is not None and written >= file_bytes:
                        part.close()
                        part = None
            if part is not None:
                part.close()
                part = None
            with deferred_interrupt():
                _publish(build, target, made if folder else None, overwrite)
        except BaseException:
            close_iterator(groups)  # the encoders stop before their files go
            if part is not None:
                part.abort()
            _remove(build)
            raise
        finally:
            bar.close()
    return str(target)


def _first_then(first: list[Any], rest: Iterator[Any]) -> Iterator[Any]:
    """The item in `first` (not held once given), then the rest."""
    yield first.pop()
    yield from rest


def _row_groups(reader: Any, nbytes: int) -> Iterator[Any]:
    """The reader's batches gathered into tables of about `nbytes` of Arrow data (within
    ROW_GROUP_ROWS rows), made of the batches' slices: a row group is written from the
    decoded blocks that hold it, never first joined into one batch (a copy, and a second
    row group's worth of memory). Sized by the decoded bytes, not the records' size on
    disk: a varint takes a byte or two, its int64 eight."""
    pa = pyarrow()
    least, most = ROW_GROUP_ROWS
    parts: list[Any] = []
    rows = size = 0
    for batch in reader:
        while batch.num_rows:
            per_row = max(batch.nbytes / batch.num_rows, 1.0)
            want = max(least - rows, math.ceil((nbytes - size) / per_row), 1)
            take = min(batch.num_rows, want, most - rows)
            parts.append(batch.slice(0, take))
            rows, size = rows + take, size + take * per_row
            batch = batch.slice(take)
            if rows >= most or (size >= nbytes and rows >= least):
                yield pa.Table.from_batches(parts, reader.schema)
                parts, rows, size = [], 0, 0
    if rows:
        yield pa.Table.from_batches(parts, reader.schema)


class _Part:
    """One Parquet file being written, local or uploaded to a URL in parts: by one pyarrow
    ParquetWriter (tables), or stitched from row groups encoded elsewhere (`Encoded`)."""

    def __init__(self, path: Any, schema: Any, options: dict[str, Any], stitched: bool):
        import pyarrow.parquet as pq

        self.file = fs.open_write(path) if stitched or fs.is_url(path) else None
        self.writer: Any = None
        self.stitched: Stitched | None = None
        if stitched:
            self.stitched = Stitched(self.file)
        else:
            sink = self.file if self.file is not None else os.fspath(path)
            self.writer = pq.ParquetWriter(sink, schema, **options)

    def write(self, group: Any) -> None:
        """A row group: an Arrow table, or one encoded already."""
        if self.stitched is not None:
            self.stitched.add(group)
        else:
            self.writer.write_table(group, row_group_size=max(group.num_rows, 1))

    def close(self) -> None:
        if self.stitched is not None:
            self.stitched.close()
        else:
            self.writer.close()
        if self.file is not None:
            self.file.close()  # the upload completes

    def abort(self) -> None:
        try:
            if self.writer is not None:
                self.writer.close()
        finally:
            if self.file is not None:
                fs.discard(self.file)  # an S3 multipart upload is aborted, never seen


def _publish(build: Any, target: Any, parts: list[Any] | None, overwrite: bool) -> None:
    """Move the finished output into place: one rename locally; on an object store (no
    rename of folders) file by file, an old output removed first."""
    if overwrite:
        _remove(target)
    if not fs.is_url(target):
        os.replace(build, target)
        return
    if parts is None:
        fs.replace(build, target)
        return
    for path in parts:
        fs.replace(path, fs.join(target, fs.basename(path)))
    _remove(build)


def _remove(path: Any) -> None:
    """Delete a file or folder, local or remote, if it exists."""
    if fs.is_url(path):
        if fs.exists(path):
            if fs.isdir(path):
                fs.remove_tree(path)
            else:
                fs.remove(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)
