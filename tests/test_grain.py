"""grain (JAX's data loader) reads a Dataset as a random-access data source: `len` and
`ds[i]`, one record at a time, in worker processes too; batches become jax arrays."""

from __future__ import annotations

import grain.python as grain
import jax.numpy as jnp
import numpy as np
from absl import flags

import tfrecnp as tn

N = 300


def _write(tmp_path):
    rng = np.random.default_rng(0)
    cols = {"label": np.arange(N, dtype=np.int64), "x": rng.random((N, 5), dtype=np.float32)}
    path = tmp_path / "data.tfrecord"
    tn.write(path, cols)
    return path, cols


def test_grain_dataloader_with_workers_reads_every_record_once(tmp_path):
    path, cols = _write(tmp_path)
    ds = tn.open(path)
    flags.FLAGS.mark_as_parsed()  # grain's workers read absl flags; outside absl.app, say so
    loader = grain.DataLoader(
        data_source=ds,
        sampler=grain.IndexSampler(
            len(ds), shard_options=grain.NoSharding(), shuffle=True, num_epochs=1, seed=0
        ),
        operations=[grain.Batch(32)],
        worker_count=2,
    )
    seen = []
    for batch in loader:
        np.testing.assert_array_equal(batch["x"], cols["x"][batch["label"]])
        seen.extend(batch["label"].tolist())
    assert sorted(seen) == list(range(N))
    assert seen != sorted(seen)


def test_map_dataset_batches_become_jax_arrays(tmp_path):
    path, cols = _write(tmp_path)
    data = grain.MapDataset.source(tn.open(path)).batch(64)
    first = jnp.asarray(data[0]["x"])
    assert first.shape == (64, 5)
    np.testing.assert_array_equal(np.asarray(first), cols["x"][:64])
    # straight from the block path, without grain
    batch = next(tn.open(path).batches(64))
    assert jnp.asarray(batch["x"]).dtype == jnp.float32
