"""The Source contract as tests: a base class every source's tests subclass.

A subclass writes known records its own way and opens them:

    class TestMine(SourceTests):
        random_access = True          # False: records read front to back only
        reads_spans = True            # False: a span by position is refused too

        def make(self, folder):
            ...write records 0..n-1 (see `record`) with an independent writer...
            return tn.open(...), {name: [the value of record i, for each i]}, paths

Every promise of `tfrecnp.data.source.Source` is checked against those values, never
against what tfrecnp itself returns: counts, reads by position, blocks in file order, in a
permutation and through a pool (each record once, the same order for the same seed), the
ranges views pass, sizes, the empty batch, pickling, threads, close.
"""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tfrecnp as tn
from tfrecnp.data.files import RandomAccessError
from tfrecnp.data.source import Shuffle
from tfrecnp.example.columns import BytesColumn, Ragged

FEATURES = ("id", "x", "tokens", "name")


def record(i: int) -> dict:
    """The values of record i, for sources that hold every feature: id, a float32 triple, a
    row of 0-4 int64 tokens, and a name."""
    return {
        "id": i,
        "x": [float(i), i + 0.5, -float(i)],
        "tokens": [10 * i + k for k in range(i % 5)],
        "name": f"rec-{i}".encode(),
    }


def records(n: int, names=FEATURES) -> dict[str, list]:
    """{name: [value of record i for i in range(n)]}."""
    rows = [record(i) for i in range(n)]
    return {name: [r[name] for r in rows] for name in names}


def rows_of(col) -> list:
    """A column as a list of plain Python values, one per record."""
    if isinstance(col, BytesColumn):
        return col.to_list()
    if isinstance(col, Ragged):
        return [np.asarray(v).tolist() for v in col.to_list()]
    if isinstance(col, np.ndarray) and col.dtype.hasobject:
        return [bytes(v) if isinstance(v, (bytes, np.bytes_)) else v for v in col.tolist()]
    return np.asarray(col).tolist()


def as_lists(batch) -> dict[str, list]:
    return {name: rows_of(col) for name, col in batch.items()}


def pick(expected: dict[str, list], ids) -> dict[str, list]:
    return {name: [values[i] for i in ids] for name, values in expected.items()}


# views as a Dataset passes them: (start, stop) of n records; stop=None is "to the end"
VIEWS = {
    "whole": lambda n: (0, None),
    "middle": lambda n: (n // 4, 3 * n // 4),
    "past-the-end": lambda n: (n - 7, n + 5),
}


class SourceTests:
    """Conformance tests every source passes. Subclasses define `make` and may set:"""

    random_access = True  # records can be read by position (read_ids)
    reads_spans = True  # a span and one record can be (a compressed .npz: yes, GZIP: no)
    block = 32  # records per block asked for
    buffer = 50  # shuffle buffer size

    def make(self, folder) -> tuple[tn.Dataset, dict[str, list], list[str]]:
        raise NotImplementedError

    @pytest.fixture(scope="class")
    @classmethod
    def case(cls, tmp_path_factory):
        ds, expected, paths = cls().make(tmp_path_factory.mktemp(cls.__name__))
        yield ds, expected, paths
        ds.close()

    @pytest.fixture(params=list(VIEWS))
    def view(self, request, case):
        ds, expected, _ = case
        n = len(next(iter(expected.values())))
        start, stop = VIEWS[request.param](n)
        ids = list(range(start, n if stop is None else min(stop, n)))
        return ds.source, start, stop, pick(expected, ids), ids

    def ids_of(self, batch, expected_view, ids_known):
        """The record numbers a batch holds, from its values (each record's are unique)."""
        got = as_lists(batch)
        key = "id" if "id" in got else next(iter(got))
        values = expected_view[key]
        return [ids_known[values.index(v)] for v in got[key]]

    def passes(self, source, start, stop, shuffle, ahead=0):
        blocks = source.blocks(start, stop, self.block, shuffle, ahead=ahead)
        try:
            return list(blocks)
        finally:
            blocks.close()

    # -- counting and reading by position -------------------------------------------------

    def test_count_is_the_records_written(self, case):
        ds, expected, _ = case
        n = len(next(iter(expected.values())))
        assert ds.source.count() == n == len(ds)

    def test_span_clips_a_view_to_the_records(self, view):
        source, start, stop, _, ids = view
        assert source.span(start, stop) == ((ids[0], ids[-1] + 1) if ids else (start, start))

    def test_read_span_holds_those_records(self, view):
        source, _, _, expected, ids = view
        a, b = ids[0], ids[-1] + 1
        if not self.reads_spans:  # refused, naming the call
            with pytest.raises(RandomAccessError, match=rf"^ds\[{a}:{b}\] reads records"):
                source.read_span(a, b)
            return
        assert as_lists(source.read_span(a, b)) == expected
        assert as_lists(source.read_span(a, a)) == {name: [] for name in expected}

    def test_read_ids_in_the_order_asked_with_repeats(self, case):
        ds, expected, _ = case
        n = ds.source.count()
        ids = np.array([n - 1, 0, n // 2, 0, 3], np.int64)
        if not self.random_access:
            with pytest.raises(RandomAccessError, match=r"^ds\[\[\.\.\.\]\] reads records"):
                ds.source.read_ids(ids, "ds[[...]]")
            return
        assert as_lists(ds.source.read_ids(ids, "ds[[...]]")) == pick(expected, ids.tolist())

    def test_read_one_is_the_record(self, case):
        ds, expected, _ = case
        n = ds.source.count()
        if not self.reads_spans:
            with pytest.raises(RandomAccessError, match=r"reads records by position"):
                ds.source.read_one(n - 1)
            return
        for i in (0, n // 3, n - 1):
            got = ds.source.read_one(i)
            assert set(got) == set(expected)
            for name, value in got.items():
                want = expected[name][i]
                assert (value if isinstance(want, bytes) else np.asarray(value).tolist()) == want

    def test_check_random_access_says_which_call(self, case):
        ds, _, _ = case
        if self.random_access:
            ds.source.check_random_access("ds[...]")
        else:
            with pytest.raises(RandomAccessError, match=r"^ds\[\.\.\.\] reads records"):
                ds.source.check_random_access("ds[...]")

    def test_reads_by_position_are_thread_safe(self, case):
        ds, expected, _ = case
        n = ds.source.count()
        if not self.random_access:  # each thread is refused alike
            with ThreadPoolExecutor(4) as pool:
                for ask in [pool.submit(ds.source.read_ids, [0], "ds[[...]]") for _ in range(8)]:
                    with pytest.raises(RandomAccessError, match=r"reads records"):
                        ask.result()
            return
        asks = [np.random.default_rng(k).integers(0, n, 40) for k in range(16)]
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda ids: ds.source.read_ids(ids, "ds[[...]]"), asks))
        for ids, batch in zip(asks, got, strict=True):
            assert as_lists(batch) == pick(expected, ids.tolist())

    # -- blocks ---------------------------------------------------------------------------

    @pytest.mark.parametrize("ahead", [0, 2])
    def test_blocks_in_file_order_hold_each_record_once(self, view, ahead):
        source, start, stop, expected, _ = view
        blocks = self.passes(source, start, stop, Shuffle(), ahead)
        got = {name: [] for name in expected}
        for b in blocks:
            assert set(b.cols) == set(expected)
            for name, col in b.cols.items():
                assert len(col) == b.n
                got[name] += rows_of(col)
        assert got == expected

    def test_blocks_say_where_their_rows_come_from(self, case):
        ds, _, _ = case
        for b in self.passes(ds.source, 0, None, Shuffle()):
            if b.where is not None and b.n:
                path, number = b.where(b.n - 1)
                assert isinstance(path, str) and isinstance(number, int) and number >= 0

    def test_a_permutation_holds_each_record_once_the_same_for_a_seed(self, view):
        source, start, stop, expected, ids = view
        if not self.random_access:
            with pytest.raises(RandomAccessError):
                self.passes(source, start, stop, Shuffle("all", 0, 7))
            return
        orders = []
        for seed in (7, 7, 8):
            order = []
            for b in self.passes(source, start, stop, Shuffle("all", 0, seed)):
                order += self.ids_of(b.cols, expected, ids)
                assert as_lists(b.cols) == pick(expected, [ids.index(i) for i in order[-b.n :]])
            assert sorted(order) == ids
            orders.append(order)
        assert orders[0] == orders[1]
        if len(ids) > 20:
            assert orders[0] != orders[2] and orders[0] != ids

    @pytest.mark.parametrize("ahead", [0, 2])
    def test_a_buffer_holds_each_record_once_the_same_for_a_seed(self, view, ahead):
        source, start, stop, expected, ids = view
        orders = []
        for seed in (3, 3, 4):
            order = []
            for b in self.passes(source, start, stop, Shuffle("buffer", self.buffer, seed), ahead):
                order += self.ids_of(b.cols, expected, ids)
                assert as_lists(b.cols) == pick(expected, [ids.index(i) for i in order[-b.n :]])
            assert sorted(order) == ids
            orders.append(order)
        assert orders[0] == orders[1]
        if len(ids) > 20:
            assert orders[0] != orders[2] and orders[0] != ids

    # -- sizes, the empty batch, the rest -------------------------------------------------

    def test_sizes_are_about_the_bytes_written(self, view):
        source, start, stop, expected, ids = view
        assert source.mean_record_bytes(start, stop) > 0
        estimate, _ = source.estimate_nbytes(start, stop)
        if not ids:
            return
        actual = 0
        for values in expected.values():
            for v in values:
                actual += len(v) if isinstance(v, bytes) else 8 * max(1, np.size(v))
        assert actual / 4 <= estimate <= actual * 4

    def test_progress_totals_count_the_view(self, view):
        source, start, stop, _, ids = view
        records, size = source.progress_totals(start, stop)
        assert records in (None, len(ids))
        assert size is None or size >= 0

    def test_empty_batch_holds_every_feature(self, case):
        ds, expected, _ = case
        empty = ds.source.empty()
        assert set(empty) == set(expected)
        assert all(len(col) == 0 for col in empty.values())

    def test_select_reads_only_those_features(self, case):
        ds, expected, _ = case
        name = sorted(expected)[0]
        narrow = ds.source.select({name: ds.spec[name]})
        got = [v for b in self.passes(narrow, 0, None, Shuffle()) for v in rows_of(b.cols[name])]
        assert got == expected[name]
        assert set(narrow.empty()) == {name}

    def test_paths_and_corruptions(self, case):
        ds, _, paths = case
        assert [str(p) for p in ds.source.paths] == [str(p) for p in paths]
        assert ds.source.corruptions == []

    def test_pickles_and_reads_the_same(self, case):
        ds, expected, _ = case
        copy = pickle.loads(pickle.dumps(ds.source))
        got = {name: [] for name in expected}
        for b in self.passes(copy, 0, None, Shuffle()):
            for name, col in b.cols.items():
                got[name] += rows_of(col)
        assert got == expected
        copy.close()

    def test_close_then_read_again(self, case):
        ds, expected, _ = case
        ds.source.close()
        got = {name: [] for name in expected}
        for b in self.passes(ds.source, 0, None, Shuffle()):
            for name, col in b.cols.items():
                got[name] += rows_of(col)
        assert got == expected

    # -- through the Dataset: what its views pass -----------------------------------------

    def test_shards_of_the_dataset_partition_the_records(self, case):
        ds, expected, _ = case
        got = {name: [] for name in expected}
        for k in range(3):
            for batch in ds.shard(3, k).batches(16, prefetch=0):
                for name, col in batch.items():
                    got[name] += rows_of(col)
        assert got == expected
