"""The `tfrecnp` command: count, index, verify (and --salvage), head, demo, --help; by calling
main() and as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tfrecnp.cli import main

PAYLOADS = [b"alpha", b"", bytes(range(48, 80)), b"z", b"the last record"]
LENGTHS = [len(p) for p in PAYLOADS]
HINT = "run `tfrecnp verify --salvage OUT` to copy the good records, or pass on_error='skip'"


def run(capsys, *argv):
    """(exit status, stdout, stderr) of main(argv)."""
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Exception ignored" not in err
    return status, out, err


@pytest.fixture
def files(tf_write, tmp_path, ref):
    """A good TF-written file, a second good one, and a copy whose record 2 is damaged."""
    good = tf_write(tmp_path / "good.tfrecord", PAYLOADS)
    other = tf_write(tmp_path / "other.tfrecord", [b"x" * 1000] * 1234)
    data = bytearray(Path(good).read_bytes())
    at = ref.starts(LENGTHS)[2]
    data[at + 12 + 7] ^= 0x01  # a payload byte of record 2
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(data)
    stored = int.from_bytes(data[at + 12 + 32 : at + 16 + 32], "little")
    computed = ref.mask(ref.crc32c(bytes(data[at + 12 : at + 12 + 32])))
    reason = f"payload CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})"
    return {"good": good, "other": other, "bad": str(bad), "at": at, "reason": reason}


def test_count(capsys, files):
    status, out, _ = run(capsys, "count", files["good"])
    assert (status, out) == (0, f"{'5':>14}  {files['good']}\n")
    status, out, _ = run(capsys, "count", files["good"], files["other"])
    assert status == 0
    assert out == (
        f"{'5':>14}  {files['good']}\n{'1 234':>14}  {files['other']}\n{'1 239':>14}  total\n"
    )


def test_count_json_glob_and_compression(capsys, files, tf_write, tmp_path):
    packed = tf_write(tmp_path / "packed.tfrecord.gz", PAYLOADS * 3, "GZIP")
    status, out, _ = run(capsys, "count", "--json", str(tmp_path / "*.tfrecord*"))
    assert status == 0
    assert json.loads(out) == {
        "files": [
            {"path": files["bad"], "records": 5},  # a payload flip leaves the headers intact
            {"path": files["good"], "records": 5},
            {"path": files["other"], "records": 1234},
            {"path": packed, "records": 15},
        ],
        "records": 1259,
    }
    status, out, _ = run(capsys, "count", "--json", "--compression", "GZIP", packed)
    assert json.loads(out)["records"] == 15


def test_index(capsys, files, ref):
    status, out, _ = run(capsys, "index", files["good"], files["other"])
    assert status == 0
    assert out == (f"{files['good']}.idx: 5 records\n{files['other']}.idx: 1 234 records\n")
    lines = [f"{s} {n + 16}\n" for s, n in zip(ref.starts(LENGTHS), LENGTHS, strict=True)]
    assert Path(files["good"] + ".idx").read_text() == "".join(lines)
    status, out, _ = run(capsys, "index", "--json", files["good"])
    assert json.loads(out) == {
        "files": [{"path": files["good"], "index": files["good"] + ".idx", "records": 5}]
    }


def test_index_of_a_compressed_file_needs_the_gzip_extra(capsys, tf_write, tmp_path, monkeypatch):
    """Issue 26: with the extra, see tests/test_compressed_access.py; without it, refused."""
    monkeypatch.setitem(sys.modules, "rapidgzip", None)  # as without the gzip extra
    packed = tf_write(tmp_path / "packed.tfrecord", PAYLOADS, "ZLIB")
    status, out, err = run(capsys, "index", packed)
    assert (status, out) == (2, "")
    assert err == (
        f"tfrecnp index: error: {packed} is ZLIB-compressed: indexing it for reads by position "
        "needs the gzip extra (pip install 'tfrecnp[gzip]'); or decompress it first (e.g. "
        "`gunzip`) and index that\n"
    )
    assert not os.path.exists(packed + ".idx") and not os.path.exists(packed + ".zran.idx")


def test_verify_good(capsys, files):
    status, out, _ = run(capsys, "verify", files["good"], files["other"])
    assert status == 0
    assert out == (
        f"OK           {files['good']}: 5 good records, 53 bytes\n"
        f"OK           {files['other']}: 1 234 good records, 1.18 MiB\n"
    )


def test_verify_corrupt(capsys, files):
    status, out, _ = run(capsys, "verify", files["good"], files["bad"])
    assert status == 1
    assert out == (
        f"OK           {files['good']}: 5 good records, 53 bytes\n"
        f"CORRUPT (1)  {files['bad']}: 4 good records, 21 bytes\n"
        f"    record 2 at byte {files['at']}: {files['reason']}; skipped 48 bytes\n"
    )
    status, out, _ = run(capsys, "verify", "--json", files["bad"])
    assert status == 1
    document = json.loads(out)
    assert document["corrupt"] == 1 and document["salvaged"] is None
    [entry] = document["files"]
    assert entry["path"] == files["bad"]
    assert (entry["records"], entry["payload_bytes"]) == (4, 21)
    assert entry["corrupt"] == [
        {"record": 2, "offset": files["at"], "reason": files["reason"], "skipped_bytes": 48}
    ]


def test_verify_salvage(capsys, files, tf_read, tmp_path):
    out_path = tmp_path / "salvaged" / "good-records.tfrecord"
    out_path.parent.mkdir()
    status, out, _ = run(capsys, "verify", "--salvage", out_path, files["bad"], files["other"])
    assert status == 1
    assert out.endswith(f"salvaged 1 238 good records to {out_path}\n")
    survivors = PAYLOADS[:2] + PAYLOADS[3:] + [b"x" * 1000] * 1234
    assert tf_read(out_path) == survivors
    assert os.listdir(out_path.parent) == ["good-records.tfrecord"]
    # Salvaging good files reproduces them byte for byte (the framing is deterministic).
    copy = tmp_path / "salvaged" / "copy.tfrecord"
    status, _, _ = run(capsys, "verify", "--salvage", copy, files["good"])
    assert status == 0
    assert copy.read_bytes() == Path(files["good"]).read_bytes()


def test_verify_a_damaged_gzip_file(capsys, tf_write, tmp_path, tf_read):
    payloads = [bytes([i]) * 3000 for i in range(200)]
    packed = Path(tf_write(tmp_path / "c.tfrecord", payloads, "GZIP")).read_bytes()
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(packed[: len(packed) // 2])
    status, out, _ = run(capsys, "verify", "--json", "--salvage", tmp_path / "out.tfrecord", cut)
    assert status == 1
    [entry] = json.loads(out)["files"]
    [damage] = entry["corrupt"]
    assert damage["reason"] == (
        "compressed stream is damaged (the compressed stream ends before its end marker)"
    )
    assert damage["record"] == entry["records"] > 0
    assert tf_read(tmp_path / "out.tfrecord") == payloads[: entry["records"]]


def test_salvage_into_a_missing_directory(capsys, files, tmp_path):
    out = tmp_path / "no" / "out.tfrecord"
    status, _, err = run(capsys, "verify", "--salvage", out, files["good"])
    assert status == 2
    assert err == f"tfrecnp verify: error: cannot write {out}: no such directory {out.parent}\n"


def test_missing_input(capsys, tmp_path):
    missing = tmp_path / "missing.tfrecord"
    for command in ("count", "index", "verify"):
        status, out, err = run(capsys, command, missing)
        assert (status, out) == (2, "")
        assert err == f"tfrecnp {command}: error: no such file: {missing}\n"


def test_corrupt_headers_make_count_fail_cleanly(capsys, files, tmp_path, ref):
    data = bytearray(Path(files["good"]).read_bytes())
    at = ref.starts(LENGTHS)[3]
    data[at] ^= 0xFF
    path = tmp_path / "header.tfrecord"
    path.write_bytes(data)
    stored = int.from_bytes(data[at + 8 : at + 12], "little")
    computed = ref.mask(ref.crc32c(bytes(data[at : at + 8])))
    status, out, err = run(capsys, "count", path)
    assert (status, out) == (2, "")
    assert err == (
        f"tfrecnp count: error: length CRC mismatch (stored 0x{stored:08x}, computed "
        f"0x{computed:08x}) at {path} record 3 (byte {at}); {HINT}\n"
    )
    status, out, err = run(capsys, "index", path)
    assert (status, out) == (2, "") and err.startswith("tfrecnp index: error: length CRC")
    assert not os.path.exists(f"{path}.idx")


def test_demo(capsys, tmp_path, tf_read):
    status, out, _ = run(capsys, "demo", "--records", 1500, "--out", tmp_path / "demo")
    assert status == 0
    sample = tmp_path / "demo" / "sample.tfrecord"
    lines = out.splitlines()
    assert lines[0].startswith(f"wrote    {sample}: 1 500 records, ")
    assert lines[1].startswith("counted  1 500 records from frame headers in ")
    assert lines[2].startswith("verified every CRC and payload in ")
    assert lines[2].endswith("all records match")
    assert lines[3].startswith(f"saved    {tmp_path / 'demo' / 'sample-npy'}/ in ")
    assert lines[4].endswith("same as written")
    assert lines[5].startswith("streamed 1 500 records as batches of 1024")
    assert len(tf_read(sample)) == 1500
    assert sorted(os.listdir(tmp_path / "demo")) == ["sample-npy", "sample.tfrecord"]


@pytest.mark.parametrize("command", [[], ["count"], ["index"], ["verify"], ["demo"]])
def test_help(capsys, command):
    with pytest.raises(SystemExit) as e:
        main([*command, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: tfrecnp {command[0]}" if command else "usage: tfrecnp")
    for option in {"count": ["--json", "--compression"], "verify": ["--salvage"]}.get(
        command[0] if command else "", []
    ):
        assert option in out


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["count"])
    assert e.value.code == 2
    assert "the following arguments are required: PATH" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["head", "-n", "0", "x.tfrecord"],
            "tfrecnp head: error: argument -n: must be at least 1, not 0",
        ),
        (
            ["head", "-n", "-3", "x.tfrecord"],
            "tfrecnp head: error: argument -n: must be at least 1, not -3",
        ),
        (
            ["demo", "--records", "0"],
            "tfrecnp demo: error: argument --records: must be at least 1, not 0",
        ),
        (
            ["demo", "--records", "many"],
            "tfrecnp demo: error: argument --records: expected a whole number, not 'many'",
        ),
    ],
)
def test_counts_below_one_are_usage_errors(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)  # a demo that ran anyway would write here
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == message
    assert os.listdir(tmp_path) == []


def test_convert_into_a_missing_directory(capsys, tmp_path):
    np.save(tmp_path / "a.npy", np.arange(3))
    out = tmp_path / "missing" / "o.tfrecord"
    status, _, err = run(capsys, "convert", tmp_path / "a.npy", out)
    assert status == 2
    assert err == f"tfrecnp convert: error: cannot write {out}: no such directory {out.parent}\n"
    assert sorted(os.listdir(tmp_path)) == ["a.npy"]


def test_as_a_subprocess(files, tmp_path):
    script = Path(sys.executable).with_name("tfrecnp")
    assert script.exists()
    done = subprocess.run(
        [script, "count", "--json", files["good"]], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "files": [{"path": files["good"], "records": 5}],
        "records": 5,
    }

    done = subprocess.run(
        [sys.executable, "-m", "tfrecnp", "verify", files["bad"]],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert f"record 2 at byte {files['at']}: {files['reason']}" in done.stdout
    assert "Exception ignored" not in done.stderr

    done = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("usage: tfrecnp")


def test_inspect_and_head_read_array_files(capsys, tmp_path):
    import h5py

    x = np.asfortranarray(np.arange(12.0).reshape(4, 3))  # Fortran order, read through its header
    np.save(tmp_path / "x.npy", x)
    status, out, _ = run(capsys, "inspect", tmp_path / "x.npy")
    assert status == 0
    assert "4 records" in out and "tn.FixedLen((3,), 'float64')" in out
    status, out, _ = run(capsys, "head", tmp_path / "x.npy", "-n", 2, "--json")
    assert [r["x"] for r in json.loads(out)] == x[:2].tolist()

    with h5py.File(tmp_path / "d.h5", "w") as f:
        f["train/image"] = np.zeros((5, 2, 2), np.uint8)
        f["train/label"] = np.arange(5)
        f["test/label"] = np.arange(3)
    status, out, _ = run(capsys, "inspect", tmp_path / "d.h5", "--key", "train", "--json")
    spec = json.loads(out)["features"]
    assert spec == {
        "image": {"type": "FixedLen", "shape": [2, 2], "dtype": "uint8"},
        "label": {"type": "FixedLen", "shape": [], "dtype": "int64"},
    }
    status, out, _ = run(capsys, "head", tmp_path / "d.h5", "--key", "train", "-n", 9)
    assert out.count("record ") == 5 and "label  4" in out
    status, _, err = run(capsys, "head", tmp_path / "d.h5", "--key", "valid")
    assert status == 2 and "no dataset or group 'valid'" in err and "train/label" in err


def test_a_warning_is_one_line_on_screen(tmp_path):
    """`tfrecnp inspect` on a folder with other files: the warning naming them is one
    `tfrecnp inspect: warning: ...` line, without a line of tfrecnp's source under it."""
    import tfrecnp as tn

    tn.write(tmp_path / "a.tfrecord", {"x": np.arange(5)}, progress=False)
    (tmp_path / "README").write_text("about the data\n")
    (tmp_path / "notes.txt").write_text("more\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    script = Path(sys.executable).with_name("tfrecnp")
    done = subprocess.run(
        [script, "inspect", tmp_path], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "tn.FixedLen((), 'int64')" in done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("tfrecnp inspect: warning: passed over 2 files")
    assert "README" in lines[0] and "notes.txt" in lines[0]
    assert ".py:" not in done.stderr and "UserWarning" not in done.stderr


def _labels(tf, values):
    """tf.train.Example payloads, one int64 "label" each."""
    return [
        tf.train.Example(
            features=tf.train.Features(
                feature={"label": tf.train.Feature(int64_list=tf.train.Int64List(value=[v]))}
            )
        ).SerializeToString()
        for v in values
    ]


def test_head_names_each_record_by_its_file_and_place_there(capsys, tmp_path, tf_write, tf):
    """The first records span files: each is named by its file and its index in that file
    (a GZIP file too), whatever the files before it hold."""
    examples = _labels(tf, range(10))
    first = tf_write(tmp_path / "a.tfrecord", examples[:2])
    empty = tf_write(tmp_path / "b.tfrecord", [])
    packed = tf_write(tmp_path / "c.tfrecord", examples[2:], "GZIP")
    status, out, _ = run(capsys, "head", "--json", "-n", 4, first, empty, packed)
    assert status == 0
    assert [(r["path"], r["record"], r["label"]) for r in json.loads(out)] == [
        (first, 0, 0),
        (first, 1, 1),
        (packed, 0, 2),
        (packed, 1, 3),
    ]
    status, out, _ = run(capsys, "head", "-n", 1, packed)
    assert (status, out) == (0, f"record 0 of {packed}\n  label  2\n")


def test_head_of_a_file_damaged_at_its_first_record(capsys, tmp_path, tf_write, tf):
    path = Path(tf_write(tmp_path / "a.tfrecord", _labels(tf, range(3))))
    data = bytearray(path.read_bytes())
    data[12 + 2] ^= 0x01  # a payload byte of record 0
    path.write_bytes(data)
    spec = tmp_path / "spec.json"
    spec.write_text('{"features": {"label": {"type": "FixedLen", "shape": [], "dtype": "int64"}}}')
    status, out, err = run(capsys, "head", path, "--spec", spec)
    assert (status, out) == (2, "")
    assert err.startswith("tfrecnp head: error: payload CRC mismatch (stored 0x")
    assert f"at {path} record 0 (byte 0)" in err
