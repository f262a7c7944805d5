"""Files that are not TFRecord, the cases a new user met after the first round: a JSON file
shorter than a frame header, a lone Zarr array, and gzip of something else given to tn.load
are each named for what they are, never "truncated record" or a raw zarr error."""

import gzip

import numpy as np
import pytest
import zarr

import tfrecnp as tn


def test_a_short_json_file_is_json_not_a_truncated_record(tmp_path):
    path = tmp_path / "info.json"
    path.write_text('{"a": 1}')  # 8 bytes: less than a 12-byte frame header
    with pytest.raises(tn.CorruptRecordError) as e:
        list(tn.iter_records(path))
    assert str(e.value) == (
        f"not a TFRecord file at {path} record 0 (byte 0); it is JSON text (a dataset "
        "description?), read it with json.load"
    )
    short = tmp_path / "short.tfrecord"
    short.write_bytes(b"\x05\x00\x00\x00\x00\x00")  # a TFRecord file cut inside its header
    with pytest.raises(tn.CorruptRecordError, match=r"^truncated: the file ends 6 bytes into"):
        list(tn.iter_records(short))


def test_a_lone_zarr_array_is_named_by_load_and_by_the_readers(tmp_path):
    path = str(tmp_path / "x.zarr")
    zarr.save(path, np.arange(3))
    with pytest.raises(tn.TFRecordError) as e:
        tn.load(path)
    assert str(e.value).startswith(
        f"{path} is not a complete tfrecnp output (a lone Zarr array, not a group: "
        "zarr.open(path) reads it)"
    )
    with pytest.raises(FileNotFoundError) as e:
        list(tn.iter_records(path))
    assert str(e.value).startswith(
        f"{path} is a Zarr store: tn.open(path) reads it as a dataset of arrays: "
        "no TFRecord files among"
    )


def test_load_of_gzip_text_does_not_call_it_a_tfrecord_file(tmp_path):
    path = tmp_path / "log.gz"
    path.write_bytes(gzip.compress(b"a log, not records\n" * 50))
    with pytest.raises(tn.TFRecordError) as e:
        tn.load(path)
    assert "is a TFRecord file" not in str(e.value)
    assert "GZIP data, but what it holds is not TFRecords (text 'a log, not records" in str(e.value)
    shard = tmp_path / "data.tfrecord.gz"
    with tn.RecordWriter(shard, compression="GZIP") as w:
        w.write(b"x")
    with pytest.raises(tn.TFRecordError, match=r"is a TFRecord file, not what Dataset.save"):
        tn.load(shard)
