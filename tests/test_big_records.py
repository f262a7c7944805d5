"""Large blocks of big records (issue 26): read, checked and decoded in pieces by the crew,
each piece's fixed-shape columns copied into their rows of the block (`RowBlocks`).

TensorFlow is the oracle for the values; damage is named as the record reader names it."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import protowire as pw
import pytest

import tfrecnp as tn
from tfrecnp._util.spares import Spares
from tfrecnp._util.text import format_count
from tfrecnp.data import blocks, record_dataset
from tfrecnp.data import files as files_module
from tfrecnp.data.blocks import RowBlocks
from tfrecnp.example.columns import BytesColumn
from tfrecnp.example.decode import Decoder
from tfrecnp.format.payloads import Origins

SIDE = (32, 40)  # 5 KiB of float32: past BIG_RECORD_BYTES
SPEC = {"label": tn.FixedLen((), "int64"), "x": tn.Raw("float32", shape=SIDE)}
N = 700


@pytest.fixture(scope="module")
def tensors(tf_write, tmp_path_factory):
    """N records of a float32 tensor and a label, written by TensorFlow: (path, tensors)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((N, *SIDE), dtype=np.float32)
    x[:, 0, 0] += np.arange(N)  # rows that differ in a way a misplaced row would show
    payloads = [
        pw.simple_example({"label": (pw.INT64, [i]), "x": (pw.BYTES, [x[i].tobytes()])})
        for i in range(N)
    ]
    path = tf_write(tmp_path_factory.mktemp("tensors") / "t.tfrecord", payloads)
    return path, x


@pytest.fixture
def small_pieces(monkeypatch):
    """Blocks decoded in pieces of about 32 KiB (six records)."""
    monkeypatch.setattr(record_dataset, "PIECE_BYTES", 32 << 10)


def _tf_parse(tf, path):
    spec = {"label": tf.io.FixedLenFeature([], tf.int64), "x": tf.io.FixedLenFeature([], tf.string)}
    out = {"label": [], "x": []}
    for batch in tf.data.TFRecordDataset(str(path)).batch(256):
        parsed = tf.io.parse_example(batch, spec)
        out["label"].append(parsed["label"].numpy())
        out["x"].append(tf.reshape(tf.io.decode_raw(parsed["x"], tf.float32), [-1, *SIDE]).numpy())
    return {k: np.concatenate(v) for k, v in out.items()}


@pytest.mark.parametrize("indexed", [False, True])
@pytest.mark.parametrize("batch_size", [7, 12, 64, 500])
def test_large_blocks_of_big_records_are_decoded_in_pieces(
    tf, tensors, small_pieces, batch_size, indexed, monkeypatch
):
    path, _ = tensors
    if batch_size == 12:  # blocks of 12 records, two pieces each: any block past a piece
        monkeypatch.setattr(blocks, "BLOCK_BYTES", 60 << 10)
    ds = tn.open(path, SPEC)
    if indexed:
        assert len(ds) == N and ds._by_position()  # each crew member reads its piece
    decoded = []
    decode = record_dataset.RecordSource._decode

    def counting(self, batch, threads=None, into=None):  # the real decode, sizes noted
        decoded.append(len(batch))
        return decode(self, batch, threads, into)

    monkeypatch.setattr(record_dataset.RecordSource, "_decode", counting)
    spans = []
    monkeypatch.setattr(record_dataset, "read_span", _noted(record_dataset.read_span, spans))
    got = list(ds.batches(batch_size))
    assert max(decoded) <= 8 and len(decoded) >= N // 8  # pieces, whatever the batch
    assert bool(spans) == indexed  # pieces of indexed files are read by position
    assert [len(b["label"]) for b in got[:-1]] == [batch_size] * (len(got) - 1)
    theirs = _tf_parse(tf, path)
    assert np.array_equal(np.concatenate([b["label"] for b in got]), theirs["label"])
    assert np.array_equal(np.concatenate([b["x"] for b in got]), theirs["x"])


@pytest.mark.parametrize("shuffle", [False, True])
def test_small_blocks_are_decoded_a_piece_of_whole_blocks_at_a_time(
    tf, tensors, small_pieces, shuffle, monkeypatch
):
    path, _ = tensors
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 10 << 10)  # blocks of two records, pieces of six
    ds = tn.open(path, SPEC)
    len(ds)
    decoded = []
    decode = record_dataset.RecordSource._decode

    def counting(self, batch, threads=None, into=None):
        decoded.append(len(batch))
        return decode(self, batch, threads, into)

    monkeypatch.setattr(record_dataset.RecordSource, "_decode", counting)
    got = list(ds.batches(2, shuffle=shuffle, seed=4))
    assert sorted(decoded)[1:] == [6] * (len(decoded) - 1)  # three blocks a piece (and
    # the last, short: the crew's two members may finish it before the one ahead of it)
    labels = np.concatenate([b["label"] for b in got])
    assert sorted(labels.tolist()) == list(range(N))
    theirs = _tf_parse(tf, path)
    assert np.array_equal(np.concatenate([b["x"] for b in got]), theirs["x"][labels])
    roots = [_root(b["x"]) for b in got[:3]]  # the first piece's three blocks of two
    assert roots[0] is roots[1] is roots[2]  # views of that piece's rows, not copies


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


@pytest.fixture
def damaged(tensors, tmp_path):
    """The tensors' file with one bit of record 413's tensor flipped: (path, its offset)."""
    path, _ = tensors
    at = int(tn.framing.scan_file(path, use_index=False).offsets[413])
    data = bytearray(Path(path).read_bytes())
    data[at + 12 + 1500] ^= 0x08
    out = tmp_path / "damaged.tfrecord"
    out.write_bytes(data)
    return out, at


def test_a_damaged_record_in_a_piece_is_named_after_the_good_ones(tensors, damaged, small_pieces):
    _, x = tensors
    damaged, at = damaged
    with pytest.raises(tn.CorruptRecordError) as theirs:
        list(tn.RecordReader(damaged).batches(1000))
    for indexed in (False, True):
        ds = tn.open(damaged, SPEC)
        if indexed:
            len(ds)
        got = []
        with pytest.raises(tn.CorruptRecordError) as ours:
            for batch in ds.batches(300):
                got.append(batch["label"])
        assert np.array_equal(np.concatenate(got), np.arange(300))  # the whole batches before
        assert (ours.value.path, ours.value.record, ours.value.offset) == (str(damaged), 413, at)
        assert "payload CRC mismatch" in str(ours.value)
        assert str(ours.value) == str(theirs.value)
    ds = tn.open(damaged, SPEC, on_error="skip")
    kept = list(ds.batches(300))
    assert np.array_equal(np.concatenate([b["label"] for b in kept]), np.delete(np.arange(N), 413))
    assert np.array_equal(np.concatenate([b["x"] for b in kept]), np.delete(x, 413, axis=0))
    assert [(e.record, e.offset) for e in ds.corruptions] == [(413, at)]


def test_row_blocks_put_pieces_in_place_across_block_bounds():
    rows = RowBlocks(5, frozenset({"x"}), Spares())
    values = np.arange(12 * 3, dtype=np.float32).reshape(12, 3)
    names = [b"%d" % i for i in range(12)]

    def piece(a, b):
        cols = {"x": values[a:b], "name": BytesColumn.from_list(names[a:b])}
        return rows.place(a, cols, 10 * (b - a), Origins.run("f", a, b - a)), None

    out = list(rows.blocks([piece(0, 3), piece(3, 9), piece(9, 12)]))  # the second straddles
    assert [b.n for b in out] == [5, 5, 2]
    assert np.array_equal(np.concatenate([b.cols["x"] for b in out]), values)
    assert [v for b in out for v in b.cols["name"].to_list()] == names
    assert [b.where(1) for b in out] == [("f", 1), ("f", 6), ("f", 11)]
    assert sum(b.nbytes for b in out) == 120


def test_raw_rows_are_decoded_into_their_block_not_copied_there(tf, tensors, small_pieces):
    path, _ = tensors
    placed = []
    place = blocks.RowBlocks.place

    def noting(self, first, cols, nbytes, origins, into=None):
        placed.append(into is not None and "x" in into and cols["x"] is into["x"])
        return place(self, first, cols, nbytes, origins, into)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(blocks.RowBlocks, "place", noting)
        got = list(tn.open(path, SPEC).batches(64))
    assert sum(placed) >= len(placed) - len(got)  # all but pieces that straddle two blocks
    assert np.array_equal(np.concatenate([b["x"] for b in got]), _tf_parse(tf, path)["x"])


def test_decode_into_checks_the_arrays_it_is_given(tensors):
    path, _ = tensors
    decoder = Decoder(SPEC)
    records = list(itertools.islice(tn.iter_records(path), 5))
    rows = np.empty((5, *SIDE), np.float32)
    got = decoder.decode(records, into={"x": rows})
    assert got["x"] is rows and np.array_equal(rows, decoder.decode(records)["x"])
    with pytest.raises(ValueError, match="'x' needs"):
        decoder.decode(records, into={"x": np.empty((4, *SIDE), np.float32)})
    with pytest.raises(ValueError, match="C-contiguous"):
        strided = np.empty((5, SIDE[0], 2 * SIDE[1]), np.float32)[:, :, ::2]
        decoder.decode(records, into={"x": strided})


def test_a_whole_pass_indexes_the_files_it_walked(tf, tensors, small_pieces, tmp_path, monkeypatch):
    path, _ = tensors
    scanned = tn.framing.scan_file(path, use_index=False)
    ds = tn.open(path, SPEC)
    first = list(ds.batches(64))
    assert ds._files.indexed  # the next pass reads by position, side by side
    assert np.array_equal(ds._files.offsets, scanned.offsets)
    assert np.array_equal(ds._files.lengths, scanned.lengths)
    assert ds._by_position()
    theirs = _tf_parse(tf, path)
    for got in (first, list(ds.batches(64))):
        assert np.array_equal(np.concatenate([b["label"] for b in got]), theirs["label"])
        assert np.array_equal(np.concatenate([b["x"] for b in got]), theirs["x"])
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 64 << 10)  # blocks of a batch: read ahead less
    left = tn.open(path, SPEC)
    next(iter(left.batches(64)))  # a pass given up (read ahead a few pieces): nothing learned
    assert not left._files.indexed
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(Path(path).read_bytes()[:-100])  # the last record cut short
    damaged = tn.open(cut, SPEC)
    with pytest.raises(tn.CorruptRecordError):
        list(damaged.batches(64))
    assert not damaged._files.indexed


def test_shuffled_big_records_of_a_url_are_pooled_in_their_frames(tf, tensors, memfs, monkeypatch):
    path, _ = tensors
    url = "memory://pooled/t.tfrecord"  # not indexed: the pass streams the file
    memfs.pipe(url, Path(path).read_bytes())  # through the pool (local files: indexed first)
    ds = tn.open(url, SPEC)
    pooled = []
    pool = record_dataset.shuffle_records

    def noting(items, *args, **kwargs):  # the real pool, the kind of batch fed to it noted
        return pool((pooled.append(b.offsets is None) or b for b in items), *args, **kwargs)

    monkeypatch.setattr(record_dataset, "shuffle_records", noting)
    got = list(ds.batches(64, shuffle=200, seed=3))
    assert pooled and all(pooled)  # payloads left in their frames, not copied out first
    labels = np.concatenate([b["label"] for b in got])
    assert sorted(labels.tolist()) == list(range(N)) and labels.tolist() != list(range(N))
    theirs = _tf_parse(tf, path)
    assert np.array_equal(np.concatenate([b["x"] for b in got]), theirs["x"][labels])
    again = np.concatenate(
        [b["label"] for b in tn.open(path, SPEC).batches(64, shuffle=200, seed=3)]
    )
    assert np.array_equal(again, labels)  # the order is the seed's, picked or pooled


@pytest.mark.parametrize("shuffle", [200, True])
def test_shuffled_big_records_in_indexed_files_are_picked_by_number(
    tf, tensors, shuffle, monkeypatch
):
    path, _ = tensors
    streamed = np.concatenate(
        [b["label"] for b in tn.open(path, SPEC).batches(64, shuffle=shuffle, seed=3)]
    )
    ds = tn.open(path, SPEC)
    len(ds)
    picked, pooled = [], []
    monkeypatch.setattr(
        record_dataset, "verified_rows", _noted(record_dataset.verified_rows, picked)
    )
    monkeypatch.setattr(record_dataset, "shuffle_records", lambda *a, **k: pooled.append(1))
    got = list(ds.batches(64, shuffle=shuffle, seed=3))
    assert picked and not pooled  # numbers drawn, the records read by position
    labels = np.concatenate([b["label"] for b in got])
    assert sorted(labels.tolist()) == list(range(N)) and labels.tolist() != list(range(N))
    assert np.array_equal(labels, streamed)  # the order is the seed's, indexed or not
    theirs = _tf_parse(tf, path)
    assert np.array_equal(np.concatenate([b["x"] for b in got]), theirs["x"][labels])


def _noted(fn, calls):
    return lambda *a: calls.append(1) or fn(*a)


@pytest.mark.parametrize("shuffle", [200, True])
def test_shuffled_big_records_of_several_files_are_read_a_call_per_file(
    tf, tensors, shuffle, tmp_path, monkeypatch
):
    path, _ = tensors
    paths = [tmp_path / f"{k}.tfrecord" for k in range(3)]
    for p in paths:
        p.write_bytes(Path(path).read_bytes())
    ds = tn.open(paths, SPEC)
    assert len(ds) == 3 * N
    calls = []
    monkeypatch.setattr(files_module, "read_runs", _noted(files_module.read_runs, calls))
    got = list(ds.batches(100, shuffle=shuffle, seed=5))
    pieces = sum(1 for _ in range(0, 3 * N, 100))  # at most a piece a block here
    assert len(calls) <= 3 * pieces  # a core call per file a piece touches, not per record
    labels = np.concatenate([b["label"] for b in got])
    assert sorted(labels.tolist()) == sorted(list(range(N)) * 3)
    theirs = _tf_parse(tf, path)
    assert np.array_equal(np.concatenate([b["x"] for b in got]), theirs["x"][labels])


def test_records_picked_by_number_are_read_by_position(tf, tensors, damaged, monkeypatch):
    path, _ = tensors
    ds = tn.open(path, SPEC)
    read = []
    monkeypatch.setattr(record_dataset, "read_rows", _noted(record_dataset.read_rows, read))
    picks = [5, 699, 5, 0, 321]
    got = ds.__getitems__(picks).columns
    assert read  # one read of the picks (the duplicate read once)
    theirs = _tf_parse(tf, path)
    assert np.array_equal(got["x"], theirs["x"][picks])
    assert np.array_equal(ds[[3, 1]]["label"], [3, 1])
    bad, at = damaged
    with pytest.raises(tn.CorruptRecordError) as error:  # the long way names the damage
        tn.open(bad, SPEC).__getitems__([1, 413])
    assert (error.value.record, error.value.offset) == (413, at)


def test_a_first_pass_checks_no_crc_when_told_not_to(tensors, damaged):
    _, x = tensors
    bad, _ = damaged  # record 413's payload CRC fails
    got = list(tn.open(bad, SPEC, verify_crc=False).batches(100))
    assert np.array_equal(np.concatenate([b["label"] for b in got]), np.arange(N))
    assert not np.array_equal(got[4]["x"][13], x[413])  # the flipped bit, served as read


@pytest.mark.parametrize("damage", ["cut", "length crc"])
def test_damage_a_first_pass_walks_into_is_named_as_a_stream_names_it(tensors, tmp_path, damage):
    path, _ = tensors
    data = bytearray(Path(path).read_bytes())
    at = int(tn.framing.scan_file(path, use_index=False).offsets[500])
    if damage == "cut":
        data = data[: at + 100]
    else:
        data[at + 9] ^= 0x10
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(data))
    with pytest.raises(tn.CorruptRecordError) as theirs:
        list(tn.RecordReader(bad).batches(100))
    got = []
    with pytest.raises(tn.CorruptRecordError) as ours:
        for batch in tn.open(bad, SPEC).batches(100):
            got.append(batch["label"])
    assert str(ours.value) == str(theirs.value)
    assert np.array_equal(np.concatenate(got), np.arange(500))  # the whole batches before


def test_a_file_that_shrinks_during_a_first_pass_is_named_not_cut_short(
    tensors, tmp_path, small_pieces, monkeypatch
):
    path, _ = tensors
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 60 << 10)  # blocks of 12, read ahead little
    copy = tmp_path / "shrinks.tfrecord"
    copy.write_bytes(Path(path).read_bytes())
    at = int(tn.framing.scan_file(copy, use_index=False).offsets[600])
    batches = iter(tn.open(copy, SPEC).batches(12))
    seen = len(next(batches)["label"])
    with open(copy, "r+b") as fh:  # cut at a frame's start, past the pieces read ahead
        fh.truncate(at)
    with pytest.raises(tn.FileChangedError, match="changed while it was read") as error:
        for batch in batches:
            seen += len(batch["label"])
    assert seen < 600  # not the 600 records left served as if they were the whole file
    assert (error.value.size, error.value.expected) == (at, Path(path).stat().st_size)
    assert f"it is now {format_count(at)} bytes" in str(error.value)  # not the read position


def test_a_shuffled_read_across_many_files(tf, tf_write, tmp_path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, *SIDE), dtype=np.float32)
    paths = []
    for k in range(20):  # two records a file
        payloads = [
            pw.simple_example({"label": (pw.INT64, [i]), "x": (pw.BYTES, [x[i].tobytes()])})
            for i in (2 * k, 2 * k + 1)
        ]
        paths.append(tf_write(tmp_path / f"{k}.tfrecord", payloads))
    ds = tn.open(paths, SPEC)
    len(ds)
    got = list(ds.batches(64, shuffle=True, seed=2))
    labels = np.concatenate([b["label"] for b in got])
    assert sorted(labels.tolist()) == list(range(40))
    assert np.array_equal(np.concatenate([b["x"] for b in got]), x[labels])


def _indexed_copy(path, copy):
    """A copy of the file at path, opened and indexed: (copy, dataset)."""
    copy.write_bytes(Path(path).read_bytes())
    ds = tn.open(copy, SPEC)
    len(ds)
    return copy, ds


def test_a_file_cut_short_after_it_was_indexed_is_named_with_its_size_now(tensors, tmp_path):
    copy, ds = _indexed_copy(tensors[0], tmp_path / "cut.tfrecord")
    size = copy.stat().st_size
    list(ds.batches(64, shuffle=True, seed=1))
    with open(copy, "r+b") as fh:
        fh.truncate(size // 2)
    with pytest.raises(tn.FileChangedError, match=r"cut\.tfrecord") as error:
        list(ds.batches(64, shuffle=True, seed=1))
    assert (error.value.size, error.value.expected) == (size // 2, size)
    assert error.value.record >= 0
    offsets = ds._files.offsets
    assert error.value.offset == offsets[error.value.record]  # a frame the index lists
    with pytest.raises(tn.FileChangedError) as error:
        ds[N - 1]
    assert (error.value.record, error.value.offset) == (N - 1, offsets[N - 1])


def test_a_stale_index_is_named(tensors, tmp_path):
    copy, ds = _indexed_copy(tensors[0], tmp_path / "stale.tfrecord")
    data = bytearray(copy.read_bytes())
    data[8] ^= 1  # the first length's CRC: the frame no longer checks where the index says
    copy.write_bytes(bytes(data))
    with pytest.raises(tn.CorruptRecordError) as error:
        list(ds.batches(N, shuffle=True, seed=1))
    assert (error.value.record, error.value.offset) == (0, 0)


@pytest.mark.parametrize(
    ("shuffle", "indexed", "by_number"),
    [(200, False, False), (200, True, False), (200, True, True), (True, True, False)],
)
def test_a_damaged_record_in_a_shuffled_pass_is_named(
    damaged, shuffle, indexed, by_number, monkeypatch
):
    path, at = damaged
    if by_number:
        monkeypatch.setattr(record_dataset, "PICKED_RECORD_BYTES", 4 << 10)
    ds = tn.open(path, SPEC)
    if indexed:
        len(ds)
    with pytest.raises(tn.CorruptRecordError) as ours:
        list(ds.batches(64, shuffle=shuffle, seed=3))
    assert (ours.value.path, ours.value.record, ours.value.offset) == (str(path), 413, at)
    assert "payload CRC mismatch" in str(ours.value)


def test_a_file_gone_by_the_end_of_its_pass_is_not_indexed(
    tensors, small_pieces, tmp_path, monkeypatch
):
    path, _ = tensors
    copy = tmp_path / "gone.tfrecord"
    copy.write_bytes(Path(path).read_bytes())
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 64 << 10)  # blocks of a batch: read ahead less
    ds = tn.open(copy, SPEC)
    seen = 0
    for batch in ds.batches(12):  # removed mid-pass (the open handle reads on)
        seen += len(batch["label"])
        if copy.exists():
            copy.unlink()
    assert seen == N and not ds._files.indexed  # the pass stands; nothing learned
