"""PyTorch: a Dataset in a DataLoader with worker processes (map-style, batched fetch) and
ds.to_torch() across workers and distributed ranks: every record exactly once, values equal
to the source."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Subset

import tfrecnp as tn

N = 1001


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A TFRecord file and the columns written into it."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 6, N)
    cols = {
        "label": np.arange(N, dtype=np.int64),
        "x": rng.random((N, 3), dtype=np.float32),
        "tokens": tn.Ragged(rng.integers(0, 50, lengths.sum()), np.r_[0, np.cumsum(lengths)]),
        "id": np.array([b"r%d" % i for i in range(N)], dtype=object),
    }
    path = tmp_path_factory.mktemp("torch") / "data.tfrecord"
    tn.write(path, cols)
    return str(path), cols


def _check_batch(batch, cols):
    """The batch's values equal the source's rows named by its labels."""
    rows = batch["label"].numpy()
    np.testing.assert_array_equal(batch["x"].numpy(), cols["x"][rows])
    offsets = batch["tokens_offsets"].numpy()
    values = batch["tokens"].numpy()
    for k, r in enumerate(rows):
        np.testing.assert_array_equal(values[offsets[k] : offsets[k + 1]], cols["tokens"][r])
    assert batch["id"] == [cols["id"][r] for r in rows]
    assert type(batch) is dict and sorted(batch) == ["id", "label", "tokens", "tokens_offsets", "x"]


def _segments(batch) -> int:
    """How many memory blocks the batch's tensors live in."""
    return len({v.untyped_storage().data_ptr() for v in batch.values() if torch.is_tensor(v)})


def test_dataloader_workers_read_every_record_once(source):
    path, cols = source
    loader = DataLoader(
        tn.open(path), batch_size=32, num_workers=2, collate_fn=tn.torch_collate(), shuffle=True
    )
    seen = []
    for batch in loader:
        _check_batch(batch, cols)
        assert _segments(batch) == 1  # from a worker, a batch travels as one tensor
        seen.extend(batch["label"].tolist())
    assert sorted(seen) == list(range(N))
    in_process = DataLoader(tn.open(path), batch_size=32, collate_fn=tn.torch_collate())
    assert _segments(next(iter(in_process))) > 1  # no worker: the batch's own arrays


def test_collate_pads_on_request_and_subsets_keep_the_batched_fetch(source):
    path, cols = source
    ds = tn.open(path)
    loader = DataLoader(
        Subset(ds, range(100, 164)),
        batch_size=32,
        collate_fn=tn.torch_collate(pad={"tokens": 4}, truncate=True),
    )
    batches = list(loader)
    assert [b["label"].tolist() for b in batches] == [list(range(100, 132)), list(range(132, 164))]
    want = cols["tokens"][100:132].to_padded(4)
    np.testing.assert_array_equal(batches[0]["tokens"].numpy(), want)
    lengths = np.minimum(cols["tokens"][100:132].lengths, 4)
    np.testing.assert_array_equal(batches[0]["tokens_length"].numpy(), lengths)
    with pytest.raises(TypeError, match="__getitems__"):
        tn.torch_collate()([{"label": 1}])


def test_dense_tensors_share_the_batch_memory(tmp_path):
    x = np.arange(40.0).reshape(10, 4)
    batch = next(iter(tn.open({"x": x}).to_torch(10)))
    assert batch["x"].dtype == torch.float64
    np.testing.assert_array_equal(batch["x"].numpy(), x)
    np.save(tmp_path / "x.npy", x)  # a read-only memory map is copied, never handed over
    batch = next(iter(DataLoader(tn.open(tmp_path / "x.npy"), 4, collate_fn=tn.torch_collate())))
    batch["x"] += 1
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), x)


@pytest.mark.parametrize("shuffle", [False, True, 64])
def test_to_torch_splits_records_across_workers(source, shuffle):
    path, cols = source
    stream = tn.open(path).to_torch(32, shuffle=shuffle, seed=1)
    loader = DataLoader(stream, batch_size=None, num_workers=2)
    seen = []
    for batch in loader:
        _check_batch(batch, cols)
        assert _segments(batch) == 1
        seen.extend(batch["label"].tolist())
    assert sorted(seen) == list(range(N))
    assert len(loader) == len(list(loader))
    if shuffle:
        assert seen != sorted(seen)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank: int, world: int, port: int, path: str, out: str) -> None:
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    try:
        stream = tn.open(path).to_torch(16, shuffle=True, seed=5)
        stream.set_epoch(1)
        loader = DataLoader(stream, batch_size=None, num_workers=2)
        batches = [batch["label"].tolist() for batch in loader]
        with open(f"{out}.{rank}", "w") as f:
            labels = [label for batch in batches for label in batch]
            json.dump({"labels": labels, "batches": len(batches), "len": len(loader)}, f)
    finally:
        dist.destroy_process_group()


def test_to_torch_splits_records_across_ranks_and_workers(source, tmp_path):
    path, _ = source
    out = str(tmp_path / "seen")
    mp.spawn(_rank, args=(2, _free_port(), path, out), nprocs=2, join=True)
    parts = [json.loads(Path(f"{out}.{r}").read_text()) for r in range(2)]
    labels = parts[0]["labels"] + parts[1]["labels"]
    assert sorted(labels) == list(range(N))
    assert abs(len(parts[0]["labels"]) - len(parts[1]["labels"])) <= 2
    assert [p["len"] for p in parts] == [p["batches"] for p in parts]
