"""PyTorch: a Dataset as a map-style dataset (as it is) or as an IterableDataset of batches
(`ds.to_torch`), and the collate that turns tfrecnp batches into tensors.

Map-style: `DataLoader(ds, batch_size=32, collate_fn=tn.torch_collate())` fetches each batch
with one `ds.__getitems__` call (a positioned read per run of neighbouring records), and
workers reopen the files after the dataset is pickled to them.

`ds.to_torch(32)`: each DataLoader worker of each distributed rank reads its own shard,
`rank * num_workers + worker_id` of `world_size * num_workers`, through the block path, so
every record is read once by one worker; give the DataLoader `batch_size=None`.

From a worker process a batch travels as one buffer (plus its layout), inside the pickle
when small, else in one shared-memory segment; the DataLoader's own hand-over puts every
tensor in a segment of its own, about 0.3-0.6 ms each here, more than reading and decoding
a batch of 32. The main process gets the same dict, its tensors views into that buffer.

Tensors: dense columns become tensors sharing the batch's memory (`torch.from_numpy`;
read-only arrays, such as memory-mapped files, are copied first); a Ragged column "tokens"
becomes values "tokens" plus "tokens_offsets" (row i is values[offsets[i]:offsets[i+1]]; a
Ragged of Ragged adds "tokens_inner_offsets"), or a padded tensor plus "tokens_length" with
pad=; byte strings become lists of bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

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
    pickle through the worker's pipe (a few KiB cost microseconds); larger, in one
    shared-memory segment (the DataLoader's way, about 0.3-0.6 ms per segment here)."""

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
    ):
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
        self.ranks = _distributed() or (0, 1)

    def set_epoch(self, epoch: int) -> None:
        """Shuffle differently each epoch (as DistributedSampler.set_epoch does)."""
        self.epoch = epoch

    def _parts(self) -> tuple[int, int, int]:
        """(this rank, ranks, workers per rank). Worker processes do not join the process
        group, so the rank is the one seen where the stream was made, unless this process
        is in a group itself."""
        rank, ranks = _distributed() or self.ranks
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
