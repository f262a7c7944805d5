"""A disk that fills up mid-write (a real 512 KiB tmpfs, mounted by the test): write, save
and convert raise OSError(ENOSPC) naming the output, and leave nothing behind."""

from __future__ import annotations

import errno
import os
import subprocess

import numpy as np
import pytest

import tfrecnp as tn


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "data.tfrecord"
    rng = np.random.default_rng(0)
    x = rng.random((20_000, 16), dtype=np.float32)
    tn.write(path, {"x": x}, progress=False)
    np.save(str(path) + ".npy", x)  # an array source for arrays -> TFRecord
    return path


def _write(out):
    tn.write(out, {"x": np.zeros((10_000, 64), np.float32)}, progress=False)


def _write_sharded(out):
    tn.write(out, {"x": np.zeros((10_000, 64), np.float32)}, records_per_shard=1000, index=True,
             progress=False)  # fmt: skip


@pytest.mark.parametrize(
    "name, make",
    [
        ("out.tfrecord", lambda out, src: _write(out)),
        ("data.tfrecord", lambda out, src: _write_sharded(out)),
        ("out.npz", lambda out, src: tn.open(src).save(out, progress=False)),
        ("saved", lambda out, src: tn.open(src).save(out, progress=False)),
        ("out.h5", lambda out, src: tn.convert(src, out, progress=False)),
        ("out.zarr", lambda out, src: tn.convert(src, out, progress=False)),
        ("from_npy.tfrecord", lambda out, src: tn.convert(str(src) + ".npy", out)),
    ],
)
def test_a_full_disk_names_the_output_and_leaves_nothing(small_disk, records, name, make):
    out = small_disk / name
    with pytest.raises(OSError) as e:
        make(out, records)
    assert e.value.errno == errno.ENOSPC
    assert str(out) in str(e.value) and "nothing that looks complete is left" in str(e.value)
    assert os.listdir(small_disk) == []
