"""Files that are not TFRecord get an error that says what they are and which call reads
them, not a CRC mismatch; tn.open and tn.load point at each other only where that helps."""

import gzip
import json

import h5py
import numpy as np
import pytest

import tfrecnp as tn
from tfrecnp.cli import main


def _error(path) -> tn.CorruptRecordError:
    with pytest.raises(tn.CorruptRecordError) as e:
        list(tn.RecordReader(path))
    assert e.value.reason == "not a TFRecord file" and (e.value.record, e.value.offset) == (0, 0)
    return e.value


def test_npy_json_text_and_gzip_say_what_they_are(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(10.0))
    assert _error(tmp_path / "x.npy").hint.startswith("it is a .npy array file: tn.open")
    (tmp_path / "info.json").write_text(json.dumps({"splits": {"train": 10}}))
    assert _error(tmp_path / "info.json").hint.startswith("it is JSON text")
    (tmp_path / "notes.tfrecord").write_text("this dataset was made by hand\n" * 20)
    assert _error(tmp_path / "notes.tfrecord").hint.startswith("it is text ('this dataset")
    (tmp_path / "log.gz").write_bytes(gzip.compress(b"a log, not records\n" * 50))
    assert _error(tmp_path / "log.gz").hint.startswith(
        "it is GZIP data, but what it holds is not TFRecords (text 'a log, not records"
    )


def test_raw_floats_name_the_bytes_seen(tmp_path):
    path = tmp_path / "x.dat"
    np.arange(100, dtype=np.float32).tofile(path)
    error = _error(path)
    assert error.hint == (
        "its first bytes (00 00 00 00 00 00 80 3f 00 00 00 40) are not a TFRecord frame, and "
        "no frame starts in its first 400 bytes (raw numbers? np.fromfile(path, dtype) or "
        "np.memmap read them; tn.convert writes TFRecords from a .npy)"
    )


def test_count_of_an_npy_file_says_so(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.arange(4))
    assert main(["count", str(tmp_path / "x.npy")]) != 0
    err = capsys.readouterr().err
    assert "not a TFRecord file" in err and "CRC" not in err and ".npy array file" in err
    assert "tn.open(path)" in err


def test_open_and_load_do_not_send_users_in_a_circle(tmp_path):
    with h5py.File(tmp_path / "plain.h5", "w") as f:
        f["x"] = np.arange(3)
    assert tn.open(tmp_path / "plain.h5")[:]["x"].tolist() == [0, 1, 2]  # a dataset of arrays
    with pytest.raises(tn.TFRecordError) as e:
        tn.load(tmp_path / "plain.h5")
    assert "tn.open" not in str(e.value) and "tn.convert(path, 'out.tfrecord')" in str(e.value)
    with tn.RecordWriter(tmp_path / "r.tfrecord") as w:
        w.write(b"x")
    with pytest.raises(tn.TFRecordError, match=r"is a TFRecord file, .*open it with tn.open"):
        tn.load(tmp_path / "r.tfrecord")


def test_a_damaged_first_header_is_still_damage(tmp_path):
    path = tmp_path / "d.tfrecord"
    with tn.RecordWriter(path) as w:
        for i in range(5):
            w.write(b"payload %d" % i)
    data = bytearray(path.read_bytes())
    data[3] ^= 0x40  # the first length field: a frame still follows
    path.write_bytes(data)
    with pytest.raises(tn.CorruptRecordError, match=r"^length CRC mismatch"):
        list(tn.RecordReader(path))
