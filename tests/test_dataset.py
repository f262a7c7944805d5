"""tn.open -> Dataset: len, random access, batches (shuffled, padded, prefetched), select,
shard, take, to_numpy and its memory budget, damaged records.

The data is written by TensorFlow from values generated here, so every expected value is
the value TensorFlow was given, never something tfrecnp produced; tn.read is checked
against the same values and then serves as the reference for views of the dataset.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import sys
import threading
from pathlib import Path

import numpy as np
import protowire as pw
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecnp as tn
from tfrecnp._util.text import format_count, format_size
from tfrecnp.data.record_dataset import BIG_RECORD_BYTES
from tfrecnp.example.columns import BytesColumn, Ragged, concat_columns, take_column

N_A, N_C = 300, 200  # records in a.tfrecord and c.tfrecord.gz; empty.tfrecord has none
N = N_A + N_C
SPEC = {
    "label": tn.FixedLen((), "int64"),
    "vec": tn.FixedLen((3,), "float32"),
    "tokens": tn.VarLen("int64"),
    "image/encoded": tn.Bytes(),
    "raw": tn.Raw("float32", shape=(2, 3)),
    "names": tn.VarLen("bytes"),
    "bbox": tn.VarLen("float32", inner_shape=(4,)),
}


def generate(n: int, seed: int = 0) -> dict:
    """The columns TensorFlow is asked to write: label = the record's number."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 20, n)
    names = rng.integers(0, 4, n)
    boxes = rng.integers(0, 4, n)
    words = [bytes(rng.integers(97, 123, rng.integers(0, 6)).astype(np.uint8)) for _ in names]
    return {
        "label": np.arange(n, dtype=np.int64),
        "vec": rng.random((n, 3), dtype=np.float32),
        "tokens": Ragged.from_lengths(rng.integers(-(2**40), 2**40, int(tokens.sum())), tokens),
        "image/encoded": BytesColumn.from_list([rng.bytes(int(k)) for k in rng.integers(0, 50, n)]),
        "raw": rng.standard_normal((n, 2, 3), dtype=np.float32),
        "names": Ragged.from_lengths(
            BytesColumn.from_list([words[i % len(words)] for i in range(int(names.sum()))]),
            names,
        ),
        "bbox": Ragged.from_lengths(rng.random((int(boxes.sum()), 4), dtype=np.float32), boxes),
    }


def tf_examples(tf, cols: dict, rows) -> list[bytes]:
    """Serialized tf.train.Example records of the given rows, built by TensorFlow."""
    feature = tf.train.Feature
    out = []
    for i in rows:
        f = {
            "label": feature(int64_list=tf.train.Int64List(value=[int(cols["label"][i])])),
            "vec": feature(float_list=tf.train.FloatList(value=cols["vec"][i].tolist())),
            "tokens": feature(int64_list=tf.train.Int64List(value=cols["tokens"][i].tolist())),
            "image/encoded": feature(
                bytes_list=tf.train.BytesList(value=[cols["image/encoded"][i]])
            ),
            "raw": feature(bytes_list=tf.train.BytesList(value=[cols["raw"][i].tobytes()])),
            "names": feature(bytes_list=tf.train.BytesList(value=list(cols["names"][i]))),
            "bbox": feature(
                float_list=tf.train.FloatList(value=cols["bbox"][i].reshape(-1).tolist())
            ),
        }
        out.append(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())
    return out


def make_files(tf, tf_write, folder) -> tuple[list[str], dict]:
    """a.tfrecord (N_A records), empty.tfrecord, c.tfrecord.gz (N_C records, GZIP)."""
    cols = generate(N)
    payloads = tf_examples(tf, cols, range(N))
    os.makedirs(folder, exist_ok=True)
    a = tf_write(os.path.join(folder, "a.tfrecord"), payloads[:N_A])
    empty = tf_write(os.path.join(folder, "empty.tfrecord"), [])
    c = tf_write(os.path.join(folder, "c.tfrecord.gz"), payloads[N_A:], "GZIP")
    return [a, empty, c], cols


def same(got, want) -> bool:
    """Column equality: same kind, dtype, shape and values (lazy columns loaded first)."""
    if hasattr(got, "row_splits") and not isinstance(got, Ragged):
        got = got[:]
    if hasattr(got, "offsets") and not isinstance(got, (BytesColumn, Ragged)):
        got = got[:]
    if isinstance(want, np.ndarray):
        got = np.asarray(got[:] if not isinstance(got, np.ndarray) else got)
        return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    return type(got) is type(want) and got == want


def assert_batch(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for name in want:
        assert same(got[name], want[name]), name


def take(cols: dict, idx) -> dict:
    return {k: take_column(v, np.asarray(idx, np.int64)) for k, v in cols.items()}


def concat(batches: list[dict]) -> dict:
    return {k: concat_columns([b[k] for b in batches]) for k in batches[0]}


@pytest.fixture(scope="module")
def data(tf, tf_write, tmp_path_factory):
    paths, cols = make_files(tf, tf_write, tmp_path_factory.mktemp("dataset"))
    return paths, cols


@pytest.fixture(scope="module")
def plain(data):
    """The uncompressed file alone, with its columns."""
    paths, cols = data
    return paths[0], take(cols, np.arange(N_A))


# --- reading everything -------------------------------------------------------------------


def test_read_and_to_numpy_equal_what_tensorflow_wrote(data):
    paths, cols = data
    assert_batch(tn.read(paths, SPEC), cols)
    ds = tn.open(paths, SPEC)
    assert len(ds) == N
    assert_batch(ds.to_numpy(), cols)


def test_len_uses_index_sidecars(data, tmp_path):
    paths, _ = data
    path = shutil.copy(paths[0], tmp_path / "a.tfrecord")
    tn.framing.write_index(tn.framing.scan_file(path))
    assert len(tn.open(path, SPEC)) == N_A
    assert len(tn.open(paths, SPEC).take(10)) == 10
    assert len(tn.open(paths, SPEC).take(10_000)) == N


def test_iteration_gives_records_in_order(data):
    paths, cols = data
    records = list(tn.open(paths, SPEC))
    assert len(records) == N
    for i in (0, 1, N_A - 1, N_A, N - 1):
        row = records[i]
        assert list(row) == list(SPEC)
        assert row["label"] == i and isinstance(row["image/encoded"], bytes)
        assert row["image/encoded"] == cols["image/encoded"][i]
        assert np.array_equal(row["tokens"], cols["tokens"][i])
        assert np.array_equal(row["raw"], cols["raw"][i])
        assert list(row["names"]) == list(cols["names"][i])


@pytest.mark.parametrize("batch_size", [1, 7, 256, 1000])
def test_batches_in_file_order(data, batch_size):
    paths, cols = data
    batches = list(tn.open(paths, SPEC).batches(batch_size))
    sizes = [len(b["label"]) for b in batches]
    assert sizes == [batch_size] * (N // batch_size) + ([N % batch_size] if N % batch_size else [])
    assert_batch(concat(batches), cols)
    kept = list(tn.open(paths, SPEC).batches(batch_size, drop_remainder=True, prefetch=0))
    assert [len(b["label"]) for b in kept] == [batch_size] * (N // batch_size)


# --- random access ----------------------------------------------------------------------------


def test_getitem_matches_read(plain):
    path, cols = plain
    ds = tn.open(path, SPEC)
    ref = tn.read(path, SPEC)
    assert_batch(ref, cols)
    for i in (0, 5, N_A - 1, -1, -N_A):
        row = ds[i]
        assert list(row) == list(SPEC)
        assert row["label"] == ref["label"][i]
        assert row["image/encoded"] == ref["image/encoded"][i]
        assert np.array_equal(row["bbox"], ref["bbox"][i])
        assert np.array_equal(row["vec"], ref["vec"][i])
    for s in (slice(10, 20), slice(0, N_A), slice(290, 400), slice(50, 40), slice(3, 90, 7)):
        idx = np.arange(N_A)[s]
        assert_batch(ds[s], take(ref, idx))
    picks = [3, 1, 2, 299, 3, -2]
    assert_batch(ds[picks], take(ref, [3, 1, 2, 299, 3, N_A - 2]))
    assert_batch(ds[np.array([], np.int64)], take(ref, []))
    mask = np.zeros(N_A, bool)
    mask[[4, 8, 15]] = True
    assert_batch(ds[mask], take(ref, [4, 8, 15]))


def _same_value(a, b) -> bool:
    if isinstance(b, (bytes, np.generic)):
        return type(a) is type(b) and a == b
    a, b = np.asarray(a), np.asarray(b)  # Ragged rows of bytes come as columns
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.parametrize(
    "spec",
    [
        SPEC,  # ds[i]'s short path for scalars, fixed shapes, VarLen, bytes, Raw ...
        {  # ... its general finisher for the other shapes ...
            "tokens": tn.VarLen("int64", inner_shape=(1,)),
            "missing": tn.FixedLen((2,), "float32", default=[0.1, 0.2]),
            "raw": tn.Raw("float32", shape=(-1, 3)),
            "flat": tn.FixedLen((2,), "bytes", default=[b"a", b"bc"]),
        },
        {"raw": tn.Raw("float32", shape=(2, -1)), "label": tn.FixedLen((1, 1), "int64")},
        {  # ... and the long way (a batch of one) for casts to other dtypes
            "label": tn.FixedLen((), "int32"),
            "vec": tn.FixedLen((3,), "float64"),
            "missing": tn.FixedLen((), "float64", default=0.1),
        },
    ],
)
def test_every_record_by_index_equals_its_row_in_a_batch(plain, spec):
    path, _ = plain
    ds = tn.open(path, spec)
    whole = ds[:]
    for i in range(N_A):
        row = ds[i]
        assert list(row) == list(spec)
        for name, value in row.items():
            assert _same_value(value, whole[name][i]), (i, name, value, whole[name][i])


def test_reads_without_preadv(plain, monkeypatch):
    import tfrecnp.data.files as files

    path, cols = plain
    monkeypatch.setattr(files, "_PREADV", None)  # systems without os.preadv: seek + readinto
    ds = tn.open(path, SPEC)
    assert_batch(ds[[7, 2, 299]], take(cols, [7, 2, 299]))
    assert_batch(ds[100:140], take(cols, range(100, 140)))


def test_getitem_errors(data, plain, monkeypatch):
    path, _ = plain
    ds = tn.open(path, SPEC)
    with pytest.raises(IndexError, match=r"^record 300 out of range for a dataset of 300 records$"):
        ds[300]
    with pytest.raises(
        IndexError, match=r"^record -301 out of range for a dataset of 300 records$"
    ):
        ds[[0, -301]]
    with pytest.raises(TypeError, match=r"^ds\['label'\]: index records by number.*select"):
        ds["label"]
    paths, _ = data
    monkeypatch.setitem(sys.modules, "rapidgzip", None)  # issue 26: as without the gzip extra
    mixed = tn.open(paths, SPEC)
    gz = paths[2]
    message = (
        f"ds[...] reads records by position, which in GZIP-compressed files such as {gz} "
        "needs the gzip extra (pip install 'tfrecnp[gzip]'), which reads them through inflate "
        f"checkpoints; or decompress it (e.g. `gunzip -c {gz} > {gz[:-3]}`), or convert "
        "the dataset once (tn.convert(src, 'out/')) and read rows from tn.load('out/'). "
        "Iteration, batches() and batches(shuffle=N) work on compressed files"
    )
    with pytest.raises(tn.RandomAccessError, match=f"^{re.escape(message)}$"):
        mixed[0]
    with pytest.raises(tn.RandomAccessError, match=r"^batches\(shuffle=True\) reads records"):
        mixed.batches(10, shuffle=True)
    assert isinstance(tn.RandomAccessError("x"), ValueError)


# --- shuffling --------------------------------------------------------------------------------


def labels_of(batches) -> np.ndarray:
    return np.concatenate([b["label"] for b in batches])


def test_global_shuffle_is_a_seeded_permutation(plain):
    path, cols = plain
    ds = tn.open(path, SPEC)
    first = list(ds.batches(64, shuffle=True, seed=1))
    order = labels_of(first)
    assert sorted(order.tolist()) == list(range(N_A))
    assert not np.array_equal(order, np.arange(N_A))
    assert np.array_equal(order, labels_of(ds.batches(64, shuffle=True, seed=1)))
    assert not np.array_equal(order, labels_of(ds.batches(64, shuffle=True, seed=2)))
    assert_batch(concat(first), take(cols, order))  # every value travels with its record


@pytest.mark.parametrize("buffer", [1, 50, 10_000])
def test_buffer_shuffle_is_a_seeded_permutation(data, buffer):
    paths, cols = data
    ds = tn.open(paths, SPEC)
    batches = list(ds.batches(32, shuffle=buffer, seed=7))
    order = labels_of(batches)
    assert sorted(order.tolist()) == list(range(N))
    assert np.array_equal(order, labels_of(ds.batches(32, shuffle=buffer, seed=7)))
    assert not np.array_equal(order, labels_of(ds.batches(32, shuffle=buffer, seed=8)))
    assert_batch(concat(batches), take(cols, order))
    assert [len(b["label"]) for b in batches[:-1]] == [32] * (len(batches) - 1)


def test_buffer_shuffle_draws_from_a_window_across_files(data, monkeypatch):
    import tfrecnp.data.blocks as blocks

    monkeypatch.setattr(blocks, "BLOCK_BYTES", 1)  # blocks of one batch: a window we can see
    paths, _ = data
    ds = tn.open(paths, SPEC)
    batch, buffer = 16, 64
    order = labels_of(ds.batches(batch, shuffle=buffer, seed=3))
    # When output position p is emitted, at most p + buffer + one block of records have been
    # read, and a file's records are read in order: so record w of its file cannot come out
    # before position w - buffer - block. A whole-dataset shuffle would break this.
    position = np.argsort(order)  # where each record came out
    within_file = np.where(np.arange(N) < N_A, np.arange(N), np.arange(N) - N_A)
    assert np.all(position >= within_file - buffer - batch)
    first = order[:batch]
    assert (first < N_A).any() and (first >= N_A).any()


def test_buffer_shuffle_mixes_files_within_default_blocks(data):
    # default blocks hold the whole of these files: every batch still mixes both files
    paths, _ = data
    for b in tn.open(paths, SPEC).batches(32, shuffle=50, seed=4):
        if len(b["label"]) == 32:
            assert (b["label"] < N_A).any() and (b["label"] >= N_A).any()


def test_buffer_shuffle_mixes_records_within_each_batch(data):
    """Records within a batch come in random order, not grouped by the 64-record block they
    were read in: grouped, ~90% of neighbours share a block; mixed, ~30%."""
    paths, _ = data
    batches = tn.open(paths, SPEC).batches(64, shuffle=200, seed=5)
    near = [np.mean(np.abs(np.diff(b["label"])) < 64) for b in batches if len(b["label"]) == 64]
    assert np.mean(near) < 0.6


def test_shuffle_pool_holds_at_most_the_buffer_and_one_block():
    from tfrecnp.data.blocks import Block, shuffle_blocks

    rng = np.random.default_rng(0)
    incoming = [Block({"i": np.arange(a, a + 30)}, 30) for a in range(0, 300, 30)]
    out = list(shuffle_blocks(iter(incoming), 100, rng))
    # nothing leaves before the pool holds 100; then each block of 30 in lets 30 out; the
    # last 100 leave in blocks no larger than those that came in (never all at once)
    assert [b.n for b in out] == [20, 30, 30, 30, 30, 30, 30, 30, 30, 30, 10]
    order = np.concatenate([b.cols["i"] for b in out])
    assert sorted(order.tolist()) == list(range(300))
    read = 30 * np.arange(4, 11)  # records read when each block left
    for k, b in enumerate(out[:7]):  # a record leaves only after it was read ...
        assert b.cols["i"].max() < read[k]
        # ... and every record read and not yet out could have left: the draw is uniform
        # over the whole pool, so old records leave too, not only the block just read
        assert b.cols["i"].min() < read[k] - 30
    assert np.array_equal(
        order,
        np.concatenate(
            [b.cols["i"] for b in shuffle_blocks(iter(incoming), 100, np.random.default_rng(0))]
        ),
    )  # a pure function of the seed


def test_shuffle_pool_lets_out_whole_blocks_when_aligned(data):
    from tfrecnp.data.blocks import Block, shuffle_blocks

    incoming = [Block({"i": np.arange(a, a + 30)}, 30) for a in range(0, 300, 30)]
    out = list(shuffle_blocks(iter(incoming), 100, np.random.default_rng(0), align=30))
    # whole blocks of 30 leave once the pool holds 130 or more, so 100 to 129 stay
    assert [b.n for b in out] == [30] * 10
    assert sorted(np.concatenate([b.cols["i"] for b in out]).tolist()) == list(range(300))
    # so batches of the dataset never straddle two blocks: none is copied from two
    import tfrecnp.data.blocks as blocks

    joined = []
    real = blocks.concat_blocks
    try:
        blocks.concat_blocks = lambda parts: joined.append(len(parts)) or real(parts)
        paths, _ = data
        order = labels_of(tn.open(paths, SPEC).batches(16, shuffle=70, seed=2))
    finally:
        blocks.concat_blocks = real
    assert sorted(order.tolist()) == list(range(N))
    assert all(n == 1 for n in joined)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 90), min_size=1, max_size=40),
    buffer=st.integers(1, 300),
    align=st.integers(1, 40),
    seed=st.integers(0, 2**16),
)
def test_a_pool_of_numbers_draws_as_the_pool_of_their_records(sizes, buffer, align, seed):
    """shuffle_numbers stands in for shuffle_pool over records (indexed files draw numbers,
    streamed ones records): the same seed must give the same order, compactions and all."""
    from tfrecnp.data.blocks import Block, shuffle_blocks, shuffle_numbers

    firsts = np.cumsum([0, *sizes])
    items = [np.arange(a, b) for a, b in itertools.pairwise(firsts)]
    blocks = (Block({"i": ids}, len(ids)) for ids in items)
    drawn = shuffle_blocks(blocks, buffer, np.random.default_rng(seed), align)
    records = [b.cols["i"] for b in drawn]
    numbers = list(shuffle_numbers(iter(items), buffer, np.random.default_rng(seed), align))
    assert [len(x) for x in numbers] == [len(x) for x in records]
    assert all(np.array_equal(a, b) for a, b in zip(numbers, records, strict=True))


def test_shuffle_of_a_view(data):
    paths, _ = data
    ds = tn.open(paths, SPEC).shard(4, 1)
    order = labels_of(ds.batches(10, shuffle=30, seed=0))
    assert sorted(order.tolist()) == list(range(N // 4, N // 2))
    plain = tn.open(paths[0], SPEC).take(100)
    order = labels_of(plain.batches(10, shuffle=True, seed=0))
    assert sorted(order.tolist()) == list(range(100))


# --- views --------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_shards", [1, 3, 7])
def test_shards_partition_the_records(data, num_shards):
    paths, _ = data
    ds = tn.open(paths, SPEC)
    parts = [labels_of(ds.shard(num_shards, k).batches(64)) for k in range(num_shards)]
    assert np.array_equal(np.concatenate(parts), np.arange(N))
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1
    assert [len(ds.shard(num_shards, k)) for k in range(num_shards)] == sizes


def test_shard_errors(data):
    ds = tn.open(data[0], SPEC)
    with pytest.raises(ValueError, match=r"^shard needs num_shards >= 1 and 0 <= index < "):
        ds.shard(3, 3)
    with pytest.raises(ValueError, match=r"^take needs n >= 0, not -1$"):
        ds.take(-1)


def test_take_select_and_nested_views(data):
    paths, cols = data
    ds = tn.open(paths, SPEC)
    assert_batch(ds.take(5).to_numpy(), take(cols, range(5)))
    assert_batch(ds.take(N_A + 3).take(N_A + 1).to_numpy(), take(cols, range(N_A + 1)))
    picked = ds.select(["tokens", "label"])
    assert list(picked.spec) == ["tokens", "label"]
    out = picked.to_numpy()
    assert list(out) == ["tokens", "label"]
    assert same(out["tokens"], cols["tokens"])
    shard = ds.shard(2, 1).take(7)
    assert labels_of(shard.batches(3)).tolist() == list(range(N // 2, N // 2 + 7))
    with pytest.raises(KeyError, match=r"no feature 'nope' in the spec; features: 'label', "):
        ds.select(["nope"])


def test_select_decodes_only_the_selected_features(data):
    paths, _ = data
    spec = dict(SPEC, missing=tn.FixedLen((), "int64"))  # in no record, and no default
    ds = tn.open(paths, spec)
    with pytest.raises(tn.SchemaError, match=r"feature 'missing' is missing at "):
        ds.to_numpy()
    assert len(ds.select(["label"]).to_numpy()["label"]) == N


# --- padding ----------------------------------------------------------------------------------


def test_pad_to_a_length_with_a_value(data):
    paths, cols = data
    ds = tn.open(paths, SPEC)
    batches = list(ds.batches(64, pad={"tokens": 5, "bbox": (2, -1.0)}, truncate=True))
    lengths = cols["tokens"].lengths
    want = np.zeros((N, 5), np.int64)
    for i in range(N):
        row = cols["tokens"][i][:5]
        want[i, : len(row)] = row
    got = np.concatenate([b["tokens"] for b in batches])
    assert got.dtype == np.int64 and np.array_equal(got, want)
    got_len = np.concatenate([b["tokens_length"] for b in batches])
    assert np.array_equal(got_len, np.minimum(lengths, 5))
    boxes = np.concatenate([b["bbox"] for b in batches])
    assert boxes.shape == (N, 2, 4)
    for i in (0, 1, 2, 100, N - 1):
        k = min(2, len(cols["bbox"][i]))
        assert np.array_equal(boxes[i, :k], cols["bbox"][i][:k])
        assert np.all(boxes[i, k:] == -1.0)
    assert list(batches[0]) == [
        "label", "vec", "tokens", "tokens_length", "image/encoded", "raw", "names", "bbox",
        "bbox_length",
    ]  # fmt: skip


def test_pad_shorter_than_a_row_raises_like_tensorflow(data):
    paths, cols = data
    lengths = cols["tokens"].lengths
    first = int(np.flatnonzero(lengths > 5)[0])  # records are in file order, a.tfrecord first
    with pytest.raises(
        tn.SchemaError,
        match=(
            rf"^feature 'tokens' has a row of {lengths[first]} values at \S*a\.tfrecord record "
            rf"{first}, longer than the 5 that pad=\{{'tokens': 5\}} gives it .*truncate=True"
        ),
    ):
        list(tn.open(paths, SPEC).batches(64, pad={"tokens": 5}))
    # the oracle: TensorFlow's padded_batch refuses a row longer than its padded shape
    rows = tf.data.Dataset.from_generator(
        lambda: (cols["tokens"][i] for i in range(first + 1)),
        output_signature=tf.TensorSpec([None], tf.int64),
    )
    with pytest.raises(tf.errors.DataLossError, match="pad to a smaller size than the input"):
        list(rows.padded_batch(64, padded_shapes=[5]))
    lengths_ok = max(int(lengths.max()), 1)  # long enough: no error, nothing cut
    got = np.concatenate(
        [b["tokens_length"] for b in tn.open(paths, SPEC).batches(64, pad={"tokens": lengths_ok})]
    )
    assert np.array_equal(got, lengths)


def test_pad_to_the_longest_row_of_each_batch(data):
    paths, cols = data
    for pad in (True, {"tokens": None}):
        for batch in tn.open(paths, SPEC).take(100).batches(25, pad=pad):
            lens = batch["tokens_length"]
            assert batch["tokens"].shape == (25, lens.max())
            for row, n in zip(batch["tokens"], lens, strict=True):
                assert np.all(row[n:] == 0)
    batch = next(tn.open(paths, SPEC).batches(8, pad=True))
    assert set(batch) == {
        "label", "vec", "tokens", "tokens_length", "image/encoded", "raw", "names",
        "names_length", "bbox", "bbox_length",
    }  # fmt: skip
    assert batch["names"].dtype == object
    assert batch["names"][0, : batch["names_length"][0]].tolist() == list(cols["names"][0])


def test_pad_errors(data):
    ds = tn.open(data[0], SPEC)
    with pytest.raises(ValueError, match=r"^pad: feature 'label' decodes to a fixed-shape"):
        ds.batches(4, pad={"label": 3})
    with pytest.raises(KeyError, match=r"pad names 'nope', which is not in the spec"):
        ds.batches(4, pad={"nope": 3})
    spec = dict(SPEC, tokens_length=tn.FixedLen((), "int64"))
    with pytest.raises(ValueError, match=r"^pad: the lengths column 'tokens_length' would"):
        tn.open(data[0], spec).batches(4, pad={"tokens": 3})
    with pytest.raises(ValueError, match=r"^batch_size must be at least 1, not 0$"):
        ds.batches(0)
    with pytest.raises(ValueError, match=r"^shuffle must be False, True or a buffer size"):
        ds.batches(4, shuffle=-5)


# --- whole-dataset memory budget ---------------------------------------------------------------


def test_to_numpy_refuses_over_budget(data):
    paths, cols = data
    ds = tn.open(paths, SPEC).select(["label", "vec"])  # fixed sizes: the estimate is exact
    need = N * (8 + 12)
    message = (
        f"to_numpy() would need about {format_size(need)} for 500 records (estimated from 500 "
        "decoded records), over the budget of 100 bytes (max_bytes=100). Stream it instead: "
        "`for batch in ds.batches(1024): ...`, or write it to disk with ds.save('out/') and "
        "open that memory-mapped with tn.load('out/'); or pass a larger max_bytes="
    )
    with pytest.raises(tn.MemoryBudgetError, match=f"^{re.escape(message)}$") as e:
        ds.to_numpy(max_bytes=100)
    assert (e.value.estimate, e.value.budget) == (need, 100)
    assert isinstance(e.value, MemoryError)
    out = ds.to_numpy(max_bytes=need)
    assert same(out["vec"], cols["vec"]) and same(out["label"], cols["label"])


def test_size_estimate_is_close_for_variable_columns(data):
    paths, _ = data
    ds = tn.open(paths, SPEC)
    estimate, sampled = ds.estimate_nbytes()
    actual = 0
    for col in ds.to_numpy().values():
        actual += col.nbytes
    assert sampled == N
    assert 0.7 * actual <= estimate <= 1.3 * actual


def test_default_budget_is_half_the_available_memory(data, monkeypatch):
    import tfrecnp.data.dataset as dataset

    monkeypatch.setattr(dataset, "available_memory", lambda: 2000)
    ds = tn.open(data[0], SPEC).select(["label"])
    with pytest.raises(tn.MemoryBudgetError, match=r"budget of 1000 bytes \(half of the 1.95 KiB"):
        ds.to_numpy()
    monkeypatch.undo()
    real = dataset.available_memory()
    assert isinstance(real, int) and 0 < real <= os.sysconf("SC_PHYS_PAGES") * os.sysconf(
        "SC_PAGESIZE"
    )


# --- damage, errors and threads ---------------------------------------------------------------


@pytest.fixture
def damaged(plain, tmp_path):
    """A copy of a.tfrecord with one bit flipped in the raw float32 bytes of record 10."""
    path, cols = plain
    copy = tmp_path / "damaged.tfrecord"
    shutil.copy(path, copy)
    index = tn.framing.scan_file(copy)
    data = bytearray(copy.read_bytes())
    at = data.find(cols["raw"][10].tobytes(), int(index.offsets[10]))
    assert int(index.offsets[10]) < at < int(index.offsets[11])
    data[at] ^= 0x40
    copy.write_bytes(bytes(data))
    return str(copy), int(index.offsets[10])


def test_damaged_record_raises_or_is_skipped(damaged, plain):
    path, offset = damaged
    plain_cols = plain[1]
    where = f"at {path} record 10 (byte {format_count(offset)}); run `tfrecnp verify"
    for read in (
        lambda ds: ds.to_numpy(),
        lambda ds: ds[8:12],
        lambda ds: ds[10],
        lambda ds: list(ds.batches(7, shuffle=True, seed=0)),
        lambda ds: list(ds.batches(7, shuffle=50, seed=0)),
    ):
        with pytest.raises(tn.CorruptRecordError, match=r"^payload CRC mismatch \(stored 0x") as e:
            read(tn.open(path, SPEC))
        assert where in str(e.value)
    ds = tn.open(path, SPEC, on_error="skip")
    labels = ds.to_numpy()["label"]
    assert labels.tolist() == [i for i in range(N_A) if i != 10]
    assert [(c.record, c.offset) for c in ds.corruptions] == [(10, offset)]
    assert ds[11]["label"] == 11
    with pytest.raises(IndexError, match=r"^record 10 was skipped \(on_error='skip'\)"):
        ds[10]
    with pytest.warns(tn.CorruptRecordWarning, match=r"payload CRC mismatch .* record 10"):
        tn.open(path, SPEC, on_error="warn")[9:12]
    raw = tn.open(path, SPEC, verify_crc=False).to_numpy()["raw"]  # the damage gets through
    changed = np.flatnonzero((raw != plain_cols["raw"]).any(axis=(1, 2)))
    assert changed.tolist() == [10]


def test_schema_error_in_a_shuffled_batch_names_the_record(tf, tf_write, tmp_path):
    cols = generate(40, seed=5)
    payloads = tf_examples(tf, cols, range(40))
    bad = tf.train.Example()
    bad.ParseFromString(payloads[23])
    del bad.features.feature["vec"]
    payloads[23] = bad.SerializeToString()
    first = tf_write(tmp_path / "first.tfrecord", payloads[:20])
    second = tf_write(tmp_path / "second.tfrecord", payloads[20:])
    ds = tn.open([first, second], SPEC)
    for kwargs in ({"shuffle": True, "seed": 4}, {"shuffle": 15, "seed": 4}, {}):
        with pytest.raises(tn.SchemaError, match=rf"feature 'vec' is missing at {second} record 3"):
            list(ds.batches(8, **kwargs))


def test_stopping_early_ends_the_prefetch_threads(data):
    paths, _ = data

    def working() -> int:  # (stage threads wait idle between passes, kept for the next)
        return sum(t.name != "tfrecnp-idle" for t in threading.enumerate())

    before = working()
    for _ in range(3):
        for batch in tn.open(paths, SPEC).batches(10, shuffle=100, seed=0, prefetch=1):
            assert len(batch["label"]) == 10
            break
    gen = tn.open(paths, SPEC).batches(10)
    next(gen)
    gen.close()
    assert working() <= before + 1  # the decoder's shared pool may start


def test_errors_in_the_reader_thread_reach_the_caller(plain, tmp_path):
    path, _ = plain
    copy = shutil.copy(path, tmp_path / "short.tfrecord")
    ds = tn.open(copy, SPEC)
    assert len(ds) == N_A
    with open(copy, "r+b") as f:  # the file shrinks after it was indexed
        f.truncate(os.path.getsize(copy) // 2)
    with pytest.raises(tn.FileChangedError, match=r"changed while it was read .*it is now") as e:
        list(ds.take(N_A).batches(50))  # a view reads the records its index lists
    assert e.value.size == os.path.getsize(copy) < e.value.expected == os.path.getsize(path)
    with pytest.raises(tn.CorruptRecordError, match=r"^truncated: the file ends 22 bytes into"):
        list(ds.batches(50))  # a whole pass streams the file


def test_open_errors(data, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^no such file: .*nothing\.tfrecord$"):
        tn.open(tmp_path / "nothing.tfrecord", SPEC)
    with pytest.raises(ValueError, match=r'^on_error must be "raise", "skip" or "warn"'):
        tn.open(data[0], SPEC, on_error="ignore")
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(tn.spec_to_json(SPEC))
    ds = tn.open(data[0][0], str(spec_file))
    assert ds.spec == SPEC
    inferred = tn.open(data[0][0])
    assert set(inferred.spec) == set(SPEC)


# --- damage with on_error="skip": spans around skipped bytes, full batches -----------------------

X_SPEC = {"x": tn.FixedLen((), "int64")}


def x_file(tf, tf_write, path, n: int = 100) -> tuple[str, np.ndarray]:
    """n records written by TensorFlow, record i holding x = i; and their frame offsets."""
    feature = tf.train.Feature
    payloads = [
        tf.train.Example(
            features=tf.train.Features(
                feature={"x": feature(int64_list=tf.train.Int64List(value=[i]))}
            )
        ).SerializeToString()
        for i in range(n)
    ]
    tf_write(path, payloads)
    return str(path), tn.framing.scan_file(path).offsets


def flip(path: str, at: int) -> None:
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ 0xFF]))


def test_skip_reads_around_a_damaged_header(tf, tf_write, tmp_path):
    path, offsets = x_file(tf, tf_write, tmp_path / "header.tfrecord")
    flip(path, int(offsets[5]) + 2)  # the length of record 5: the scan resyncs after it
    good = [i for i in range(100) if i != 5]
    ds = tn.open(path, X_SPEC, on_error="skip")
    assert len(ds) == 99
    xs = lambda batches: np.concatenate([b["x"] for b in batches]).tolist()  # noqa: E731
    assert xs(ds.batches(32)) == good
    assert xs(ds.batches(7, prefetch=0)) == good
    assert sorted(xs(ds.batches(32, shuffle=10, seed=1))) == good
    assert sorted(xs(ds.batches(32, shuffle=True, seed=1))) == good
    assert ds[0:99]["x"].tolist() == good
    assert ds[3:8]["x"].tolist() == [3, 4, 6, 7, 8]
    assert ds[[4, 5]]["x"].tolist() == [4, 6]
    assert ds.to_numpy()["x"].tolist() == good
    out = ds.save(tmp_path / "out", progress=False)
    assert tn.load(out)["x"][:].tolist() == good
    assert [(c.record, c.offset) for c in ds.corruptions] == [(5, int(offsets[5]))]


def test_skipped_payloads_leave_only_the_last_batch_short(tf, tf_write, tmp_path):
    path, offsets = x_file(tf, tf_write, tmp_path / "payload.tfrecord")
    flip(path, int(offsets[10]) + 14)  # inside the payload of record 10: its CRC fails
    good = [i for i in range(100) if i != 10]
    for kwargs in ({}, {"shuffle": 40, "seed": 2}, {"shuffle": True, "seed": 2}):
        ds = tn.open(path, X_SPEC, on_error="skip")
        batches = [b["x"] for b in ds.batches(32, **kwargs)]
        assert [len(b) for b in batches] == [32, 32, 32, 3], kwargs
        assert sorted(np.concatenate(batches).tolist()) == good, kwargs
        kept = np.concatenate([b["x"] for b in ds.batches(32, drop_remainder=True, **kwargs)])
        assert len(kept) == 96 and len(set(kept.tolist()) - set(good)) == 0, kwargs
        assert len(set(kept.tolist())) == 96, kwargs
        assert [(c.record, c.offset) for c in ds.corruptions] == [(10, int(offsets[10]))]


def test_save_checks_batch_size_before_writing(plain, tmp_path):
    path, _ = plain
    ds = tn.open(path, SPEC)
    out = tmp_path / "out.npz"
    for bad in (-5, 0):
        with pytest.raises(ValueError, match=rf"^batch_size must be at least 1, not {bad}$"):
            ds.save(out, batch_size=bad, progress=False)
        with pytest.raises(ValueError, match=rf"^batch_size must be at least 1, not {bad}$"):
            tn.convert(path, out, spec=SPEC, batch_size=bad, progress=False)
    for bad in (2.5, True, "8"):
        with pytest.raises(TypeError, match=rf"^batch_size must be an int, not {bad!r}$"):
            ds.save(out, batch_size=bad, progress=False)
    assert os.listdir(tmp_path) == []


def test_getitems_reads_a_batch_of_records_in_one_call(plain):
    # PyTorch's DataLoader calls __getitems__ with each batch's indices on map-style datasets
    path, cols = plain
    ds = tn.open(path, SPEC)
    records = ds.__getitems__([7, 2, 299, 2])
    assert len(records) == 4
    assert_batch(records.columns, take(cols, [7, 2, 299, 2]))
    assert [r["label"] for r in records] == cols["label"][[7, 2, 299, 2]].tolist()
    assert np.array_equal(records[-1]["vec"], cols["vec"][2])
    assert records[0]["tokens"].tolist() == cols["tokens"][7].tolist()
    assert [r["label"] for r in records[1:3]] == cols["label"][[2, 299]].tolist()
    with pytest.raises(IndexError, match="record 300 out of range"):
        ds.__getitems__([1, 300])


def test_a_too_long_row_is_named_in_shuffled_batches_too(data):
    paths, cols = data
    lengths = cols["tokens"].lengths
    longest = int(np.argmax(lengths))
    pad = {"tokens": int(lengths[longest]) - 1}  # only the longest rows are too long
    too_long = np.flatnonzero(lengths > pad["tokens"])
    with pytest.raises(tn.SchemaError, match=r"has a row of \d+ values at \S+ record \d+") as e:
        list(tn.open(paths, SPEC).batches(16, shuffle=100, seed=2, pad=pad))
    named = re.search(r"at (\S+) record (\d+)", str(e.value))
    file, number = named.group(1), int(named.group(2))
    global_id = number if file.endswith("a.tfrecord") else number + N_A
    assert global_id in too_long.tolist()  # the record named is one that is too long


def test_raw_with_a_varying_first_axis_is_dense_per_batch_like_tensorflow(tmp_path):
    """tn.Raw('float32', shape=(-1, 3)) gives what decode_raw + reshape + batch gives: a
    dense [n, m, 3] array for a batch whose records hold the same number of rows, and a
    Ragged only for a batch whose records differ (where TensorFlow's batch() refuses)."""
    rng = np.random.default_rng(4)
    rows = [3] * 64 + [2, 5] * 16 + [3] * 32  # batches of 32: uniform, uniform, mixed, uniform
    arrays = [rng.random((m, 3), dtype=np.float32) for m in rows]
    path = tmp_path / "raw.tfrecord"
    with tn.RecordWriter(path) as w:
        for i, a in enumerate(arrays):
            w.write(pw.simple_example({"r": (pw.BYTES, [a.tobytes()]), "i": (pw.INT64, [i])}))
    spec = {"r": tn.Raw("float32", shape=(-1, 3)), "i": tn.FixedLen((), "int64")}
    ds = tn.open(path, spec)
    batches = list(ds.batches(32))
    theirs = (
        tf.data.TFRecordDataset(str(path))
        .map(lambda s: tf.reshape(tf.io.decode_raw(tf.io.parse_single_example(
            s, {"r": tf.io.FixedLenFeature([], tf.string)})["r"], tf.float32), [-1, 3]))
        .batch(32)
    )  # fmt: skip
    first_two = [b.numpy() for b in theirs.take(2)]
    assert all(isinstance(b["r"], np.ndarray) for b in batches[:2])
    for ours, want in zip(batches[:2], first_two, strict=True):
        assert ours["r"].shape == (32, 3, 3) and np.array_equal(ours["r"], want)
    assert isinstance(batches[2]["r"], tn.Ragged)
    assert batches[2]["r"].lengths.tolist() == rows[64:96]
    assert np.array_equal(batches[2]["r"].values, np.concatenate(arrays[64:96]))
    assert np.array_equal(batches[3]["r"], np.stack(arrays[96:]))  # uniform again: dense
    with pytest.raises(tf.errors.InvalidArgumentError):
        list(theirs)  # TensorFlow cannot batch the mixed ones at all
    # one "batch" of everything: mixed sizes, so Ragged; a uniform view, dense
    assert isinstance(ds.to_numpy()["r"], tn.Ragged)
    assert np.array_equal(ds.take(64).to_numpy()["r"], np.stack(arrays[:64]))
    assert np.array_equal(ds[[0, 5, 9]]["r"], np.stack([arrays[k] for k in (0, 5, 9)]))


# --- big records: decoded in the frames they were read into -----------------------------------

BIG_SPEC = {"label": tn.FixedLen((), "int64"), "x": tn.Raw("float32", shape=(32, 40))}


@pytest.fixture(scope="module")
def big(tf_write, tmp_path_factory):
    """Records of 5 KiB tensors (the size a pass decodes where it read them) in three files,
    one empty and one GZIP: (paths, labels, tensors)."""
    rng = np.random.default_rng(7)
    n_a, n_c = 333, 250
    x = rng.standard_normal((n_a + n_c, 32, 40), dtype=np.float32)
    payloads = [
        pw.simple_example({"label": (pw.INT64, [i]), "x": (pw.BYTES, [x[i].tobytes()])})
        for i in range(n_a + n_c)
    ]
    folder = tmp_path_factory.mktemp("big")
    paths = [
        tf_write(str(folder / "a.tfrecord"), payloads[:n_a]),
        tf_write(str(folder / "empty.tfrecord"), []),
        tf_write(str(folder / "c.tfrecord.gz"), payloads[n_a:], "GZIP"),
    ]
    return paths, np.arange(n_a + n_c), x


@pytest.mark.parametrize("prefetch", [0, 2])
@pytest.mark.parametrize("batch_size", [1, 7, 256, 1000])
def test_big_records_in_file_order_across_files(big, batch_size, prefetch):
    paths, labels, x = big
    ds = tn.open(paths, BIG_SPEC)
    assert ds._mean_record_bytes() >= BIG_RECORD_BYTES  # the in-frame path is the one taken
    batches = list(ds.batches(batch_size, prefetch=prefetch))
    n = len(labels)
    sizes = [batch_size] * (n // batch_size) + ([n % batch_size] if n % batch_size else [])
    assert [len(b["label"]) for b in batches] == sizes
    assert np.array_equal(np.concatenate([b["label"] for b in batches]), labels)
    assert np.array_equal(np.concatenate([b["x"] for b in batches]), x)


@pytest.fixture(scope="module")
def big_plain(big, tf_write, tmp_path_factory):
    """The big records in three uncompressed files, one empty (read by position once
    indexed): (paths, labels, tensors)."""
    paths, labels, x = big
    folder = tmp_path_factory.mktemp("big_plain")
    names = ("a.tfrecord", "empty.tfrecord", "c.tfrecord")
    plain = [
        tf_write(folder / n, list(tn.RecordReader(p))) for n, p in zip(names, paths, strict=True)
    ]
    return plain, labels, x


@pytest.mark.parametrize("block_bytes", [64 << 10, 4 << 20])  # blocks of ~12 records, whole files
@pytest.mark.parametrize("batch_size", [1, 7, 256, 1000])
def test_indexed_big_records_are_read_by_position(big_plain, batch_size, block_bytes, monkeypatch):
    import tfrecnp.data.blocks as blocks

    monkeypatch.setattr(blocks, "BLOCK_BYTES", block_bytes)
    paths, labels, x = big_plain
    ds = tn.open(paths, BIG_SPEC)
    assert len(ds) == len(labels) and ds._by_position()  # the positioned path is the one taken
    got = list(ds.batches(batch_size))
    assert np.array_equal(np.concatenate([b["label"] for b in got]), labels)
    assert np.array_equal(np.concatenate([b["x"] for b in got]), x)
    assert all(len(b["label"]) == batch_size for b in got[:-1])
    view = ds.take(400).shard(2, 1)  # a part: records 1, 3, ... of the first 400
    part = np.concatenate([b["label"] for b in view.batches(batch_size)])
    assert np.array_equal(part, np.concatenate([b["label"] for b in view.batches(5, prefetch=0)]))


@pytest.mark.parametrize("batch_size", [1, 64])
def test_big_records_through_a_shuffle_buffer_are_decoded_where_the_pool_holds_them(
    big, batch_size, monkeypatch
):
    import tfrecnp.data.blocks as blocks

    monkeypatch.setattr(blocks, "BLOCK_BYTES", 64 << 10)  # blocks of ~12 records: many draws
    paths, labels, x = big
    ds = tn.open(paths, BIG_SPEC)
    runs = [list(ds.batches(batch_size, shuffle=100, seed=5)) for _ in range(2)]
    got = np.concatenate([b["label"] for b in runs[0]])
    assert sorted(got.tolist()) == labels.tolist() and not np.array_equal(got, labels)
    assert np.array_equal(np.concatenate([b["x"] for b in runs[0]]), x[got])  # with its label
    assert np.array_equal(got, np.concatenate([b["label"] for b in runs[1]]))  # the seed's order


def test_a_malformed_big_record_in_a_shuffle_buffer_is_named(tf_write, tmp_path):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((120, 32, 40), dtype=np.float32)
    payloads = [
        pw.simple_example({"label": (pw.INT64, [i]), "x": (pw.BYTES, [x[i].tobytes()])})
        for i in range(120)
    ]
    payloads[77] = b"\x0a\xff\xff\x03" + bytes(5000)  # a Features longer than the record
    path = tf_write(tmp_path / "m.tfrecord", payloads)
    got = []
    with pytest.raises(tn.CorruptRecordError, match="malformed Example") as error:
        for batch in tn.open(path, BIG_SPEC).batches(1, shuffle=30, seed=3):
            got.append(int(batch["label"][0]))
    assert (error.value.path, error.value.record) == (path, 77)
    assert 77 not in got


def _flip_payload(path, record, tmp_path):
    """A copy of uncompressed `path` with one byte of record `record`'s tensor flipped:
    (the copy, the frame's offset)."""
    at = int(tn.framing.scan_file(path, use_index=False).offsets[record])
    data = bytearray(Path(path).read_bytes())
    data[at + 12 + 2000] ^= 0x40
    out = tmp_path / "flipped.tfrecord"
    out.write_bytes(data)
    return out, at


@pytest.mark.parametrize("prefetch", [0, 2])
def test_a_damaged_big_record_is_named_after_the_good_ones(big, tmp_path, prefetch):
    paths, labels, _ = big
    path, at = _flip_payload(paths[0], 200, tmp_path)
    with pytest.raises(tn.CorruptRecordError) as theirs:
        list(tn.RecordReader(path).batches(1000))
    got = []
    with pytest.raises(tn.CorruptRecordError) as ours:
        for batch in tn.open(path, BIG_SPEC).batches(1, prefetch=prefetch):
            got.append(int(batch["label"][0]))
    assert got == list(range(200))  # every good record before the damage first
    assert (ours.value.path, ours.value.record, ours.value.offset) == (str(path), 200, at)
    assert str(ours.value) == str(theirs.value)
    indexed = tn.open(path, BIG_SPEC)
    assert len(indexed) == 333 and indexed._by_position()  # read by position: the same
    got = []
    with pytest.raises(tn.CorruptRecordError) as positioned:
        for batch in indexed.batches(1, prefetch=prefetch):
            got.append(int(batch["label"][0]))
    assert got == list(range(200))
    assert str(positioned.value) == str(theirs.value)
    for part in (indexed, indexed.take(300)):  # a shuffle buffer: streamed, read by position
        with pytest.raises(tn.CorruptRecordError) as pooled:
            list(part.batches(8, shuffle=50, seed=1, prefetch=prefetch))
        assert str(pooled.value) == str(theirs.value)
    ds = tn.open(path, BIG_SPEC, on_error="skip")
    kept = np.concatenate([b["label"] for b in ds.batches(64, prefetch=prefetch)])
    assert np.array_equal(kept, np.delete(labels[:333], 200))
    assert [(e.record, e.offset) for e in ds.corruptions] == [(200, at)]
