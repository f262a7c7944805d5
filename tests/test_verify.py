"""tn.verify: every CRC checked, each damaged stretch reported with file, record, offset,
reason and the bytes stepped over; salvage copies the good records into a new file that
appears only when complete. Files are framed here by the reference framer (conftest)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

import tfrecnp as tn
from tfrecnp.format import verify as verify_module

PAYLOADS = [b"alpha", b"", bytes(range(48, 80)), b"z", b"the last record"]


@pytest.fixture
def files(tmp_path, ref):
    """good.tfrecord; bad.tfrecord, record 2's payload damaged; header.tfrecord, record 3's
    length damaged; each with what the report must say about it."""
    frames = [ref.frame(p) for p in PAYLOADS]
    starts = ref.starts([len(p) for p in PAYLOADS])
    good = tmp_path / "good.tfrecord"
    good.write_bytes(b"".join(frames))

    data = bytearray(good.read_bytes())
    body = starts[2] + 12
    data[body + 7] ^= 0x01
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(data)
    stored = int.from_bytes(data[body + 32 : body + 36], "little")
    computed = ref.mask(ref.crc32c(bytes(data[body : body + 32])))
    payload_reason = f"payload CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})"

    data = bytearray(good.read_bytes())
    data[starts[3]] ^= 0xFF
    header = tmp_path / "header.tfrecord"
    header.write_bytes(data)
    stored = int.from_bytes(data[starts[3] + 8 : starts[3] + 12], "little")
    computed = ref.mask(ref.crc32c(bytes(data[starts[3] : starts[3] + 8])))
    length_reason = f"length CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})"
    return {
        "good": str(good),
        "bad": str(bad),
        "header": str(header),
        "frames": frames,
        "starts": starts,
        "payload_reason": payload_reason,
        "length_reason": length_reason,
    }


def test_good_files(files):
    report = tn.verify([files["good"], files["good"]], progress=False)
    assert report.ok and report.damage == [] and report.salvaged is None
    assert [(f.path, f.records, f.payload_bytes) for f in report.files] == [
        (files["good"], 5, sum(map(len, PAYLOADS)))
    ] * 2
    assert report.records == 10
    assert all(f.ok and f.damage == () and f.seconds >= 0 for f in report.files)


def test_each_damaged_stretch_is_reported_not_raised(files):
    report = tn.verify([files["good"], files["bad"], files["header"]], progress=False)
    assert not report.ok
    good, bad, header = report.files
    assert good.ok and not bad.ok and not header.ok
    assert (bad.records, bad.payload_bytes) == (4, sum(map(len, PAYLOADS)) - 32)
    [damage] = bad.damage
    assert isinstance(damage, tn.CorruptRecordError)
    assert (damage.path, damage.record, damage.offset, damage.reason, damage.skipped) == (
        files["bad"],
        2,
        files["starts"][2],
        files["payload_reason"],
        len(files["frames"][2]),
    )
    [damage] = header.damage
    assert (damage.path, damage.record, damage.offset, damage.reason) == (
        files["header"],
        3,
        files["starts"][3],
        files["length_reason"],
    )
    assert damage.skipped == len(files["frames"][3])  # the walk finds record 4's frame
    assert header.records == 4
    assert report.damage == [*bad.damage, *header.damage]


def test_a_cut_compressed_stream_is_damage_too(tmp_path, ref):
    payloads = [bytes([i]) * 3000 for i in range(200)]
    packed = gzip.compress(b"".join(ref.frame(p) for p in payloads))
    cut = tmp_path / "cut.tfrecord.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    [checked] = tn.verify(cut, progress=False).files
    [damage] = checked.damage
    assert damage.reason == (
        "compressed stream is damaged (the compressed stream ends before its end marker)"
    )
    assert 0 < damage.record == checked.records < len(payloads)
    assert checked.payload_bytes == 3000 * checked.records


def test_salvage_copies_the_good_records_in_order(files, tmp_path):
    out = tmp_path / "out" / "salvaged.tfrecord"
    out.parent.mkdir()
    report = tn.verify([files["bad"], files["header"]], salvage=out, progress=False)
    assert (report.salvaged, report.salvaged_records) == (str(out), 8)
    frames = files["frames"]
    good_of_bad = frames[:2] + frames[3:]
    good_of_header = frames[:3] + frames[4:]
    assert out.read_bytes() == b"".join(good_of_bad + good_of_header)
    assert os.listdir(out.parent) == ["salvaged.tfrecord"]


def test_salvaging_good_files_reproduces_them(files, tmp_path):
    out = tmp_path / "copy.tfrecord"
    report = tn.verify(files["good"], salvage=out, progress=False)
    assert report.ok and report.salvaged_records == 5
    assert out.read_bytes() == Path(files["good"]).read_bytes()


def test_a_failed_pass_leaves_no_salvage_file(files, tmp_path, monkeypatch):
    real = verify_module.RecordReader

    def failing(path, **options):
        if path == files["header"]:
            raise OSError(f"cannot read {path}")
        return real(path, **options)

    monkeypatch.setattr(verify_module, "RecordReader", failing)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(OSError, match="cannot read"):
        tn.verify([files["good"], files["header"]], salvage=out / "s.tfrecord", progress=False)
    assert os.listdir(out) == []


def test_inputs_are_found_before_the_salvage_file_is_made(tmp_path):
    missing = tmp_path / "missing.tfrecord"
    with pytest.raises(FileNotFoundError, match="no such file"):
        tn.verify(missing, salvage=tmp_path / "s.tfrecord", progress=False)
    assert os.listdir(tmp_path) == []


def test_progress_is_drawn_only_on_a_terminal(files, capsys):
    tn.verify(files["good"])  # progress=True, but stderr is not a terminal
    assert capsys.readouterr() == ("", "")
