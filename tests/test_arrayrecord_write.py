"""ArrayRecord files written here: laid out as array-record's own writer lays them out (the
same bytes where the codec is deterministic: uncompressed, brotli), read back record-equal by
array-record's reader and data source and by ours, with every compression and group sizes 1
and 65536; tn.write / tn.Writer / tn.convert / the CLI, sharded and atomic."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from tfrecnp.format.riegeli import SIGNATURE

arm = pytest.importorskip("array_record.python.array_record_module")
ards = pytest.importorskip("array_record.python.array_record_data_source")

COMPRESSIONS = ["zstd:3", "brotli:6", "snappy", "uncompressed"]


def read_ar(path) -> list[bytes]:
    r = arm.ArrayRecordReader(str(path))
    try:
        return list(r.read_all())
    finally:
        r.close()


def write_ar(path, records, options: str) -> str:
    w = arm.ArrayRecordWriter(str(path), options)
    for r in records:
        w.write(r)
    w.close()
    return str(path)


def packed(records: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    data = np.frombuffer(b"".join(records), np.uint8)
    return data, np.concatenate([[0], np.cumsum([len(r) for r in records])]).astype(np.int64)


@pytest.fixture(scope="module")
def payloads():
    rng = np.random.default_rng(1)
    recs = [bytes(rng.integers(0, 8, int(rng.integers(0, 400)), np.uint8)) for _ in range(500)]
    recs[3] = recs[4] = b""
    recs[200] = bytes(rng.integers(0, 4, 3 << 20, np.uint8))  # spans many 64 KiB blocks
    return recs


# --- the chunk writer ----------------------------------------------------------------------


@pytest.mark.parametrize("group_size", [1, 65536, 7])
@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_array_record_reads_what_we_write(tmp_path, payloads, group_size, compression):
    from tfrecnp.format.arrayrecord_write import ArrayRecordWriter

    path = tmp_path / "x.array_record"
    with ArrayRecordWriter(path, group_size=group_size, compression=compression) as w:
        w.write_batch(*packed(payloads[:250]))
        for r in payloads[250:]:
            w.write(r)
    assert read_ar(path) == payloads
    source = ards.ArrayRecordDataSource([str(path)])
    idx = [0, 3, 200, 499, 17]
    assert list(source.__getitems__(idx)) == [payloads[i] for i in idx]
    reader = arm.ArrayRecordReader(str(path))
    codec = compression.partition(":")[0]
    assert f"group_size:{group_size}," in reader.writer_options_string()
    assert codec in reader.writer_options_string()
    reader.close()


@pytest.mark.parametrize(
    "options,group_size,compression",
    [
        ("group_size:1,uncompressed", 1, "uncompressed"),
        ("group_size:65536,uncompressed", 65536, "uncompressed"),
        ("group_size:5,brotli:6", 5, "brotli:6"),
        ("group_size:65536,brotli:6", 65536, "brotli"),
    ],
)
def test_the_same_bytes_as_array_records_writer(
    tmp_path, payloads, options, group_size, compression
):
    """Deterministic codecs: every byte (signature, chunks, block headers, padding, footer,
    postscript) equals what array-record's writer makes for the same options."""
    from tfrecnp.format.arrayrecord_write import ArrayRecordWriter

    ref = write_ar(tmp_path / "ref.array_record", payloads, options)
    mine = tmp_path / "mine.array_record"
    with ArrayRecordWriter(mine, group_size=group_size, compression=compression) as w:
        w.write_batch(*packed(payloads))
    assert mine.read_bytes() == Path(ref).read_bytes()


def test_zstd_data_chunks_match_array_records(tmp_path):
    """zstd:3 with window_log 20, as array-record compresses: small records' chunks, footer
    and postscript are the same bytes."""
    from tfrecnp.format.arrayrecord_write import ArrayRecordWriter

    recs = [b"abc", b"", b"hello" * 10, bytes(range(256)) * 3]
    ref = write_ar(tmp_path / "ref.array_record", recs, "group_size:1")
    mine = tmp_path / "mine.array_record"
    with ArrayRecordWriter(mine) as w:  # the defaults: group_size 1, zstd:3
        for r in recs:
            w.write(r)
    assert mine.read_bytes() == Path(ref).read_bytes()


@pytest.mark.parametrize("compression", ["zstd:3", "brotli:6", "snappy"])
def test_a_chunk_of_more_records_than_bytes_is_padded(tmp_path, compression):
    """Riegeli pads a chunk to at least as many bytes as it has records: 70 000 records
    that compress to a few hundred bytes fill more than one 64 KiB block of padding, block
    headers within it."""
    from tfrecnp.format.arrayrecord import ArrayRecordFile
    from tfrecnp.format.arrayrecord_write import ArrayRecordWriter

    recs = [b"ab", b"", b"abc"] * 70_000
    path = tmp_path / "p.array_record"
    with ArrayRecordWriter(path, group_size=65536, compression=compression) as w:
        w.write_batch(*packed(recs))
    assert read_ar(path) == recs
    f = ArrayRecordFile(path)
    assert f.footer.records == len(recs) and f.footer.group_size == 65536
    values, offsets = f.one_chunk(3)
    assert offsets[-1] == len(values) == sum(map(len, recs[3 * 65536 :]))
    f.close()


def test_the_bytes_do_not_depend_on_how_records_arrive(tmp_path):
    """One at a time (several flushes) or in one batch: the bytes array-record writes."""
    from tfrecnp.format.arrayrecord_write import ArrayRecordWriter

    recs = [str(i).encode() * (i % 3) for i in range(150_000)]
    ref = write_ar(tmp_path / "ref.array_record", recs, "group_size:7,uncompressed")
    one = tmp_path / "one.array_record"
    with ArrayRecordWriter(one, group_size=7, compression="uncompressed") as w:
        for r in recs:
            w.write(r)
    batch = tmp_path / "batch.array_record"
    with ArrayRecordWriter(batch, group_size=7, compression="uncompressed") as w:
        w.write_batch(*packed(recs[:100_001]))
        w.write_batch(*packed(recs[100_001:]))
    assert one.read_bytes() == batch.read_bytes() == Path(ref).read_bytes()


def test_no_records(tmp_path):
    from tfrecnp.format.arrayrecord_write import ArrayRecordWriter

    ref = write_ar(tmp_path / "ref.array_record", [], "group_size:1,uncompressed")
    mine = tmp_path / "mine.array_record"
    with ArrayRecordWriter(mine, compression="uncompressed"):
        pass
    assert mine.read_bytes() == Path(ref).read_bytes()
    assert read_ar(mine) == []


def test_our_reader_reads_what_we_write(tmp_path, payloads):
    from tfrecnp.format.arrayrecord import ArrayRecordFile
    from tfrecnp.format.arrayrecord_write import ArrayRecordWriter

    for g, c in [(1, "zstd:3"), (65536, "snappy"), (3, "brotli")]:
        path = tmp_path / f"{g}.array_record"
        with ArrayRecordWriter(path, group_size=g, compression=c) as w:
            w.write_batch(*packed(payloads))
        f = ArrayRecordFile(path)
        assert f.footer.records == len(payloads)
        got = []
        for batch, err in f.read_chunks(0, len(f.footer.offsets)):
            assert err is None
            got += [bytes(batch.data[a:b]) for a, b in zip(batch.starts, batch.ends, strict=True)]
        assert got == payloads
        f.close()


def test_a_failed_write_leaves_no_file(tmp_path, payloads):
    from tfrecnp.format.arrayrecord_write import ArrayRecordWriter

    path = tmp_path / "x.array_record"
    with pytest.raises(RuntimeError), ArrayRecordWriter(path) as w:
        w.write_batch(*packed(payloads))
        raise RuntimeError("mid-write")
    assert list(tmp_path.iterdir()) == []


def test_options_are_checked(tmp_path):
    from tfrecnp.format.arrayrecord_write import ArrayRecordWriter

    with pytest.raises(ValueError, match="compression"):
        ArrayRecordWriter(tmp_path / "x.array_record", compression="gzip")
    with pytest.raises(ValueError, match="group_size"):
        ArrayRecordWriter(tmp_path / "x.array_record", group_size=0)
    assert list(tmp_path.iterdir()) == []


# --- tn.write / tn.Writer ------------------------------------------------------------------


def columns(n: int = 600) -> dict:
    import tfrecnp as tn

    rng = np.random.default_rng(2)
    lengths = rng.integers(0, 5, n)
    return {
        "id": np.arange(n, dtype=np.int64),
        "x": rng.random((n, 3), dtype=np.float32),
        "tokens": tn.Ragged(
            np.arange(int(lengths.sum()), dtype=np.int64),
            np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        ),
        "name": [f"n{i}".encode() for i in range(n)],
    }


def parse_with_tf(payloads: list[bytes]) -> dict:
    tf = pytest.importorskip("tensorflow")
    features = {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "x": tf.io.FixedLenFeature([3], tf.float32),
        "tokens": tf.io.RaggedFeature(tf.int64),
        "name": tf.io.FixedLenFeature([], tf.string),
    }
    parsed = tf.io.parse_example(tf.constant(payloads), features)
    return {
        "id": parsed["id"].numpy(),
        "x": parsed["x"].numpy(),
        "tokens": parsed["tokens"].to_list(),
        "name": parsed["name"].numpy().tolist(),
    }


def assert_columns(got: dict, cols: dict) -> None:
    np.testing.assert_array_equal(got["id"], cols["id"])
    np.testing.assert_array_equal(got["x"], cols["x"])
    r = cols["tokens"]
    want = [
        r.values[a:b].tolist() for a, b in zip(r.row_splits[:-1], r.row_splits[1:], strict=True)
    ]
    assert got["tokens"] == want
    assert got["name"] == cols["name"]


@pytest.mark.parametrize("group_size", [1, 65536])
@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_write_array_record_read_by_array_record_and_parse_example(
    tmp_path, group_size, compression
):
    import tfrecnp as tn

    cols = columns()
    out = tn.write(
        tmp_path / "e.array_record",
        cols,
        group_size=group_size,
        compression=compression,
        progress=False,
    )
    assert out.paths == [str(tmp_path / "e.array_record")] and out.records == 600
    records = read_ar(out.paths[0])
    assert_columns(parse_with_tf(records), cols)
    source = ards.ArrayRecordDataSource(out.paths)
    assert len(source) == 600 and source[599] == records[599]
    got = tn.read(out.paths[0])  # and ours
    np.testing.assert_array_equal(got["id"], cols["id"])
    np.testing.assert_array_equal(got["x"], cols["x"])


def test_the_records_equal_tfrecord_output(tmp_path):
    """The same serialized Examples as tn.write puts in a TFRecord file."""
    import tfrecnp as tn

    cols = columns(300)
    tn.write(tmp_path / "e.tfrecord", cols, progress=False)
    tn.write(tmp_path / "e", cols, format="array_record", progress=False)
    tf_records = [bytes(r) for r in tn.RecordReader(str(tmp_path / "e.tfrecord"))]
    assert read_ar(tmp_path / "e") == tf_records


def test_writer_sharded_named_as_tfds_names_them(tmp_path):
    import tfrecnp as tn

    cols = columns(1000)
    with tn.Writer(tmp_path / "ds-train.array_record", records_per_shard=300, progress=False) as w:
        w.write_batch({k: v[:500] for k, v in cols.items() if k in ("id", "x")})
        w.write_batch({k: v[500:] for k, v in cols.items() if k in ("id", "x")})
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"ds-train.array_record-0000{k}-of-00004" for k in range(4)]
    assert w.paths == [str(tmp_path / n) for n in names]
    assert [len(read_ar(p)) for p in w.paths] == [300, 300, 300, 100]
    ds = tn.open(str(tmp_path / "ds-train.array_record-*"))
    np.testing.assert_array_equal(ds.to_numpy()["id"], cols["id"])
    reader = arm.ArrayRecordReader(w.paths[0])
    assert reader.writer_options_string().startswith("group_size:1,")
    assert "zstd:3" in reader.writer_options_string()  # TFDS's choices by default
    reader.close()


def test_an_interrupted_write_leaves_no_file(tmp_path):
    import tfrecnp as tn

    cols = columns(1000)
    path = tmp_path / "x.array_record"
    with pytest.raises(RuntimeError), tn.Writer(path, encoding="raw", progress=False) as w:
        blob = np.random.default_rng(0).integers(0, 256, (6, 1 << 20), np.uint8)
        w.write_batch({"blob": blob})  # past the first flush
        (building,) = tmp_path.iterdir()  # under a hidden name, an ArrayRecord file
        assert building.name.startswith(".x.array_record.")
        assert building.read_bytes()[:64] == SIGNATURE
        raise RuntimeError("mid-write")
    with (
        pytest.raises(RuntimeError),
        tn.Writer(tmp_path / "s.array_record", records_per_shard=100, progress=False) as w,
    ):
        w.write_batch({"id": cols["id"]})
        raise RuntimeError("mid-write")
    assert list(tmp_path.iterdir()) == []


def test_write_options_are_checked(tmp_path):
    import tfrecnp as tn

    with pytest.raises(ValueError, match="group_size"):
        tn.write(tmp_path / "x.tfrecord", {"a": np.arange(3)}, group_size=4, progress=False)
    with pytest.raises(ValueError, match="compression"):
        tn.write(tmp_path / "x.array_record", {"a": np.arange(3)}, compression="GZIP")
    with pytest.raises(ValueError, match="format"):
        tn.write(tmp_path / "x", {"a": np.arange(3)}, format="parquetish")
    assert list(tmp_path.iterdir()) == []


# --- tn.convert and the CLI ----------------------------------------------------------------


def tfrecord_payloads(paths) -> list[bytes]:
    import tfrecnp as tn

    return [bytes(r) for r in tn.RecordReader(paths)]


def test_convert_tfrecord_to_array_record_and_back(tmp_path):
    import tfrecnp as tn

    cols = columns(700)
    tn.write(tmp_path / "a.tfrecord", cols, progress=False)
    payloads = tfrecord_payloads(str(tmp_path / "a.tfrecord"))
    out = tn.convert(tmp_path / "a.tfrecord", tmp_path / "b.array_record", progress=False)
    assert out.paths == [str(tmp_path / "b.array_record")] and out.records == 700
    assert set(out.spec) == set(cols)
    assert read_ar(tmp_path / "b.array_record") == payloads
    assert_columns(parse_with_tf(read_ar(tmp_path / "b.array_record")), cols)
    back = tn.convert(tmp_path / "b.array_record", tmp_path / "c.tfrecord", progress=False)
    assert back.records == 700
    assert (tmp_path / "c.tfrecord").read_bytes() == (tmp_path / "a.tfrecord").read_bytes()


def test_convert_sharded_both_ways_with_options(tmp_path):
    import tfrecnp as tn

    cols = columns(1000)
    tn.write(tmp_path / "a.tfrecord", cols, records_per_shard=400, progress=False)
    src = str(tmp_path / "a-*.tfrecord")
    payloads = tfrecord_payloads(src)
    out = tn.convert(
        src,
        tmp_path / "ds-train",
        format="array_record",
        records_per_shard=300,
        group_size=65536,
        compression="snappy",
        progress=False,
    )
    assert [os.path.basename(p) for p in out.paths] == [
        f"ds-train-0000{k}-of-00004" for k in range(4)
    ]
    assert [r for p in out.paths for r in read_ar(p)] == payloads
    back = tn.convert(
        str(tmp_path / "ds-train-*"),
        tmp_path / "z.tfrecord",
        records_per_shard=600,
        compression="GZIP",
        progress=False,
    )
    assert [os.path.basename(p) for p in back.paths] == [
        "z-00000-of-00002.tfrecord",
        "z-00001-of-00002.tfrecord",
    ]
    assert tfrecord_payloads(back.paths) == payloads


def test_convert_interrupted_leaves_nothing(tmp_path, monkeypatch):
    import tfrecnp as tn
    from tfrecnp.format.arrayrecord_write import ArrayRecordWriter

    tn.write(tmp_path / "a.tfrecord", columns(300), progress=False)
    calls = []

    def failing(self, *a):
        calls.append(1)
        raise OSError(5, "disk gone")

    monkeypatch.setattr(ArrayRecordWriter, "finish", failing)
    with pytest.raises(OSError):
        tn.convert(tmp_path / "a.tfrecord", tmp_path / "b.array_record", progress=False)
    assert calls and sorted(p.name for p in tmp_path.iterdir()) == ["a.tfrecord"]


def test_arrays_convert_to_array_record(tmp_path):
    import tfrecnp as tn

    np.save(tmp_path / "x.npy", np.arange(50, dtype=np.int64))
    out = tn.convert(tmp_path / "x.npy", tmp_path / "x.array_record", progress=False)
    assert len(read_ar(out.paths[0])) == 50
    np.testing.assert_array_equal(tn.read(out.paths[0])["x"], np.arange(50))


def test_cli_convert_both_ways(tmp_path, capsys):
    import tfrecnp as tn
    from tfrecnp.cli.main import main

    cols = columns(200)
    tn.write(tmp_path / "a.tfrecord", cols, progress=False)
    a, b, c = (str(tmp_path / n) for n in ("a.tfrecord", "b.array_record", "c.tfrecord"))
    assert main(["convert", a, b, "--quiet"]) == 0
    assert "wrote 200 records" in capsys.readouterr().out
    assert read_ar(b) == tfrecord_payloads(a)
    reader = arm.ArrayRecordReader(b)
    assert "group_size:1," in reader.writer_options_string()
    reader.close()
    assert main(["convert", b, c, "--quiet"]) == 0
    capsys.readouterr()
    assert Path(c).read_bytes() == Path(a).read_bytes()
    s = str(tmp_path / "s.array_record")
    args = ["convert", a, s, "--records-per-shard", "64", "--group-size", "16"]
    assert main([*args, "--compression", "brotli:5", "--json", "--quiet"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [os.path.basename(p) for p in got["paths"]] == [
        f"s.array_record-0000{k}-of-00004" for k in range(4)
    ]
    assert [r for p in got["paths"] for r in read_ar(p)] == tfrecord_payloads(a)
    with pytest.raises(SystemExit):
        main(["convert", a, str(tmp_path / "e.array_record"), "--compression", "bogus"])


def test_the_core_lays_chunks_within_what_it_measures():
    """lay_chunks writes exactly chunks_size bytes, from any position a chunk may begin at,
    for chunks of any size and record count (the bytes after are untouched)."""
    from tfrecnp._core import riegeli

    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(1, 6))
        sizes = rng.integers(0, 150_000, n) * (rng.random(n) < 0.7)
        records = rng.integers(0, 200_000, n) * (rng.random(n) < 0.6)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        data = rng.integers(0, 256, int(offsets[-1]), np.uint8)
        pos = int(rng.integers(0, 1 << 20))
        pos += max(0, 24 - pos % 65536)  # not inside a block header
        if pos % 65536 == 24:
            pos += 1  # nor right after one
        need = riegeli.chunks_size(offsets, records.astype(np.int64), pos)
        out = np.full(need + 64, 0xAB, np.uint8)
        begins = np.empty(n, np.int64)
        types = np.full(n, ord("r"), np.uint8)
        chunks = (data, offsets, types, records.astype(np.int64), sizes.astype(np.int64), pos)
        assert riegeli.lay_chunks(*chunks, out, begins) == need
        assert np.all(out[need:] == 0xAB)
        assert riegeli.lay_chunks(*chunks, out[: need - 1], begins) == (-1 if need else 0)


def test_shards_at_a_url():
    """Written to a hidden name on the store, moved into place when complete."""
    fsspec = pytest.importorskip("fsspec")
    import tfrecnp as tn

    out = tn.write(
        "memory://ar-write/d.array_record",
        {"x": np.arange(100, dtype=np.int64)},
        records_per_shard=40,
        progress=False,
    )
    assert out.paths == [f"memory://ar-write/d.array_record-0000{k}-of-00003" for k in range(3)]
    names = sorted(p["name"] for p in fsspec.filesystem("memory").ls("/ar-write"))
    assert names == [f"/ar-write/d.array_record-0000{k}-of-00003" for k in range(3)]
    np.testing.assert_array_equal(
        tn.read("memory://ar-write/d.array_record-*")["x"], np.arange(100)
    )
    fsspec.filesystem("memory").rm("/ar-write", recursive=True)


def test_a_tfds_split_to_array_record_says_how_instead_of_a_type_error(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    tfds.testing.DummyMnist(data_dir=str(tmp_path / "tfds")).download_and_prepare(
        file_format="tfrecord"
    )
    import tfrecnp as tn

    folder = tmp_path / "tfds" / "dummy_mnist"
    out = tmp_path / "train.array_record"
    with pytest.raises(ValueError, match=r"split='train' picks records of a TFDS folder"):
        tn.convert(folder, out, split="train", progress=False)
    assert not out.exists()
    cols = tn.open(folder, split="train").to_numpy()  # the route the message names
    tn.write(out, cols, progress=False)
    back = tn.open(out).to_numpy()
    assert np.array_equal(back["label"], cols["label"]) and len(back["label"]) == 20


# --- verify= and index= on ArrayRecord output ---------------------------------------------


def test_verify_reads_array_record_output_back(tmp_path):
    """verify=True reads every record back (chunk hashes checked), as for TFRecord: counts
    and bytes per shard, then values against the columns written (tn.write) or a decode
    with the spec (a streaming Writer)."""
    import tfrecnp as tn

    cols = columns(700)
    out = tn.write(
        tmp_path / "v.array_record", cols, records_per_shard=300, verify=True, progress=False
    )
    assert [len(read_ar(p)) for p in out.paths] == [300, 300, 100]
    assert_columns(parse_with_tf([r for p in out.paths for r in read_ar(p)]), cols)
    with tn.Writer(tmp_path / "w.array_record", group_size=64, verify=True, progress=False) as w:
        w.write_batch({"id": cols["id"]})
    assert len(read_ar(w.paths[0])) == 700
    result = tn.convert(
        out.paths, tmp_path / "c.array_record", group_size=65536, verify=True, progress=False
    )
    assert read_ar(result.paths[0]) == [r for p in out.paths for r in read_ar(p)]


def test_verify_catches_a_damaged_array_record_shard(tmp_path, monkeypatch):
    """A shard damaged on its way to disk (a byte flipped after the writer finished it)
    fails its chunk hash when read back: a CorruptRecordError naming the chunk, nothing
    kept, for tn.write and tn.convert alike."""
    import tfrecnp as tn
    from tfrecnp.format.arrayrecord_write import ArrayRecordWriter

    finish = ArrayRecordWriter.finish

    def finish_then_damage(self):
        finish(self)
        with open(self.tmp, "r+b") as fh:  # the first data chunk's data
            fh.seek(64 + 40 + 5)
            b = fh.read(1)
            fh.seek(64 + 40 + 5)
            fh.write(bytes([b[0] ^ 1]))

    tn.write(tmp_path / "a.tfrecord", columns(50), progress=False)
    monkeypatch.setattr(ArrayRecordWriter, "finish", finish_then_damage)
    with pytest.raises(tn.CorruptRecordError, match=r"chunk data hash mismatch \(chunk 0 at"):
        tn.write(tmp_path / "d.array_record", columns(50), verify=True, progress=False)
    with pytest.raises(tn.CorruptRecordError, match="chunk data hash mismatch"):
        tn.convert(tmp_path / "a.tfrecord", tmp_path / "c.array_record", verify=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tfrecord"]


def test_index_is_refused_for_array_record_output(tmp_path):
    import tfrecnp as tn

    said = r"index=True applies to TFRecord output; ArrayRecord files carry their own index"
    with pytest.raises(ValueError, match=said):
        tn.write(tmp_path / "x.array_record", {"a": np.arange(3)}, index=True, progress=False)
    tn.write(tmp_path / "a.tfrecord", {"a": np.arange(3)}, progress=False)
    with pytest.raises(ValueError, match=said):
        tn.convert(tmp_path / "a.tfrecord", tmp_path / "b.array_record", index=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tfrecord"]
