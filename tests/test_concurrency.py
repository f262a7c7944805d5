"""Several threads on one Dataset (and several Datasets over the same files): batches in
every shuffle mode, ds[i] and ds[list] at once, each with correct, complete results."""

from __future__ import annotations

import threading

import h5py
import numpy as np
import pytest

import tfrecnp as tn

N = 20_000


def _columns():
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 20, N)
    return {
        "label": np.arange(N),
        "tokens": tn.Ragged.from_lengths(rng.integers(0, 100, lengths.sum()), lengths),
    }


def _hammer(datasets, cols, shuffles):
    errors = []

    def batches(ds, k):
        try:
            shuffle = shuffles[k % len(shuffles)]
            got = [b["label"] for b in ds.batches(97, shuffle=shuffle, seed=k)]
            assert sorted(np.concatenate(got).tolist()) == list(range(N))
        except Exception as e:  # collected: an assert in a thread would pass silently
            errors.append(e)

    def picks(ds, k):
        try:
            rng = np.random.default_rng(k)
            for i in rng.integers(0, N, 500).tolist():
                record = ds[i]
                assert set(record) == set(cols)
                for name, value in record.items():
                    np.testing.assert_array_equal(value, cols[name][i])
            for _ in range(50):
                idx = rng.integers(0, N, 32)
                np.testing.assert_array_equal(ds[idx]["label"], idx)
        except Exception as e:
            errors.append(e)

    threads = [
        threading.Thread(target=work, args=(ds, k))
        for k, ds in enumerate(datasets)
        for work in (batches, picks)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


@pytest.mark.parametrize("shared", [True, False], ids=["one dataset", "a dataset each"])
def test_threads_on_tfrecord_files(tmp_path, shared):
    cols = _columns()
    tn.write(tmp_path / "data.tfrecord", cols, records_per_shard=5000, progress=False)
    glob = str(tmp_path / "data-*.tfrecord")
    one = tn.open(glob)
    datasets = [one if shared else tn.open(glob) for _ in range(4)]
    _hammer(datasets, cols, [False, True, 1000])


def test_threads_on_an_hdf5_group(tmp_path):
    cols = {"label": np.arange(N), "x": np.random.default_rng(1).random((N, 3))}
    with h5py.File(tmp_path / "d.h5", "w") as f:
        f.create_dataset("train/label", data=cols["label"], chunks=(1000,))
        f.create_dataset("train/x", data=cols["x"], chunks=(700, 3))
    ds = tn.open(tmp_path / "d.h5", key="train")
    _hammer([ds] * 4, cols, [False, True, 1000])
