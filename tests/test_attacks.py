"""Hostile files (tests/attacks/, written by tests/attacks/make.py from the format's rules):
each gives its typed error, naming the file, and no giant allocation."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

import tfrecnp as tn

ATTACKS = Path(__file__).resolve().parent / "attacks"

# file -> (how it is read, the error, words of its message)
TABLE = {
    "length_2_60.tfrecord": ("records", tn.CorruptRecordError,
                             "length 1 152 921 504 606 846 976 exceeds the 112 bytes left"),
    "length_2_64_minus_1.tfrecord": ("records", tn.CorruptRecordError,
                                     "length 18 446 744 073 709 551 615 exceeds the 112 bytes"),
    "gzip_bomb.tfrecord.gz": ("records", tn.CorruptRecordError,
                              "length 1 099 511 627 776 exceeds max_record_bytes (1 GiB)"),
    "varint_11_bytes.tfrecord": ("example", tn.CorruptRecordError,
                                 "a varint runs past 10 bytes in an Int64List of feature 'a'"),
    "packed_overrun.tfrecord": ("example", tn.CorruptRecordError,
                                "a field of 400 bytes runs past the end of its message"),
    "map_entry_groups_100000.tfrecord": ("example", tn.CorruptRecordError,
                                         "field 3 has the invalid wire type 3 in a Features "
                                         "map entry"),
    "npy_2_60_elements.npy": ("arrays", ValueError,
                              "its header claims shape (1152921504606846976,) of float32"),
    "mismatched_lengths.h5": ("arrays", tn.SchemaError,
                              "have different lengths: 'a' has 5, 'b' has 7 rows"),
    "mismatched_lengths.zarr": ("arrays", tn.SchemaError,
                                "have different lengths: 'a' has 5, 'b' has 7 rows"),
    "manifest_dotdot": ("load", tn.TFRecordError,
                        "column 'x' names the array '../x'; stored array names use only"),
}  # fmt: skip

# hostile files that are valid: file -> what they decode to (with a spec, and inferred)
DECODES = {
    # 100 000 messages nested in an unknown field of a map entry: skipped whole (as protobuf
    # skips unknown fields), never descended into, so no recursion and no depth to run out of
    "map_entry_nested_100000.tfrecord": [7],
}


def _read(how: str, path: Path):
    if how == "records":
        return sum(len(b) for b in tn.RecordReader(path).batches(64))
    if how == "example":
        spec = {"a": tn.VarLen("float32" if "packed" in path.name else "int64")}
        return tn.read(path, spec)
    if how == "arrays":
        return tn.open(path)[0]
    return tn.load(path)


def test_every_attack_file_is_in_the_table():
    names = sorted(p.name for p in ATTACKS.iterdir() if p.name != "make.py")
    assert names == sorted([*TABLE, *DECODES])


@pytest.mark.parametrize("name", sorted(TABLE))
def test_attack_gives_its_typed_error(name):
    how, error, words = TABLE[name]
    tracemalloc.start()
    try:
        with pytest.raises(error) as e:
            _read(how, ATTACKS / name)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert words in str(e.value)
    assert name in str(e.value)
    assert peak < 64 << 20  # nothing near what the file claims was allocated


def test_a_decompression_bomb_is_skipped_in_bounded_memory():
    reader = tn.RecordReader(ATTACKS / "gzip_bomb.tfrecord.gz", on_error="skip")
    tracemalloc.start()
    try:
        assert sum(len(b) for b in reader.batches(64)) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "max_record_bytes" in str(reader.corruptions[0])
    assert peak < 64 << 20  # the stream inflates to 64 MiB; it is never held whole


def test_max_record_bytes_is_a_limit_the_caller_sets(tmp_path):
    # the limit is checked before a record longer than the read buffer (1 MiB) is fetched
    path = tmp_path / "big.tfrecord"
    tn.write(path, {"x": [b"a" * (3 << 20), b"b"]}, progress=False)
    with pytest.raises(tn.CorruptRecordError, match=r"exceeds max_record_bytes \(2 MiB\)"):
        list(tn.RecordReader(path, max_record_bytes=2 << 20))
    assert len(list(tn.RecordReader(path))) == 2


@pytest.mark.parametrize("name", sorted(DECODES))
def test_a_valid_hostile_file_decodes(name):
    path = ATTACKS / name
    assert tn.read(path, {"a": tn.VarLen("int64")})["a"].to_list() == [DECODES[name]]
    assert tn.read(path)["a"].tolist() == DECODES[name]  # the survey of inference walks it too
