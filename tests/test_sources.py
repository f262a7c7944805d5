"""Every source passes the Source contract (tests/source_contract.py), on records written
by independent writers: TFRecord frames by the reference framer in conftest and Examples by
tests/protowire.py; arrays by NumPy, h5py and gzip. Plus the one value shuffle= becomes."""

from __future__ import annotations

import gzip
import itertools
import zlib

import numpy as np
import protowire as pw
import pytest
from conftest import frame_ref
from source_contract import FEATURES, SourceTests, pick, record, records
from tfds_builders import Contract, Shuffled, build, tfds_records

import tfrecnp as tn
from tfrecnp.data.blocks import Block, shuffle_blocks
from tfrecnp.data.dataset import Dataset
from tfrecnp.data.source import Shuffle, Source
from tfrecnp.example.columns import BytesColumn, Ragged

SPEC = {
    "id": tn.FixedLen((), "int64"),
    "x": tn.FixedLen((3,), "float32"),
    "tokens": tn.VarLen("int64"),
    "name": tn.FixedLen((), "bytes"),
}
BIG = 1100  # float32 values per big record: 4.4 KiB, past record_dataset.BIG_RECORD_BYTES


def example(i: int) -> bytes:
    r = record(i)
    return pw.simple_example(
        {
            "id": (pw.INT64, [r["id"]]),
            "x": (pw.FLOAT, r["x"]),
            "tokens": (pw.INT64, r["tokens"]),
            "name": (pw.BYTES, [r["name"]]),
        }
    )


def big_example(i: int) -> bytes:
    data = (np.arange(BIG, dtype=np.float32) + i).tobytes()
    return pw.simple_example({"id": (pw.INT64, [i]), "big": (pw.BYTES, [data])})


def write_frames(path, numbers, make=example, compress=False) -> str:
    """compress: True or "GZIP" (gzip's), "ZLIB" (zlib's), "members" (three gzip members)."""
    data = b"".join(frame_ref(make(i)) for i in numbers)
    if compress in (True, "GZIP"):
        data = gzip.compress(data)
    elif compress == "ZLIB":
        data = zlib.compress(data)
    elif compress == "members":
        third = len(data) // 3
        parts = (data[:third], data[third : 2 * third], data[2 * third :])
        data = b"".join(gzip.compress(p) for p in parts)
    path.write_bytes(data)
    return str(path)


class TestTFRecordFile(SourceTests):
    def make(self, folder):
        path = write_frames(folder / "a.tfrecord", range(300))
        return tn.open(path, SPEC), records(300), [path]


class TestGzipTFRecord(SourceTests):
    """Read by position through inflate checkpoints (the gzip extra: rapidgzip)."""

    def make(self, folder):
        path = write_frames(folder / "a.tfrecord.gz", range(150), compress=True)
        return tn.open(path, SPEC, compression="GZIP"), records(150), [path]


class TestZlibTFRecord(SourceTests):
    def make(self, folder):
        path = write_frames(folder / "a.tfrecord.zz", range(150), compress="ZLIB")
        return tn.open(path, SPEC, compression="ZLIB"), records(150), [path]


class TestGzipMembersTFRecord(SourceTests):
    """Concatenated gzip members (as some writers append), detected, not named."""

    def make(self, folder):
        paths = [
            write_frames(folder / "a.tfrecord.gz", range(100), compress="members"),
            write_frames(folder / "b.tfrecord.gz", range(100, 160), compress=True),
        ]
        return tn.open(paths, SPEC), records(160), paths


class TestShardsWithAnEmptyOne(SourceTests):
    def make(self, folder):
        cuts = [0, 120, 120, 215, 276]  # shard 1 holds no record
        paths = [
            write_frames(folder / f"s-{k}.tfrecord", range(a, b))
            for k, (a, b) in enumerate(itertools.pairwise(cuts))
        ]
        return tn.open(paths, SPEC), records(276), paths


class TestIndexedShards(TestShardsWithAnEmptyOne):
    """Counted before the pass: blocks are read by position, each where it is decoded."""

    def make(self, folder):
        ds, expected, paths = super().make(folder)
        assert len(ds) == 276
        return ds, expected, paths


class TestBigRecords(SourceTests):
    """Records past BIG_RECORD_BYTES: decoded in their frames, pooled where they lie."""

    block = 8
    buffer = 20

    def make(self, folder):
        cuts = [0, 50, 90]
        paths = [
            write_frames(folder / f"big-{k}.tfrecord", range(a, b), make=big_example)
            for k, (a, b) in enumerate(itertools.pairwise(cuts))
        ]
        spec = {"id": tn.FixedLen((), "int64"), "big": tn.Raw("float32", shape=(BIG,))}
        expected = {
            "id": list(range(90)),
            "big": [(np.arange(BIG, dtype=np.float32) + i).tolist() for i in range(90)],
        }
        return tn.open(paths, spec), expected, paths


class TestNpyFile(SourceTests):
    def make(self, folder):
        path = str(folder / "pairs.npy")
        pairs = np.stack([np.arange(200), -np.arange(200)], axis=1)
        np.save(path, pairs)
        return tn.open(path), {"pairs": pairs.tolist()}, [path]


class TestArraysInMemory(SourceTests):
    def make(self, folder):
        expected = records(240)
        columns = {
            "id": np.array(expected["id"], np.int64),
            "x": np.array(expected["x"], np.float32),
            "tokens": Ragged.from_list(expected["tokens"], np.int64),
            "name": BytesColumn.from_list(expected["name"]),
        }
        return tn.open(columns), expected, []


class TestCompressedNpz(SourceTests):
    random_access = False

    def make(self, folder):
        path = str(folder / "a.npz")
        expected = records(130, ("id", "x"))
        np.savez_compressed(path, id=np.array(expected["id"]), x=np.array(expected["x"], "f4"))
        return tn.open(path), expected, [path]


class TestHDF5(SourceTests):
    def make(self, folder):
        h5py = pytest.importorskip("h5py")
        path = str(folder / "a.h5")
        expected = records(260, ("id", "x"))
        with h5py.File(path, "w") as f:  # chunked: blocks align to 24 rows
            f.create_dataset("id", data=np.array(expected["id"]), chunks=(24,))
            f.create_dataset("x", data=np.array(expected["x"], "f4"), chunks=(24, 3))
        return tn.open(path), expected, [path]


class TestSavedFolder(SourceTests):
    def make(self, folder):
        expected = records(210)
        columns = {
            "id": np.array(expected["id"], np.int64),
            "x": np.array(expected["x"], np.float32),
            "tokens": Ragged.from_list(expected["tokens"], np.int64),
            "name": BytesColumn.from_list(expected["name"]),
        }
        path = tn.open(columns).save(str(folder / "saved"), progress=False)
        return tn.open(path), expected, [path]


class TestTfdsFolder(SourceTests):
    """A tensorflow-datasets folder written by TFDS (3 shards, in generation order:
    disable_shuffling), read by its metadata through the record source."""

    def make(self, folder):
        builder = build(Contract, folder, shards=3)
        ds = tn.open(builder.data_dir, split="train")
        return ds, records(Contract.RECORDS), ds.paths


class TestTfdsSlice(SourceTests):
    def make(self, folder):
        builder = build(Contract, folder, shards=3)
        ds = tn.open(builder.data_dir, split="train[10%:90%]")
        return ds, pick(records(Contract.RECORDS), range(30, 270)), ds.paths


class TestTfdsInterleaved(SourceTests):
    """Shuffled by TFDS's writer, read in TFDS's interleaved order (by position)."""

    def make(self, folder):
        builder = build(Shuffled, folder, shards=3)
        ids = [int(r["id"]) for r in tfds_records(builder, "train")]
        ds = tn.open(builder.data_dir, split="train")
        return ds, pick(records(Shuffled.RECORDS), ids), ds.paths


def _arrow_table(expected):
    import pyarrow as pa

    return pa.table(
        {
            "id": pa.array(expected["id"], pa.int64()),
            "x": pa.array(expected["x"], pa.list_(pa.float32(), 3)),
            "tokens": pa.array(expected["tokens"], pa.list_(pa.int64())),
            "name": pa.array(expected["name"], pa.binary()),
        }
    )


class TestParquetParts(SourceTests):
    """A folder of two Parquet part files written by pyarrow, row groups of 45 rows."""

    def make(self, folder):
        import pyarrow.parquet as pq

        expected = records(230)
        table = _arrow_table(expected)
        (folder / "parts").mkdir()
        paths = [str(folder / "parts" / f"part-{k}.parquet") for k in range(2)]
        pq.write_table(table.slice(0, 100), paths[0], row_group_size=45)
        pq.write_table(table.slice(100), paths[1], row_group_size=45)
        return tn.open(str(folder / "parts")), expected, paths


class TestFeatherFile(SourceTests):
    """An Arrow IPC (Feather v2) file written by pyarrow, record batches of 60 rows."""

    def make(self, folder):
        import pyarrow.feather as feather

        expected = records(190)
        path = str(folder / "a.feather")
        feather.write_feather(_arrow_table(expected), path, chunksize=60)
        return tn.open(path), expected, [path]


class Squares(Source):
    """A source written from the contract alone (the runnable example of data/source.py):
    record i is {"id": i, "x": [i, i + 0.5, -i]}, made on demand."""

    def __init__(self, n: int, spec=None):
        self.n = n
        self.spec = spec or {"id": SPEC["id"], "x": SPEC["x"]}

    def count(self):
        return self.n

    def select(self, spec):
        return Squares(self.n, spec)

    def read_ids(self, ids, what):
        ids = np.asarray(ids, np.int64)
        x = np.stack([ids, ids + 0.5, -ids], axis=1).astype(np.float32)
        return {name: col for name, col in {"id": ids, "x": x}.items() if name in self.spec}

    def read_span(self, a, b):
        return self.read_ids(np.arange(a, b), "ds[a:b]")

    def blocks(self, start, stop, block, shuffle, *, threads=None, ahead=0):
        a, b = self.span(start, stop)
        rng = shuffle.rng()
        order = a + rng.permutation(b - a) if shuffle.kind == "all" else np.arange(a, b)
        blocks = (
            Block(self.read_ids(order[k : k + block], "batches()"), len(order[k : k + block]))
            for k in range(0, len(order), block)
        )
        if shuffle.kind == "buffer":
            blocks = shuffle_blocks(blocks, shuffle.size, rng, block)
        yield from blocks

    def mean_record_bytes(self, start, stop):
        return 20.0

    def estimate_nbytes(self, start, stop):
        a, b = self.span(start, stop)
        return 20 * (b - a), 0

    def empty(self):
        return self.read_span(0, 0)


class TestASourceFromTheContractAlone(SourceTests):
    def make(self, folder):
        return Dataset(Squares(170)), records(170, ("id", "x")), []


def test_every_source_of_tn_open_keeps_the_contract(tmp_path):
    path = write_frames(tmp_path / "a.tfrecord", range(3))
    for ds in (tn.open(path, SPEC), tn.open({"id": np.arange(3)})):
        assert isinstance(ds.source, Source)
        assert ds.spec is ds.source.spec


# -- the one value shuffle= becomes ------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "kind", "size"),
    [
        (False, "none", 0),
        (0, "none", 0),
        (np.int64(0), "none", 0),
        (True, "all", 0),
        (1, "buffer", 1),
        (10_000, "buffer", 10_000),
        (np.int32(64), "buffer", 64),
    ],
)
def test_shuffle_is_one_value_from_its_public_spellings(given, kind, size):
    made = Shuffle.of(given, seed=5)
    assert (made.kind, made.size, made.seed) == (kind, size, 5)
    assert type(made.size) is int
    assert Shuffle.of(made) is made  # it travels as it is


@pytest.mark.parametrize("given", [-1, 2.5, "10", None, [3]])
def test_shuffle_refuses_what_is_not_a_shuffle(given):
    with pytest.raises(ValueError, match=r"^shuffle must be False, True or a buffer size >= 0"):
        Shuffle.of(given)


def test_a_seed_gives_one_random_stream_per_pass():
    one, two = Shuffle("buffer", 8, 11).rng(), Shuffle("buffer", 8, 11).rng()
    assert one.permutation(50).tolist() == two.permutation(50).tolist()


def test_the_features_of_the_contract_records_are_the_spec():
    assert tuple(SPEC) == FEATURES


# -- the public doors that replaced private reads from outside data/ ---------------------------


def test_a_source_says_each_file_compression_as_written(tmp_path):
    plain = write_frames(tmp_path / "a.tfrecord", range(4))
    packed = write_frames(tmp_path / "b.tfrecord.gz", range(4, 9), compress=True)
    ds = tn.open([plain, packed], SPEC)
    assert ds.source.compressions == [None, "GZIP"]
    assert ds.source.mean_record_bytes(0, None) > 16  # a frame is 16 bytes past its payload


def test_a_sink_says_whether_a_batch_set_its_columns(tmp_path):
    from tfrecnp.arrays.sinks import ArraySink

    sink = ArraySink(str(tmp_path / "out"), "npy")
    assert not sink.has_columns
    sink.write({"id": np.empty(0, np.int64)})  # no records, but the columns are set
    assert sink.has_columns and sink.records == 0
    sink.close()
    assert tn.load(str(tmp_path / "out"))["id"].shape == (0,)
