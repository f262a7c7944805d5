"""TFRecord files -> .npy / .npz / HDF5 / Zarr: ds.save, tn.convert, `tfrecnp convert`, the
progress bar, and what an interrupted save leaves behind."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from test_dataset import N_A, SPEC, N, assert_batch, make_files, same, take

import tfrecnp as tn
from tfrecnp._util import progress
from tfrecnp._util.progress import Progress, format_duration, format_rate
from tfrecnp._util.text import format_count, format_size
from tfrecnp.cli import main
from tfrecnp.example.columns import LazyBytes, LazyRagged, Ragged

FORMATS = {"npy": "out", "npz": "out.npz", "hdf5": "out.h5", "zarr": "out.zarr"}


@pytest.fixture(scope="module")
def data(tf, tf_write, tmp_path_factory):
    return make_files(tf, tf_write, tmp_path_factory.mktemp("convert"))


def loaded(path) -> dict:
    """tn.load(path) with lazy columns read into memory."""
    with tn.load(path) as arrays:
        out = {}
        for name, col in arrays.items():
            if isinstance(col, (LazyRagged, LazyBytes)):
                col = col[:]
            elif not isinstance(col, (np.ndarray, Ragged, tn.BytesColumn)):
                col = np.asarray(col[:])
            out[name] = col
        return out


def listing(folder) -> list[str]:
    return sorted(os.listdir(folder))


@pytest.mark.parametrize("fmt", FORMATS)
def test_tensorflow_files_saved_and_loaded_equal_read(data, tmp_path, fmt):
    paths, cols = data
    ref = tn.read(paths, SPEC)
    assert_batch(ref, cols)
    out = tn.open(paths, SPEC).save(tmp_path / FORMATS[fmt], progress=False, batch_size=64)
    assert out == str(tmp_path / FORMATS[fmt])
    assert_batch(loaded(out), ref)
    with tn.load(out) as arrays:
        assert arrays.spec == SPEC and arrays.records == N


@pytest.mark.parametrize("fmt", FORMATS)
def test_convert_views_and_options(data, tmp_path, fmt):
    paths, cols = data
    out = tn.convert(
        paths,
        tmp_path / "x",
        spec=SPEC,
        select=["tokens", "label"],
        format=fmt,
        progress=False,
        batch_size=100,
    )
    assert_batch(loaded(out), {k: cols[k] for k in ("tokens", "label")})
    view = tn.open(paths, SPEC).shard(3, 2)
    out = view.save(tmp_path / FORMATS[fmt], progress=False)
    assert_batch(loaded(out), take(cols, range(2 * N // 3, N)))


def test_sequence_examples_round_trip(tf, tf_write, tmp_path):
    rng = np.random.default_rng(9)
    want_steps, want_words, payloads = [], [], []
    for i in range(40):
        steps = [
            rng.integers(0, 50, rng.integers(0, 4)).tolist() for _ in range(rng.integers(0, 5))
        ]
        words = [b"w%d" % k for k in range(rng.integers(0, 3))]
        want_steps.append(steps)
        want_words.append(words)
        example = tf.train.SequenceExample()
        example.context.feature["id"].int64_list.value.append(i)
        example.context.feature["words"].bytes_list.value.extend(words)
        tokens = example.feature_lists.feature_list["tokens"]
        for s in steps:
            tokens.feature.add().int64_list.value.extend(s)
        payloads.append(example.SerializeToString())
    path = tf_write(tmp_path / "seq.tfrecord", payloads)
    spec = tn.Sequence(
        {"id": tn.FixedLen((), "int64"), "words": tn.VarLen("bytes")},
        {"tokens": tn.VarLen("int64")},
    )
    ref = tn.read(path, spec)
    assert ref["id"].tolist() == list(range(40))
    assert ref["words"].to_list() == want_words
    assert [[list(r) for r in row] for row in ref["tokens"].to_list()] == want_steps
    for fmt, name in FORMATS.items():
        out = tn.convert(path, tmp_path / name, spec=spec, progress=False, batch_size=7)
        assert_batch(loaded(out), ref), fmt
    ds = tn.open(path, spec)
    batch = next(ds.batches(40, pad={"words": 1}, truncate=True))
    assert batch["words"].tolist() == [w[:1] or [b""] for w in want_words]
    assert batch["words_length"].tolist() == [min(len(w), 1) for w in want_words]
    with pytest.raises(ValueError, match=r"^pad: feature 'tokens' decodes to rows of rows"):
        ds.batches(8, pad={"tokens": 3})


# --- interrupted saves ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_exception_mid_save_leaves_no_output(data, tmp_path, monkeypatch, fmt):
    paths, _ = data
    ds = tn.open(paths, SPEC)
    target = tmp_path / FORMATS[fmt]
    decode = type(ds.decoder).decode
    calls = []

    def failing(self, batch, **kwargs):
        calls.append(len(batch))
        if len(calls) == 3:
            raise OSError("disk on fire")
        return decode(self, batch, **kwargs)

    monkeypatch.setattr(type(ds.decoder), "decode", failing)
    with pytest.raises(OSError, match=r"^disk on fire$"):
        ds.save(target, progress=False, batch_size=50)
    assert len(calls) >= 3
    assert listing(tmp_path) == []  # no target, no temporary files
    monkeypatch.undo()
    ds.save(target, progress=False, batch_size=50)  # an earlier good output ...
    monkeypatch.setattr(type(ds.decoder), "decode", failing)
    calls.clear()
    with pytest.raises(OSError, match=r"^disk on fire$"):
        ds.save(target, progress=False, batch_size=50, overwrite=True)
    assert listing(tmp_path) == [FORMATS[fmt]]  # ... stays as it was
    monkeypatch.undo()
    assert_batch(loaded(target), tn.read(paths, SPEC))


def test_save_refuses_to_overwrite(data, tmp_path):
    paths, _ = data
    ds = tn.open(paths, SPEC).take(3)
    ds.save(tmp_path / "out", progress=False)
    with pytest.raises(FileExistsError, match=r"out already exists; pass overwrite=True"):
        ds.save(tmp_path / "out", progress=False)
    ds.take(2).save(tmp_path / "out", progress=False, overwrite=True)
    assert len(loaded(tmp_path / "out")["label"]) == 2


# --- tn.convert dispatch ----------------------------------------------------------------------


def test_convert_sends_array_files_to_the_writer(tf, tmp_path):
    np.save(tmp_path / "x.npy", np.arange(12, dtype=np.float32).reshape(4, 3))
    paths, spec = tn.convert(tmp_path / "x.npy", tmp_path / "x.tfrecord", progress=False)
    assert spec == {"x": tn.FixedLen((3,), "float32")}
    parsed = [
        tf.io.parse_single_example(p, {"x": tf.io.FixedLenFeature([3], tf.float32)})["x"].numpy()
        for p in tf.data.TFRecordDataset(paths[0]).as_numpy_iterator()
    ]
    assert np.array_equal(np.stack(parsed), np.arange(12, dtype=np.float32).reshape(4, 3))
    out = tn.convert(tmp_path / "x.tfrecord", tmp_path / "back.npz", spec=spec, progress=False)
    assert np.array_equal(loaded(out)["x"], np.arange(12, dtype=np.float32).reshape(4, 3))


@pytest.mark.parametrize("fmt", FORMATS)
def test_saved_outputs_convert_back_to_tfrecords(tf, data, tmp_path, fmt):
    """TFRecord -> save -> convert back: TensorFlow parses the same values it first wrote,
    ragged and bytes columns included (read lazily from HDF5 / Zarr)."""
    paths, cols = data
    saved = tn.open(paths, SPEC).save(tmp_path / FORMATS[fmt], progress=False)
    back, spec = tn.convert(saved, tmp_path / "back.tfrecord", progress=False, verify=True)
    assert spec["bbox"] == tn.VarLen("float32", inner_shape=(4,))
    features = {
        "label": tf.io.FixedLenFeature([], tf.int64),
        "vec": tf.io.FixedLenFeature([3], tf.float32),
        "raw": tf.io.FixedLenFeature([2, 3], tf.float32),
        "image/encoded": tf.io.FixedLenFeature([], tf.string),
        "tokens": tf.io.RaggedFeature(tf.int64),
        "names": tf.io.RaggedFeature(tf.string),
        "bbox": tf.io.RaggedFeature(tf.float32),
    }
    parsed = tf.io.parse_example(
        tf.data.TFRecordDataset(back).batch(N).get_single_element(), features
    )
    for name in ("label", "vec", "raw"):
        np.testing.assert_array_equal(parsed[name].numpy(), cols[name])
    assert parsed["image/encoded"].numpy().tolist() == cols["image/encoded"].to_list()
    for name in ("tokens", "names"):
        assert parsed[name].to_list() == cols[name].to_list()
    np.testing.assert_array_equal(parsed["bbox"].flat_values.numpy(), cols["bbox"].values.ravel())
    np.testing.assert_array_equal(parsed["bbox"].row_lengths().numpy(), cols["bbox"].lengths * 4)


# --- the command ------------------------------------------------------------------------------


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_convert_tfrecords(data, tmp_path, capsys):
    paths, cols = data
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(tn.spec_to_json(SPEC))
    status, out, err = run(
        capsys,
        "convert",
        *paths,
        tmp_path / "o",
        "--spec",
        spec_file,
        "--select",
        "label, tokens",
        "--format",
        "npz",
        "--batch-size",
        "33",
        "--no-progress",
    )
    assert (status, err) == (0, "")
    lines = out.splitlines()
    values = format_count(len(cols["tokens"].values))
    assert lines[0].startswith(f"wrote 500 records from 3 files to {tmp_path / 'o'} (npz, ")
    assert lines[1:] == [
        "  'label': int64 [500]",
        f"  'tokens': Ragged int64 [N, None] (500 rows, {values} values)",
        f"open with tn.load({str(tmp_path / 'o')!r})",
    ]
    assert_batch(loaded(tmp_path / "o"), {"label": cols["label"], "tokens": cols["tokens"]})
    status, out, err = run(
        capsys, "convert", paths[0], tmp_path / "o.h5", "--spec", spec_file, "--json"
    )
    doc = json.loads(out)
    assert status == 0 and err == ""
    assert doc["records"] == N_A and doc["format"] == "hdf5" and doc["sources"] == [paths[0]]
    assert doc["bytes"] == os.path.getsize(tmp_path / "o.h5")
    assert doc["columns"]["bbox"] == (
        f"Ragged float32 [N, None, 4] ({N_A} rows, {len(take(cols, range(N_A))['bbox'].values)} "
        "values)"
    )
    assert doc["columns"]["image/encoded"] == f"bytes ({N_A} values)"


def test_cli_convert_errors(data, tmp_path, capsys):
    paths, _ = data
    status, _, err = run(capsys, "convert", paths[0], tmp_path / "o.tfrecord")
    assert status == 2
    assert err.startswith(
        f"tfrecnp convert: error: {tmp_path / 'o.tfrecord'} names a TFRecord file, but "
        "TFRecord sources convert to arrays"
    )
    status, _, err = run(capsys, "convert", paths[0], tmp_path / "o", "--encoding", "raw")
    assert status == 2
    assert err == (
        "tfrecnp convert: error: --encoding applies to converting arrays to TFRecord files; the "
        "sources here are TFRecord files (their compression is detected)\n"
    )
    status, _, err = run(capsys, "convert", paths[0], tmp_path / "o", "--select", "zz")
    assert status == 2 and "no feature 'zz' in the spec" in err
    assert listing(tmp_path) == []


def test_cli_convert_as_a_subprocess(data, tmp_path):
    paths, cols = data
    env = dict(os.environ, PYTHONWARNINGS="error::RuntimeWarning")
    proc = subprocess.run(
        [sys.executable, "-m", "tfrecnp", "convert", paths[0], str(tmp_path / "a.zarr")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # not a terminal: no progress bar
    assert proc.stdout.startswith(f"wrote {N_A} records from 1 file to {tmp_path / 'a.zarr'}")
    got = loaded(tmp_path / "a.zarr")
    assert same(got["label"], cols["label"][:N_A])


# --- progress ---------------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal_only(monkeypatch):
    term = Terminal()
    clock = iter([100.0, 102.0, 104.0, 104.0])  # start, two updates, close
    monkeypatch.setattr(progress, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    bar = Progress("saving out/", total=1000, stream=term)
    bar.update(250, 50_000_000)
    bar.update(250, 50_000_000)
    bar.close()
    frames = term.getvalue().split("\r")[1:]
    assert frames[0].rstrip() == (
        "saving out/: [#####...............]  25% 250/1 000 records 125 rec/s 25 MB/s ETA 0:06"
    )
    assert frames[-1] == (
        "saving out/: [##########..........]  50% 500/1 000 records 125 rec/s 25 MB/s ETA 0:04\n"
    )
    monkeypatch.undo()
    pipe = io.StringIO()
    quiet = Progress("x", total=10, stream=pipe)
    quiet.update(5, 5)
    quiet.close()
    off = Progress("x", total=10, stream=Terminal(), enabled=False)
    off.update(5)
    off.close()
    assert pipe.getvalue() == "" and off.stream.getvalue() == ""
    assert format_rate(1_234_567) == "1.23 M" and format_duration(3725) == "1:02:05"


def test_progress_by_bytes_without_a_record_count(monkeypatch):
    term = Terminal()
    clock = iter([50.0, 51.0, 51.0])
    monkeypatch.setattr(progress, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    with Progress("verify", total_bytes=4 << 20, stream=term) as bar:
        bar.update(100, 1 << 20)
    assert term.getvalue().split("\r")[-1] == (
        "verify: [#####...............]  25% 100 records (1 MiB of 4 MiB) 100 rec/s 1 MB/s "
        "ETA 0:03\n"
    )


def test_save_draws_progress_only_on_a_terminal(data, tmp_path, monkeypatch, capsys):
    paths, _ = data
    tn.open(paths, SPEC).save(tmp_path / "a", batch_size=100)
    assert capsys.readouterr().err == ""
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    tn.open(paths[0], SPEC).save(tmp_path / "b", batch_size=100)
    text = term.getvalue()
    assert text.startswith(f"\rsaving {tmp_path / 'b'}: [") and text.endswith("\n")
    size = format_size(os.path.getsize(paths[0]))  # a whole pass needs no index: bytes count
    assert f"100% {N_A} records ({size} of {size})" in text
    term.seek(0)
    term.truncate(0)
    tn.open(paths, SPEC).save(tmp_path / "c", batch_size=100)  # compressed: no record count
    last = term.getvalue().split("\r")[-1]
    where = re.escape(str(tmp_path / "c"))
    assert re.fullmatch(rf"saving {where}: {N} records \S+ [kMG]?rec/s \S+ MB/s \d+:\d\d *\n", last)
    term.seek(0)
    term.truncate(0)
    tn.open(paths, SPEC).save(tmp_path / "d", progress=False)
    assert term.getvalue() == ""
    status = main(["verify", paths[0]])
    assert status == 0 and "verify: [####################] 100%" in term.getvalue()
