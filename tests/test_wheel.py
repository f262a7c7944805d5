"""The wheel `make wheel` builds installs and works in a fresh virtual environment with no C
compiler on PATH: the compiled core travels inside it, nothing is built at install time."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPILERS = ("cc", "gcc", "clang", "c++", "g++")

SMOKE = r"""
import os, shutil, sys
import numpy as np
import tfrecnp as tn

for compiler in COMPILERS:
    assert shutil.which(compiler) is None, f"{compiler} on PATH: {shutil.which(compiler)}"
assert tn.__file__.startswith(sys.prefix), tn.__file__   # the wheel's copy, not the checkout

paths, spec = tn.write("smoke.tfrecord", {"x": np.arange(300, dtype=np.float32).reshape(100, 3),
                                          "label": np.arange(100)}, progress=False)
ds = tn.open("smoke.tfrecord")
assert len(ds) == 100 and ds[42]["label"] == 42
assert np.array_equal(ds[7]["x"], [21, 22, 23])
seen = np.concatenate([b["label"] for b in ds.batches(32, shuffle=True, seed=0)])
assert sorted(seen) == list(range(100))

data = bytearray(open("smoke.tfrecord", "rb").read())
data[len(data) // 2] ^= 0xFF                       # a flipped byte inside some record
open("damaged.tfrecord", "wb").write(data)
try:
    tn.read("damaged.tfrecord")
except tn.CorruptRecordError as e:
    assert "damaged.tfrecord" in str(e), e
    print("typed error:", e)
else:
    raise AssertionError("a damaged file read without error")
print("smoke ok", tn.__version__)
"""


def test_wheel_installs_and_runs_without_a_compiler(tmp_path):
    dist = tmp_path / "dist"  # (and its own build folder: two runs never share one)
    make = ["make", "--no-print-directory", "wheel", f"DIST={dist}", f"WHEEL_BUILD={tmp_path}/b"]
    subprocess.run(make, cwd=ROOT, check=True)
    (wheel,) = dist.glob("*.whl")
    assert "manylinux" in wheel.name, wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("tfrecnp/_core/framing.") and n.endswith(".so") for n in names)
    assert not [n for n in names if n.endswith(".c")], "generated C left in the wheel"

    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    bare = tmp_path / "bin"  # PATH holds this folder only: python and pip, no compiler
    bare.mkdir()
    for tool in ("python", "pip"):  # (a symlink would leave the venv: Python finds it by path)
        (bare / tool).write_text(f'#!/bin/sh\nexec "{env_dir / "bin" / tool}" "$@"\n')
        (bare / tool).chmod(0o755)
    for compiler in COMPILERS:
        assert shutil.which(compiler, path=str(bare)) is None
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = str(bare)

    subprocess.run(
        ["pip", "install", "--quiet", "--only-binary=:all:", str(wheel)],
        cwd=tmp_path,
        env=env,
        check=True,
    )
    work = tmp_path / "work"
    work.mkdir()
    script = work / "smoke.py"
    script.write_text(f"COMPILERS = {COMPILERS!r}\n{SMOKE}")
    run = subprocess.run(["python", str(script)], cwd=work, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "typed error: " in run.stdout and "smoke ok" in run.stdout, run.stdout
    cli = subprocess.run(
        ["python", "-m", "tfrecnp", "count", "smoke.tfrecord"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0 and "100" in cli.stdout, cli.stdout + cli.stderr
