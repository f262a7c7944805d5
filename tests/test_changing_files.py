"""Files that change while they are read (issue 34): no process ever dies, every error is
typed and names the file, nothing wrong is delivered, and nothing is lost in silence.

Each way of reading runs in a child process (tests/child_changing_files.py) that cuts the
file to half or to zero, rewrites it in place, replaces it by rename or appends to it, at
0, 1, 3 and 10 ms after the first batch, repeated to catch a race; the parent checks the
exit status is not a signal and judges what each try delivered. Then the limits users run
under: thousands of fresh datasets under a 256-descriptor limit and a 2 GiB address-space
limit, and the peak RSS (mapped pages included: VmHWM) of converting a 1 GiB file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tfrecnp as tn

CHILD = Path(__file__).with_name("child_changing_files.py")
N = 3000
WIDTH = 8192
REPEATS = {"dataloader": 1}  # a DataLoader's workers take a second to start


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """N records of 8 KiB (x[j] == (label + j) % 251, the child's check) and a label."""
    path = tmp_path_factory.mktemp("changing") / "pristine.tfrecord"
    labels = np.arange(N)
    x = ((labels[:, None] + np.arange(WIDTH)) % 251).astype(np.uint8)
    tn.write(path, {"x": x, "label": labels}, encoding={"x": "raw"}, progress=False)
    return path


@pytest.fixture(scope="module")
def pristine_arrays(pristine, tmp_path_factory) -> Path:
    """The same records saved as a folder of .npy files, which are read through maps."""
    folder = tmp_path_factory.mktemp("changing") / "pristine"
    spec = {"x": tn.Raw("uint8", shape=(WIDTH,)), "label": tn.FixedLen((), "int64")}
    tn.open(pristine, spec).save(folder, progress=False)
    return folder


def _run_child(mode: str, pristine: Path, workdir: Path) -> list[dict]:
    repeats = REPEATS.get(mode, 3)
    child = subprocess.run(
        [sys.executable, str(CHILD), mode, str(pristine), str(workdir), str(repeats)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode >= 0, (  # a negative status is the signal that ended it
        f"the child reading in mode {mode!r} died by signal {-child.returncode} after "
        f"{len(child.stdout.splitlines())} tries: {child.stderr[-2000:]}"
    )
    assert child.returncode == 0, child.stderr[-3000:]
    tries = [json.loads(line) for line in child.stdout.splitlines()]
    assert len(tries) == 5 * 4 * repeats
    return tries


def _named(message: str, source: str) -> bool:
    return ("data.tfrecord" if source == "tfrecord" else "x.npy") in message


@pytest.mark.parametrize(
    "mode", ["stream", "order", "shuffle", "shuffle_all", "ds_i", "ds_list", "dataloader"]
)
@pytest.mark.parametrize("source", ["tfrecord", "npy"])
def test_a_file_changed_while_it_is_read_gives_an_error_never_a_death(
    mode, source, pristine, pristine_arrays, tmp_path
):
    if mode == "dataloader":
        pytest.importorskip("torch")
    tries = _run_child(mode, pristine if source == "tfrecord" else pristine_arrays, tmp_path)
    whole_passes = mode not in ("ds_i", "ds_list")
    for t in tries:
        assert t["wrong"] == 0, t  # every value delivered is the file's
        if t["error"] is not None:
            assert t["typed"], t  # a tn error, raised again typed from a DataLoader worker
            assert _named(t["message"], source), t
            assert "killed by signal" not in t["message"], t
            assert t["change"] != "rename", t  # the old file, still open, reads to its end
        elif whole_passes:  # ended: every record, once (appended ones are not the pass's)
            assert (t["delivered"], t["distinct"]) == (N, N), t
    cuts = [t for t in tries if t["change"] in ("half", "zero")]
    if (source, mode) == ("npy", "shuffle"):  # the pool of 10 000 took all 3 000 rows
        return  # before the first batch: nothing is read after the cut
    assert sum(t["error"] is not None for t in cuts) >= len(cuts) // 4  # the cuts were seen
    if mode in ("order", "shuffle", "shuffle_all", "stream"):
        assert any(t["error"] == "FileChangedError" for t in cuts)


_MANY = r"""
import os, resource, sys
import numpy as np
import tfrecnp as tn
resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
folder = sys.argv[1]
paths = sorted(os.path.join(folder, p) for p in os.listdir(folder))
spec = {"x": tn.Raw("uint8", shape=(8192,)), "label": tn.FixedLen((), "int64")}
total = 0
for k in range(2000):
    ds = tn.open(paths[k % len(paths)], spec)
    if k % 3:
        len(ds)
    shuffle = (False, 100, True)[k % 3]
    total += sum(len(b["label"]) for b in ds.batches(16, shuffle=shuffle, seed=k))
    total += len(ds[[1, 0]]["label"]) + int(ds[2]["label"] == 2)
print(total)
"""


def test_two_thousand_fresh_datasets_under_fd_and_address_space_limits(tmp_path):
    rng = np.random.default_rng(0)
    for k in range(8):
        x = rng.integers(0, 255, (40, 8192), dtype=np.uint8)
        cols = {"x": x, "label": np.arange(40)}
        tn.write(tmp_path / f"{k}.tfrecord", cols, encoding={"x": "raw"}, progress=False)
    child = subprocess.run(
        [sys.executable, "-c", _MANY, str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    assert child.returncode == 0, child.stderr[-3000:]
    assert int(child.stdout.split()[-1]) == 2000 * (40 + 3)


_BIG = r"""
import resource, sys
import tfrecnp as tn
if sys.argv[2] == "limited":
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
spec = {"x": tn.Raw("float32", shape=(4096,)), "label": tn.FixedLen((), "int64")}
counts = []
if sys.argv[2] == "convert":
    tn.convert(sys.argv[1], sys.argv[3], spec=spec, format="npy")
else:
    ds = tn.open(sys.argv[1], spec)
    for batch_size in (32, 1024, 8192):
        for shuffle in (False, 10_000, True):
            counts.append(sum(len(b["label"]) for b in ds.batches(batch_size, shuffle=shuffle)))
peak = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
print(peak >> 10, *counts)
"""


@pytest.fixture(scope="module")
def gib_file(tmp_path_factory) -> Path:
    """1 GiB of 16 KiB float32 tensors (65 536 records)."""
    path = tmp_path_factory.mktemp("gib") / "big.tfrecord"
    rng = np.random.default_rng(1)
    with tn.Writer(path, encoding={"x": "raw"}, progress=False) as writer:
        for k in range(0, 1 << 16, 4096):
            x = rng.random((4096, 4096), dtype=np.float32)
            writer.write_batch({"x": x, "label": np.arange(k, k + 4096)})
    return path


def _big_child(path: Path, how: str, out: Path | None = None) -> list[int]:
    args = [sys.executable, "-c", _BIG, str(path), how, str(out)]
    child = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert child.returncode == 0, child.stderr[-3000:]
    return [int(v) for v in child.stdout.split()]


def test_converting_a_gib_file_peaks_at_the_batch_memory_not_the_file(gib_file, tmp_path):
    peak, *_ = _big_child(gib_file, "convert", tmp_path / "out")
    assert peak <= 300, f"peak RSS {peak} MiB converting a 1 GiB file"
    labels = np.load(tmp_path / "out" / "label.npy", mmap_mode="r")
    assert np.array_equal(labels, np.arange(1 << 16))


def test_a_gib_file_reads_at_every_batch_size_under_a_2_gib_address_space(gib_file):
    _, *counts = _big_child(gib_file, "limited")
    assert counts == [1 << 16] * 9
