"""GZIP / ZLIB shards read by position (issue 26): through inflate checkpoints kept in a
`.zran.idx` sidecar (the gzip extra), every random-access door gives what it gives on the
same records uncompressed. The shards are written by TensorFlow; each record's values are
known from its number, and TensorFlow's own reader checks the shard holds them."""

from __future__ import annotations

import gzip
import os
import pickle
import subprocess
import sys
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import tfrecnp as tn
from tfrecnp.cli import main
from tfrecnp.format import inflate_index

tf = pytest.importorskip("tensorflow")  # installed by the test extra: this runs in CI

N = 3000
SPEC = {
    "id": tn.FixedLen((), "int64"),
    "x": tn.FixedLen((3,), "float32"),
    "tokens": tn.VarLen("int64"),
    "name": tn.FixedLen((), "bytes"),
}


def values(i: int) -> dict:
    return {
        "id": i,
        "x": [float(i), i + 0.5, -float(i)],
        "tokens": [7 * i + k for k in range(i % 4)],
        "name": b"r%05d" % i + b"." * (i % 200),  # records of 30-250 bytes
    }


def example(i: int) -> bytes:
    v = values(i)
    feature = {
        "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[v["id"]])),
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=v["x"])),
        "tokens": tf.train.Feature(int64_list=tf.train.Int64List(value=v["tokens"])),
        "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[v["name"]])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_tf(path, numbers, compression: str = "") -> str:
    with tf.io.TFRecordWriter(str(path), options=compression or None) as w:
        for i in numbers:
            w.write(example(i))
    return str(path)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """{"plain" | "GZIP" | "ZLIB": [two shards of records 0..N-1]}."""
    root = tmp_path_factory.mktemp("compressed")
    halves = (range(0, N // 2), range(N // 2, N))
    out = {}
    for kind, ext in (("plain", ""), ("GZIP", ".gz"), ("ZLIB", ".zz")):
        folder = root / kind
        folder.mkdir()
        comp = "" if kind == "plain" else kind
        out[kind] = [
            write_tf(folder / f"s{k}.tfrecord{ext}", h, comp) for k, h in enumerate(halves)
        ]
    return out


def expect(ids) -> dict[str, list]:
    rows = [values(int(i)) for i in ids]
    return {name: [r[name] for r in rows] for name in SPEC}


def as_lists(batch) -> dict[str, list]:
    out = {}
    for name, col in batch.items():
        if isinstance(col, tn.Ragged):
            out[name] = [np.asarray(v).tolist() for v in col.to_list()]
        elif name == "name":
            out[name] = [bytes(v) for v in col]
        else:
            out[name] = np.asarray(col).tolist()
    return out


def one(record) -> dict:
    return {
        "id": int(record["id"]),
        "x": np.asarray(record["x"]).tolist(),
        "tokens": np.asarray(record["tokens"]).tolist(),
        "name": bytes(record["name"]),
    }


@pytest.fixture(params=["GZIP", "ZLIB"])
def kind(request):
    return request.param


def test_tensorflow_reads_the_shards_as_written(shards, kind):
    got = tf.data.TFRecordDataset(shards[kind][1], compression_type=kind)
    first = tf.train.Example.FromString(next(iter(got)).numpy())
    assert first.features.feature["id"].int64_list.value[0] == N // 2


def test_positioned_reads_equal_the_plain_shards(shards, kind):
    plain, packed = tn.open(shards["plain"], SPEC), tn.open(shards[kind], SPEC)
    assert len(packed) == len(plain) == N
    ids = np.random.default_rng(1).integers(0, N, 300)
    for i in ids[:100]:  # ds[i]
        assert one(packed[int(i)]) == one(plain[int(i)]) == values(int(i))
    assert as_lists(packed[ids.tolist()]) == as_lists(plain[ids.tolist()]) == expect(ids)
    assert as_lists(packed.__getitems__(ids.tolist()).columns) == expect(ids)
    assert as_lists(packed[N // 2 - 5 : N // 2 + 5]) == expect(range(N // 2 - 5, N // 2 + 5))


def test_a_shuffled_pass_is_the_plain_one(shards, kind):
    plain, packed = tn.open(shards["plain"], SPEC), tn.open(shards[kind], SPEC)
    a = [as_lists(b) for b in plain.batches(256, shuffle=True, seed=4)]
    b = [as_lists(b) for b in packed.batches(256, shuffle=True, seed=4)]
    assert a == b
    ids = [i for batch in b for i in batch["id"]]
    assert sorted(ids) == list(range(N)) and ids != sorted(ids)


def test_threads_read_by_position_at_once(shards, kind):
    ds = tn.open(shards[kind], SPEC)
    ids = np.random.default_rng(2).integers(0, N, (8, 200))
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda row: as_lists(ds[row.tolist()]), ids))
    assert got == [expect(row) for row in ids]


def test_a_pickled_dataset_reads_by_position_in_its_new_process(shards, kind):
    ds = tn.open(shards[kind], SPEC)
    len(ds)
    copy = pickle.loads(pickle.dumps(ds))
    assert one(copy[N - 1]) == values(N - 1)
    script = (
        "import pickle, sys; ds = pickle.load(sys.stdin.buffer); "
        "print(int(ds[7]['id']), int(ds[len(ds) - 2]['id']))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], input=pickle.dumps(ds), capture_output=True, check=True
    )
    assert out.stdout.split() == [b"7", str(N - 2).encode()]


def test_dataloader_workers_read_every_record_once(shards, kind):
    torch = pytest.importorskip("torch")
    loader = torch.utils.data.DataLoader(
        tn.open(shards[kind], SPEC),
        batch_size=64,
        num_workers=2,
        shuffle=True,
        collate_fn=tn.torch_collate(),
    )
    seen = []
    for batch in loader:
        ids = batch["id"].tolist()
        np.testing.assert_array_equal(batch["x"].numpy(), np.array(expect(ids)["x"], np.float32))
        seen += ids
    assert sorted(seen) == list(range(N)) and seen != sorted(seen)


def test_to_torch_shuffled_across_workers_reads_every_record_once(shards, kind):
    torch = pytest.importorskip("torch")
    stream = tn.open(shards[kind], SPEC).to_torch(100, shuffle=True, seed=0)
    seen = []
    for batch in torch.utils.data.DataLoader(stream, batch_size=None, num_workers=2):
        seen += batch["id"].tolist()
    assert sorted(seen) == list(range(N))


def test_grain_workers_read_every_record_once(shards, kind):
    grain = pytest.importorskip("grain.python")
    from absl import flags

    ds = tn.open(shards[kind], {"id": SPEC["id"], "x": SPEC["x"]})  # fixed shapes batch
    flags.FLAGS.mark_as_parsed()
    loader = grain.DataLoader(
        data_source=ds,
        sampler=grain.IndexSampler(
            len(ds), shard_options=grain.NoSharding(), shuffle=True, num_epochs=1, seed=0
        ),
        operations=[grain.Batch(100)],
        worker_count=2,
    )
    seen = []
    for batch in loader:
        np.testing.assert_array_equal(batch["x"], np.array(expect(batch["id"])["x"], np.float32))
        seen += batch["id"].tolist()
    assert sorted(seen) == list(range(N))


# -- the checkpoint sidecar ---------------------------------------------------------------------


def _copy(shards, kind, folder) -> str:
    src = shards[kind][0]
    dst = folder / os.path.basename(src)
    dst.write_bytes(Path(src).read_bytes())
    return str(dst)


def test_the_checkpoints_are_built_once_kept_beside_the_idx_and_small(shards, kind, tmp_path):
    path = _copy(shards, kind, tmp_path)
    sidecar = path + ".zran.idx"
    assert len(tn.open(path, SPEC)) == N // 2
    assert os.path.exists(sidecar)
    assert os.path.getsize(sidecar) <= 0.05 * os.path.getsize(path) + 512
    built = os.stat(sidecar).st_mtime_ns
    ds = tn.open(path, SPEC)
    assert one(ds[11]) == values(11)
    assert os.stat(sidecar).st_mtime_ns == built  # read, checked, not rebuilt


def test_a_sidecar_of_another_file_is_rebuilt_not_trusted(shards, kind, tmp_path):
    path = _copy(shards, kind, tmp_path)
    assert len(tn.open(path, SPEC)) == N // 2  # checkpoints of records 0..N/2-1
    other = write_tf(tmp_path / "other", range(5000, 5400), kind)
    os.replace(other, path)  # the shard is rewritten; the sidecar now describes another file
    ds = tn.open(path, SPEC)
    assert len(ds) == 400
    assert one(ds[399]) == values(5399)
    assert inflate_index.read_checkpoints(path, kind) is not None  # rebuilt for this one


def test_a_garbled_sidecar_is_rebuilt(shards, kind, tmp_path):
    path = _copy(shards, kind, tmp_path)
    sidecar = path + ".zran.idx"
    len(tn.open(path, SPEC))
    data = bytearray(Path(sidecar).read_bytes())
    data[-10:] = b"\x00" * 10
    Path(sidecar).write_bytes(bytes(data))
    assert inflate_index.read_checkpoints(path, kind) is None
    ds = tn.open(path, SPEC)
    assert one(ds[N // 2 - 1]) == values(N // 2 - 1)


def test_the_index_command_writes_both_sidecars_and_they_are_trusted(shards, kind, tmp_path):
    path = _copy(shards, kind, tmp_path)
    assert main(["index", path, "--no-progress"]) == 0
    assert os.path.exists(path + ".idx") and os.path.exists(path + ".zran.idx")
    lines = Path(path + ".idx").read_text().split("\n")
    assert lines[0].split()[0] == "0" and len([x for x in lines if x]) == N // 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a sidecar it ignored would warn
        ds = tn.open(path, SPEC)
        assert len(ds) == N // 2
        assert as_lists(ds[[3, 1400, 2]]) == expect([3, 1400, 2])


def test_gzip_members_one_after_another_read_by_position(tmp_path):
    plain = write_tf(tmp_path / "p.tfrecord", range(900))
    data = Path(plain).read_bytes()
    cut = len(data) // 2
    path = tmp_path / "m.tfrecord.gz"
    path.write_bytes(gzip.compress(data[:cut]) + gzip.compress(data[cut:]))
    ds = tn.open(str(path), SPEC)
    assert ds.source.compressions == ["GZIP"]
    assert as_lists(ds[[899, 0, 450, 451]]) == expect([899, 0, 450, 451])


# -- damage -------------------------------------------------------------------------------------


@pytest.fixture
def truncated(shards, kind, tmp_path):
    """A compressed shard cut short in its compressed bytes: the records before the cut
    decompress; the one the cut falls in, and those after it, do not."""
    src = shards[kind][0]
    data = Path(src).read_bytes()
    path = tmp_path / os.path.basename(src)
    path.write_bytes(data[: len(data) * 2 // 3])
    inflated = zlib.decompressobj(zlib.MAX_WBITS | (16 if kind == "GZIP" else 0))
    return str(path), inflated.decompress(data[: len(data) * 2 // 3])


def _whole_records(stream: bytes) -> int:
    """Records whose frames lie whole in the stream (reference walk: 8-byte length,
    4-byte length CRC, payload, 4-byte payload CRC)."""
    pos = n = 0
    while pos + 12 <= len(stream):
        length = int.from_bytes(stream[pos : pos + 8], "little")
        if pos + 16 + length > len(stream):
            break
        pos += 16 + length
        n += 1
    return n


def test_a_damaged_shard_names_record_and_offset(truncated, kind):
    path, good = truncated
    whole = _whole_records(good)
    ds = tn.open(path, SPEC)
    with pytest.raises(tn.CorruptRecordError) as info:
        len(ds)
    assert info.value.path == path and info.value.record == whole
    assert info.value.offset > 0 and f"record {whole}" in str(info.value)


def test_a_damaged_shard_gives_its_good_records_when_skipping(truncated, kind):
    path, good = truncated
    whole = _whole_records(good)
    with pytest.warns(tn.CorruptRecordWarning):
        ds = tn.open(path, SPEC, on_error="warn")
        assert len(ds) == whole
    ids = [whole - 1, 0, whole // 2]
    assert as_lists(ds[ids]) == expect(ids)
    assert [one(ds[i]) for i in ids] == [values(i) for i in ids]
    got = [i for b in ds.batches(200, shuffle=True, seed=1) for i in as_lists(b)["id"]]
    assert sorted(got) == list(range(whole))


# -- without the extra --------------------------------------------------------------------------


def test_without_the_extra_reads_by_position_say_which_extra_to_install(shards):
    script = (
        "import sys; sys.modules['rapidgzip'] = None\n"  # as if the extra were not installed
        "import tfrecnp as tn\n"
        f"ds = tn.open({shards['GZIP'][0]!r})\n"
        "print(len(ds))\n"
        "try:\n    ds[3]\nexcept tn.RandomAccessError as e:\n    print(e)\n"
        "print(sum(len(b['id']) for b in ds.batches(100)))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    count, message, streamed = out.stdout.strip().split("\n")
    assert count == streamed == str(N // 2)  # a pass still streams
    assert message.startswith("ds[...] reads records by position, which in GZIP-compressed")
    assert "pip install 'tfrecnp[gzip]'" in message


# -- the frame walk of the pass that makes the checkpoints --------------------------------------


def _reference_walk(stream: bytes) -> tuple[list[int], list[int]]:
    offsets, lengths, pos = [], [], 0
    while pos + 16 <= len(stream):
        length = int.from_bytes(stream[pos : pos + 8], "little")
        offsets.append(pos)
        lengths.append(length)
        pos += 16 + length
    return offsets, lengths


@pytest.mark.parametrize("piece", [1, 7, 12, 13, 100, 4096, 1 << 20])
def test_the_frame_walk_finds_every_frame_whatever_the_pieces(shards, piece):
    stream = Path(shards["plain"][0]).read_bytes()
    walk = inflate_index._FrameWalk()
    buf = bytearray(piece)
    for a in range(0, len(stream), piece):
        part = stream[a : a + piece]
        buf[: len(part)] = part
        walk.feed(buf, len(part))
    offsets, lengths = walk.result(len(stream))
    assert (offsets.tolist(), lengths.tolist()) == _reference_walk(stream)
    assert len(offsets) == N // 2


def test_the_frame_walk_gives_up_on_damage_for_the_scan_to_name_it(shards):
    stream = bytearray(Path(shards["plain"][0]).read_bytes())
    cut = inflate_index._FrameWalk()
    cut.feed(stream, len(stream) - 3)
    assert cut.result(len(stream) - 3) is None  # the stream ends inside a frame
    stream[_reference_walk(bytes(stream))[0][50] + 9] ^= 1  # a length CRC byte
    bad = inflate_index._FrameWalk()
    bad.feed(stream, len(stream))
    assert bad.result(len(stream)) is None


class _Terminal:
    """A stderr that says it is a terminal, so the progress line is drawn into it."""

    def __init__(self):
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> None:
        self.text += s

    def flush(self) -> None:
        pass


def test_building_the_checkpoints_of_a_large_shard_says_so(shards, tmp_path, monkeypatch):
    path = _copy(shards, "GZIP", tmp_path)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(inflate_index, "PROGRESS_BYTES", 1)  # every shard counts as large
    assert len(tn.open(path, SPEC)) == N // 2
    assert "checkpoints for reads by position of s0.tfrecord.gz" in terminal.text
    assert terminal.text.endswith("\n")
