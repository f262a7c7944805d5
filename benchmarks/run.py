"""Run the benchmarks: every benchmarks/bench_*.py module, or the ones named.

    python benchmarks/run.py                  # all of them
    python benchmarks/run.py records          # bench_records.py only
    python benchmarks/run.py records --runs 7 # options after the names go to each module

Each module's ``main(argv) -> int`` prints its own tables; see benchmarks/README.md.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent


def available() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in BENCH_DIR.glob("bench_*.py"))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    split = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    names, options = argv[:split], argv[split:]
    known = available()
    unknown = [n for n in names if n.removeprefix("bench_") not in known]
    if unknown:
        print(f"unknown benchmark {unknown[0]!r}; available: {', '.join(known)}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(BENCH_DIR))
    status = 0
    for name in [n.removeprefix("bench_") for n in names] or known:
        print(f"=== bench_{name} ===", flush=True)
        t0 = time.perf_counter()
        status |= importlib.import_module(f"bench_{name}").main(list(options))
        print(f"(bench_{name}: {time.perf_counter() - t0:.0f} s)\n", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
