"""Ray Data: TFRecord files as a `ray.data.Dataset` (`read`) and a Ray dataset as sharded
TFRecord files (`write`), through Ray's public Datasource / Datasink API. Ray schedules;
tfrecnp reads, checks CRCs, decodes and encodes.

read: one read task per file, or per range of records of a large file whose index is known
(a `.idx` sidecar, or a header-only scan of a local file, made once by the driver and
shared with its tasks through Ray's object store; a local GZIP / ZLIB file, with the gzip
extra, once its inflate checkpoints are in their sidecar, where its tasks read them to
start inflating near their records). Each task reads its records
through `read_part`, the Dataset's block reader, which the caller above data/ hands in
(the same sizing, pipelining, damage and image handling as a local pass), and hands Ray
Arrow tables: dense columns as
primitive columns (or Ray's tensor columns for shapes beyond one axis), Ragged as Arrow
list columns (Ragged rows of an inner shape, a VarLen's inner_shape, as Ray's
variable-shaped tensor columns: a row is one (n, *inner_shape) array), bytes as binary.
A task with no records yields an empty block of the same schema. Metadata carries exact
row counts where the index gives them. CRCs are checked; on_error="skip" / "warn"
resynchronise as locally, and apply to the sample a spec is inferred from.

write: each write task encodes its blocks (Arrow list columns back to Ragged) with the
`Writer` into one shard under a hidden name; when every task has succeeded the driver
renames them to TensorFlow's ``name-00000-of-00008.tfrecord``; when the job fails the
driver deletes every hidden file of the job, so nothing complete-looking is left.
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import ray
from ray.data import Datasink, Datasource, ReadTask
from ray.data.block import BlockAccessor, BlockMetadata

from .._util import fs
from .._util.sizing import records_per_batch
from ..errors import CorruptRecordError, SchemaError
from ..example.columns import BytesColumn, Ragged
from ..example.decode import Decoder
from ..example.infer import infer_spec
from ..example.spec import FixedLen, Raw, as_spec
from ..example.write import Writer
from ..example.write_shards import shard_name
from ..format import inflate_index
from ..format.damage import check_on_error
from ..format.frames import OVERHEAD_BYTES
from ..format.index import RecordIndex, cached_index, index_path, remember_index
from ..format.paths import expand_paths
from ..format.reader import file_compression, mean_frame_bytes, scan_file
from ..interop.arrow import _Refused, column_from_arrow, to_arrow_array
from ..interop.arrow_nulls import _NullError

__all__ = ["read", "write"]

TASK_BYTES = 256 << 20  # a file larger than this is split into read tasks of about this size
BLOCK_BYTES = 16 << 20  # a read task yields blocks of about this many bytes ...
BLOCK_RECORDS = (64, 1 << 17)  # ... within these many records
RENAME_THREADS = 32  # the driver moves finished shards into place this many at a time
PLAN_THREADS = 32  # the driver looks at this many files at a time when planning a read


# --- reading ---------------------------------------------------------------------------------


# read_part([path], spec, compression=, verify_crc=, on_error=, first=, rows=, index=, block=)
# -> decoded blocks of records first..first + rows of one file (all of it, rows None)
ReadPart = Callable[..., Iterator[dict[str, Any]]]


@dataclass(frozen=True)
class _Share:
    """What one read task reads: a whole file, or bytes start..stop of it holding records
    first..first + rows (rows None when unknown); index: for a share of a file, a
    reference to the file's RecordIndex in Ray's object store."""

    path: str
    compression: str | None
    size: int
    rows: int | None = None
    span: tuple[int, int] | None = None
    first: int = 0
    index: Any = None


class TFRecordDatasource(Datasource):
    """TFRecord files as read tasks (see the module docstring)."""

    def __init__(
        self,
        paths: list[str],
        spec: Any,
        *,
        compression: str | None,
        verify_crc: bool,
        on_error: str,
        read_part: ReadPart,
        task_bytes: int = TASK_BYTES,
    ):
        self.paths = paths
        self.spec = spec
        self.compression = compression
        self.verify_crc = verify_crc
        self.on_error = on_error
        self.read_part = read_part
        with ThreadPoolExecutor(PLAN_THREADS) as pool:  # a request or two per file, at once
            planned = pool.map(lambda p: _shares(p, compression, task_bytes), paths)
            self.shares = [s for group in planned for s in group]
        self._schema = _arrow_schema(spec)

    def estimate_inmemory_data_size(self) -> int | None:
        return sum(s.size for s in self.shares)

    def get_read_tasks(self, parallelism: int, per_task_row_limit=None, data_context=None):
        tasks = []
        exact = self.on_error == "raise"  # skipped damage changes the count
        for share in self.shares:
            meta = BlockMetadata(
                num_rows=share.rows if exact else None,
                size_bytes=share.size,
                input_files=(str(share.path),),
                exec_stats=None,
            )
            tasks.append(
                ReadTask(
                    _read_fn(share, self.spec, self.verify_crc, self.on_error, self.read_part),
                    meta,
                    schema=self._schema,
                    per_task_row_limit=per_task_row_limit,
                )
            )
        return tasks

    def get_name(self) -> str:
        return "TFRecnp"


def _shares(path: str, compression: str | None, task_bytes: int) -> list[_Share]:
    kind = file_compression(path, compression)
    index, size = None, fs.size(path)
    if kind is not None:
        index, size = _inflated_index(path, kind, size, task_bytes)
    elif fs.is_url(path) and (index := cached_index(path)) is not None:
        pass  # (a remote file's index kept locally by its size and ETag: no request)
    elif fs.exists(index_path(path)) or not fs.is_url(path):
        try:  # a sidecar (known from the listing), or a local header-only scan
            index = scan_file(path, compression=None)
        except CorruptRecordError:  # the read task meets it, and honours on_error
            index = None
        else:
            remember_index(index)
    if index is None:
        return [_Share(path, kind, size)]
    n = len(index)
    if size <= task_bytes or n < 2:
        return [_Share(path, kind, size, n)]
    ends = index.offsets + index.lengths + OVERHEAD_BYTES
    shared = ray.put(index)  # once for all the file's tasks
    parts = max(1, round(size / task_bytes))
    cuts = np.unique(np.searchsorted(ends, np.linspace(0, size, parts + 1)[1:-1]))
    bounds = [0, *[int(c) + 1 for c in cuts if c + 1 < n], n]
    shares = []
    for a, b in itertools.pairwise(bounds):
        start, stop = int(index.offsets[a]), int(ends[b - 1])
        shares.append(_Share(path, kind, stop - start, b - a, (start, stop), a, shared))
    return shares


def _inflated_index(
    path: str, kind: str, size: int, task_bytes: int
) -> tuple[RecordIndex | None, int]:
    """(index, decompressed size) of a GZIP / ZLIB file that tasks may split: local, with
    the gzip extra, larger than task_bytes, its inflate checkpoints in a sidecar (made here
    once: each task reads it rather than decompressing the file up to its records). Else
    (None, compressed size): one task streams the whole file."""
    if fs.is_url(path) or size <= task_bytes or not inflate_index.have_rapidgzip():
        return None, size
    try:
        cp, walked = inflate_index.checkpoints_and_frames(path, kind)
    except (CorruptRecordError, OSError):  # the read task meets it, and honours on_error
        return None, size
    if walked is None and cp.stored and cp.index:  # from the sidecars: the .idx or a scan
        try:
            found = scan_file(path, compression=kind)
        except CorruptRecordError:
            return None, size
        walked = found.offsets, found.lengths
    if walked is None or not cp.stored:  # damaged, or no sidecar the tasks could read
        return None, size
    return RecordIndex(path, *walked), cp.inflated_size


def _read_fn(share: _Share, spec: Any, verify_crc: bool, on_error: str, read_part: ReadPart):
    def read() -> Iterator[pa.Table]:
        index = ray.get(share.index) if share.index is not None else None
        blocks = read_part(
            [share.path],
            spec,
            compression=share.compression,
            verify_crc=verify_crc,
            on_error=on_error,
            first=share.first,
            rows=share.rows if share.span is not None else None,  # a whole file streams
            index=index,
            block=_block_rows(share),
        )
        empty = True
        for cols in blocks:
            empty = False
            yield to_arrow(cols)
        if empty:  # a block of the schema (Schema.empty_table cannot build tensor columns)
            yield _empty_table(spec)

    return read


def _block_rows(share: _Share) -> int:
    if share.rows:  # the index knows the frames' mean size
        mean = share.size / share.rows
    else:
        mean = mean_frame_bytes(share.path, compression=share.compression) or 64.0
    return records_per_batch(BLOCK_BYTES, mean, BLOCK_RECORDS)


def _empty_table(spec: Any) -> pa.Table:
    """A block of no records, from an empty decode (so its schema always agrees)."""
    from ..format.payloads import RecordBatch

    empty = RecordBatch(np.empty(0, np.uint8), np.zeros(1, np.int64))
    return to_arrow(Decoder(spec).decode(empty))


def _arrow_schema(spec: Any) -> pa.Schema:
    """The Arrow schema of decoded blocks."""
    return _empty_table(spec).schema


def read(
    paths: Any,
    spec: Any = None,
    *,
    read_part: ReadPart,
    compression: str | None = "auto",
    verify_crc: bool = True,
    on_error: str = "raise",
    storage_options: dict | None = None,
    task_bytes: int = TASK_BYTES,
    preserve_order: bool = True,
    ray_remote_args: dict | None = None,
) -> ray.data.Dataset:
    """TFRecord files of tf.train.Example as a ray.data.Dataset, one row per record.

    paths: a file, glob, folder or list, local or any fsspec URL (storage_options for its
    filesystem). spec: as tn.open takes it; None infers one from a sample. Files larger
    than task_bytes with a known index are split into several read tasks. Columns: dense
    features as primitive or tensor columns, VarLen (Ragged) as Arrow lists (with an
    inner_shape, as variable-shaped tensors: a row is one (n, *inner_shape) array), bytes
    as binary. on_error="skip" / "warn" skips damaged records (in inference's sample too)
    instead of failing the task.
    preserve_order=True (this dataset's execution option) keeps the files' order, as a
    local read gives it; False lets Ray hand out blocks as tasks finish.
    read_part: the block reader each task reads its records with (given by
    `tfrecnp.ray.read` and `Dataset.to_ray`, which live above the Dataset).
    """
    check_on_error(on_error)
    # absolute: read tasks run in workers whose working folder is not the driver's
    files = [
        p if fs.is_url(p) else os.path.abspath(p) for p in expand_paths(paths, storage_options)
    ]
    if spec is None:
        spec = infer_spec(files, compression=compression, on_error=on_error)
    spec = as_spec(spec)
    source = TFRecordDatasource(
        files,
        spec,
        compression=compression,
        verify_crc=verify_crc,
        on_error=on_error,
        read_part=read_part,
        task_bytes=task_bytes,
    )
    ds = ray.data.read_datasource(source, ray_remote_args=ray_remote_args or {})
    ds.context.execution_options.preserve_order = preserve_order
    return ds


# --- columns <-> Arrow -----------------------------------------------------------------------


def to_arrow(columns: Mapping[str, Any]) -> pa.Table:
    """Decoded columns as an Arrow table (a Ray block): the plain Arrow types of
    `tfrecnp.interop.arrow`, except arrays of more than one axis, as Ray tensor columns, and
    Ragged rows of an inner shape, as Ray variable-shaped tensor columns (so Ray users get
    one ndarray per row, as Ray's own readers give them)."""
    return pa.table({name: _arrow_column(col) for name, col in columns.items()})


def _arrow_column(col: Any) -> pa.Array:
    if isinstance(col, Ragged) and isinstance(col.values, np.ndarray) and col.values.ndim > 1:
        return _variable_tensors(col)
    if isinstance(col, np.ndarray) and col.ndim > 1 and not col.dtype.hasobject:
        from ray.data.extensions import ArrowTensorArray

        return ArrowTensorArray.from_numpy(np.ascontiguousarray(col))
    return to_arrow_array(col)


VARIABLE_TENSOR = "ray.data.arrow_variable_shaped_tensor"


def _variable_tensors(col: Ragged) -> pa.Array:
    """Rows of inner shape (a VarLen's inner_shape) as Ray's variable-shaped tensor column,
    so each row reaches Ray users as one (n, *inner_shape) array, as tfrecnp's batches
    give it (a list of tensor columns would give an object array of n small arrays)."""
    from ray.data.extensions import ArrowVariableShapedTensorType

    values = np.ascontiguousarray(col.values)
    inner = values.shape[1:]
    per_row = int(np.prod(inner))
    splits = np.asarray(col.row_splits, np.int64)
    data = pa.LargeListArray.from_arrays(pa.array(splits * per_row), pa.array(values.ravel()))
    shapes = np.empty((len(col), 1 + len(inner)), np.int64)
    shapes[:, 0] = np.diff(splits)
    shapes[:, 1:] = inner
    steps = np.arange(0, shapes.size + 1, shapes.shape[1], dtype=np.int32)
    shape = pa.ListArray.from_arrays(pa.array(steps), pa.array(shapes.ravel()))
    storage = pa.StructArray.from_arrays([data, shape], ["data", "shape"])
    kind = ArrowVariableShapedTensorType(pa.from_numpy_dtype(values.dtype), 1 + len(inner))
    return pa.ExtensionArray.from_storage(kind, storage)


def _from_variable_tensors(arr: pa.ExtensionArray) -> Any:
    """Ray's variable-shaped tensor column -> Ragged rows of one inner shape (None when
    the rows' inner shapes differ)."""
    data, shape = arr.storage.flatten()
    shapes = np.asarray(shape.flatten(), np.int64).reshape(len(arr), arr.type.ndim)
    if not len(arr) or arr.type.ndim < 2 or np.any(shapes[:, 1:] != shapes[0, 1:]):
        return None
    offsets = np.asarray(data.offsets, np.int64)
    flat = np.asarray(data.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0])))
    inner = tuple(int(d) for d in shapes[0, 1:])
    return Ragged.from_lengths(flat.reshape(-1, *inner), shapes[:, 0])


def from_arrow(table: pa.Table, spec: Any = None) -> dict[str, Any]:
    """An Arrow table (a Ray block) as columns the Writer takes: lists -> Ragged, binary ->
    BytesColumn, tensor columns -> ndarrays, variable-shaped tensors of one inner shape ->
    Ragged of that inner shape. With a spec, list columns of a FixedLen or Raw feature
    become dense arrays of its shape."""
    features = spec if isinstance(spec, Mapping) else {}
    out = {}
    for name in table.column_names:
        column = table.column(name)
        arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        try:
            col = _from_arrow(arr)
        except (_Refused, _NullError) as why:
            raise SchemaError(f"column {name!r} {why}") from None
        if isinstance(col, np.ndarray) and col.dtype == object:
            col = _from_objects(col)
        feature = features.get(name)
        if isinstance(col, Ragged) and isinstance(feature, (FixedLen, Raw)):
            col = col.values.reshape(len(col), *feature.shape)
        out[name] = col
    return out


def _from_objects(values: np.ndarray) -> Any:
    """An object column (how Ray's NumPy batches hold variable-length rows) -> Ragged,
    or BytesColumn for bytes / str."""
    first = next((v for v in values if v is not None), b"")
    if isinstance(first, (bytes, str)):
        return BytesColumn.from_list(values)
    rows = [np.asarray(v) for v in values]
    lengths = np.array([len(r) for r in rows], np.int64)
    flat = np.concatenate(rows) if rows else np.empty(0)
    return Ragged.from_lengths(flat, lengths)


def _from_arrow(arr: pa.Array) -> Any:
    """Ray's tensor columns by their extension type; every other type as
    `tfrecnp.interop.arrow` reads it."""
    kind = arr.type
    if isinstance(kind, pa.ExtensionType) and kind.extension_name.startswith("ray.data."):
        if kind.extension_name == VARIABLE_TENSOR:
            rows = _from_variable_tensors(arr)
            if rows is not None:
                return rows
        return np.asarray(arr.to_numpy())
    return column_from_arrow(arr)


# --- writing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RayWriteResult:
    """What `write` wrote: the shards (in order), their spec and the record count."""

    paths: list[str]
    spec: Any
    records: int


class TFRecordDatasink(Datasink):
    """Each write task: its blocks -> one shard under a hidden name. The driver renames
    the shards when all succeeded, or deletes them all when the job failed."""

    def __init__(
        self,
        path: Any,
        *,
        spec: Any,
        compression: str | None,
        encoding: Any,
        index: bool,
    ):
        self.path = path
        self.spec = spec
        self.compression = compression
        self.encoding = encoding
        self.index = index
        self.job = uuid.uuid4().hex[:8]
        self.result: RayWriteResult | None = None

    def _hidden(self, task: int) -> Any:
        folder, name = fs.split(self.path)
        return fs.join(folder, f".{name}.{self.job}-{task:05d}")

    def write(self, blocks: Iterable, ctx: Any) -> tuple[int, Any, int, Any]:
        hidden = self._hidden(ctx.task_idx)
        writer = Writer(
            hidden,
            encoding=self.encoding,
            compression=self.compression,
            index=self.index,
            progress=False,
        )
        with writer:
            for block in blocks:
                table = BlockAccessor.for_block(block).to_arrow()
                if table.num_rows:
                    writer.write_batch(from_arrow(table, self.spec))
        spec = writer.spec if writer.records else None
        return ctx.task_idx, hidden, writer.records, spec

    def on_write_complete(self, write_result: Any) -> None:
        done = sorted(write_result.write_returns, key=lambda r: r[0])
        kept = [r for r in done if r[2]] or done[:1]  # empty tasks write no shard
        for r in done:
            if r not in kept:
                _remove_shard(r[1])
        paths = [shard_name(self.path, k, len(kept)) for k in range(len(kept))]
        moves = [(r[1], target) for r, target in zip(kept, paths, strict=True)]
        if self.index:
            moves += [(index_path(a), index_path(b)) for a, b in moves]
        with ThreadPoolExecutor(min(RENAME_THREADS, len(moves) or 1)) as pool:
            # on an object store a rename is a server-side copy: many at once
            list(pool.map(lambda move: fs.replace(*move), moves))
        spec = next((r[3] for r in kept if r[3] is not None), self.spec)
        self.result = RayWriteResult(paths, spec, sum(r[2] for r in kept))

    def on_write_failed(self, error: Exception) -> None:
        folder, name = fs.split(self.path)
        for found in fs.glob(fs.join(folder, f".{name}.{self.job}-*")) + _hidden_leftovers(
            folder, f"{name}.{self.job}-"
        ):
            _remove_shard(found)

    def get_name(self) -> str:
        return "TFRecnp"


def _hidden_leftovers(folder: Any, tag: str) -> list[Any]:
    """Hidden files of the job (a writer's own temporary names included), which glob's
    default of skipping hidden names would miss."""
    if fs.is_url(folder):
        fsys, inner = folder.fs, folder.fs._strip_protocol(str(folder))
        names = fsys.ls(inner, detail=False) if fsys.exists(inner) else []
        return [fs.URL(fsys.unstrip_protocol(n), fsys) for n in names if tag in n]
    return [os.path.join(folder, n) for n in os.listdir(folder) if tag in n]


def _remove_shard(path: Any) -> None:
    fs.remove(path)
    fs.remove(index_path(path))


def write(
    dataset: ray.data.Dataset,
    path: Any,
    *,
    spec: Any = None,
    compression: str | None = None,
    num_shards: int | None = None,
    encoding: Any = None,
    index: bool = False,
    storage_options: dict | None = None,
) -> RayWriteResult:
    """Write a ray.data.Dataset as TFRecord files of tf.train.Example, one record per row,
    one shard per write task: ``path`` = out/data.tfrecord gives out/data-00000-of-00008
    .tfrecord ... (num_shards: repartition first to exactly that many). Columns as `read`
    gives them (lists -> VarLen, tensors and primitives -> FixedLen, binary -> bytes); spec
    turns list columns of FixedLen / Raw features dense. Shards appear only when the whole
    job succeeded; a failed job deletes what it wrote. Returns (paths, spec, records)."""
    if num_shards is not None:
        if num_shards < 1:
            raise ValueError(f"num_shards must be at least 1, not {num_shards}")
        dataset = dataset.repartition(num_shards)
    target = fs.resolve(path, storage_options)
    if not fs.is_url(target):
        target = os.path.abspath(target)  # write tasks run in other working folders
    sink = TFRecordDatasink(
        target,
        spec=as_spec(spec) if spec is not None else None,
        compression=compression,
        encoding=encoding,
        index=index,
    )
    dataset.write_datasink(sink)
    assert sink.result is not None
    return sink.result
