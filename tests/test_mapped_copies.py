"""Copies out of memory maps (.npy, saved folders) go through the core's SIGBUS guard
(`arrays/mapped.py`, `_core/mapcopy.pyx`): values equal NumPy's own reads, batches never
hold views of a map, a file cut under the map gives a FileChangedError, and a fault that
is not ours still reaches the handler that was there before us (child processes)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tfrecnp as tn
from tfrecnp._core.mapcopy import copy_runs
from tfrecnp._util.memory import read_only_map
from tfrecnp.arrays.access import read_rows, read_span


@pytest.mark.parametrize("order", ["C", "F"])
def test_spans_and_rows_out_of_a_map_equal_numpy(order, tmp_path):
    data = np.asarray(np.random.default_rng(0).random((1000, 3, 5)), order=order)
    np.save(tmp_path / "a.npy", data)
    mapped = np.load(tmp_path / "a.npy", mmap_mode="r")
    assert read_only_map(mapped) is not None
    for a, b in [(0, 1000), (17, 18), (990, 2000), (5, 5)]:
        got = read_span(mapped, a, b)
        assert read_only_map(got) is None
        np.testing.assert_array_equal(got, data[a:b])
    ids = np.array([999, 0, 3, 3, 998, 500])
    np.testing.assert_array_equal(read_rows(mapped, ids), data[ids])
    with pytest.raises(IndexError):
        read_rows(mapped, np.array([1000]))


def test_a_saved_folder_gives_copies_not_views_of_its_maps(tmp_path):
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 9, 2000)
    columns = {
        "v": tn.Ragged.from_lengths(rng.random(lengths.sum()).astype(np.float32), lengths),
        "b": tn.BytesColumn.from_list([bytes([i % 256]) * (i % 40) for i in range(2000)]),
        "x": np.arange(2000),
    }
    tn.write(tmp_path / "r.tfrecord", columns, progress=False)
    tn.open(tmp_path / "r.tfrecord").save(tmp_path / "saved", progress=False)
    ds = tn.open(tmp_path / "saved")
    ids = [1999, 3, 3, 700]
    got = ds[ids]
    assert got["v"].to_list() == columns["v"].take(ids).to_list()
    assert got["b"].to_list() == columns["b"].take(ids).to_list()
    for batch in ds.batches(300, shuffle=True, seed=0):
        for col in batch.values():
            buffers = [col.values, col.row_splits] if isinstance(col, tn.Ragged) else [col]
            if isinstance(col, tn.BytesColumn):
                buffers = [col.data, col.offsets]
            assert all(read_only_map(buf) is None for buf in buffers if hasattr(buf, "base"))


def test_a_cut_npy_file_names_the_first_row_it_no_longer_holds(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.zeros((4096, 1024), np.uint8))  # 4 MiB of rows after a 128-byte header
    ds = tn.open(path)
    with open(path, "r+b") as f:
        f.truncate(128 + 1000 * 1024)
    with pytest.raises(tn.FileChangedError) as e:
        ds[[5, 3000]]
    assert (e.value.path, e.value.record) == (str(path), 3000)
    with pytest.raises(tn.FileChangedError) as e:
        list(ds.batches(4096))
    assert e.value.record == 1000 and e.value.size == 128 + 1000 * 1024
    assert e.value.expected == 128 + 4096 * 1024


def test_copy_runs_checks_every_run_against_its_buffers():
    src = np.arange(100, dtype=np.uint8)
    out = np.empty(10, np.uint8)
    assert copy_runs(src, np.array([90, 0], np.int64), np.array([5, 5], np.int64), out) == -1
    assert out.tolist() == [90, 91, 92, 93, 94, 0, 1, 2, 3, 4]
    for starts, sizes in [([96], [5]), ([-1], [2]), ([0], [-3]), ([0, 0], [6, 6])]:
        with pytest.raises(ValueError):
            copy_runs(src, np.array(starts, np.int64), np.array(sizes, np.int64), out)


_FOREIGN = r"""
import faulthandler, os, sys
import numpy as np
from tfrecnp.arrays.access import read_span
faulthandler.enable()  # installed first: ours goes on top and must hand it what is not ours
path = sys.argv[1]
np.save(path, np.zeros((1 << 16, 64), np.uint8))
mapped = np.load(path, mmap_mode="r")
read_span(mapped, 0, 10)  # a guarded copy: our handler is now installed
os.truncate(path, 128)
try:
    read_span(mapped, 60000, 60010)
except Exception as e:
    print(type(e).__name__, flush=True)
np.array(mapped[-10:])  # not ours: the process must die as it would without us
print("survived", flush=True)
"""


def test_a_fault_outside_our_copies_reaches_the_handler_installed_before_ours(tmp_path):
    env = dict(os.environ)
    sanitized = "libasan" in env.get("LD_PRELOAD", "")  # make asan: ASan's handler is first
    if sanitized:  # its report of this intended death goes to the child's stderr
        env["ASAN_OPTIONS"] = re.sub(r"log_path=[^:]*", "log_path=stderr", env["ASAN_OPTIONS"])
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_FOREIGN), str(tmp_path / "a.npy")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert child.stdout.split() == ["FileChangedError"]
    if sanitized:
        assert "AddressSanitizer: BUS" in child.stderr
    else:
        assert child.returncode == -7  # SIGBUS, after faulthandler has spoken
        assert "Fatal Python error: Bus error" in child.stderr
