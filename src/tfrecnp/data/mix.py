"""`tn.mix`: records drawn from several datasets in given proportions, as
``tf.data.Dataset.sample_from_datasets`` does.

Each record of a batch comes from dataset i with probability weights[i]: per batch the
sources of its rows are drawn at once (one ``rng.choice``), each source hands over that
many rows from its own stream of batches (its own order: ``shuffle=`` applies to each), and
the rows are placed where they were drawn by one gather per column. The draws come from
one generator made from ``seed``, each source's shuffle from a seed spawned from it, so a
seed gives the same batches every time. When a source runs out:

- ``stop_on_empty=True`` (default): the stream ends where a row is drawn from it (rows
  drawn before that are the last, short batch), as ``stop_on_empty_dataset=True``;
- ``stop_on_empty=False``: its draws go to the others, in their proportions, until all are
  empty (every record of every dataset once);
- ``cycle=True``: it starts again (its next epoch, reshuffled): an endless stream, as
  multi_tfrecord_loader's ``infinite=True``; take what you need.

A Mixed stream has ``spec``, ``batches``, ``shard``, ``len`` (the records of all
datasets), ``to_tf`` and ``to_torch``, so the adapters take it as they take a Dataset.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .._util.threads import close_iterator
from ..errors import SchemaError
from ..example.columns import concat_columns, slice_column, take_column
from ..example.padding import padder
from .blocks import block_records
from .dataset import Batch, check_batch_size

__all__ = ["Mixed", "mix"]


def mix(
    datasets: Sequence[Any],
    weights: Sequence[float] | None = None,
    *,
    seed: int | None = None,
    stop_on_empty: bool = True,
    cycle: bool = False,
) -> Mixed:
    """Mix datasets: batches whose records come from each dataset in proportion to its
    weight (see the module docstring).

    Parameters
    ----------
    datasets : list of Dataset (or Mixed)
        Datasets of one spec (the same features; `select` them to agree).
    weights : list of float, optional
        One per dataset, >= 0, not all 0 (normalised); None: equal.
    seed : int, optional
        Makes the draws (and each dataset's shuffle) reproducible.
    stop_on_empty : bool
        True: stop when a draw falls on an exhausted dataset; False: go on with the others.
    cycle : bool
        Restart exhausted datasets (an endless stream; stop_on_empty is then moot).

    Returns
    -------
    Mixed
    """
    datasets = list(datasets)
    if not datasets:
        raise ValueError("mix needs at least one dataset")
    if weights is None:
        weights = [1.0] * len(datasets)
    w = np.asarray(weights, np.float64)
    if w.shape != (len(datasets),):
        raise ValueError(f"mix got {len(datasets)} datasets but {w.size} weights")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be finite, >= 0 and not all 0, not {list(weights)}")
    first = datasets[0].spec
    for k, ds in enumerate(datasets[1:], 1):
        if ds.spec != first:
            names = set(_names(first)) ^ set(_names(ds.spec))
            differ = sorted(names) or [
                n
                for n in _names(first)
                if first[n] != ds.spec[n]  # type: ignore[index]
            ]
            raise SchemaError(
                f"dataset {k} of mix has another spec than dataset 0 (feature "
                f"{differ[0]!r} differs); mixed batches hold one set of features: "
                "select the same features (ds.select([...])) with the same specs"
            )
    return Mixed(datasets, w / w.sum(), seed=seed, stop_on_empty=stop_on_empty, cycle=cycle)


def _names(spec: Any) -> list[str]:
    return list(spec) if isinstance(spec, Mapping) else []


class _Stream:
    """Rows of one dataset's batches, handed over m at a time."""

    def __init__(self, ds: Any, chunk: int, seed: int | None, options: dict):
        self.ds, self.chunk, self.seed, self.options = ds, chunk, seed, options
        self.epoch = 0
        self.held: list[Batch] = []
        self.rows = 0  # rows held, held[0]'s first `first` already handed over
        self.first = 0
        self.batches: Iterator[Batch] | None = None
        self.gave = False  # this epoch gave a row (an empty dataset is never restarted)
        self.done = False

    def _start(self) -> None:
        seed = None if self.seed is None else self.seed + self.epoch
        self.batches = iter(self.ds.batches(self.chunk, seed=seed, **self.options))
        self.gave = False

    def fill(self, m: int, restart: bool) -> int:
        """Hold m rows if the dataset has them (starting its next epoch when `restart`);
        returns the rows held."""
        while self.rows - self.first < m and not self.done:
            if self.batches is None:
                self._start()
            batch = next(self.batches, None)  # type: ignore[arg-type]
            if batch is None:
                if restart and self.gave:
                    self.epoch += 1
                    self._start()
                else:
                    self.done = True
                continue
            n = len(next(iter(batch.values()))) if batch else 0
            if n:
                self.held.append(batch)
                self.rows += n
                self.gave = True
        return self.rows - self.first

    def take(self, m: int) -> list[Batch]:
        """The next m rows (held), as pieces."""
        pieces = []
        while m:
            batch = self.held[0]
            n = len(next(iter(batch.values())))
            k = min(m, n - self.first)
            a = self.first
            pieces.append({c: slice_column(col, a, a + k) for c, col in batch.items()})
            self.first += k
            m -= k
            if self.first == n:
                self.held.pop(0)
                self.rows -= n
                self.first = 0
        return pieces

    def close(self) -> None:
        close_iterator(self.batches)


class Mixed:
    """Datasets mixed in proportions; made by `tn.mix` (see the module docstring)."""

    def __init__(
        self,
        datasets: list[Any],
        weights: np.ndarray,
        *,
        seed: int | None,
        stop_on_empty: bool,
        cycle: bool,
    ):
        self.datasets = datasets
        self.weights = weights
        self.seed = seed
        self.stop_on_empty = stop_on_empty
        self.cycle = cycle
        self.spec = datasets[0].spec

    def __repr__(self) -> str:
        parts = ", ".join(f"{w:.3g}" for w in self.weights)
        return f"Mixed({len(self.datasets)} datasets, weights [{parts}], seed={self.seed})"

    def __len__(self) -> int:
        """Records in all the datasets (what a pass yields with stop_on_empty=False)."""
        return sum(len(ds) for ds in self.datasets)

    def shard(self, num_shards: int, index: int) -> Mixed:
        """The same mix over shard `index` of each dataset (for ranks and workers)."""
        parts = [ds.shard(num_shards, index) for ds in self.datasets]
        return Mixed(
            parts,
            self.weights,
            seed=self.seed,
            stop_on_empty=self.stop_on_empty,
            cycle=self.cycle,
        )

    def _mean_record_bytes(self) -> float:
        pairs = zip(self.weights, self.datasets, strict=True)
        return float(sum(w * ds._mean_record_bytes() for w, ds in pairs))

    def batches(
        self,
        batch_size: int,
        *,
        shuffle: bool | int = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        pad: bool | Mapping[str, Any] | None = None,
        truncate: bool = False,
        prefetch: int = 2,
        threads: int | None = None,
    ) -> Iterator[Batch]:
        """Mixed batches of batch_size records. Options as `Dataset.batches`: shuffle
        applies to each dataset, pad to the mixed batch; seed (default: the mix's) makes
        the draws and the shuffles reproducible."""
        check_batch_size(batch_size)
        seed = self.seed if seed is None else seed
        pad_rows, _ = padder(self.spec, pad, truncate=truncate)
        options = {"shuffle": shuffle, "prefetch": prefetch, "threads": threads}
        return self._generate(int(batch_size), seed, drop_remainder, pad_rows, options)

    def _generate(
        self, size: int, seed: int | None, drop_remainder: bool, pad_rows: Any, options: dict
    ) -> Iterator[Batch]:
        k = len(self.datasets)
        sequence = np.random.SeedSequence(seed)
        rng = np.random.default_rng(sequence)
        seeds = [
            None if seed is None else int(s.generate_state(1)[0] >> 1) for s in sequence.spawn(k)
        ]
        streams = [
            _Stream(ds, size, s, options) for ds, s in zip(self.datasets, seeds, strict=True)
        ]
        active = self.weights > 0
        try:
            while active.any():
                p = np.where(active, self.weights, 0.0)
                choice = rng.choice(k, size=size, p=p / p.sum())
                end, last, again = size, False, True
                while again:  # until every source holds what is drawn from it
                    again = False
                    for i in range(k):
                        want = int(np.count_nonzero(choice[:end] == i))
                        have = streams[i].fill(want, self.cycle) if want else 0
                        if have >= want:
                            continue
                        active[i] = False
                        if self.stop_on_empty or not active.any():
                            # the stream ends where the first row it lacks was drawn
                            end = int(np.flatnonzero(choice == i)[have])
                            last = True
                            continue
                        late = np.flatnonzero(choice[:end] == i)[have:]
                        q = np.where(active, self.weights, 0.0)
                        choice[late] = rng.choice(k, size=len(late), p=q / q.sum())
                        again = True  # the others now owe more rows
                if end and not (end < size and drop_remainder):
                    yield self._place(choice[:end], streams, pad_rows)
                if last:
                    return
        finally:
            for s in streams:
                s.close()

    def _place(self, choice: np.ndarray, streams: list[_Stream], pad_rows: Any) -> Batch:
        """The drawn rows, each source's in its order, placed where they were drawn."""
        pieces = []
        for i, s in enumerate(streams):
            m = int(np.count_nonzero(choice == i))
            if m:
                pieces += s.take(m)
        names = list(pieces[0])
        joined = {n: concat_columns([p[n] for p in pieces]) for n in names}
        order = np.argsort(choice, kind="stable")  # row r of `joined` goes to order[r]
        where = np.empty_like(order)
        where[order] = np.arange(len(order))
        cols = {n: take_column(c, where) for n, c in joined.items()}
        return pad_rows(cols) if pad_rows is not None else cols

    # -- frameworks ---------------------------------------------------------------------------

    def to_tf(self, batch_size: int | None = None, **options: Any) -> Any:
        """A tf.data.Dataset of the mixed records (options as `Dataset.to_tf`)."""
        from ..adapters.tf import to_tf

        block = block_records(batch_size or 1, self._mean_record_bytes())
        return to_tf(self, batch_size, block=block, **options)

    def to_torch(self, batch_size: int, **options: Any) -> Any:
        """A torch IterableDataset of mixed batches, each rank and worker drawing from its
        shard of every dataset (options as `Dataset.to_torch`)."""
        from ..adapters.torch import TorchBatches

        check_batch_size(batch_size)
        return TorchBatches(self, batch_size, **options)
