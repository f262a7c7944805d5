"""Memory (issue 11): peak RSS converting large TFRecord files to arrays and back, for small,
256 KiB and 4 MiB records, plain and GZIP. Batches are sized by bytes everywhere, so peak
memory must stay flat in the input's size and in the record size.

Data, generated once into bench-data/ with tn.Writer: for each record size, a file of
--gib GiB (default 2) of records holding a raw uint8 tensor (half of its bytes zero, so
GZIP has something to squeeze) and an int64 label; the same again GZIP-compressed.

Cases, each in a fresh subprocess so peak RSS (ru_maxrss, mapped file pages included, as
`top` and a cluster's limit count them) is the case's own, split into its anonymous and
file-backed parts (the highest of each, sampled every 5 ms from /proc/self/status):

- to arrays: `tn.convert(file, out, spec=...)` to a .npy folder, HDF5 and Zarr;
- back: `tn.convert(out.npy-folder, out.tfrecord)` (arrays -> TFRecord).

Outputs go to /dev/shm when it has room (page-cache pages of written files do not count
towards RSS either way), and are deleted after each case.

    python benchmarks/run.py memory [--gib G] [--quick]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR

RECORD_SIZES = {"small": 256, "256KiB": 256 << 10, "4MiB": 4 << 20}  # bytes of tensor
FORMATS = {"npy": "", "hdf5": ".h5", "zarr": ".zarr"}


def _input(label: str, compression: str | None, gib: float) -> Path:
    import tfrecnp as tn

    size = RECORD_SIZES[label]
    name = f"memory-{label}-{gib:g}g{'-gzip' if compression else ''}.tfrecord"
    path = DATA_DIR / name
    if path.exists():
        return path
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    n = int(gib * (1 << 30)) // (size + 40)
    rows = max(1, (32 << 20) // size)
    rng = np.random.default_rng(0)
    block = rng.integers(0, 255, (rows, size), dtype=np.uint8)
    block[:, ::2] = 0
    with tn.Writer(path, compression=compression, encoding={"x": "raw"}, progress=False) as writer:
        for a in range(0, n, rows):
            k = min(rows, n - a)
            writer.write_batch({"x": block[:k], "label": np.arange(a, a + k)})
    return path


def _scratch() -> Path:
    shm = Path("/dev/shm")
    free = shutil.disk_usage(shm).free if shm.exists() else 0
    return shm if free > (5 << 30) else DATA_DIR


def _rss_parts() -> tuple[int, int]:
    """(anonymous, file-backed and shared) resident KiB of this process now."""
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("RssAnon:", "RssFile:", "RssShmem:")):
                fields[line.split(":")[0]] = int(line.split()[1])
    return fields.get("RssAnon", 0), fields.get("RssFile", 0) + fields.get("RssShmem", 0)


def _sample_peaks(peaks: list[int], done: threading.Event) -> None:
    while not done.wait(0.005):
        anon, file = _rss_parts()
        peaks[0], peaks[1] = max(peaks[0], anon), max(peaks[1], file)


def _case(argv: list[str]) -> int:
    """Run one conversion in this process and print {"seconds", "rss_mib", "anon_mib",
    "file_mib"} as JSON."""
    import tfrecnp as tn

    peaks = [0, 0]
    done = threading.Event()
    sampler = threading.Thread(target=_sample_peaks, args=(peaks, done), daemon=True)
    sampler.start()

    direction, src, out, size = argv[0], argv[1], argv[2], int(argv[3])
    t0 = time.perf_counter()
    if direction == "to":
        spec = {"x": tn.Raw("uint8", shape=(size,)), "label": tn.FixedLen((), "int64")}
        tn.convert(src, out, spec=spec, progress=False)
    else:
        tn.convert(src, out, progress=False)
    seconds = time.perf_counter() - t0
    done.set()
    sampler.join()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    anon, file = (k >> 10 for k in peaks)
    print(json.dumps({"seconds": seconds, "rss_mib": rss, "anon_mib": anon, "file_mib": file}))
    return 0


def _run(direction: str, src: Path, out: Path, size: int) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--case", direction, str(src), str(out), str(size)],
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_memory", description=__doc__.split("\n")[0])
    parser.add_argument("--gib", type=float, default=2.0, help="input size in GiB (default 2)")
    parser.add_argument("--quick", action="store_true", help="0.25 GiB inputs, for a smoke run")
    parser.add_argument("--case", nargs=4, help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args(argv)
    if args.case:
        return _case(args.case)
    gib = 0.25 if args.quick else args.gib
    scratch = _scratch()
    rows = []
    for label, size in RECORD_SIZES.items():
        for compression in (None, "GZIP"):
            src = _input(label, compression, gib)
            input_mib = src.stat().st_size >> 20
            npy_out = None
            for fmt, suffix in FORMATS.items():
                out = scratch / f"tfrecnp-memory-{label}{suffix or '-npy'}"
                _remove(out)
                got = _run("to", src, out, size)
                rows.append((label, compression or "plain", input_mib, f"-> {fmt}", got))
                if fmt == "npy" and "error" not in got:
                    npy_out = out
                else:
                    _remove(out)
            if npy_out is not None:
                back = scratch / f"tfrecnp-memory-{label}-back.tfrecord"
                got = _run("back", npy_out, back, size)
                rows.append((label, compression or "plain", input_mib, "npy -> TFRecord", got))
                _remove(back)
                _remove(npy_out)
    print(f"\nPeak RSS converting {gib:g} GiB inputs (each case in its own process)")
    header = (
        f"{'records':<8} {'input':<6} {'MiB':>6}  {'case':<16} {'peak RSS':>9} "
        f"{'anon / file-backed':>20} {'MB/s':>7}"
    )
    print(header)
    print("-" * len(header))
    for label, comp, mib, case, got in rows:
        if "error" in got:
            print(f"{label:<8} {comp:<6} {mib:>6}  {case:<16} failed: {got['error']}")
            continue
        rate = mib * 1.048576 / got["seconds"]
        split = f"{got['anon_mib']} / {got['file_mib']} MiB"
        print(
            f"{label:<8} {comp:<6} {mib:>6}  {case:<16} {got['rss_mib']:>5} MiB {split:>20} "
            f"{rate:>7.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
