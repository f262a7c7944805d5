"""ArrayRecord files read natively: the chunks of files array-record's own writer made, with
every option string it takes, against array-record's reader (bytes) and TensorFlow's
parse_example (values); damage and truncation typed; the source contract."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tfrecnp as tn
from tfrecnp.format.arrayrecord import SIGNATURE, ArrayRecordFile, riegeli_hash

arm = pytest.importorskip("array_record.python.array_record_module")

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
    with pytest.raises(tn.CorruptRecordError, match="c.array_record"):
        ArrayRecordFile(path).footer
    with open(path, "r+b") as fh:
        fh.truncate(1000)
    with pytest.raises(tn.CorruptRecordError, match="at least 64 KiB"):
        ArrayRecordFile(path).footer
