"""Columns the object-store tests write and compare (test_cloud, test_buckets): a label, a
float vector and ragged tokens, and an equality that holds Ragged columns to their parts."""

from __future__ import annotations

import numpy as np

import tfrecnp as tn


def columns(n: int, seed: int = 0, *, width: int = 8, longest: int = 6, vocab: int = 100) -> dict:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, longest, n)
    return {
        "label": np.arange(n, dtype=np.int64),
        "x": rng.standard_normal((n, width)).astype(np.float32),
        "tokens": tn.Ragged.from_lengths(rng.integers(0, vocab, int(lengths.sum())), lengths),
    }


def assert_same(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        x, y = a[name], b[name]
        if isinstance(x, tn.Ragged):
            np.testing.assert_array_equal(x.values, y.values)
            np.testing.assert_array_equal(x.row_splits, y.row_splits)
        else:
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
