"""Each fuzz target of fuzz/ runs for a few seconds over its seed corpus in tests/fuzz_corpus/
(the regression inputs of past findings among them): a crash, a hang, an allocation beyond
the limits, a file descriptor leak or an untyped error fails the test. The seed is fixed,
so every run tries the same inputs in the same order (how far it gets in the time depends
on the machine): the test is not a lottery that fails one CI run in many. `make fuzz
SECONDS=N` runs the targets for longer from random seeds; a crash they find joins the
corpus once mended. Built by `make`, the libFuzzer-instrumented core in build/fuzz/ is
used, so the compiled code's edges guide the fuzzer too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TARGETS = sorted(p.stem for p in (ROOT / "fuzz").glob("fuzz_*.py"))
SECONDS = 8
SEED = 20261125
NATIVE = ROOT / "build" / "fuzz"


def _native_is_current() -> bool:
    built = NATIVE / ".built"
    core = ROOT / "src" / "tfrecnp" / "_core"
    sources = [p for p in core.iterdir() if p.suffix in (".pyx", ".pxd", ".h")]
    return built.exists() and all(p.stat().st_mtime <= built.stat().st_mtime for p in sources)


def test_every_target_has_a_corpus():
    assert TARGETS
    for target in TARGETS:
        assert any((ROOT / "tests" / "fuzz_corpus" / target).iterdir()), target


@pytest.mark.parametrize("target", TARGETS)
def test_fuzz_target(target, tmp_path):
    env = dict(os.environ)
    if _native_is_current():
        env["TFRECNP_FUZZ_NATIVE"] = str(NATIVE)
    corpus = tmp_path / "corpus"  # new inputs land here, never in the seed corpus
    corpus.mkdir()
    command = [
        sys.executable,
        str(ROOT / "fuzz" / f"{target}.py"),
        str(corpus),
        str(ROOT / "tests" / "fuzz_corpus" / target),
        f"-max_total_time={SECONDS}",
        f"-seed={SEED}",
        f"-artifact_prefix={tmp_path}/",
    ]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    crashes = [p.name for p in tmp_path.iterdir() if p.is_file()]
    assert run.returncode == 0 and not crashes, f"{crashes}\n{run.stderr[-6000:]}"
    assert "DONE" in run.stderr, run.stderr[-3000:]
