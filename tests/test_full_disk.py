"""A disk that fills up mid-write (a real 512 KiB tmpfs, mounted by the test), a file-size
limit (a real RLIMIT_FSIZE) and a read-only folder (a read-only tmpfs): write, save and
convert raise OSError with the storage's errno, naming the output, and leave nothing behind."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from contextlib import contextmanager

import numpy as np
import pytest

import tfrecnp as tn


@contextmanager
def tmpfs(mount, options):
    """A real tmpfs mounted at `mount` (made if missing) for the block, then unmounted."""
    mount.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


@pytest.fixture
def small_disk(tmp_path):
    with tmpfs(tmp_path / "small", "size=512k") as mount:
        yield mount


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


# A file-size limit (RLIMIT_FSIZE: `ulimit -f`, or a quota) makes a write fail with EFBIG.
# Set in a child process of its own; SIGXFSZ ignored, so the write returns the error rather
# than the signal killing the process.
_LIMITED = """
import errno, json, os, resource, signal, sys
import tfrecnp as tn, numpy as np
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, resource.RLIM_INFINITY))
out, src, how = sys.argv[1:]
try:
    if how == "write":
        tn.write(out, {"x": np.zeros((10_000, 64), np.float32)}, progress=False)
    elif how == "sharded":
        tn.write(out, {"x": np.zeros((10_000, 64), np.float32)}, records_per_shard=1000,
                 index=True, progress=False)
    else:
        tn.open(src).save(out, format=how, progress=False)
except OSError as e:
    print(json.dumps({"errno": e.errno, "message": str(e), "type": type(e).__name__}))
"""


@pytest.mark.parametrize(
    "name, how",
    [
        ("out.tfrecord", "write"),
        ("data.tfrecord", "sharded"),
        ("saved", "npy"),
        ("out.npz", "npz"),
        ("out.h5", "hdf5"),
        ("out.zarr", "zarr"),
    ],
)
def test_a_file_size_limit_names_the_output_and_leaves_nothing(tmp_path, records, name, how):
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / name
    done = subprocess.run(
        [sys.executable, "-c", _LIMITED, str(out), str(records), how],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout, "the write did not fail: the limit is too high for this output"
    got = json.loads(done.stdout)
    assert got["errno"] == errno.EFBIG and got["type"] == "OSError"
    assert str(out) in got["message"] and "nothing that looks complete is left" in got["message"]
    assert "ulimit -f" in got["message"]
    assert os.listdir(folder) == []


def test_the_cli_says_a_write_error_in_one_line(tmp_path, records):
    # `tfrecnp convert` under a file-size limit: one error line naming the output, status 2
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, resource.RLIM_INFINITY))

    out = tmp_path / "out" / "copy.npz"
    out.parent.mkdir()
    cli = os.path.join(os.path.dirname(sys.executable), "tfrecnp")
    command = [cli, "convert", str(records), str(out), "--no-progress"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, preexec_fn=limit)
    assert done.returncode == 2, done.stderr
    said = done.stderr
    assert said.startswith(f"tfrecnp convert: error: [Errno {errno.EFBIG}]"), said
    assert str(out) in done.stderr and "Traceback" not in done.stderr
    assert os.listdir(out.parent) == []


@pytest.fixture
def read_only_disk(tmp_path):
    with tmpfs(tmp_path / "ro", "ro,size=64k") as mount:
        yield mount


@pytest.mark.parametrize("name", ["out.tfrecord", "saved", "out.npz", "out.h5", "out.zarr"])
def test_a_read_only_folder_names_the_output_not_a_hidden_name(read_only_disk, records, name):
    # the error comes from creating the file: it named the hidden temporary name before
    out = read_only_disk / name
    with pytest.raises(OSError) as e:
        if name == "out.tfrecord":
            _write(out)
        else:
            tn.open(records).save(out, progress=False)
    assert e.value.errno == errno.EROFS
    assert f"while writing {out};" in str(e.value) and ".tmp-" not in str(e.value)
    assert "read-only" in str(e.value)


def test_an_index_into_a_read_only_folder_names_the_sidecar(tmp_path):
    # `tfrecnp index` beside files on a read-only mount: the .idx is named, not its hidden name
    with tmpfs(tmp_path / "ro", "size=64k") as mount:
        path = mount / "data.tfrecord"
        tn.write(path, {"x": np.arange(10)}, progress=False)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        with pytest.raises(OSError) as e:
            tn.framing.write_index(tn.framing.scan_file(path, use_index=False))
        assert e.value.errno == errno.EROFS
        assert f"while writing {path}.idx;" in str(e.value) and ".tmp-" not in str(e.value)
        assert os.listdir(mount) == ["data.tfrecord"]
