"""`tfrecnp bench`: both sides timed on the user's files, the ratio printed; without
TensorFlow, tfrecnp alone and the line that says how to install it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tfrecnp as tn
from tfrecnp.cli import main


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 9, 3000)
    cols = {
        "label": np.arange(3000),
        "x": rng.random((3000, 4), dtype=np.float32),
        "tokens": tn.Ragged.from_lengths(rng.integers(0, 99, lengths.sum()), lengths),
        "raw": rng.random((3000, 2, 3), dtype=np.float32),
    }
    paths, spec = tn.write(
        tmp_path / "d.tfrecord", cols, encoding={"raw": "raw"}, records_per_shard=1000,
        progress=False,
    )  # fmt: skip
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(tn.spec_to_json(spec), encoding="utf-8")
    return paths, spec_file


def test_bench_times_both_sides_and_prints_the_ratio(files, capsys):
    paths, spec_file = files
    assert main(["bench", *paths, "--spec", str(spec_file), "--seconds", "5"]) == 0
    out = capsys.readouterr().out
    assert "3 file(s), batch 32, up to 5 s a side" in out
    assert "tfrecnp" in out and "TensorFlow" in out
    assert "(3,000 records in" in out  # both sides read the whole of these small files
    assert out.count("(3,000 records in") == 2
    assert "x TensorFlow here" in out


def test_bench_json(files, capsys):
    paths, spec_file = files
    argv = ["bench", *paths, "--spec", str(spec_file), "--batch-size", "256"]
    assert main([*argv, "--shuffle", "500", "--seconds", "5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["batch_size"] == 256 and result["shuffle"] == 500
    assert result["tfrecnp"]["records"] == result["tensorflow"]["records"] == 3000
    assert result["tfrecnp"]["batches"] == result["tensorflow"]["batches"] == 12
    expect = result["tfrecnp"]["records_per_s"] / result["tensorflow"]["records_per_s"]
    assert result["ratio"] == pytest.approx(expect)
    assert result["tensorflow_cannot_read"] == [] and result["tensorflow_installed"]


def test_bench_infers_the_spec(files, capsys):
    paths, _ = files
    assert main(["bench", paths[0], "--seconds", "5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tfrecnp"]["records"] == 1000 == result["tensorflow"]["records"]


def test_bench_without_tensorflow_says_how_to_install_it(files):
    paths, spec_file = files
    code = (
        "import sys; sys.modules['tensorflow'] = None\n"
        "from tfrecnp.cli import main\n"
        f"sys.exit(main(['bench', *{paths!r}, '--spec', {str(spec_file)!r}, '--seconds', '5']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "tfrecnp" in proc.stdout and "(3,000 records in" in proc.stdout
    assert "x TensorFlow" not in proc.stdout
    assert "pip install tensorflow-cpu (or pip install 'tfrecnp[tf]')" in proc.stdout


def test_bench_prints_no_tensorflow_start_up_log(files):
    """The real command: TensorFlow's start-up lines (absl's pre-init notice, oneDNN,
    cpu_feature_guard) do not come above the table; oneDNN stays as TensorFlow set it."""
    paths, spec_file = files
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "PYTHONWARN"))}
    script = Path(sys.executable).with_name("tfrecnp")
    argv = [script, "bench", paths[0], "--spec", spec_file, "--seconds", "1"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "x TensorFlow here" in proc.stdout
    for noise in ("absl", "oneDNN", "cpu_feature_guard", "I0000", "tf_record_dataset_op"):
        assert noise not in proc.stderr, proc.stderr
    assert proc.stderr == ""
