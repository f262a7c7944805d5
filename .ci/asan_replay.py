"""Replays every input of the fuzz corpus (tests/fuzz_corpus/<target>/*, and the inputs
`make fuzz` grew in build/fuzz/corpus/<target>/ when present, or in the folders given as
arguments) once through its target's test_one_input, on the sanitized core of build/asan/
(run by .ci/asan, with the sanitizer runtimes preloaded). libFuzzer is not involved: each
input runs exactly once, so a memory error or undefined behaviour the corpus reaches stops
the run with its report. An input whose target raises is a finding too: the traceback
names it."""

from __future__ import annotations

import importlib
import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SANITIZED = ROOT / "build" / "asan" / "src"


def main(grown: list[Path]) -> int:
    # tfrecnp comes from the sanitized copy; the fuzz harness puts the checkout's src first
    # on sys.path, but submodules are found through the package already imported
    sys.path.insert(0, str(SANITIZED))
    import tfrecnp._core.framing

    assert str(SANITIZED) in tfrecnp._core.framing.__file__, tfrecnp._core.framing.__file__
    sys.path.insert(0, str(ROOT / "fuzz"))
    warnings.simplefilter("ignore")
    total = 0
    for target in sorted(p.stem for p in (ROOT / "fuzz").glob("fuzz_*.py")):
        folders = [ROOT / "tests" / "fuzz_corpus" / target, *(g / target for g in grown)]
        inputs = sorted(p for f in folders if f.is_dir() for p in f.iterdir() if p.is_file())
        start = time.perf_counter()
        module = importlib.import_module(target)
        for path in inputs:
            try:
                module.test_one_input(path.read_bytes())
            except BaseException:
                print(f"{target}: {path.relative_to(ROOT)} raised", file=sys.stderr)
                raise
        total += len(inputs)
        print(f"{target}: {len(inputs)} inputs in {time.perf_counter() - start:.1f} s")
    assert tfrecnp._core.framing.__file__.startswith(str(SANITIZED))
    print(f"{total} corpus inputs replayed on the sanitized core")
    return 0


if __name__ == "__main__":
    grown = [Path(a) for a in sys.argv[1:]] or [ROOT / "build" / "fuzz" / "corpus"]
    sys.exit(main([g for g in grown if os.path.isdir(g)]))
