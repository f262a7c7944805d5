"""GZIP / ZLIB shards read by position (issue 26): through inflate checkpoints kept in a
`.zran.idx` sidecar (the gzip extra), every random-access door gives what it gives on the
same records uncompressed. The shards are written by TensorFlow; each record's values are
known from its number, and TensorFlow's own reader checks the shard holds them."""

from __future__ import annotations

import contextlib
import gzip
import io
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
from tfrecnp.format.index import read_index

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


def test_views_read_by_position_as_on_the_plain_shards(shards, kind):
    plain, packed = tn.open(shards["plain"], SPEC), tn.open(shards[kind], SPEC)
    views = [
        lambda d: d.shard(3, 1),  # records 1000..1999: across both shards
        lambda d: d.take(1600).shard(2, 1),
        lambda d: d.select(["id", "tokens"]).shard(4, 3),
    ]
    for view in views:
        a, b = view(plain), view(packed)
        assert len(a) == len(b)
        assert [as_lists(x) for x in a.batches(128)] == [as_lists(x) for x in b.batches(128)]
        ids = [0, len(a) - 1, len(a) // 2, 5]
        assert as_lists(a[ids]) == as_lists(b[ids])
        assert as_lists(a[10:300:7]) == as_lists(b[10:300:7])
        assert [int(b[i]["id"]) for i in ids] == [int(a[i]["id"]) for i in ids]
        shuffled = [as_lists(x) for x in a.batches(100, shuffle=True, seed=3)]
        assert shuffled == [as_lists(x) for x in b.batches(100, shuffle=True, seed=3)]
        pooled = [as_lists(x) for x in a.batches(100, shuffle=500, seed=3)]
        assert pooled == [as_lists(x) for x in b.batches(100, shuffle=500, seed=3)]
    fresh = tn.open(shards[kind], SPEC)
    assert as_lists(next(fresh.shard(3, 1).batches(1000))) == expect(range(1000, 2000))
    # read where the view starts, through the checkpoints, not inflated from each file's start
    assert fresh.source.files._inflated


def test_ray_splits_a_large_compressed_file_into_read_tasks(ray_local, shards, kind):
    import tfrecnp.ray as tnray
    from tfrecnp.adapters.ray import TFRecordDatasource
    from tfrecnp.data.record_dataset import read_blocks

    source = TFRecordDatasource(
        shards[kind],
        SPEC,
        compression=kind,
        verify_crc=True,
        on_error="raise",
        read_part=read_blocks,
        task_bytes=20_000,
    )
    tasks = source.get_read_tasks(4)
    assert len(tasks) > 2 * len(shards[kind])
    assert sum(t.metadata.num_rows for t in tasks) == N
    got = tnray.read(shards[kind], SPEC, task_bytes=20_000)
    got = got.take_batch(10**9, batch_format="numpy")
    want = tn.open(shards["plain"], SPEC).to_numpy()
    np.testing.assert_array_equal(got["id"], np.arange(N))
    np.testing.assert_array_equal(got["x"], want["x"])
    assert [bytes(v) for v in got["name"]] == [bytes(v) for v in want["name"]]


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
    # the frames walked in the same pass are kept too: the next open inflates nothing
    stream = zlib.decompress(
        Path(path).read_bytes(), zlib.MAX_WBITS | (16 if kind == "GZIP" else 0)
    )
    offsets, lengths = _reference_walk(stream)
    lines = [f"{o} {n + 16}" for o, n in zip(offsets, lengths, strict=True)]
    assert Path(path + ".idx").read_text().split("\n")[:-1] == lines
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


def test_the_walk_writes_the_idx_while_the_shard_inflates(shards, kind, tmp_path):
    """The pass that makes the checkpoints writes the `.idx` as it walks the
    frames: the lines of the reference walk, in place once the checkpoints are, trusted."""
    path = _copy(shards, kind, tmp_path)
    cp, walked = inflate_index.checkpoints_and_frames(path, kind)
    assert cp.stored and walked is not None
    stream = zlib.decompress(
        Path(path).read_bytes(), zlib.MAX_WBITS | (16 if kind == "GZIP" else 0)
    )
    offsets, lengths = _reference_walk(stream)
    lines = [f"{o} {n + 16}" for o, n in zip(offsets, lengths, strict=True)]
    assert Path(path + ".idx").read_text().split("\n")[:-1] == lines
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        os.path.basename(path) + s for s in ("", ".idx", ".zran.idx")
    )  # no hidden file left behind
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an .idx it ignored would warn
        found = read_index(path + ".idx", path)
    assert found is not None and found.offsets.tolist() == offsets


def test_the_walk_writes_no_idx_through_damage_nor_unless_writing(shards, truncated, kind):
    path, _ = truncated
    cp, walked = inflate_index.checkpoints_and_frames(path, kind)
    assert walked is None and not cp.stored
    folder = os.path.dirname(path)
    assert os.listdir(folder) == [os.path.basename(path)]  # no .idx, no hidden file
    (Path(folder) / "whole").mkdir()
    whole = _copy(shards, kind, Path(folder) / "whole")
    inflate_index.checkpoints_and_frames(whole, kind, write=False)
    assert not os.path.exists(whole + ".idx") and not os.path.exists(whole + ".zran.idx")


def test_reads_across_many_checkpoints_equal_the_records(tmp_path, monkeypatch):
    """Checkpoints a few KiB apart (the shards above have one): reads by position that
    start, end and cross between them, in any order and from threads at once."""
    monkeypatch.setattr(inflate_index, "SPACING", 64 << 10)
    count = 3000

    def blob(i: int) -> bytes:  # does not compress: about 1.2 MB of deflate stream
        return np.random.default_rng(i).bytes(300 + i % 200)

    path = str(tmp_path / "many.tfrecord.gz")
    with tf.io.TFRecordWriter(path, options="GZIP") as w:
        for i in range(count):
            feature = {
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                "blob": tf.train.Feature(bytes_list=tf.train.BytesList(value=[blob(i)])),
            }
            w.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )
    spec = {"id": tn.FixedLen((), "int64"), "blob": tn.Bytes()}
    ds = tn.open(path, spec)
    assert len(ds) == count
    assert len(inflate_index.read_checkpoints(path, "GZIP").starts) > 10
    order = np.random.default_rng(0).permutation(count).tolist()
    fresh = tn.open(path, spec)  # nothing inflated yet: every span decoded on demand
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: fresh[i], order))
    assert [int(r["id"]) for r in got] == order
    assert all(bytes(r["blob"]) == blob(i) for r, i in zip(got, order, strict=True))
    batch = tn.open(path, spec)[order[:500]]
    assert np.asarray(batch["id"]).tolist() == order[:500]
    seen = [i for b in ds.batches(256, shuffle=True, seed=3) for i in np.asarray(b["id"])]
    assert sorted(seen) == list(range(count))


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


def _flipped(tmp_path, kind: str, where: float) -> tuple[str, int]:
    """A shard with one byte of its deflate stream flipped, `where` of the way in, and the
    records TensorFlow reads from it before it fails. Records are serialized
    deterministically, so the flip lands on the same bytes in every run."""
    path = str(tmp_path / f"flipped.tfrecord.{kind.lower()}")
    with tf.io.TFRecordWriter(path, options=kind) as w:
        for i in range(N):
            w.write(tf.train.Example.FromString(example(i)).SerializeToString(deterministic=True))
    data = bytearray(Path(path).read_bytes())
    data[int(len(data) * where)] ^= 0x55
    Path(path).write_bytes(bytes(data))
    good = 0
    with pytest.raises(tf.errors.DataLossError):  # TensorFlow stops at the damage
        for _ in tf.data.TFRecordDataset(path, compression_type=kind):
            good += 1
    return path, good


@pytest.mark.parametrize("where", [0.3, 0.5, 0.7])
def test_a_flipped_byte_is_named_where_tensorflow_stops(tmp_path, kind, where):
    path, good = _flipped(tmp_path, kind, where)
    with pytest.raises(tn.CorruptRecordError) as counted:
        len(tn.open(path, SPEC))
    assert counted.value.path == path and counted.value.offset > 0
    assert f"record {counted.value.record}" in str(counted.value)
    seen = []
    with pytest.raises(tn.CorruptRecordError) as passed:
        for batch in tn.open(path, SPEC).batches(100):
            seen += batch["id"].tolist()
    assert passed.value.path == path and passed.value.record == good
    assert f"record {good} (byte " in str(passed.value)
    assert seen == list(range(good // 100 * 100))  # every whole batch before the damage


@pytest.mark.parametrize("where", [0.3, 0.5, 0.7])
def test_a_damaged_shard_reads_by_position_up_to_its_damage(shards, tmp_path, kind, where):
    """ds[j] / ds[[...]] before the damage give the records, as on a plain file; at and
    past it, the damage (the count, and so negative positions, cannot be had)."""
    path, good = _flipped(tmp_path, kind, where)
    ds = tn.open(path, SPEC)
    ids = [*range(0, good, 37), good - 1]
    assert as_lists(ds[ids]) == expect(ids)
    assert [one(ds[i]) for i in ids[::5]] == [values(i) for i in ids[::5]]
    plain = tn.open(shards["plain"], SPEC)
    assert as_lists(ds[ids]) == as_lists(plain[ids])  # equal to the same records plain
    with pytest.raises(tn.CorruptRecordError) as error:
        ds[good]  # where TensorFlow stops: the record's own damage
    assert (error.value.path, error.value.record) == (path, good)
    for past in (N - 1, -1):  # past the stream's damage (its frames may walk past good)
        with pytest.raises(tn.CorruptRecordError) as error:
            ds[past]
        assert error.value.path == path and error.value.record >= good
    with pytest.raises(tn.CorruptRecordError):
        ds[[0, N - 1]]
    with pytest.raises(tn.CorruptRecordError):
        len(ds)
    assert not ds._files.indexed  # a pass does not read by position through a cut index


@pytest.mark.parametrize("where", [0.3, 0.5, 0.7])
def test_a_flipped_byte_skipped_by_position_as_streamed(tmp_path, kind, where):
    path, good = _flipped(tmp_path, kind, where)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tn.CorruptRecordWarning)
        ds = tn.open(path, SPEC, on_error="skip")
        streamed = [as_lists(b) for b in ds.batches(100)]
        ids = [i for b in streamed for i in b["id"]]
        assert ids[:good] == list(range(good))  # all TensorFlow reads, and perhaps more
        assert {k: [v for b in streamed for v in b[k]] for k in SPEC} == expect(ids)
        by_position = ds[list(range(len(ds)))]
        assert as_lists(by_position) == expect(ids)
        shuffled = [i for b in ds.batches(64, shuffle=True, seed=2) for i in as_lists(b)["id"]]
        assert sorted(shuffled) == ids
    assert ds.corruptions and all(c.path == path for c in ds.corruptions)


def _delivered(data: bytes, kind: str, module) -> bytes:
    """What a pass's DecompressingReader delivers from data before it fails."""
    from tfrecnp.format.compression import DecompressingReader

    reader = DecompressingReader(io.BytesIO(data), kind, module=module)
    out, buf = bytearray(), bytearray(1 << 16)
    with contextlib.suppress(EOFError, zlib.error):
        while n := reader.readinto(buf):
            out += buf[:n]
    return bytes(out)


def test_igzip_delivers_what_zlib_does_up_to_the_damage(shards, kind):
    # igzip holds back a varying number of the bytes before damage: there the reader
    # starts over with zlib, so a pass's records before the damage do not depend on it
    isal_zlib = pytest.importorskip("isal.isal_zlib")  # the gzip extra: installed in CI
    data = Path(shards[kind][0]).read_bytes()
    whole = zlib.decompress(data, zlib.MAX_WBITS | (16 if kind == "GZIP" else 0))
    for cut in np.linspace(50, len(data) - 1, 25).astype(int):
        cut_short = data[:cut]
        flipped = bytearray(data)
        flipped[cut] ^= 0x55
        for damaged in (cut_short, bytes(flipped)):
            got = _delivered(damaged, kind, isal_zlib)
            assert got == _delivered(damaged, kind, zlib)
        assert whole.startswith(_delivered(cut_short, kind, isal_zlib))  # up to the cut
    assert _delivered(data, kind, isal_zlib) == whole


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
