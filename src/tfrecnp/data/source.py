"""What a Dataset reads from: the source contract, and the order a pass asks for.

A `Dataset` (`tfrecnp.data.dataset`) is a view of a range of records of one `Source`: the
Dataset keeps the range (``start``, ``stop``), serves batches, shuffles nothing itself and
knows no file format; the source counts, reads and decodes its records. Two sources keep
the contract today: TFRecord files (`record_dataset.RecordSource`) and arrays
(`array_dataset.TableSource`: .npy, .npz, HDF5, Zarr, saved folders, arrays in memory).
A new one (compressed shards read by position, Parquet, a TFDS folder) subclasses `Source`,
fills in the abstract methods, and passes the conformance suite in ``tests/source_contract``
(``class TestMine(SourceTests)`` with a ``make`` that writes known records its own way).
``Squares`` in ``tests/test_sources.py`` is a whole source in forty lines: the abstract
methods, made from the contract alone, and wrapped as ``Dataset(Squares(170))``.

Record numbers are global: 0 .. count() - 1 over the whole source, whatever view asks.
A view passes ``start`` and ``stop`` (``stop=None``: to the end, which a source may read
without counting its records first, as TFRecord files stream without an index).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..errors import CorruptRecordError
from ..example.columns import Column
from .blocks import Block

__all__ = ["Shuffle", "Source"]

Batch = dict[str, Column]


@dataclass(frozen=True)
class Shuffle:
    """The order of one pass, made once from ``batches(shuffle=, seed=)`` and handed to the
    source as it is.

    kind: "none" (file order), "all" (a permutation of every record: the source must read
    by position) or "buffer" (records drawn through a pool of `size` records, as tf.data's
    shuffle buffer: any source). seed: the same seed gives the same order.
    """

    kind: Literal["none", "all", "buffer"] = "none"
    size: int = 0
    seed: int | None = None

    @classmethod
    def of(cls, shuffle: Any, seed: int | None = None) -> Shuffle:
        """From the public spelling: False (or 0), True, or a buffer size N."""
        if isinstance(shuffle, Shuffle):
            return shuffle
        if not isinstance(shuffle, (bool, int, np.integer)) or (
            not isinstance(shuffle, bool) and shuffle < 0
        ):
            raise ValueError(f"shuffle must be False, True or a buffer size >= 0, not {shuffle!r}")
        if shuffle is True:
            return cls("all", 0, seed)
        if shuffle is False or not shuffle:
            return cls("none", 0, seed)
        return cls("buffer", int(shuffle), seed)

    def rng(self) -> np.random.Generator:
        """The pass's random numbers: one generator, made once per pass from the seed."""
        return np.random.default_rng(self.seed)


IN_ORDER = Shuffle()


class Source(ABC):
    """Records that a Dataset reads: counted, read by position, read in blocks.

    A source reads its records with one spec (``spec``, fixed when it is made; `select`
    gives one reading fewer features). What each method must guarantee:

    - Record numbers are global (0 .. count() - 1); every batch returned is a dict
      {feature: column} holding the spec's features, every column of the same length.
    - Reads by position (`read_span`, `read_ids`, `read_one`) are thread-safe: PyTorch's
      DataLoader threads and `__getitems__` call them at once; after a fork or a pickle the
      source opens its own files.
    - `blocks` yields each record of the range exactly once: in file order, in a
      permutation, or through a pool, as `shuffle` says; the order is a pure function of
      ``shuffle.seed`` (the same seed, the same order). One pass is iterated by one
      thread; closing the iterator stops the threads it started and closes the files it
      opened.
    - Damage is raised as a CorruptRecordError naming file, record and byte, or, where the
      source was opened with on_error="skip" / "warn", skipped and listed in `corruptions`.
    - `close` lets kept file handles go; the next read opens them again.
    """

    spec: Any

    # -- what every source provides -------------------------------------------------------

    @abstractmethod
    def count(self) -> int:
        """Records in the whole source (may read an index, once)."""

    @abstractmethod
    def select(self, spec: Any) -> Source:
        """The same records read with `spec` (a subset of this source's features)."""

    @abstractmethod
    def read_span(self, a: int, b: int) -> Batch:
        """Records a..b as one batch."""

    @abstractmethod
    def read_ids(self, ids: np.ndarray, what: str) -> Batch:
        """The records at these numbers (int64, in range, repeats allowed), in this order.
        `what` names the caller's call in errors ("ds[[...]]")."""

    @abstractmethod
    def blocks(
        self,
        start: int,
        stop: int | None,
        block: int,
        shuffle: Shuffle,
        *,
        threads: int | None = None,
        ahead: int = 0,
    ) -> Iterator[Block]:
        """Decoded blocks of about `block` records (a store may align them to its chunks;
        a file's last may be short) covering records start..stop once each, in the order
        `shuffle` says. threads: decoding threads per block (None: the source's choice).
        ahead: how many blocks may be made ahead of the caller, in background threads (0:
        none, all work in the caller's thread)."""

    @abstractmethod
    def mean_record_bytes(self, start: int, stop: int | None) -> float:
        """Mean bytes per record of the range (> 0; an estimate, cheap after the first
        call): it sizes blocks."""

    @abstractmethod
    def estimate_nbytes(self, start: int, stop: int | None) -> tuple[int, int]:
        """(bytes the range decodes to, records decoded to estimate it): to_numpy's check."""

    @abstractmethod
    def empty(self) -> Batch:
        """A batch of no records holding every feature of the spec, as a read would."""

    # -- what a source may refine ---------------------------------------------------------

    def read_one(self, i: int) -> dict[str, Any]:
        """Record i as {name: value}."""
        cols = self.read_span(i, i + 1)
        return {name: col[0] for name, col in cols.items()}

    def readable(self) -> int | None:
        """Where damage stops `count` (it raises), the records before it, which reads by
        position may take; None when count answers."""
        return None

    def makes_ahead(self, start: int, stop: int | None, shuffle: Shuffle) -> bool:
        """Whether `blocks` makes its blocks in threads of its own when it may (ahead > 0),
        so that the Dataset need not put a thread between it and the caller."""
        return False

    def may_read_ahead(self) -> bool:
        """Whether records not asked for may be read ahead (`Dataset.__getitems__`): not
        where reading one may note or warn about damage the user never asked about."""
        return True

    def check_random_access(self, what: str) -> None:
        """Raise RandomAccessError naming `what` when records cannot be read by position
        (then only blocks in file order or through a buffer are possible)."""
        return None

    def progress_totals(self, start: int, stop: int | None) -> tuple[int | None, int | None]:
        """(records, bytes) a pass over the range reads, where known cheaply."""
        a, b = self.span(start, stop)
        return b - a, None

    @property
    def paths(self) -> list[str]:
        """The files, in reading order ([] for arrays in memory)."""
        return []

    @property
    def corruptions(self) -> list[CorruptRecordError]:
        """Damage skipped so far with on_error="skip" / "warn"."""
        return []

    def close(self) -> None:
        """Let kept file handles go (the next read opens them again)."""
        return None

    # -- shared -----------------------------------------------------------------------------

    @staticmethod
    def whole(start: int, stop: int | None) -> bool:
        """Whether a view covers every record (then it may be read without counting)."""
        return start == 0 and stop is None

    def span(self, start: int, stop: int | None) -> tuple[int, int]:
        """A view's range as global record numbers, clipped to the records there are."""
        count = self.count()
        stop = count if stop is None else min(stop, count)
        return min(start, stop), stop

    @staticmethod
    def permuted(
        a: int, b: int, block: int, rng: np.random.Generator
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """shuffle=True by position: for each block of a permutation of records a..b, (its
        record numbers sorted, for reads in storage order; the random order to put the
        rows read in)."""
        order = a + rng.permutation(b - a)
        for k in range(0, len(order), block):
            ids = np.sort(order[k : k + block])
            yield ids, rng.permutation(len(ids))
