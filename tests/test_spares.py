"""Read buffers reused across passes: never while a consumer still holds any view of one."""

import threading
import weakref

import numpy as np
import pytest

import tfrecnp as tn
from tfrecnp._util.spares import Spares


def test_a_lent_buffer_comes_back_only_when_nothing_refers_to_it():
    spares = Spares()
    buf = np.zeros(1000, np.uint8)
    spares.lend(buf)
    view = buf[10:20]
    del buf
    assert spares.take(900) is None  # a view keeps it
    del view
    got = spares.take(900)
    assert got is not None and len(got) == 1000
    assert spares.take(900) is None  # taken: no longer listed


def test_free_buffers_too_small_are_let_go():
    spares = Spares()
    for size in (100, 1000, 100_000, 10_000):
        spares.lend(np.zeros(size, np.uint8))
    assert len(spares.take(3000)) == 10_000  # 100 and 1000 bytes: too small, let go
    assert [len(b) for b in spares._buffers] == [100_000]  # kept for larger requests
    assert spares.take(10) is None


def test_past_the_limit_the_oldest_free_buffer_goes():
    spares = Spares(limit=2)
    held = np.zeros(10, np.uint8)
    spares.lend(held)
    spares.lend(np.zeros(100, np.uint8))
    spares.lend(np.zeros(1000, np.uint8))  # the 100-byte one (the oldest free) is let go
    assert [len(b) for b in spares._buffers] == [10, 1000]
    assert len(spares.take(1000)) == 1000
    spares.clear()
    del held


def test_a_pass_never_writes_into_payloads_a_consumer_still_holds(tmp_path):
    path = tmp_path / "r.tfrecord"
    payloads = [bytes([i % 251]) * (1000 + i) for i in range(600)]
    with tn.RecordWriter(path) as w:
        for p in payloads:
            w.write(p)
    spares = Spares()
    held = list(tn.RecordReader(path, spares=spares).batches(100))  # views of lent buffers
    assert spares._buffers
    for _ in range(3):  # the next passes take only what nobody holds
        again = [p for b in tn.RecordReader(path, spares=spares).batches(100) for p in b]
        assert again == payloads
    assert [p for b in held for p in b] == payloads
    del held
    taken = spares.take(50_000)
    assert taken is not None  # once dropped, the buffers come back


@pytest.mark.parametrize("width", [512, 1536])
def test_a_second_pass_leaves_the_batches_of_the_first_intact(tmp_path, width):
    # 2 KiB records: several read buffers; 6 KiB: big records, read a piece at a time into
    # piece buffers, and decoded columns of 1 MiB and more come from spares too
    rng = np.random.default_rng(0)
    data = rng.random((3000, width), dtype=np.float32)
    tags = tn.BytesColumn.from_list([row[:100].tobytes() for row in data])
    path = tmp_path / "x.tfrecord"
    tn.write(path, {"x": data, "i": np.arange(3000), "tag": tags})
    spec = {"x": tn.FixedLen((width,), "float32"), "i": tn.FixedLen((), "int64"), "tag": tn.Bytes()}
    ds = tn.open(path, spec)
    for shuffle in (False, 500):
        first = list(ds.batches(64, shuffle=shuffle, seed=1))  # held while the next runs
        kept = [{k: np.array(v) for k, v in b.items()} for b in first]
        lent = ds._files.spares._buffers or ds.source.decoder._spares._buffers
        assert lent  # the pass lent its read buffers (and its decoded outputs)
        second = list(ds.batches(64, shuffle=shuffle, seed=1))
        for a, b, c in zip(first, kept, second, strict=True):
            for name in a:
                assert np.array_equal(a[name], b[name])  # not written over by the second pass
                assert np.array_equal(a[name], c[name])
            assert a["tag"].to_list() == [x[:100].tobytes() for x in b["x"]]
        assert np.array_equal(
            np.concatenate([b["x"] for b in kept])[
                np.argsort(np.concatenate([b["i"] for b in kept]))
            ],
            data,
        )
        del first, second
        assert sum(1 for _ in ds.batches(64, shuffle=shuffle, seed=1)) == 47
    ds.close()
    assert not ds._files.spares._buffers


def test_decoded_batches_a_caller_holds_are_never_written_again(tmp_path):
    from tfrecnp.example.decode import Decoder

    rng = np.random.default_rng(0)
    decoder = Decoder({"t": tn.FixedLen((64, 64), "float32")})  # outputs of 1.6 MiB
    held = []
    for k in range(6):
        x = rng.random((100, 64, 64), dtype=np.float32)
        tn.write(tmp_path / f"{k}.tfrecord", {"t": x}, progress=False)
        records = next(tn.RecordReader(tmp_path / f"{k}.tfrecord").batches(100))
        held.append((decoder.decode(records)["t"], x))  # held by the caller
        for _ in range(2):
            decoder.decode(records)  # dropped at once: its pages serve the next decode
    assert decoder._spares._buffers
    for out, x in held:
        assert np.array_equal(out, x)


def test_ragged_values_of_varying_size_reuse_the_last_blocks_pages(tmp_path):
    from tfrecnp.example.decode import Decoder

    rng = np.random.default_rng(1)
    decoder = Decoder({"v": tn.VarLen("int64")})
    blocks = []
    for k in range(4):  # values of 1.2-1.3 MiB, a little more or less each block
        lengths = rng.integers(0, 2 * (150 + 5 * k), 1000)
        values = rng.integers(-(2**40), 2**40, int(lengths.sum()))
        tn.write(tmp_path / f"{k}.tfrecord", {"v": tn.Ragged.from_lengths(values, lengths)})
        blocks.append((next(tn.RecordReader(tmp_path / f"{k}.tfrecord").batches(1000)), values))
    held = decoder.decode(blocks[0][0])["v"]  # held by the caller: never written again
    buffer = weakref.ref(decoder.decode(blocks[1][0])["v"].values.base)  # dropped at once
    for records, values in blocks[2:]:
        got = decoder.decode(records)["v"].values
        assert np.array_equal(got, values)
        assert got.base is buffer()  # the buffer of the block before, kept and reused
        del got
    assert np.array_equal(held.values, blocks[0][1])


def test_a_decode_in_a_new_thread_reuses_the_scan_table_of_one_done(tmp_path):
    """Each pass decodes in threads of its own: a table kept per thread would be fresh
    memory (a page fault per 4 KiB) for every pass's first blocks."""
    from tfrecnp.example.decode import Decoder

    x = np.arange(50_000, dtype=np.int64)
    tn.write(tmp_path / "t.tfrecord", {"x": x, "y": x * 2}, progress=False)
    records = next(tn.RecordReader(tmp_path / "t.tfrecord").batches(50_000))
    decoder = Decoder({"x": tn.FixedLen((), "int64"), "y": tn.FixedLen((), "int64")})
    tables = []

    def decode() -> None:
        cols = decoder.decode(records, threads=1)
        assert np.array_equal(cols["x"], x) and np.array_equal(cols["y"], 2 * x)
        tables.extend(id(b) for b in decoder._tables._buffers)

    for _ in range(3):
        thread = threading.Thread(target=decode)
        thread.start()
        thread.join()
    assert len(tables) == 3 and len(set(tables)) == 1  # one table, made once


def test_a_decode_whose_helper_has_not_started_holds_no_buffer(tmp_path):
    # found in CI: a helper thread that had not started when the decode returned still
    # held the decode's work, and so its outputs: their pages were not reused
    from tfrecnp._util import threads

    pool = threads.executor()
    release = threading.Event()
    blockers = [pool.submit(release.wait) for _ in range(pool._max_workers)]
    try:
        buffer = np.zeros(1 << 20, np.uint8)
        seen = weakref.ref(buffer)

        def piece(k: int, data: np.ndarray = buffer) -> int:
            return int(data[k])

        assert threads.run_parallel(piece, 4, 2) == [0, 0, 0, 0]  # every piece done here
        del piece, buffer
        assert seen() is None  # the helper, still queued, refers to none of it
    finally:
        release.set()
        for b in blockers:
            b.result()
