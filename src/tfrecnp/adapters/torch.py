"""PyTorch: a Dataset as a map-style dataset (as it is) or as an IterableDataset of batches
(`ds.to_torch`), and the collate that turns tfrecnp batches into tensors.

Map-style: `DataLoader(ds, batch_size=32)` fetches each batch with one `ds.__getitems__`
call (a positioned read per run of neighbouring records), and workers reopen the files
after the dataset is pickled to them. Torch's default collate dispatches on the type of a
batch's first element; a Dataset's records register their own (collate_records_by_default)
that collates the batch whole, as `collate_fn=tn.torch_collate()` does (which also pads).

`ds.to_torch(32)`: each DataLoader worker of each rank reads its own shard,
`rank * num_workers + worker_id` of `world_size * num_workers`, through the block path, so
every record is read once by one worker; give the DataLoader `batch_size=None`. The rank
comes from rank= / world_size=, else torch.distributed when initialised, else RANK /
WORLD_SIZE (set by torchrun before init_process_group; JAX or Horovod jobs never make a
torch group), as webdataset and Hugging Face's split_dataset_by_node do.

From a worker process a batch travels as one buffer (plus its layout), inside the pickle
when small, else in one shared-memory segment; the DataLoader's own hand-over puts every
tensor in a segment of its own, which costs more than reading and decoding a small batch
(benchmarks/CONSTANTS.md, adapters.torch.INLINE_BYTES). The main process gets the same
dict, its tensors views into that buffer.

Tensors: dense columns become tensors sharing the batch's memory (`torch.from_numpy`;
read-only arrays, such as memory-mapped files, are copied first); a Ragged column "tokens"
becomes values "tokens" plus "tokens_offsets" (row i is values[offsets[i]:offsets[i+1]]; a
Ragged of Ragged adds "tokens_inner_offsets"), or a padded tensor plus "tokens_length" with
pad=; byte strings become lists of bytes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info
from torch.utils.data._utils.collate import collate, default_collate_fn_map

from ..example.columns import BytesColumn, Ragged
from ..example.padding import pad_columns

OFFSETS_SUFFIX = "_offsets"
INNER_OFFSETS_SUFFIX = "_inner_offsets"


class Collate:
    """collate_fn for a DataLoader over a Dataset: a batch of records (what
    `Dataset.__getitems__` returns) -> {name: tensor, ...}. pad / truncate as in
    `Dataset.batches`. Picklable, so it works with worker processes."""

    def __init__(self, pad: bool | Mapping[str, Any] | None = None, *, truncate: bool = False):
        self.pad = pad
        self.truncate = truncate

    def __call__(self, records: Any) -> dict[str, Any]:
        columns = getattr(records, "columns", None)
        if columns is None:
            raise TypeError(
                "torch_collate takes the records of Dataset.__getitems__ (a DataLoader over a "
                f"tfrecnp Dataset, or a Subset of one), not {type(records).__name__}"
            )
        return shippable(to_tensors(pad_columns(columns, self.pad, truncate=self.truncate)))


_WHOLE = Collate()


def _collate_records(batch: Any, *, collate_fn_map: Any = None) -> Any:
    """PyTorch's default collate for a batch whose first element is a Dataset's Record: a
    Records batch (Dataset.__getitems__) collated whole, as torch_collate() does; a list
    of records made elsewhere, key by key as torch does it."""
    if getattr(batch, "columns", None) is not None:
        return _WHOLE(batch)
    return {k: collate([r[k] for r in batch], collate_fn_map=collate_fn_map) for k in batch[0]}


def collate_records_by_default(record_type: type) -> None:
    """Register _collate_records in torch's default_collate_fn_map (its documented way to
    extend default_collate), so that `DataLoader(ds, batch_size=32)` collates each batch
    whole instead of stacking it record by record (and, from a worker, in one buffer
    rather than a shared-memory segment per tensor)."""
    default_collate_fn_map.setdefault(record_type, _collate_records)


def torch_collate(
    pad: bool | Mapping[str, Any] | None = None, *, truncate: bool = False
) -> Collate:
    """The collate_fn for `DataLoader(ds, batch_size=..., collate_fn=tn.torch_collate())`."""
    return Collate(pad, truncate=truncate)


def to_tensors(columns: Mapping[str, Any]) -> dict[str, Any]:
    """A tfrecnp batch as tensors (see the module docstring for each kind of column)."""
    out: dict[str, Any] = {}
    for name, col in columns.items():
        if isinstance(col, Ragged) and not _holds_bytes(col):
            s = col.row_splits
            values = col.values[int(s[0]) : int(s[-1])]
            offsets = {name + OFFSETS_SUFFIX: torch.from_numpy(s - s[0])}
            if isinstance(values, Ragged):
                inner = values.row_splits
                offsets[name + INNER_OFFSETS_SUFFIX] = torch.from_numpy(inner - inner[0])
                values = values.values[int(inner[0]) : int(inner[-1])]
            if isinstance(values, Ragged):  # partitions (issue 24): more levels than names
                raise ValueError(
                    f"column {name!r} has {col.ragged_rank} ragged levels; tensors carry two "
                    f"({name + OFFSETS_SUFFIX!r}, {name + INNER_OFFSETS_SUFFIX!r}): read it "
                    "with ds.batches() or ds.to_tf(), or with fewer partitions"
                )
            out[name] = _tensor(values)
            out.update(offsets)
        elif isinstance(col, (BytesColumn, Ragged)):
            out[name] = col.to_list()
        elif isinstance(col, np.ndarray) and col.dtype.hasobject:
            out[name] = col.tolist()
        else:
            out[name] = _tensor(col)
    return out


def _holds_bytes(col: Ragged) -> bool:
    values = col.values
    while isinstance(values, Ragged):
        values = values.values
    return isinstance(values, BytesColumn)


def _tensor(array: np.ndarray) -> Any:
    if not array.flags.writeable:  # torch wants to own writable memory; copy read-only maps
        array = array.copy()
    return torch.from_numpy(np.ascontiguousarray(array))


ALIGN = 64  # bytes: each column of a shipped batch starts at a multiple of this
INLINE_BYTES = 1 << 20  # a shipped batch up to this size travels in the pickle itself


class Shipped(dict):
    """A batch leaving a DataLoader worker: pickles as one uint8 buffer holding every
    tensor column, plus the layout and the other columns, and unpickles as a plain dict
    whose tensors are views into that buffer. Up to INLINE_BYTES the buffer travels in the
    pickle through the worker's pipe (cheaper than a segment for a small batch); larger, in
    one shared-memory segment (the DataLoader's way)."""

    def __copy__(self) -> Shipped:  # the DataLoader's default_convert copies the batch
        return Shipped(self)

    def __reduce__(self) -> tuple:
        tensors = [(k, v) for k, v in self.items() if isinstance(v, torch.Tensor)]
        layout, end = [], 0
        for name, t in tensors:
            nbytes = t.numel() * t.element_size()
            layout.append((name, end, nbytes, t.dtype, tuple(t.shape)))
            end += -(-nbytes // ALIGN) * ALIGN
        buf = torch.empty(end, dtype=torch.uint8)
        if end > INLINE_BYTES:
            buf.share_memory_()
        for (_, t), (_, start, nbytes, _, _) in zip(tensors, layout, strict=True):
            if nbytes:
                buf[start : start + nbytes].view(t.dtype).copy_(t.reshape(-1))
        rest = {k: v for k, v in self.items() if not isinstance(v, torch.Tensor)}
        shipped = buf if end > INLINE_BYTES else buf.numpy()
        return (_unship, (shipped, layout, rest, list(self)))


def _unship(buf: Any, layout: list, rest: dict, order: list) -> dict[str, Any]:
    if isinstance(buf, np.ndarray):
        buf = torch.from_numpy(buf)
    out = dict(rest)
    for name, start, nbytes, dtype, shape in layout:
        out[name] = buf[start : start + nbytes].view(dtype).view(shape)
    return {k: out[k] for k in order}


def shippable(batch: dict[str, Any]) -> dict[str, Any]:
    """The batch as a Shipped in a DataLoader worker (it will be pickled), else as is."""
    return Shipped(batch) if get_worker_info() is not None else batch


def _distributed() -> tuple[int, int] | None:
    """(rank, world size) when this process is in an initialised torch.distributed group."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return None


def _launcher() -> tuple[int, int] | None:
    """(rank, world size) from RANK / WORLD_SIZE, as torchrun, Slurm wrappers and others
    set them before (or without) init_process_group; None when either is unset."""
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is None or world is None:
        return None
    try:
        got = int(rank), int(world)
    except ValueError:
        raise ValueError(
            f"to_torch reads the rank from the environment: RANK={rank!r} and "
            f"WORLD_SIZE={world!r} must be integers; fix them, or give rank= and world_size="
        ) from None
    return _checked_ranks(*got, "the environment's RANK / WORLD_SIZE")


def _checked_ranks(rank: Any, world_size: Any, where: str) -> tuple[int, int]:
    for name, value in (("rank", rank), ("world_size", world_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"to_torch: {name} must be an int, not {value!r} ({where})")
    if not 0 <= rank < world_size:
        raise ValueError(
            f"to_torch: rank {rank} of world_size {world_size} ({where}): need "
            "0 <= rank < world_size"
        )
    return int(rank), int(world_size)


def resolve_ranks(rank: int | None, world_size: int | None) -> tuple[tuple[int, int], str]:
    """((rank, world size), where they came from): rank= / world_size= when given, else
    the initialised torch.distributed group, else RANK / WORLD_SIZE, else one process."""
    if rank is not None or world_size is not None:
        if rank is None or world_size is None:
            raise ValueError(
                f"to_torch: give rank= and world_size= together (got rank={rank!r}, "
                f"world_size={world_size!r})"
            )
        return _checked_ranks(rank, world_size, "rank=, world_size="), "arguments"
    group = _distributed()
    if group is not None:
        return group, "torch.distributed"
    env = _launcher()
    if env is not None:
        return env, "environment"
    return (0, 1), "single process"


class TorchBatches(IterableDataset):
    """Batches of a Dataset, split across DataLoader workers and distributed ranks with no
    record lost or repeated. Made by `Dataset.to_torch`; see the module docstring."""

    def __init__(
        self,
        ds: Any,
        batch_size: int,
        *,
        shuffle: bool | int = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        pad: bool | Mapping[str, Any] | None = None,
        truncate: bool = False,
        prefetch: int = 2,
        rank: int | None = None,
        world_size: int | None = None,
    ):
        self.ranks, self.ranks_from = resolve_ranks(rank, world_size)
        self.ds = ds
        len(ds)  # counts records (indexes files) once, before the dataset is pickled to workers
        self.batch_size = batch_size
        self.options = {
            "shuffle": shuffle,
            "drop_remainder": drop_remainder,
            "pad": pad,
            "truncate": truncate,
            "prefetch": prefetch,
        }
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Shuffle differently each epoch (as DistributedSampler.set_epoch does)."""
        self.epoch = epoch

    def _parts(self) -> tuple[int, int, int]:
        """(this rank, ranks, workers per rank). Worker processes do not join the process
        group, so the rank is the one seen where the stream was made, unless it was not
        given and this process is in a group itself."""
        explicit = self.ranks_from == "arguments"
        rank, ranks = self.ranks if explicit else _distributed() or self.ranks
        info = get_worker_info()
        return rank, ranks, 1 if info is None else info.num_workers

    def __iter__(self) -> Iterator[dict[str, Any]]:
        rank, ranks, workers = self._parts()
        info = get_worker_info()
        worker = 0 if info is None else info.id
        part = self.ds.shard(ranks * workers, rank * workers + worker)
        seed = None if self.seed is None else self.seed + self.epoch
        for batch in part.batches(self.batch_size, seed=seed, **self.options):
            yield shippable(to_tensors(batch))

    def __len__(self) -> int:
        """Batches this rank delivers (over all its workers, as DataLoader counts them)."""
        rank, ranks, workers = self._parts()
        n, total = len(self.ds), 0
        for k in range(rank * workers, (rank + 1) * workers):
            records = (k + 1) * n // (ranks * workers) - k * n // (ranks * workers)
            full, rest = divmod(records, self.batch_size)
            total += full + (1 if rest and not self.options["drop_remainder"] else 0)
        return total
