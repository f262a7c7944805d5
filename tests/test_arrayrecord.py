"""ArrayRecord files read natively: the chunks of files array-record's own writer made, with
every option string it takes, against array-record's reader (bytes) and TensorFlow's
parse_example (values); damage and truncation typed; the source contract."""

from __future__ import annotations

import os

import numpy as np
import protowire as pw
import pytest
from source_contract import SourceTests, record, records

import tfrecnp as tn
from tfrecnp._core import riegeli
from tfrecnp._util.threads import CPUS
from tfrecnp.format import arrayrecord as far
from tfrecnp.format.arrayrecord import ArrayRecordFile
from tfrecnp.format.riegeli import SIGNATURE, riegeli_hash

arm = pytest.importorskip("array_record.python.array_record_module")
ards = pytest.importorskip("array_record.python.array_record_data_source")

OPTIONS = [
    "group_size:1",
    "group_size:65536",
    "zstd:3",
    "brotli:6",
    "snappy",
    "uncompressed",
    "group_size:100,snappy",
    "group_size:100,brotli:6",
    "group_size:7,uncompressed",
]


def write_ar(path, records, options: str) -> str:
    w = arm.ArrayRecordWriter(str(path), options)
    for r in records:
        w.write(r)
    w.close()
    return str(path)


def read_ar(path) -> list[bytes]:
    r = arm.ArrayRecordReader(str(path))
    try:
        return list(r.read_all())
    finally:
        r.close()


@pytest.fixture(scope="module")
def payloads():
    rng = np.random.default_rng(0)
    recs = [bytes(rng.integers(0, 256, int(rng.integers(0, 300)), np.uint8)) for _ in range(700)]
    recs[5] = b""
    recs[6] = b""
    recs[300] = bytes(rng.integers(0, 4, 5 << 20, np.uint8))  # a 5 MiB record
    return recs


# --- the hash and the chunks ---------------------------------------------------------------


def test_hash_of_the_fixed_signature():
    u64 = lambda b: int.from_bytes(b, "little")  # noqa: E731
    assert riegeli_hash(SIGNATURE[8:24]) == u64(SIGNATURE[0:8])  # block header
    assert riegeli_hash(SIGNATURE[32:64]) == u64(SIGNATURE[24:32])  # chunk header
    assert riegeli_hash(b"") == u64(SIGNATURE[40:48])  # data_hash of no data


@pytest.mark.parametrize("options", OPTIONS)
def test_every_chunk_reads_as_array_record_reads_it(tmp_path, payloads, options):
    path = write_ar(tmp_path / "x.array_record", payloads, options)
    f = ArrayRecordFile(path)
    got = []
    for batch, error in f.read_chunks(0, len(f.footer.offsets)):
        assert error is None
        got += list(batch)
    assert got == read_ar(path) == payloads
    assert f.footer.records == len(payloads)
    group = int(options.split("group_size:")[1].split(",")[0]) if "group_size" in options else 1
    assert f.footer.group_size == min(group, len(payloads))


def test_transposed_chunks_are_refused_by_name(tmp_path, payloads):
    path = write_ar(tmp_path / "t.array_record", payloads[:50], "transpose:true")
    f = ArrayRecordFile(path)
    with pytest.raises(tn.SchemaError, match=r"transposed chunks .*transpose:true"):
        f.read_chunks(0, 1)
    with pytest.raises(tn.SchemaError, match="transposed"):
        tn.open(path, spec={"x": tn.VarLen("int64")})[0]


def _flip(path, at: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(at)
        b = fh.read(1)
        fh.seek(at)
        fh.write(bytes([b[0] ^ 0x40]))


@pytest.mark.parametrize("where", ["header", "data"])
def test_a_damaged_chunk_is_named(tmp_path, payloads, where):
    path = write_ar(tmp_path / "d.array_record", payloads[:40], "group_size:10,uncompressed")
    f = ArrayRecordFile(path)
    at = int(f.footer.offsets[2])
    _flip(path, at + (3 if where == "header" else 60))
    results = ArrayRecordFile(path).read_chunks(0, 4)
    assert [e is None for _, e in results] == [True, True, False, True]
    error = results[2][1]
    assert isinstance(error, tn.CorruptRecordError)
    assert error.path == path and error.offset == at and error.record == 20
    assert "chunk 2" in str(error) and "records 20..29" in str(error)
    assert ("header hash" if where == "header" else "data hash") in str(error)


def test_a_truncated_file_is_named(tmp_path, payloads):
    path = write_ar(tmp_path / "c.array_record", payloads[:40], "uncompressed")
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:
        fh.truncate(size - 100)
    with pytest.raises(tn.CorruptRecordError, match=r"c\.array_record"):
        _ = ArrayRecordFile(path).footer
    with open(path, "r+b") as fh:
        fh.truncate(1000)
    with pytest.raises(tn.CorruptRecordError, match="at least 64 KiB"):
        _ = ArrayRecordFile(path).footer


# --- Examples, through the Dataset ----------------------------------------------------------

SPEC = {
    "id": tn.FixedLen((), "int64"),
    "x": tn.FixedLen((3,), "float32"),
    "tokens": tn.VarLen("int64"),
    "name": tn.FixedLen((), "bytes"),
}


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


class TestGroupSize1(SourceTests):
    def make(self, folder):
        path = write_ar(folder / "a.array_record", map(example, range(300)), "group_size:1")
        return tn.open(path, SPEC), records(300), [path]


class TestGroupSize65536(SourceTests):
    def make(self, folder):
        path = write_ar(folder / "a.array_record", map(example, range(300)), "group_size:65536")
        return tn.open(path, SPEC), records(300), [path]


class TestShardsOfSnappyGroups(SourceTests):
    """A folder of three shards (one empty), chunks of 16 records, snappy."""

    def make(self, folder):
        paths = []
        for k, numbers in enumerate([range(0, 130), range(130, 130), range(130, 250)]):
            name = folder / f"ds-train.array_record-{k:05d}-of-00003"
            paths.append(write_ar(name, map(example, numbers), "group_size:16,snappy"))
        return tn.open(str(folder), SPEC), records(250), paths


def parse_with_tf(payloads: list[bytes]) -> dict:
    tf = pytest.importorskip("tensorflow")
    features = {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "x": tf.io.FixedLenFeature([3], tf.float32),
        "tokens": tf.io.VarLenFeature(tf.int64),
        "name": tf.io.FixedLenFeature([], tf.string),
    }
    parsed = tf.io.parse_example(tf.constant(payloads), features)
    tokens = tf.sparse.to_dense(parsed["tokens"], default_value=-1).numpy()
    return {
        "id": parsed["id"].numpy(),
        "x": parsed["x"].numpy(),
        "tokens": [row[row >= 0].tolist() for row in tokens],
        "name": parsed["name"].numpy().tolist(),
    }


@pytest.mark.parametrize("options", OPTIONS)
def test_values_equal_array_record_and_parse_example(tmp_path, options):
    path = write_ar(tmp_path / "e.array_record", map(example, range(500)), options)
    want = parse_with_tf(read_ar(path))
    ds = tn.open(path)  # spec inferred
    assert len(ds) == 500
    got = ds.to_numpy()
    np.testing.assert_array_equal(got["id"], want["id"])
    np.testing.assert_array_equal(got["x"], want["x"])
    assert [list(r) for r in got["tokens"].to_list()] == want["tokens"]
    assert [n.encode() for n in got["name"]] == want["name"]
    # ds[i], ds[list], batches(shuffle=...) agree with the reader's records
    reader = ards.ArrayRecordDataSource([path])
    for i in (0, 7, 499, 250):
        assert ds[i]["id"] == want["id"][i]
    ids = [499, 3, 3, 250, 0]
    np.testing.assert_array_equal(ds[ids]["id"], want["id"][ids])
    assert parse_with_tf(reader.__getitems__(ids))["id"].tolist() == ids
    for shuffle in (False, 64, True):
        seen = np.concatenate([b["id"] for b in ds.batches(32, shuffle=shuffle, seed=3)])
        assert sorted(seen.tolist()) == list(range(500))


def test_dataset_doors(tmp_path):
    path = write_ar(tmp_path / "d.array_record", map(example, range(200)), "group_size:8")
    ds = tn.open(path, SPEC)
    assert len(ds.shard(4, 1)) == 50
    assert ds.shard(4, 1)[0]["id"] == 50
    assert [r["id"] for r in ds.__getitems__([5, 1])] == [5, 1]
    out = ds.save(str(tmp_path / "out"), format="npy", progress=False)
    assert tn.load(out)["id"].tolist() == list(range(200))
    pytest.importorskip("pyarrow")
    assert ds.to_arrow().column("id").to_pylist() == list(range(200))
    torch = pytest.importorskip("torch")
    batches = list(ds.to_torch(batch_size=64, shuffle=False))
    assert torch.cat([b["id"] for b in batches]).tolist() == list(range(200))


def test_glob_and_list_of_shards(tmp_path):
    a = write_ar(tmp_path / "s-0.array_record", map(example, range(10)), "group_size:1")
    b = write_ar(tmp_path / "s-1.array_record", map(example, range(10, 25)), "group_size:4")
    assert tn.open([a, b], SPEC)[:]["id"].tolist() == list(range(25))
    assert tn.open(str(tmp_path / "s-*.array_record"), SPEC)[:]["id"].tolist() == list(range(25))


def test_on_error_skip_leaves_out_a_damaged_chunk(tmp_path):
    path = write_ar(tmp_path / "d.array_record", map(example, range(40)), "group_size:10")
    at = int(ArrayRecordFile(path).footer.offsets[1])
    _flip(path, at + 50)
    with pytest.raises(
        tn.CorruptRecordError, match=r"chunk 1 at byte \d+, holding records 10\.\.19"
    ):
        tn.open(path, SPEC).to_numpy()
    ds = tn.open(path, SPEC, on_error="skip")
    ids = np.concatenate([b["id"] for b in ds.batches(8)])
    assert ids.tolist() == [*range(10), *range(20, 40)]
    assert [e.record for e in ds.corruptions] == [10]
    assert ds.corruptions[0].offset == at


def test_truncated_file_through_open(tmp_path):
    path = write_ar(tmp_path / "t.array_record", map(example, range(40)), "group_size:1")
    with open(path, "r+b") as fh:
        fh.truncate(os.path.getsize(path) // 2)
    with pytest.raises(tn.CorruptRecordError, match=r"t\.array_record"):
        tn.open(path, SPEC)


# --- TFDS folders prepared with file_format="array_record" ---------------------------------

tfds = pytest.importorskip("tensorflow_datasets")
import tfds_builders as tb  # noqa: E402
from test_tfds import LEFT, assert_same, open_quiet  # noqa: E402


def build_ar(cls, data_dir, shards: int | None = None):
    """The builder after TFDS prepared it under data_dir as ArrayRecord shards."""
    builder = cls(data_dir=str(data_dir))
    config = tfds.download.DownloadConfig(num_shards=shards) if shards else None
    builder.download_and_prepare(file_format="array_record", download_config=config)
    return builder


KEPT = {"deep": tn.Bytes(), "jpeg": tn.Bytes()}


def data_source_records(builder, split: str) -> list[dict]:
    """Every record of the split as builder.as_data_source gives it, flattened."""
    # both keep the bytes of uint16 PNGs (TFDS's NumPy decoding needs OpenCV for them) and
    # of JPEGs (it decodes them with PIL, tfrecnp as TensorFlow does: pixels differ by 1-5)
    skip = tfds.decode.SkipDecoding()
    source = builder.as_data_source(split, decoders={"deep": skip, "jpeg": skip})
    return [tb.flat(source[i]) for i in range(len(source))]


@pytest.fixture(scope="module")
def kinds_ar(tmp_path_factory):
    return build_ar(tb.Kinds, tmp_path_factory.mktemp("tfds_ar"), shards=3)


@pytest.mark.parametrize("split", ["train", "test", "train[:10%]", "train[5:30]+test"])
def test_tfds_array_record_folder_equals_as_data_source(kinds_ar, split):
    assert any(".array_record-" in p for p in os.listdir(kinds_ar.data_dir))
    want = data_source_records(kinds_ar, split)
    ds = open_quiet(kinds_ar.data_dir, split=split, spec=KEPT)
    assert len(ds) == len(want)
    leaves = set(ds.features) - LEFT
    assert leaves == set(want[0]) - LEFT
    for i, rec in enumerate(want):  # by position
        got = ds[i]
        for name in leaves:
            want_v = rec[name]
            if hasattr(want_v, "flat_values") or isinstance(want_v, list):
                continue  # sequences of sequences: as_data_source gives them its own way
            if isinstance(want_v, (int, float, bool, np.generic)):  # NumPy decoding: a scalar
                assert np.asarray(got[name]).tolist() == np.asarray(want_v).tolist(), name
                continue
            assert_same(name, got[name], want_v)
    texts = [t for b in ds.select(["text"]).batches(16) for t in b["text"]]  # in order
    assert texts == [r["text"] for r in want]


def test_dummy_mnist_array_record(tmp_path):
    builder = tfds.testing.DummyMnist(data_dir=str(tmp_path))
    builder.download_and_prepare(file_format="array_record")
    source = builder.as_data_source("train")
    ds = tn.open(builder.data_dir, split="train")
    assert len(ds) == len(source)
    cols = ds.to_numpy()
    for i in range(len(source)):
        np.testing.assert_array_equal(cols["image"][i], source[i]["image"])
        assert cols["label"][i] == source[i]["label"]


class TestTfdsArrayRecordFolder(SourceTests):
    def make(self, folder):
        builder = build_ar(tb.Contract, folder, shards=3)
        ds = tn.open(builder.data_dir, split="train")
        return ds, records(tb.Contract.RECORDS), ds.paths


# --- the command line ------------------------------------------------------------------------


def test_cli_count_inspect_head_verify(tmp_path, capsys):
    import json

    from tfrecnp.cli.main import main

    a = write_ar(tmp_path / "a.array_record", map(example, range(30)), "group_size:4,brotli:6")
    b = write_ar(tmp_path / "b.array_record", map(example, range(30, 50)), "group_size:1")
    assert main(["count", "--json", a, b]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == 50
    assert main(["inspect", "--json", a]) == 0
    assert set(json.loads(capsys.readouterr().out)["features"]) == {"id", "x", "tokens", "name"}
    assert main(["inspect", a]) == 0
    assert "ArrayRecord brotli:6, group_size 4" in capsys.readouterr().out
    assert main(["head", "-n", "3", "--json", b]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["record"], r["id"]) for r in rows] == [(0, 30), (1, 31), (2, 32)]
    assert main(["verify", a, b]) == 0
    assert capsys.readouterr().out.count("OK") == 2
    _flip(a, int(ArrayRecordFile(a).footer.offsets[3]) + 45)
    assert main(["verify", "--json", a, b]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["corrupt"] == 1
    assert [c["record"] for c in report["files"][0]["corrupt"]] == [12]
    assert report["files"][0]["records"] == 26


# --- hashes of every length, chunks decompressed once, options ------------------------------


def test_every_chunk_hash_of_every_remainder_length(tmp_path):
    """Chunk data of every size mod 32 (HighwayHash's tail cases), header and data hashes
    checked against what array-record's writer wrote."""
    recs = [bytes(range(n % 256)) * (1 + n // 256) for n in range(0, 200)]
    path = write_ar(tmp_path / "h.array_record", recs, "group_size:1,uncompressed")
    f = ArrayRecordFile(path)
    got = f.chunk_records(np.arange(len(recs)))
    assert got.errors == [] and list(got.batch) == recs


def _counting(monkeypatch):
    calls = []
    real = ArrayRecordFile.chunk_records

    def counted(self, ks, check=True):
        calls.extend(np.asarray(ks).tolist())
        return real(self, ks, check)

    monkeypatch.setattr(ArrayRecordFile, "chunk_records", counted)
    return calls


def test_a_group_is_decompressed_once_while_its_records_are_served(tmp_path, monkeypatch):
    path = write_ar(tmp_path / "g.array_record", map(example, range(600)), "group_size:200")
    ds = tn.open(path, SPEC)
    calls = _counting(monkeypatch)
    assert [ds[i]["id"] for i in range(0, 600, 7)] == list(range(0, 600, 7))
    assert sorted(calls) == [0, 1, 2]  # each chunk read once by ds[i]
    del calls[:]
    assert ds[[599, 1, 300]]["id"].tolist() == [599, 1, 300]
    seen = np.concatenate([b["id"] for b in ds.batches(50, shuffle=True, seed=0)])
    assert sorted(seen.tolist()) == list(range(600)) and calls == []  # all kept
    ids = np.concatenate([b["id"] for b in ds.batches(50)])
    assert ids.tolist() == list(range(600)) and calls == []  # kept groups serve a pass too
    fresh = tn.open(path, SPEC)
    fresh.source.mean_record_bytes(0, None)  # (sizes blocks from a sample: chunks 0-2, kept)
    del calls[:]
    fresh.source.close()  # lets the kept chunks go
    ids = np.concatenate([b["id"] for b in fresh.batches(50)])
    assert ids.tolist() == list(range(600))
    assert sorted(calls) == [0, 1, 2]  # a pass in file order: each chunk once


def test_verify_crc_false_skips_the_data_hashes(tmp_path):
    path = write_ar(tmp_path / "v.array_record", [b"\x00" * 100] * 4, "group_size:1,uncompressed")
    _flip(path, int(ArrayRecordFile(path).footer.offsets[2]) + 70)  # inside the values
    (error,) = ArrayRecordFile(path).chunk_records(np.arange(4)).errors
    assert "data hash" in str(error) and error.record == 2
    with pytest.raises(tn.CorruptRecordError, match="data hash"):
        tn.open(path, {"x": tn.VarLen("int64")}).to_numpy()
    got = ArrayRecordFile(path).chunk_records(np.arange(4), check=False)
    assert got.errors == [] and len(got.batch) == 4 and got.batch[2] != b"\x00" * 100


def test_a_file_of_no_records(tmp_path):
    path = write_ar(tmp_path / "e.array_record", [], "group_size:1")
    with pytest.raises(tn.SchemaError, match="no records"):
        tn.open(path)
    ds = tn.open(path, SPEC)
    assert len(ds) == 0 and ds.to_numpy()["id"].tolist() == [] and list(ds.batches(4)) == []


def test_shards_at_a_url(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    mem = fsspec.filesystem("memory")
    for k, (numbers, options) in enumerate([(range(0, 40), "group_size:1"), (range(40, 90), "")]):
        local = write_ar(tmp_path / f"{k}.array_record", map(example, numbers), options)
        with open(local, "rb") as fh:
            mem.pipe(f"/ar-test/ds-train.array_record-{k:05d}-of-00002", fh.read())
    try:
        ds = tn.open("memory://ar-test/ds-train.array_record-*", SPEC)
        assert len(ds) == 90 and ds[45]["id"] == 45
        assert ds[[89, 0, 39, 40]]["id"].tolist() == [89, 0, 39, 40]
        seen = np.concatenate([b["id"] for b in ds.batches(16, shuffle=True, seed=2)])
        assert sorted(seen.tolist()) == list(range(90))
        assert len(tn.open("memory://ar-test/", SPEC)) == 90
    finally:
        mem.rm("/ar-test", recursive=True)


def test_to_tf(tmp_path):
    pytest.importorskip("tensorflow")
    path = write_ar(tmp_path / "t.array_record", map(example, range(70)), "group_size:1")
    got = [b["id"].numpy() for b in tn.open(path, SPEC).to_tf(batch_size=32)]
    assert np.concatenate(got).tolist() == list(range(70))


def test_a_chunk_header_that_disagrees_with_the_footer_is_named(tmp_path):
    """A header rewritten with a valid hash but another record count (as a bad writer
    would leave it): named, never read as other records."""
    path = write_ar(tmp_path / "n.array_record", map(example, range(40)), "group_size:10")
    at = int(ArrayRecordFile(path).footer.offsets[1])
    with open(path, "r+b") as fh:
        fh.seek(at)
        header = bytearray(fh.read(40))
        header[25:32] = (11).to_bytes(7, "little")
        header[0:8] = riegeli_hash(bytes(header[8:40])).to_bytes(8, "little")
        fh.seek(at)
        fh.write(header)
    (error,) = ArrayRecordFile(path).chunk_records(np.arange(4)).errors
    assert "chunk holds 11 records, the footer says 10" in str(error) and error.record == 10
    ds = tn.open(path, SPEC, on_error="skip")
    assert ds.to_numpy()["id"].tolist() == [*range(10), *range(20, 40)]


# --- damage anywhere: the records, or a typed error ------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


@pytest.fixture(scope="module")
def spanning(tmp_path_factory):
    """A file of chunks running across several 64 KiB blocks, and its records."""
    recs = [bytes([i % 251]) * (300 + 37 * (i % 50)) for i in range(400)]
    path = write_ar(
        tmp_path_factory.mktemp("span") / "s.array_record", recs, "group_size:7,uncompressed"
    )
    with open(path, "rb") as fh:
        return fh.read(), recs


@hypothesis.settings(max_examples=150, deadline=None)
@hypothesis.given(where=st.floats(0, 1, exclude_max=True), bit=st.integers(0, 7))
def test_a_flipped_bit_anywhere_gives_the_records_or_a_typed_error(
    tmp_path_factory, spanning, where, bit
):
    data, recs = spanning
    damaged = bytearray(data)
    at = int(where * len(data))
    damaged[at] ^= 1 << bit
    path = tmp_path_factory.mktemp("flip") / "f.array_record"
    path.write_bytes(bytes(damaged))
    try:
        f = ArrayRecordFile(str(path))
        got = f.chunk_records(np.arange(len(f.footer.offsets)))
    except (tn.CorruptRecordError, tn.SchemaError):
        return
    rows = list(got.batch)
    if not got.errors:
        assert rows == recs  # a flip in a block header, padding or unused bytes
    else:  # the damaged chunk is left out, the others are whole
        skipped = {e.record for e in got.errors}
        assert all(r % 7 == 0 for r in skipped)
        kept = [r for i, r in enumerate(recs) if i - i % 7 not in skipped]
        assert rows == kept


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(
    buf=st.binary(max_size=300), begin=st.integers(-5, 70000), size=st.integers(-5, 400)
)
def test_the_core_takes_any_bytes(buf, begin, size):
    from tfrecnp._core import riegeli

    b = np.frombuffer(buf, np.uint8)
    _, info, _ = riegeli.one_chunk(b, begin, begin + size)
    assert info[5] in (
        riegeli.OK,
        riegeli.OUTSIDE,
        riegeli.HEADER_HASH,
        riegeli.DATA_SIZE,
        riegeli.DATA_HASH,
    )
    offsets = np.empty(8, np.int64)
    assert riegeli.sizes_to_offsets(b, offsets) <= len(b)
    fields = np.zeros((1, 3), np.uint64)
    riegeli.uint_fields(b, np.array([0, len(b)], np.int64), fields)
    out2 = np.empty(len(b), np.uint8)
    info2 = np.zeros((2, riegeli.INFO_FIELDS), np.int64)
    riegeli.unblock_chunks(
        b,
        np.array([0, max(0, len(b) - 50)], np.int64),
        np.array([begin, begin]),
        np.array([begin + size, begin + size]),
        out2,
        info2,
    )
    riegeli.simple_layout(out2, info2, np.zeros((2, riegeli.LAYOUT_FIELDS), np.int64))


def test_read_and_convert(tmp_path):
    path = write_ar(tmp_path / "r.array_record", map(example, range(60)), "group_size:5")
    assert tn.read(path, SPEC)["id"].tolist() == list(range(60))
    assert list(tn.read(path)["tokens"].to_list()[4]) == [40, 41, 42, 43]
    out = tn.convert(path, str(tmp_path / "r.npz"), progress=False)
    assert np.load(out)["id"].tolist() == list(range(60))


def test_a_folder_of_shards_beside_other_files(tmp_path):
    for k, numbers in enumerate([range(0, 12), range(12, 30)]):
        write_ar(tmp_path / f"ds-train.array_record-{k:05d}-of-00002", map(example, numbers), "")
    (tmp_path / "README.md").write_text("shards of ds")
    (tmp_path / "_SUCCESS").write_text("")
    with pytest.warns(UserWarning, match=r"passed over 1 file that is not ArrayRecord: README"):
        ds = tn.open(str(tmp_path), SPEC)
    assert ds[:]["id"].tolist() == list(range(30))
    tfrecords = tmp_path / "tf"  # a folder of TFRecord shards stays one
    tfrecords.mkdir()
    with tn.RecordWriter(tfrecords / "a.tfrecord") as w:
        w.write(example(3))
    assert tn.open(str(tfrecords), SPEC)[0]["id"] == 3


# --- a big group served as it decompresses -------------------------------------------------


def blob_example(i: int) -> bytes:
    blob = np.random.default_rng(i).integers(0, 256, 1000, np.uint8).tobytes()
    return pw.simple_example({"id": (pw.INT64, [i]), "blob": (pw.BYTES, [blob])})


@pytest.fixture(scope="module")
def big_group(tmp_path_factory):
    """One zstd chunk of 9000 records of ~1 KiB (more than a pass's block of 4 MiB), and
    array-record's reading of it."""
    path = tmp_path_factory.mktemp("big") / "g.array_record"
    write_ar(path, map(blob_example, range(9000)), "group_size:65536")
    return str(path), read_ar(path)


def test_a_chunk_streams_in_pieces_equal_to_the_reader(big_group):
    path, want = big_group
    f = ArrayRecordFile(path)
    pieces = list(f.chunk_stream(0, (1003, 2000), 300))
    assert [len(p) for p in pieces] == [300, 300, 300, 97]
    assert [r for p in pieces for r in p] == want[1003:2000]
    assert pieces[1].origins.locs.tolist() == list(range(1303, 1603))
    assert [r for p in f.chunk_stream(0, (0, 9000), 4096) for r in p] == want


@pytest.mark.parametrize(
    ("rows", "first", "sizes"),
    [
        ((0, 9000), 1, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 2048, 2048, 809]),
        ((0, 9000), 500, [500, 1000, 2000, 2048, 2048, 1404]),
        ((1003, 2000), 300, [300, 600, 97]),
        ((8999, 9000), 2, [1]),
        ((0, 9000), 5000, [2048, 2048, 2048, 2048, 808]),  # never more than a step
    ],
)
def test_a_stream_that_starts_small_gives_every_record_at_every_boundary(
    big_group, rows, first, sizes
):
    """The first piece `first` records, each next one twice as many up to the step: the
    records (and their numbers) are the reader's whichever piece a boundary falls in."""
    path, want = big_group
    pieces = list(ArrayRecordFile(path).chunk_stream(0, rows, 2048, first=first))
    assert [len(p) for p in pieces] == sizes
    assert [r for p in pieces for r in p] == want[rows[0] : rows[1]]
    locs = np.concatenate([p.origins.locs for p in pieces])
    assert locs.tolist() == list(range(*rows))


def test_streams_reuse_values_no_one_holds(big_group):
    """A streamed chunk's values come back for the next stream once nothing refers to them
    (a pass over big groups reuses the pages of the last), never while a piece is held."""
    path, want = big_group
    f = ArrayRecordFile(path)
    held = list(f.chunk_stream(0, (0, 9000), 4096))
    again = list(f.chunk_stream(0, (0, 9000), 4096))
    assert not np.shares_memory(held[0].data, again[0].data)
    assert [r for p in held for r in p] == want  # not overwritten by the second stream
    kept = far._VALUES._buffers  # the buffers lent out, each taken back once free
    assert any(np.shares_memory(held[0].data, b) for b in kept)
    del held, again
    third = list(f.chunk_stream(0, (0, 9000), 4096))
    assert any(np.shares_memory(third[0].data, b) for b in kept[-1:])
    assert len(kept) <= far.SCRATCH_KEPT
    assert [r for p in third for r in p] == want


def test_passes_decode_in_the_cores_the_reading_thread_leaves(tmp_path, monkeypatch):
    """A pass over compressed chunks decodes with one thread fewer than the cores (the
    reading thread decompresses); over uncompressed ones with every core."""
    from tfrecnp.example.decode import Decoder

    asked = []
    decode = Decoder.decode

    def counting(self, batch, *, threads=None, into=None):
        asked.append(threads)
        return decode(self, batch, threads=threads, into=into)

    monkeypatch.setattr(Decoder, "decode", counting)
    zstd = tn.open(write_ar(tmp_path / "z.array_record", map(example, range(50)), "zstd:3"))
    plain = tn.open(write_ar(tmp_path / "u.array_record", map(example, range(50)), "uncompressed"))
    for ds, threads in ((zstd, max(1, CPUS - 1)), (plain, None)):
        asked.clear()
        assert np.concatenate([b["id"] for b in ds.batches(8)]).tolist() == list(range(50))
        assert asked and set(asked) == {threads}
        asked.clear()
        assert len(list(ds.batches(8, threads=2))) == 7 and set(asked) == {2}  # as asked


def test_a_pass_over_a_big_group_streams_it(big_group):
    tf = pytest.importorskip("tensorflow")
    path, want = big_group
    ds = tn.open(path)
    assert ds._block_records(100) < 9000  # the pass takes the chunk in pieces
    ds.close()  # no chunk kept from the spec's sample: the pass streams it
    got = list(ds.batches(100))
    parsed = tf.io.parse_example(
        tf.constant(want),
        {"id": tf.io.FixedLenFeature([], tf.int64), "blob": tf.io.FixedLenFeature([], tf.string)},
    )
    np.testing.assert_array_equal(np.concatenate([b["id"] for b in got]), parsed["id"].numpy())
    assert [bytes(x) for b in got for x in b["blob"]] == parsed["blob"].numpy().tolist()
    ds.close()
    part = ds.shard(3, 1)  # records 3000..6000, clipped inside the chunk
    assert np.concatenate([b["id"] for b in part.batches(64)]).tolist() == list(range(3000, 6000))
    ds.close()
    it = ds.batches(10)
    assert next(it)["id"].tolist() == list(range(10))
    it.close()  # a loop left early stops its threads


def test_a_damaged_big_group_serves_none_of_its_records(big_group, tmp_path):
    """A byte flipped late in a streamed chunk (past the first pieces): its data hash is
    checked before the first piece is served, so the pass names the chunk and its records
    and gives none of them, or with on_error='skip' leaves them all out."""
    path = str(tmp_path / "g.array_record")
    with open(big_group[0], "rb") as src, open(path, "wb") as dst:
        dst.write(src.read())
    f = ArrayRecordFile(path)
    _flip(path, int(f.footer.ends[0]) - 1000)
    spec = {"id": tn.FixedLen((), "int64")}
    ds = tn.open(path, spec)
    ds.close()
    served = []
    with pytest.raises(
        tn.CorruptRecordError,
        match=r"data hash mismatch \(chunk 0 at byte 64, holding records 0\.\.8999\)",
    ):
        for b in ds.batches(100):
            served.append(b)
    assert served == []
    ds = tn.open(path, spec, on_error="skip")
    ds.close()
    assert list(ds.batches(100)) == []
    assert [e.record for e in ds.corruptions] == [0]


def test_a_big_group_that_does_not_decompress_is_named(big_group, tmp_path):
    """Data hashes not checked (verify_crc=False): a values block the codec refuses is a
    CorruptRecordError naming the chunk, or with on_error='skip' its records left out."""
    path = str(tmp_path / "g.array_record")
    with open(big_group[0], "rb") as src, open(path, "wb") as dst:
        dst.write(src.read())
    f = ArrayRecordFile(path)
    _, _, layout = riegeli.one_chunk(f.read(64, int(f.footer.ends[0])), 64, int(f.footer.ends[0]))
    _flip(path, 64 + layout[4])  # the values' zstd frame magic (before the first block header)
    ds = tn.open(path, {"id": tn.FixedLen((), "int64")}, verify_crc=False)
    ds.close()
    with pytest.raises(
        tn.CorruptRecordError, match=r"chunk 0 at byte 64, holding records 0\.\.8999"
    ):
        list(ds.batches(100))
    ds = tn.open(path, {"id": tn.FixedLen((), "int64")}, verify_crc=False, on_error="skip")
    ds.close()
    assert list(ds.batches(100)) == []
    assert [e.record for e in ds.corruptions] == [0]


def test_a_file_cut_after_it_was_opened_names_the_chunks_cut_short(tmp_path):
    """Chunks a few bytes apart are read together with the bytes between them; a file cut
    inside such a read gives the chunks it holds whole, and names the ones cut short."""
    path = write_ar(tmp_path / "c.array_record", map(example, range(400)), "group_size:1")
    ds = tn.open(path, SPEC)
    skipping = tn.open(path, SPEC, on_error="skip")
    offsets = ArrayRecordFile(path).footer.offsets
    assert offsets[301] - offsets[297] < 4096  # 297, 299 and 301: one read, gaps and all
    with open(path, "r+b") as fh:
        fh.truncate(int(offsets[300]) + 10)  # inside chunk 300, between 299 and 301
    ids = [10, 297, 299, 301]
    with pytest.raises(
        tn.CorruptRecordError,
        match=r"chunk cut short .*\(chunk 301 at byte \d+, holding record 301\)",
    ):
        ds[ids]
    assert ds[[10, 297, 299]]["id"].tolist() == [10, 297, 299]
    assert skipping[ids]["id"].tolist() == [10, 297, 299]
    assert [e.record for e in skipping.corruptions] == [301]
