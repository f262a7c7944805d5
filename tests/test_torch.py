"""PyTorch: a Dataset in a DataLoader with worker processes (map-style, batched fetch) and
ds.to_torch() across workers and distributed ranks: every record exactly once, values equal
to the source."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Subset

import tfrecnp as tn
from tfrecnp.data.dataset import Records

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
    assert batch["id"] == [cols["id"][r].decode() for r in rows]  # inferred as tn.Text
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


def test_plain_dataloader_collates_each_batch_whole(source):
    """DataLoader(ds, batch_size=32): torch's default collate takes the batch's columns
    whole (Ragged as values plus offsets) and a worker ships it as one buffer."""
    path, cols = source
    seen = []
    for batch in DataLoader(tn.open(path), batch_size=32, num_workers=2, shuffle=True):
        _check_batch(batch, cols)
        assert _segments(batch) == 1
        seen.extend(batch["label"].tolist())
    assert sorted(seen) == list(range(N))
    records = list(tn.open(path).select(["label", "x"]).__getitems__([5, 9]))  # a plain list
    got = torch.utils.data.default_collate(records)  # of records: torch's own way
    assert got["label"].tolist() == [5, 9]
    np.testing.assert_array_equal(got["x"].numpy(), cols["x"][[5, 9]])


def _root(array: np.ndarray) -> object:
    """The buffer an array is a view of."""
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


def _frame_offsets(path: str) -> list[int]:
    data, out, at = Path(path).read_bytes(), [], 0
    while at < len(data):
        out.append(at)
        at += 16 + int.from_bytes(data[at : at + 8], "little")
    return out


def test_runs_at_a_stride_are_read_ahead_and_equal_the_exact_reads(source):
    """A worker's batches k, k + 2, ... (no shuffling): the runs after the second come
    from one read ahead, views of one buffer, with the values of exact reads."""
    path, cols = source
    ds = tn.open(path)
    runs = [range(a, min(a + 32, N)) for a in range(32, N, 64)]  # worker 1 of 2
    got = [ds.__getitems__(list(r)).columns for r in runs]
    assert _root(got[2]["x"]) is _root(got[3]["x"])
    for r, batch in zip(runs, got, strict=True):
        _check_batch(tn.torch_collate()(Records(batch)), cols)
        assert batch["label"].tolist() == list(r)
    assert len(runs[-1]) < 32  # the short last run came from the read ahead too
    assert _root(got[-1]["x"]) is _root(got[-2]["x"])


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_read_ahead_leaves_damage_to_the_exact_read(source, tmp_path, on_error):
    """Damage in records not asked for yet neither raises nor is noted early."""
    path, _ = source
    data = bytearray(Path(path).read_bytes())
    data[_frame_offsets(path)[300] + 14] ^= 0xFF  # record 300's payload
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(data))
    ds = tn.open(bad, tn.open(path).spec, on_error=on_error)  # inference would read it all
    for a in range(0, 288, 32):
        labels = ds.__getitems__(list(range(a, a + 32))).columns["label"].tolist()
        assert labels == list(range(a, a + 32))
    assert ds.corruptions == []
    if on_error == "raise":
        with pytest.raises(tn.CorruptRecordError):
            ds.__getitems__(list(range(288, 320)))
    else:
        labels = ds.__getitems__(list(range(288, 320))).columns["label"].tolist()
        assert labels == [*range(288, 300), *range(301, 320)]


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


_RANK_SCRIPT = """
import json, sys
from torch.utils.data import DataLoader
import tfrecnp as tn
stream = tn.open(sys.argv[1]).to_torch(16)
loader = DataLoader(stream, batch_size=None, num_workers=2)
labels = [label for batch in loader for label in batch["label"].tolist()]
print(json.dumps({"labels": labels, "from": stream.ranks_from, "len": len(loader)}))
"""


def test_to_torch_splits_records_across_ranks_from_the_environment(source):
    """RANK / WORLD_SIZE as torchrun sets them, with no torch.distributed group."""
    path, _ = source
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RANK_SCRIPT, path],
            env=dict(env, RANK=str(rank), WORLD_SIZE="2"),
            stdout=subprocess.PIPE,
            text=True,
        )
        for rank in range(2)
    ]
    parts = []
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0
        parts.append(json.loads(out.strip().splitlines()[-1]))
    labels = parts[0]["labels"] + parts[1]["labels"]
    assert sorted(labels) == list(range(N))
    assert [p["from"] for p in parts] == ["environment", "environment"]
    assert [p["len"] for p in parts] == [-(-len(p["labels"]) // 16) for p in parts]


def test_to_torch_takes_rank_and_world_size_before_the_environment(source, monkeypatch):
    path, _ = source
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    seen = []
    for rank in range(3):
        stream = tn.open(path).to_torch(16, rank=rank, world_size=3)
        assert stream.ranks_from == "arguments"
        loader = DataLoader(stream, batch_size=None, num_workers=2)
        seen.extend(label for batch in loader for label in batch["label"].tolist())
    assert sorted(seen) == list(range(N))
    monkeypatch.delenv("RANK")
    assert tn.open(path).to_torch(16).ranks_from == "single process"


@pytest.mark.parametrize(
    ("rank", "world_size", "message"),
    [
        (2, 2, "0 <= rank < world_size"),
        (-1, 2, "0 <= rank < world_size"),
        (0, 0, "0 <= rank < world_size"),
        (1.0, 2, "rank must be an int"),
        (True, 2, "rank must be an int"),
        (0, "2", "world_size must be an int"),
        (0, None, "together"),
    ],
)
def test_to_torch_refuses_a_rank_outside_the_world(source, rank, world_size, message):
    with pytest.raises(ValueError, match=message):
        tn.open(source[0]).to_torch(16, rank=rank, world_size=world_size)


@pytest.mark.parametrize(("rank", "world"), [("x", "2"), ("2", "2")])
def test_to_torch_refuses_a_bad_rank_in_the_environment(source, monkeypatch, rank, world):
    monkeypatch.setenv("RANK", rank)
    monkeypatch.setenv("WORLD_SIZE", world)
    with pytest.raises(ValueError, match="RANK"):
        tn.open(source[0]).to_torch(16)
