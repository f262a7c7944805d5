"""Stopping early (break, del, close) releases what a reader holds: its background threads
end and the files it opened for the pass are closed. Handles a Dataset keeps for reads by
position (shuffle=True, views) are released by ds.close() or with the Dataset."""

from __future__ import annotations

import gc
import os
import threading
import time

import numpy as np
import pytest

import tfrecnp as tn


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("early")
    # 32 MiB of payloads: more than the blocks (4 MiB) a reader holds ahead
    x = np.arange(1 << 20, dtype=np.float32).reshape(-1, 1).repeat(8, axis=1)
    tn.write(folder / "data.tfrecord", {"x": x}, records_per_shard=1 << 18, progress=False)
    tn.write(folder / "one.tfrecord.gz", {"x": x}, compression="GZIP", progress=False)
    np.save(folder / "x.npy", x)
    tn.open(folder / "data-*.tfrecord").save(folder / "x.h5", progress=False)
    big = np.ones((3000, 4096), np.float32)  # 16 KiB records, 48 MiB: read by position once indexed
    tn.write(folder / "big.tfrecord", {"x": big}, progress=False)
    return folder


def _open_files(folder) -> list[str]:
    """Files under `folder` this process has open."""
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the descriptor listdir used, closed by now
            continue
        if target.startswith(str(folder)):
            names.append(target)
    return names


def _ours() -> set[threading.Thread]:
    """tfrecnp's threads at work for one reader (the decoding pools are process-wide, and
    stage threads wait idle between passes)."""
    shared = ("tfrecnp-chunks", "tfrecnp-pipeline", "tfrecnp-image", "tfrecnp-idle")
    return {
        t for t in threading.enumerate()
        if t.name.startswith("tfrecnp") and not t.name.startswith(shared)
    }  # fmt: skip


def _released(folder, before: set) -> None:
    gc.collect()
    deadline = time.monotonic() + 5
    while (_ours() - before or _open_files(folder)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _ours() - before == set()
    assert _open_files(folder) == []


def _stop(how: str, batches, folder, before: set) -> None:
    it = iter(batches)
    next(it)
    # mid-pass: a reading thread runs and files are open (else this test would prove nothing)
    assert _ours() - before and _open_files(folder)
    if how == "break":
        for _ in it:
            break
    elif how == "del":
        next(it)
    else:
        it.close()
    del it


PATTERNS = {
    "several files": ("data-*.tfrecord", {}),
    "shuffle buffer": ("data-*.tfrecord", {"shuffle": 50_000, "seed": 0}),
    "shuffle all": ("data-*.tfrecord", {"shuffle": True, "seed": 0}),
    "GZIP": ("one.tfrecord.gz", {}),
    "GZIP shuffled": ("one.tfrecord.gz", {"shuffle": 50_000, "seed": 0}),
    "view": ("data-*.tfrecord", {"_view": True}),
    "big records by position": ("big.tfrecord", {"_index": True}),
}


@pytest.mark.parametrize("how", ["break", "del", "close"])
@pytest.mark.parametrize("case", sorted(PATTERNS))
def test_stopping_early_releases_threads_and_files(files, case, how):
    pattern, options = PATTERNS[case]
    options = dict(options)
    before = _ours()
    ds = tn.open(str(files / pattern))
    if options.pop("_view", False):
        ds = ds.shard(3, 1).take(300_000)
    if options.pop("_index", False):
        assert len(ds) and ds._by_position()
    _stop(how, ds.batches(32, prefetch=2, **options), files, before)
    ds.close()
    _released(files, before)
    del ds
    _released(files, before)


@pytest.mark.parametrize("name", ["x.npy", "x.h5"])
@pytest.mark.parametrize("shuffle", [False, True, 50_000])
def test_array_sources_stopped_early(files, name, shuffle):
    # an array source holds its file from tn.open on; it goes with the Dataset
    before = _ours()
    ds = tn.open(files / name)
    _stop("break", ds.batches(32, shuffle=shuffle, seed=0), files, before)
    del ds
    _released(files, before)


@pytest.mark.parametrize("name", ["data-00000-of-00004.tfrecord", "one.tfrecord.gz"])
def test_record_readers_and_plain_iteration_stopped_early(files, name):
    before = _ours()
    reader = tn.RecordReader(files / name)
    for _ in reader.batches(64):
        assert _open_files(files)
        break
    _released(files, before)
    for _ in reader:
        break
    _released(files, before)
    it = iter(tn.open(files / name))  # records one at a time
    next(it)
    del it
    _released(files, before)


def test_a_dataset_dropped_mid_pass_releases_everything(files):
    before = _ours()
    ds = tn.open(str(files / "data-*.tfrecord"))
    it = ds.batches(32, shuffle=True, seed=1)
    next(it)
    del ds, it  # no close(): garbage collection alone
    _released(files, before)


def test_to_torch_stopped_early(files):
    import torch

    before = _ours()
    ds = tn.open(str(files / "data-*.tfrecord"))
    loader = torch.utils.data.DataLoader(ds.to_torch(64, shuffle=1000, seed=0), batch_size=None)
    for batch in loader:
        assert batch["x"].shape == (64, 8)
        assert _ours() - before and _open_files(files)  # mid-pass
        break
    del loader, batch
    ds.close()
    _released(files, before)


def test_to_tf_stopped_early(files, tf):
    before = _ours()
    ds = tn.open(str(files / "data-*.tfrecord"))
    data = ds.to_tf(64)
    for batch in data:
        assert batch["x"].shape == (64, 8)
        # mid-pass: reading threads run (tf.data's own prefetch may have drawn every block
        # already, and the files been closed)
        assert _ours() - before
        break
    assert len(list(data.take(3))) == 3  # a second pass, stopped by take
    del data, batch
    ds.close()
    _released(files, before)
