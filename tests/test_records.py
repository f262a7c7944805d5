"""The record layer against TensorFlow: TF-written files read back payload for payload, our
files read back by tf.data, compression detection, scanning, index sidecars and paths."""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
import threading
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import frame_ref
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecnp as tn
from tfrecnp._core import framing
from tfrecnp.format.index import index_path
from tfrecnp.format.reader import file_compression

COMPRESSIONS = [None, "GZIP", "ZLIB"]


def _payloads(case: str) -> list[bytes]:
    rng = np.random.default_rng(sum(case.encode()))
    if case == "none":
        return []
    if case == "empty":
        return [b""] * 5
    if case == "mixed":
        lengths = [0, 1, 3, 0, 100, 255, 256, 4095, 70_000, 12, 0, 9]
        return [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in lengths]
    if case == "many":
        lengths = rng.integers(0, 40, 100_000)
        blob = rng.integers(0, 256, int(lengths.sum()), dtype=np.uint8).tobytes()
        ends = np.cumsum(lengths).tolist()
        return [blob[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    if case == "big":
        big = rng.integers(0, 256, 20 << 20, dtype=np.uint8).tobytes()
        return [b"head", big, b"", b"tail"]
    raise AssertionError(case)


@pytest.fixture(scope="session")
def corpus(tf_write, tmp_path_factory):
    """corpus(case, compression) -> (path of a TF-written file, its payloads); cached."""
    folder = tmp_path_factory.mktemp("tf-written")
    cache = {}

    def get(case, compression):
        if case not in cache:
            cache[case] = {"payloads": _payloads(case)}
        entry = cache[case]
        if compression not in entry:
            path = folder / f"{case}-{compression or 'plain'}.tfrecord"
            entry[compression] = tf_write(path, entry["payloads"], compression)
        return entry[compression], entry["payloads"]

    return get


def _check_batches(reader_batches, payloads, n):
    batches = list(reader_batches)
    got = []
    # every batch holds n records but the last, which holds the rest
    sizes = [n] * (len(payloads) // n) + ([len(payloads) % n] if len(payloads) % n else [])
    assert [len(batch) for batch in batches] == sizes
    for batch, start in zip(batches, range(0, len(payloads), n), strict=True):
        assert isinstance(batch, tn.framing.RecordBatch)
        assert batch.data.dtype == np.uint8 and batch.offsets.dtype == np.int64
        part = payloads[start : start + n]
        ends = np.cumsum([0] + [len(p) for p in part]).tolist()
        assert batch.offsets.tolist() == ends and len(batch.data) == ends[-1]
        got.extend(batch)
    assert got == payloads


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("case", ["none", "empty", "mixed", "many"])
def test_reads_tensorflow_files(corpus, case, compression):
    path, payloads = corpus(case, compression)
    assert file_compression(path) == compression
    assert list(tn.RecordReader(path)) == payloads
    assert list(tn.iter_records(path)) == payloads
    assert list(tn.RecordReader(path, compression=compression)) == payloads
    assert list(tn.RecordReader(path, verify_crc=False)) == payloads
    sizes = (7, 4096, 250_000) if case == "many" else (1, 2, 5, 1024)
    for n in sizes:
        _check_batches(tn.RecordReader(path).batches(n), payloads, n)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_reads_a_20_mib_record(corpus, compression):
    path, payloads = corpus("big", compression)
    assert file_compression(path) == compression
    _check_batches(tn.RecordReader(path).batches(3), payloads, 3)


def test_empty_file_of_any_compression_name(tmp_path):
    path = tmp_path / "empty.tfrecord"
    path.write_bytes(b"")
    assert file_compression(path) is None
    for compression in ("auto", None, "", "NONE"):
        assert list(tn.RecordReader(path, compression=compression)) == []
    assert tn.count_records(path) == 0


@pytest.mark.parametrize(
    ("length", "head"), [(376, b"\x78\x01"), (0x9C78, b"\x78\x9c"), (0xDA78, b"\x78\xda")]
)
def test_a_zlib_looking_first_length_is_read_as_uncompressed(tf_write, tmp_path, length, head):
    payloads = [bytes([7]) * length, b"next"]
    path = tf_write(tmp_path / "looks-zlib.tfrecord", payloads)
    with open(path, "rb") as f:
        first = f.read(2)
    assert first == head and (first[0] << 8 | first[1]) % 31 == 0  # a valid zlib header
    assert file_compression(path) is None
    assert list(tn.RecordReader(path)) == payloads
    assert tn.count_records(path) == 2


def test_a_gzip_looking_first_length_is_read_as_uncompressed(tf_write, tmp_path):
    payloads = [b"g" * 0x8B1F]
    path = tf_write(tmp_path / "looks-gzip.tfrecord", payloads)
    with open(path, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    assert file_compression(path) is None
    assert list(tn.RecordReader(path)) == payloads


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("case", ["none", "empty", "mixed", "many"])
@pytest.mark.parametrize("method", ["write", "write_batch"])
def test_tensorflow_reads_our_files(corpus, tf_read, tmp_path, case, compression, method, ref):
    tf_path, payloads = corpus(case, None)
    path = tmp_path / "ours.tfrecord"
    with tn.RecordWriter(path, compression=compression) as writer:
        if method == "write":
            for p in payloads:
                writer.write(p)
        else:
            lengths = np.array([len(p) for p in payloads], np.int64)
            writer.write_batch(b"".join(payloads), np.concatenate([[0], np.cumsum(lengths)]))
    assert writer.records == len(payloads)
    assert tf_read(path, compression) == payloads
    # The framing is deterministic: decompressed, our bytes are TensorFlow's bytes.
    raw = path.read_bytes()
    plain = {None: lambda b: b, "GZIP": gzip.decompress, "ZLIB": zlib.decompress}[compression]
    with open(tf_path, "rb") as f:
        assert plain(raw) == f.read()
    assert list(tn.RecordReader(path)) == payloads


def test_tensorflow_reads_our_20_mib_record(corpus, tf_read, tmp_path):
    _, payloads = corpus("big", None)
    path = tmp_path / "big.tfrecord"
    with tn.RecordWriter(path) as writer:
        writer.write(payloads[0])
        writer.write_batch(np.frombuffer(payloads[1], np.uint8), [0, len(payloads[1])])
        writer.write(payloads[2])
        writer.write(memoryview(payloads[3]))
    assert tf_read(path) == payloads


def test_write_batch_takes_offset_windows_and_keeps_order(tf_read, tmp_path):
    blob = bytes(range(100))
    path = tmp_path / "mixed.tfrecord"
    with tn.RecordWriter(path, compression="gzip") as writer:
        writer.write(b"first")
        writer.write_batch(np.frombuffer(blob, np.uint8), np.array([10, 15, 15, 40]))
        writer.write(bytearray(b"middle"))
        writer.write_batch(blob, [0])  # no records
        writer.write_batch(np.arange(12, dtype=np.uint8).reshape(3, 4), [0, 12])
    expected = [b"first", blob[10:15], b"", blob[15:40], b"middle", bytes(range(12))]
    assert tf_read(path, "GZIP") == expected
    assert writer.records == len(expected)


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        (
            [3, 2**62],
            "write_batch offsets end at 4611686018427387904, past the end of the 10 bytes of data",
        ),
        ([-1, 4], "write_batch offsets start at -1, expected >= 0"),
        (
            [0, 6, 4, 10],
            "write_batch offsets go down at record 1: 6 then 4; offsets must be non-decreasing",
        ),
        (
            [[0, 4]],
            "write_batch offsets must be a 1-D array of n + 1 record boundaries, not an "
            "array of shape (1, 2)",
        ),
        (
            [],
            "write_batch offsets must be a 1-D array of n + 1 record boundaries, not an "
            "array of shape (0,)",
        ),
    ],
)
def test_write_batch_checks_offsets_before_sizing_its_buffer(tmp_path, offsets, message):
    path = tmp_path / "o.tfrecord"
    with tn.RecordWriter(path) as writer:
        writer.write(b"kept")
        with pytest.raises(ValueError) as e:
            writer.write_batch(bytes(10), offsets)
        assert str(e.value) == message
        writer.write_batch(bytes(10), [0, 4, 10])  # the writer is still usable
    assert list(tn.RecordReader(path)) == [b"kept", bytes(4), bytes(6)]


def test_writer_rejects_auto_compression(tmp_path):
    with pytest.raises(ValueError) as e:
        tn.RecordWriter(tmp_path / "x.tfrecord", compression="auto")
    assert str(e.value) == 'unknown compression \'auto\'; use one of None, "GZIP", "ZLIB"'
    assert os.listdir(tmp_path) == []


def test_reader_rejects_bad_options(tmp_path):
    path = tmp_path / "x.tfrecord"
    path.write_bytes(b"")
    with pytest.raises(ValueError) as e:
        tn.RecordReader(path, compression="lz4")
    assert str(e.value) == ('unknown compression \'lz4\'; use one of "auto", None, "GZIP", "ZLIB"')
    with pytest.raises(ValueError) as e:
        tn.RecordReader(path, on_error="ignore")
    assert str(e.value) == 'on_error must be "raise", "skip" or "warn", not \'ignore\''
    with pytest.raises(ValueError) as e:
        tn.RecordReader(path).batches(0).__next__()
    assert str(e.value) == "batch_size must be at least 1, not 0"
    with pytest.raises(ValueError) as e:
        tn.RecordReader(path, expect_bytes=-1)
    assert str(e.value) == "expect_bytes must be >= 0 (or None: not known), not -1"


def test_batches_span_files_of_different_compressions(corpus, tmp_path):
    files = [corpus("mixed", c) for c in COMPRESSIONS] + [corpus("empty", "GZIP")]
    paths = [p for p, _ in files]
    payloads = [p for _, ps in files for p in ps]
    reader = tn.RecordReader(paths)
    _check_batches(reader.batches(5), payloads, 5)
    rows = [(path, i) for path, ps in files for i in range(len(ps))]
    seen = 0
    for batch in tn.RecordReader(paths).batches(5):
        for row in range(len(batch)):
            assert batch.where(row) == rows[seen]
            assert batch[row] == payloads[seen]
            seen += 1
    assert seen == len(payloads)


def _ramp(n: int, first: int, total: int) -> list[int]:
    """The batch sizes RecordReader.batches(n, first=first) gives over total records: the
    first n records in batches of first, first, then as many as came before; then n each."""
    sizes, done = [], 0
    while done < total:
        size = n if done >= n else (min(first, n) if done == 0 else min(done, n - done))
        sizes.append(min(size, total - done))
        done += sizes[-1]
    return sizes


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_a_first_batch_comes_in_growing_pieces(corpus, compression):
    path, payloads = corpus("many", compression)
    assert _ramp(1000, 3, 2500) == [3, 3, 6, 12, 24, 48, 96, 192, 384, 232, 1000, 500]
    for n, first in ((1000, 3), (4096, 1), (7, 2), (5, 9)):
        sizes = _ramp(n, first, len(payloads))
        got = list(tn.RecordReader(path).batches(n, first=first))
        assert [len(b) for b in got] == sizes
        assert [p for b in got for p in b] == payloads
        framed = tn.RecordReader(path).frame_batches(n, first=first)
        _check_frame_batches(framed, payloads, sizes)


def _check_frame_batches(reader, payloads, sizes):
    """Every batch is held at once (so a buffer reused under a held batch would show), each
    payload lies in its frame: its length in the 8 bytes 12 before it, its CRC after it."""
    batches = list(reader)
    assert [len(b) for b in batches] == sizes
    got = []
    for batch in batches:
        assert isinstance(batch, tn.framing.RecordBatch) and batch.verified
        assert batch.offsets is None  # spans, in their frames
        data = batch.data.tobytes()
        for a, b in zip(batch.starts.tolist(), batch.ends.tolist(), strict=True):
            assert int.from_bytes(data[a - 12 : a - 4], "little") == b - a
            assert int.from_bytes(data[b : b + 4], "little") == framing.mask_crc(
                framing.crc32c(data[a:b])
            )
            got.append(data[a:b])
        packed = batch.packed()
        assert list(packed) == got[len(got) - len(batch) :]
        assert packed.origins.runs() == batch.origins.runs()
        assert batch.nbytes == packed.nbytes
    assert got == payloads


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("case", ["none", "empty", "mixed", "many", "big"])
def test_frame_batches_leave_payloads_in_their_frames(corpus, case, compression):
    path, payloads = corpus(case, compression)
    for n in (7, 4096, 250_000) if case == "many" else (1, 3, 1024):
        sizes = [n] * (len(payloads) // n) + ([len(payloads) % n] if len(payloads) % n else [])
        _check_frame_batches(tn.RecordReader(path).frame_batches(n), payloads, sizes)
        deferred = tn.RecordReader(path).frame_batches(n, defer_crc=True)
        _check_frame_batches(_verified(deferred), payloads, sizes)


def _verified(batches):
    """The batches once the consumer has checked their CRCs (left to it)."""
    for batch in batches:
        assert not batch.verified
        batch, damage = batch.verify()
        assert damage is None
        yield batch


def test_frame_batches_end_with_each_file(corpus):
    files = [corpus("mixed", c) for c in COMPRESSIONS] + [corpus("empty", "GZIP")]
    paths = [p for p, _ in files]
    payloads = [p for _, ps in files for p in ps]
    sizes = [5, 5, 2] * 3 + [5]  # 12 records per "mixed" file, 5 in "empty"
    _check_frame_batches(tn.RecordReader(paths).frame_batches(5), payloads, sizes)
    rows = [(path, i) for path, ps in files for i in range(len(ps))]
    batches = tn.RecordReader(paths).frame_batches(5)
    assert [b.where(r) for b in batches for r in range(len(b))] == rows


def test_record_batch_access():
    data = np.frombuffer(b"abcdefghij", np.uint8)
    batch = tn.framing.RecordBatch(data, np.array([0, 3, 3, 10]), ((0, "f", 4),))
    assert len(batch) == 3
    assert list(batch) == [b"abc", b"", b"defghij"]
    assert batch[-1] == b"defghij"
    assert batch.lengths.tolist() == [3, 0, 7]
    with pytest.raises(IndexError) as e:
        batch[3]
    assert str(e.value) == "record 3 out of range for a batch of 3"
    part = batch.slice(1, 3)
    assert list(part) == [b"", b"defghij"] and part.where(1) == ("f", 6)
    assert np.shares_memory(part.data, data)


# --- property: random payload lists, our writer/reader and TensorFlow's ------------------


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    payloads=st.lists(
        st.one_of(st.binary(max_size=64), st.binary(min_size=1000, max_size=5000)),
        max_size=200,
    ),
    compression=st.sampled_from(COMPRESSIONS),
    batch_size=st.integers(1, 300),
)
def test_property_round_trips_agree_with_tensorflow(
    tf_write, tf_read, payloads, compression, batch_size
):
    folder = tempfile.mkdtemp()
    try:
        ours = os.path.join(folder, "ours.tfrecord")
        theirs = tf_write(os.path.join(folder, "theirs.tfrecord"), payloads, compression)
        with tn.RecordWriter(ours, compression=compression) as writer:
            for p in payloads:
                writer.write(p)
        assert tf_read(ours, compression) == payloads
        for path in (ours, theirs):
            assert list(tn.RecordReader(path)) == payloads
            got = [p for b in tn.RecordReader(path).batches(batch_size) for p in b]
            assert got == payloads
            assert tn.count_records(path) == len(payloads)
    finally:
        shutil.rmtree(folder)


# --- scanning and index sidecars -----------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "compression"),
    [(c, z) for c in ("none", "empty", "mixed", "many") for z in COMPRESSIONS] + [("big", None)],
)
def test_scan_file_matches_payload_lengths(corpus, case, compression, ref):
    path, payloads = corpus(case, compression)
    lengths = [len(p) for p in payloads]
    index = tn.framing.scan_file(path, use_index=False)
    assert index.path == path
    assert index.offsets.dtype == np.int64 and index.lengths.dtype == np.int64
    assert index.offsets.tolist() == ref.starts(lengths)  # decompressed offsets if compressed
    assert index.lengths.tolist() == lengths
    assert index.frame_lengths.tolist() == [n + 16 for n in lengths]
    assert tn.count_records(path) == len(payloads)


def test_write_index_format(corpus, tmp_path, ref):
    path, payloads = corpus("mixed", None)
    local = tmp_path / "mixed.tfrecord"
    shutil.copy(path, local)
    written = tn.framing.write_index(tn.framing.scan_file(local))
    assert written == str(local) + ".idx" == index_path(local)
    lengths = [len(p) for p in payloads]
    expected = "".join(
        f"{start} {n + 16}\n" for start, n in zip(ref.starts(lengths), lengths, strict=True)
    )
    with open(written) as f:
        assert f.read() == expected
    assert sorted(os.listdir(tmp_path)) == ["mixed.tfrecord", "mixed.tfrecord.idx"]
    back = tn.framing.read_index(written)
    assert back.path == str(local)
    assert back.offsets.tolist() == ref.starts(lengths)
    assert back.lengths.tolist() == lengths
    other = tn.framing.write_index(tn.framing.scan_file(local), tmp_path / "elsewhere.idx")
    assert Path(other).read_text() == expected


def test_index_of_an_empty_file(tmp_path):
    path = tmp_path / "empty.tfrecord"
    path.write_bytes(b"")
    written = tn.framing.write_index(tn.framing.scan_file(path))
    assert Path(written).read_text() == ""
    assert len(tn.framing.read_index(written, path)) == 0
    assert tn.count_records(path) == 0


def test_writer_streams_an_index_as_it_writes(corpus, tmp_path, ref):
    _, payloads = corpus("mixed", None)
    path = tmp_path / "out.tfrecord"
    with tn.RecordWriter(path, index=True) as writer:
        writer.write(payloads[0])
        for part in (payloads[1:4], payloads[4:5], payloads[5:]):  # offsets carry over
            ends = np.cumsum([len(p) for p in part])
            writer.write_batch(b"".join(part), np.concatenate([[0], ends]))
        assert os.listdir(tmp_path) != [] and not os.path.exists(index_path(path))
    lengths = [len(p) for p in payloads]
    expected = "".join(
        f"{start} {n + 16}\n" for start, n in zip(ref.starts(lengths), lengths, strict=True)
    )
    assert Path(index_path(path)).read_text() == expected
    assert sorted(os.listdir(tmp_path)) == ["out.tfrecord", "out.tfrecord.idx"]
    assert tn.framing.read_index(index_path(path), path).lengths.tolist() == lengths


def test_writer_index_needs_uncompressed_output(tmp_path):
    with pytest.raises(ValueError) as e:
        tn.RecordWriter(tmp_path / "x.tfrecord", "GZIP", index=True)
    assert str(e.value) == (
        "index=True needs uncompressed output: byte offsets in a GZIP file do not point at "
        "records; drop compression or the index"
    )
    assert os.listdir(tmp_path) == []


def test_finish_then_publish_under_another_name(tmp_path, tf_read):
    draft = tmp_path / "draft.tfrecord"
    writer = tn.RecordWriter(draft, index=True)
    writer.write(b"one")
    writer.finish()
    hidden = sorted(os.listdir(tmp_path))
    assert len(hidden) == 2 and all(n.startswith(".draft.tfrecord.tmp-") for n in hidden)
    assert list(tn.RecordReader(writer.tmp)) == [b"one"]  # complete before it appears
    with pytest.raises(ValueError) as e:
        writer.write(b"two")
    assert str(e.value) == f"writer for {draft} is closed"
    final = tmp_path / "final.tfrecord"
    assert writer.publish(final) == str(final) == writer.path
    assert sorted(os.listdir(tmp_path)) == ["final.tfrecord", "final.tfrecord.idx"]
    assert tf_read(final) == [b"one"]
    assert tn.framing.read_index(index_path(final), final).lengths.tolist() == [3]
    writer.abort()  # published: nothing left to undo
    writer.close()
    assert sorted(os.listdir(tmp_path)) == ["final.tfrecord", "final.tfrecord.idx"]


def test_a_writer_takes_over_a_finished_ones_thread(tmp_path, tf_read):
    def writer_threads():
        return sum(t.name.startswith("tfrecnp-writer") for t in threading.enumerate())

    before = writer_threads()
    first = tn.RecordWriter(tmp_path / "a.tfrecord")
    first.write_batch(b"abcdef", [0, 2, 6])
    first.finish()
    second = tn.RecordWriter(tmp_path / "b.tfrecord", "GZIP", reuse=first)
    second.write(b"xyz")
    second.write_batch(bytes(1 << 20), [0, 1 << 20])
    assert writer_threads() == before + 1
    first.publish()
    second.close()
    third = tn.RecordWriter(tmp_path / "c.tfrecord", reuse=first)  # nothing left to take
    third.write(b"c")
    third.close()
    assert tf_read(tmp_path / "a.tfrecord") == [b"ab", b"cdef"]
    assert tf_read(tmp_path / "b.tfrecord", "GZIP") == [b"xyz", bytes(1 << 20)]
    assert tf_read(tmp_path / "c.tfrecord") == [b"c"]
    assert writer_threads() == before


@pytest.mark.parametrize("how", ["abort", "drop"])
def test_a_finished_unpublished_file_is_deleted(tmp_path, how):
    writer = tn.RecordWriter(tmp_path / "out.tfrecord", index=True)
    writer.write_batch(bytes(10), [0, 4, 10])
    writer.finish()
    assert len(os.listdir(tmp_path)) == 2
    if how == "abort":
        writer.abort()
        with pytest.raises(ValueError, match="is closed"):
            writer.publish()
    else:
        del writer
    assert os.listdir(tmp_path) == []


def test_scan_uses_a_valid_sidecar(corpus, tmp_path, ref):
    path, payloads = corpus("mixed", None)
    local = tmp_path / "mixed.tfrecord"
    shutil.copy(path, local)
    tn.framing.write_index(tn.framing.scan_file(local))
    # Break record 4's length CRC, keeping the size: a header scan fails, the index is used.
    starts = ref.starts([len(p) for p in payloads])
    with open(local, "r+b") as f:
        f.seek(starts[4] + 9)
        byte = f.read(1)
        f.seek(starts[4] + 9)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(tn.CorruptRecordError):
        tn.framing.scan_file(local, use_index=False)
    index = tn.framing.scan_file(local)
    assert index.offsets.tolist() == starts
    assert index.lengths.tolist() == [len(p) for p in payloads]
    assert tn.count_records(local) == len(payloads)


def _stale(tmp_path, tf_write, old, new):
    path = tmp_path / "data.tfrecord"
    tf_write(path, old)
    tn.framing.write_index(tn.framing.scan_file(path))
    tf_write(path, new)
    return path


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ([b"a" * 10, b"b" * 20], [b"a" * 10, b"b" * 20, b"c"]),  # appended
        ([b"a" * 10, b"b" * 20], [b"a" * 10]),  # shortened
        ([b"a" * 10, b"b" * 20], [b"b" * 20, b"a" * 10]),  # same size, other boundaries
        ([b"a" * 10, b"b" * 20], [b"c" * 30, b""]),  # same size and count
        ([b"x" * 4], []),  # emptied
    ],
)
def test_a_stale_sidecar_is_ignored_with_a_warning(tmp_path, tf_write, old, new):
    path = _stale(tmp_path, tf_write, old, new)
    with pytest.warns(UserWarning) as record:
        index = tn.framing.scan_file(path)
    assert [str(w.message) for w in record] == [
        f"ignoring index {path}.idx: it does not describe {path} (stale or foreign); rescanning"
    ]
    assert index.lengths.tolist() == [len(p) for p in new]
    with pytest.warns(UserWarning):
        assert tn.count_records(path) == len(new)


@pytest.mark.parametrize(
    "text", ["not an index\n", "0 16 3\n", "0\n", "0 -5\n", "16 16\n", "0 16\n0 16\n"]
)
def test_a_malformed_sidecar_is_ignored_with_a_warning(tmp_path, tf_write, text):
    path = tf_write(tmp_path / "data.tfrecord", [b"", b"abc"])
    with open(index_path(path), "w") as f:
        f.write(text)
    with pytest.warns(UserWarning, match="stale or foreign"):
        assert tn.framing.scan_file(path).lengths.tolist() == [0, 3]


def test_read_index_without_a_data_file_checks_the_tiling(tmp_path):
    idx = tmp_path / "x.tfrecord.idx"
    idx.write_text("0 20\n25 16\n")
    with pytest.raises(ValueError) as e:
        tn.framing.read_index(idx)
    assert str(e.value) == f"{idx}: offsets and lengths do not tile a file"


def test_read_index_refuses_a_tiling_that_wraps_past_2_63(tmp_path, ref):
    # a first record claiming 2^63 - 17 bytes (its length CRC valid), then offsets that wrap
    # to negative and come back to the file's size: a seek to a negative offset was OSError
    head = (2**63 - 17).to_bytes(8, "little")
    data = tmp_path / "x.tfrecord"
    data.write_bytes(head + ref.mask(ref.crc32c(head)).to_bytes(4, "little") + bytes(30))
    top = 2**63 - 1
    (tmp_path / "x.tfrecord.idx").write_text(f"0 {top}\n{top} 16\n{-top + 14} {top}\n14 28\n")
    with pytest.warns(UserWarning, match="stale or foreign"):
        assert tn.framing.read_index(tmp_path / "x.tfrecord.idx", data) is None


def test_paths_as_glob_directory_and_list(tf_write, tmp_path):
    folder = tmp_path / "shards"
    folder.mkdir()
    counts = {"b-1.tfrecord": 3, "a-0.tfrecord": 2, "c-2.tfrecord": 0}
    for name, n in counts.items():
        tf_write(folder / name, [name.encode() + bytes([i]) for i in range(n)])
    # sidecars are not data files
    tn.framing.write_index(tn.framing.scan_file(folder / "a-0.tfrecord"))
    (folder / ".hidden.tmp").write_bytes(b"junk")  # nor are hidden files
    (folder / "sub").mkdir()
    in_order = [str(folder / n) for n in sorted(counts)]
    expected = [n.encode() + bytes([i]) for n in sorted(counts) for i in range(counts[n])]
    assert tn.framing.expand_paths(folder) == in_order
    assert tn.framing.expand_paths(str(folder / "*.tfrecord")) == in_order
    assert tn.framing.expand_paths([in_order[2], folder / "a-*"]) == [in_order[2], in_order[0]]
    for spec in (folder, str(folder / "*.tfrecord"), in_order, tuple(in_order)):
        assert list(tn.RecordReader(spec)) == expected
        assert tn.count_records(spec) == 5


def test_missing_paths_are_named(tmp_path):
    cases = [
        (tmp_path / "nope.tfrecord", f"no such file: {tmp_path / 'nope.tfrecord'}"),
        (str(tmp_path / "*.tfrecord"), f"no files match {tmp_path / '*.tfrecord'}"),
        (tmp_path, f"directory {tmp_path} holds no files"),
        ([], "the list of paths is empty"),
    ]
    for paths, message in cases:
        with pytest.raises(FileNotFoundError) as e:
            tn.RecordReader(paths)
        assert str(e.value) == message


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_records_straddling_read_chunks(tf_write, tmp_path, ref, compression):
    """~20 MB of records from 0 bytes to 600 kB: frames cross the reader's buffer windows
    at every kind of position, and a header scan seeks over the large payloads."""
    rng = np.random.default_rng(11)
    lengths = np.concatenate(
        [rng.integers(0, 600_000, 30), rng.integers(0, 50, 20_000), [5 << 20, 0, 13]]
    )
    rng.shuffle(lengths)
    blob = rng.integers(0, 256, int(lengths.sum()), dtype=np.uint8).tobytes()
    ends = np.cumsum(lengths).tolist()
    payloads = [blob[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    path = tf_write(tmp_path / "chunks.tfrecord", payloads, compression)
    for n in (1000, 3333):
        _check_batches(tn.RecordReader(path).batches(n), payloads, n)
    index = tn.framing.scan_file(path)
    assert index.offsets.tolist() == ref.starts(lengths.tolist())
    assert index.lengths.tolist() == lengths.tolist()


def test_every_kind_of_record_batch_slices_joins_and_packs_keeping_each_row_s_origin():
    """One payload type: back to back, in frames, or over a pool's buffers; slicing,
    joining, pooling and packing keep each row's bytes and its (file, record)."""
    from tfrecnp.format.payloads import Origins, RecordBatch

    rng = np.random.default_rng(5)
    payloads = [rng.bytes(int(rng.integers(0, 40))) for _ in range(60)]
    a = tn.framing.RecordBatch(
        np.frombuffer(b"".join(payloads[:30]), np.uint8),
        np.cumsum([0, *map(len, payloads[:30])]),
        ((0, "a.tfrecord", 0), (10, "b.tfrecord", 100)),
    )
    framed = b"".join(frame_ref(p) for p in payloads[30:])
    starts = np.cumsum([0, *[len(p) + 16 for p in payloads[30:]]])[:-1] + 12
    ends = starts + [len(p) for p in payloads[30:]]
    b = RecordBatch.spans(
        np.frombuffer(framed, np.uint8),
        starts,
        ends,
        Origins.run("c.tfrecord", 7, 30),
        verified=False,
    )
    want = [("a.tfrecord", i) for i in range(10)] + [("b.tfrecord", 100 + i) for i in range(20)]
    want += [("c.tfrecord", 7 + i) for i in range(30)]
    joined = RecordBatch.concat([a.slice(0, 25), b.slice(0, 10), a.slice(25, 30), b.slice(10, 30)])
    order = [*range(25), *range(30, 40), *range(25, 30), *range(40, 60)]
    assert list(joined) == [payloads[i] for i in order]
    assert [joined.where(r) for r in range(60)] == [want[i] for i in order]
    pooled = RecordBatch.pool(
        [a, b.checked().packed()], np.array([1, 0, 1, 0]), np.array([3, 29, 0, 0])
    )
    assert [pooled[r] for r in range(4)] == [payloads[33], payloads[29], payloads[30], payloads[0]]
    assert [pooled.where(r) for r in range(4)] == [want[33], want[29], want[30], want[0]]
    assert list(pooled.packed()) == [pooled[r] for r in range(4)]
    assert pooled.packed().origins.runs() == pooled.origins.runs()


def test_a_payload_left_in_its_frame_is_checked_before_it_is_used():
    from tfrecnp.format.payloads import Origins, RecordBatch

    framed = bytearray(b"".join(frame_ref(p) for p in [b"good", b"damaged", b"after"]))
    framed[12 + 4 + 4 + 12 + 2] ^= 1  # a bit of "damaged"
    starts = np.array([12, 32, 55])
    batch = RecordBatch.spans(
        np.frombuffer(bytes(framed), np.uint8),
        starts,
        starts + np.array([4, 7, 5]),
        Origins.run("x.tfrecord", 0, 3),
        offset=1000,
        verified=False,
    )
    good, error = batch.verify()
    assert list(good.packed()) == [b"good"]
    assert (error.path, error.record, error.offset) == ("x.tfrecord", 1, 1020)
    with pytest.raises(tn.CorruptRecordError, match=r"x\.tfrecord record 1"):
        batch.packed()


def test_spans_out_of_file_order_name_the_first_damage_in_their_own_order():
    """Rows read by position come in the shuffle's order; their CRCs are checked in the
    buffer's order, and damage is named as the rows come."""
    from tfrecnp.format.payloads import Origins, RecordBatch

    payloads = [bytes([k]) * (100 + k) for k in range(6)]
    framed = bytearray(b"".join(frame_ref(p) for p in payloads))
    starts = np.cumsum([0] + [len(p) + 16 for p in payloads[:-1]]) + 12
    framed[starts[1] + 5] ^= 1
    framed[starts[3] + 5] ^= 1
    order = np.array([5, 4, 3, 2, 1, 0])  # record 3 (row 2) comes before record 1 (row 4)
    lengths = np.array([len(p) for p in payloads])
    data = np.frombuffer(bytes(framed), np.uint8)

    def batch(rows):
        return RecordBatch.spans(
            data,
            starts[rows],
            starts[rows] + lengths[rows],
            Origins.run("x.tfrecord", 0, 6).take(rows),
            verified=False,
        )

    good, error = batch(order).verify()
    assert list(good.packed()) == [payloads[5], payloads[4]]
    assert (error.path, error.record) == ("x.tfrecord", 3)
    sound = order[[0, 1, 3, 5]]
    good, error = batch(sound).verify()
    assert error is None and good.verified
    assert list(good.packed()) == [payloads[k] for k in sound]
