"""Line coverage of the compiled core (src/tfrecnp/_core/*.pyx, the .pxd files they cimport
and the .h files) reached by the fuzz corpora: `make fuzz-coverage` builds the core with
gcc --coverage into build/fuzz-cov/, replays every target's corpus once through it
(libFuzzer's -runs=0), and this script reads gcov's counts of the generated C back onto
.pyx and .pxd lines.

Cython writes a comment `/* "tfrecnp/_core/x.pyx":N` above the C of each .pyx line (and
`/* "wire.pxd":N` above the C of an inline function of a cimported .pxd); every C line up to
the next such comment belongs to line N of that file. A line is executable when any of its C
lines is, covered when any of them ran; a .pxd cimported by several modules counts once,
covered when any of them ran it. Code Cython adds of its own (memoryview support,
"View.MemoryView" lines, its own .pxd files) is left out.

Usage: python fuzz/core_coverage.py BUILD_TEMP_DIR   (prints a table; --missed lists lines)
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "src" / "tfrecnp" / "_core"
MARKER = re.compile(r'/\* "(?:src/)?(?:tfrecnp/_core/)?(\w+\.(?:pyx|pxd))":(\d+)')
OTHER_MARKER = re.compile(r'/\* "[^"]+":\d+')


def gcov_lines(c_file: Path, objdir: Path, workdir: Path) -> dict[str, dict[int, int | None]]:
    """{source file name: {line: count, or None when not executable}} from gcov (run from
    the repository root, where the build named its sources; its reports moved to workdir)."""
    run = subprocess.run(
        ["gcov", "-o", str(objdir.resolve()), str(c_file)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    out: dict[str, dict[int, int | None]] = {}
    for name in re.findall(r"Creating '([^']+)'", run.stdout):
        report = workdir / Path(name).name
        (ROOT / name).replace(report)
        lines: dict[int, int | None] = {}
        source = None
        for row in report.read_text(errors="replace").splitlines():
            count, _, rest = row.partition(":")
            number, _, text = rest.partition(":")
            count, number = count.strip(), number.strip()
            if number == "0":
                if text.startswith("Source:"):
                    source = text[len("Source:") :]
                continue
            if not number.isdigit():
                continue
            if count == "-":
                lines[int(number)] = None
            elif count.startswith("#") or count.startswith("="):
                lines[int(number)] = 0
            else:
                lines[int(number)] = int(count.rstrip("*"))
        if source is not None:
            out[Path(source).name] = lines
    return out


def source_lines(c_file: Path, counts: dict[int, int | None]) -> dict[str, dict[int, bool]]:
    """{core source name (x.pyx, wire.pxd): {line: covered}} for the executable lines of the
    core's .pyx and .pxd files whose C stands in c_file."""
    covered: dict[str, dict[int, bool]] = defaultdict(dict)
    current = None
    for number, text in enumerate(c_file.read_text(errors="replace").splitlines(), 1):
        m = MARKER.search(text)
        if m and (CORE / m.group(1)).exists():
            current = covered[m.group(1)], int(m.group(2))
            continue
        if m or OTHER_MARKER.search(text):
            current = None  # Cython's own utility code
            continue
        count = counts.get(number)
        if current is None or count is None:
            continue
        lines, line = current
        lines[line] = lines.get(line, False) or count > 0
    return dict(covered)


def main(argv: list[str]) -> int:
    objdir_root = Path(argv[1])
    show_missed = "--missed" in argv
    work = objdir_root / "gcov"
    work.mkdir(exist_ok=True)
    totals = defaultdict(lambda: [0, 0])
    sources: dict[str, dict[int, bool]] = defaultdict(dict)  # .pyx and .pxd lines
    print(f"{'file':<16} {'lines':>6} {'covered':>8} {'%':>6}")
    for c_file in sorted(CORE.glob("*.c")):
        objdir = next(objdir_root.rglob(f"{c_file.stem}.o")).parent
        per_source = gcov_lines(c_file, objdir, work)
        for name, lines in source_lines(c_file, per_source.get(c_file.name, {})).items():
            merged = sources[name]
            for line, hit in lines.items():
                merged[line] = merged.get(line, False) or hit
        for header, counts in per_source.items():
            if header.endswith(".h") and (CORE / header).exists():
                executable = [c for c in counts.values() if c is not None]
                old = totals[header]
                totals[header] = [
                    max(old[0], len(executable)),
                    max(old[1], sum(1 for c in executable if c)),
                ]
    for name, lines in sorted(sources.items()):
        totals[name] = [len(lines), sum(lines.values())]
        if show_missed:
            missed = sorted(n for n, hit in lines.items() if not hit)
            print(f"  {name} not reached: {missed}")
    all_lines = all_hit = 0
    for name, (n, hit) in sorted(totals.items()):
        all_lines += n
        all_hit += hit
        print(f"{name:<16} {n:>6} {hit:>8} {100 * hit / max(n, 1):>5.1f}%")
    print(f"{'total':<16} {all_lines:>6} {all_hit:>8} {100 * all_hit / max(all_lines, 1):>5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
