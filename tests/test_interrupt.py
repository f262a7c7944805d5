"""Ctrl-C at any moment of save, write or convert (a SIGINT sent to a child process after a
random, seeded delay) leaves either the whole, valid output (when it had finished) or no
output at all: no final name, and no temporary left behind either."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import tfrecnp as tn
from tfrecnp._util.atomic import deferred_interrupt

ROWS = 60_000

CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tfrecnp as tn
    from tfrecnp.cli import main

    op, src, out = sys.argv[1:4]
    x = np.load(src + ".npy", mmap_mode="r")
    ops = {
        "write": lambda: tn.write(out, {"x": x}, progress=False),
        "write_sharded": lambda: tn.write(
            out, {"x": x}, records_per_shard=6000, index=True, progress=False
        ),
        "save_npy": lambda: tn.open(src).save(out, progress=False),
        "save_npz": lambda: tn.open(src).save(out, progress=False),
        "convert_h5": lambda: tn.convert(src, out, progress=False),
        "convert_zarr": lambda: tn.convert(src, out, progress=False),
        "convert_arrays": lambda: tn.convert(src + ".npy", out, progress=False),
        "cli_convert": lambda: sys.exit(main(["convert", src, out])),
    }
    print("ready", flush=True)
    ops[op]()
    print("done", flush=True)
    """
)

# operation -> the name it writes (in an empty folder of its own)
OUTPUTS = {
    "write": "out.tfrecord",
    "write_sharded": "data.tfrecord",
    "save_npy": "saved",
    "save_npz": "out.npz",
    "convert_h5": "out.h5",
    "convert_zarr": "out.zarr",
    "convert_arrays": "out.tfrecord",
    "cli_convert": "out.zarr",
}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "data.tfrecord"
    x = np.random.default_rng(0).random((ROWS, 64), dtype=np.float32)
    tn.write(path, {"x": x}, progress=False)
    np.save(str(path) + ".npy", x)
    return path, x


def _run(op: str, src: Path, folder: Path, delay: float | None) -> tuple[bool, float]:
    """Runs op in a child; SIGINT `delay` seconds after it starts (None: never). Returns
    whether it finished and how long it ran."""
    out = folder / OUTPUTS[op]
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, op, str(src), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline() == "ready\n"
    start = time.perf_counter()
    if delay is not None:
        time.sleep(delay)
        child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=120)
    took = time.perf_counter() - start
    finished = stdout == "done\n"  # (the signal may still come after, while Python exits)
    if op == "cli_convert":  # the command reports Ctrl-C as shells do: status 130
        finished = child.returncode == 0
        if not finished:
            assert child.returncode in (130, -signal.SIGINT), stderr
            assert child.returncode == -signal.SIGINT or "interrupted; nothing that" in stderr
        return finished, took
    if delay is None:
        assert child.returncode == 0, stderr
    if not finished:  # interrupted: Python's KeyboardInterrupt, nothing else
        assert child.returncode == -signal.SIGINT, stderr
        assert "KeyboardInterrupt" in stderr, stderr
    if not (finished and delay is not None):  # (not a signal in Python's own exit)
        assert "Exception ignored" not in stderr, stderr
    return finished, took


def _check_complete(op: str, folder: Path, x: np.ndarray, when: str = "") -> None:
    names = sorted(os.listdir(folder))
    if op == "write_sharded":
        shards = [f"data-{k:05d}-of-00010.tfrecord" for k in range(10)]
        assert names == sorted(shards + [s + ".idx" for s in shards]), when
        (got,) = tn.read(sorted(str(folder / s) for s in shards)).values()
    else:
        assert names == [OUTPUTS[op]], when
        out = folder / OUTPUTS[op]
        got = tn.read(out) if op in ("write", "convert_arrays") else tn.load(out)
        (got,) = got.values()  # one column ("x", or the .npy file's name)
    np.testing.assert_array_equal(np.asarray(got).reshape(x.shape), x)


@pytest.mark.parametrize("op", sorted(OUTPUTS))
def test_an_interrupt_leaves_the_whole_output_or_nothing(tmp_path, source, op):
    src, x = source
    folder = tmp_path / "whole"
    folder.mkdir()
    finished, took = _run(op, src, folder, None)
    assert finished
    _check_complete(op, folder, x)
    rng = random.Random(f"{op}-15")
    interrupted = 0
    # delays are fractions of the quickest run so far (runs after the first, which warmed
    # the caches, are often quicker): four at random in its first 70 %, one near its end
    fractions = [rng.uniform(0, 0.7) for _ in range(4)] + [0.97]
    for k, fraction in enumerate(fractions):
        folder = tmp_path / f"cut{k}"
        folder.mkdir()
        delay = fraction * took
        finished, ran = _run(op, src, folder, delay)
        if finished:
            took = min(took, ran)
        interrupted += not finished
        # interrupted after the output was in place (before "done"), it is whole too
        if finished or os.listdir(folder):
            _check_complete(op, folder, x, f"SIGINT after {delay:.3f} s of {took:.3f} s")
    assert interrupted >= 2  # delays land inside the operation


def test_ctrl_c_waits_for_a_publish_of_several_names():
    # the handler Python installs is back after the block, and the interrupt comes then
    done = []
    with pytest.raises(KeyboardInterrupt), deferred_interrupt():
        signal.raise_signal(signal.SIGINT)
        done.append("renamed")
    assert done == ["renamed"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_shard_that_cannot_be_published_takes_back_the_others(tmp_path):
    # a folder where the second shard's final name goes: its rename fails (a real
    # IsADirectoryError), so the first shard, renamed already, is removed again
    (tmp_path / "data-00001-of-00002.tfrecord").mkdir()
    with pytest.raises(IsADirectoryError):
        tn.write(tmp_path / "data.tfrecord", {"x": np.arange(4)}, records_per_shard=2,
                 index=True, progress=False)  # fmt: skip
    assert os.listdir(tmp_path) == ["data-00001-of-00002.tfrecord"]


def test_ctrl_c_while_a_lazy_import_makes_a_class_is_reported_as_an_interrupt(
    monkeypatch, capsys, tmp_path
):
    # Python 3.11 wraps a KeyboardInterrupt raised in __set_name__ (while a module imported
    # lazily, such as zarr, makes its classes) in RuntimeError; seen once in the test above
    import importlib

    cli = importlib.import_module("tfrecnp.cli.main")  # (tfrecnp.cli.main is also a function)

    class Interrupted:
        def __set_name__(self, owner, name):
            raise KeyboardInterrupt

    def convert(args):
        type("Metadata", (), {"field": Interrupted()})

    monkeypatch.setattr(cli, "cmd_convert", convert)
    assert cli.main(["convert", str(tmp_path / "a.tfrecord"), str(tmp_path / "out")]) == 130
    assert "interrupted; nothing that looks complete was left" in capsys.readouterr().err

    def broken(args):
        raise RuntimeError("something else")

    monkeypatch.setattr(cli, "cmd_convert", broken)
    with pytest.raises(RuntimeError, match="something else"):
        cli.main(["convert", str(tmp_path / "a.tfrecord"), str(tmp_path / "out")])


def _interrupted_module(folder) -> None:
    """interrupted_module.py in folder: Ctrl-C lands while it makes a class (Python 3.11
    wraps that in RuntimeError)."""
    (folder / "interrupted_module.py").write_text(
        "class Field:\n"
        "    def __set_name__(self, owner, name):\n"
        "        raise KeyboardInterrupt\n"
        "class Metadata:\n"
        "    attributes = Field()\n"
    )


def test_ctrl_c_during_a_lazy_import_stays_a_keyboard_interrupt(tmp_path, monkeypatch):
    # what `import zarr` did when Ctrl-C landed while zarr made a class (Python 3.11)
    from tfrecnp._util.optional import require

    _interrupted_module(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        require("interrupted_module", "zarr")


def test_ctrl_c_during_the_first_use_of_a_name_stays_a_keyboard_interrupt(tmp_path, monkeypatch):
    # `tn.open` imports its module on first use; seen in the interrupt test above as
    # RuntimeError while the standard library's ipaddress made a class
    _interrupted_module(tmp_path)
    monkeypatch.setattr(tn, "__path__", [*tn.__path__, str(tmp_path)])
    monkeypatch.setitem(tn._HOMES, "Metadata", "interrupted_module")
    with pytest.raises(KeyboardInterrupt):
        tn.Metadata  # noqa: B018
