"""Writer (issue 5): tn.write against the seed 003 recipe and vahidk tfrecord's writer.

Two inputs, generated once into bench-data/ as .npy files and memory-mapped (in the page
cache) by every contender:

- 10 floats: 1 M rows x 10 float32, each row written as a float_list;
- raw 64x64: 20 k rows x 64x64 float32, each row one bytes value of its raw bytes.

Contenders, each timed >= 3 runs, the output deleted between runs (untimed):

- tfrecnp: ``tn.write(out, {"data": memmap}, encoding=...)``;
- seed 003: the recipe's loop, per row a tf.train.Example + SerializeToString +
  tf.io.TFRecordWriter.write (float_list for the 10 floats, ``row.tobytes()`` in a
  bytes_list for raw rows, as in the seed), in its own process;
- vahidk tfrecord: ``tfrecord.writer.TFRecordWriter.write({"data": (row, "float")})`` per
  row (``(row.tobytes(), "byte")`` for raw), in its own process, when installed.

Outputs go to a tmpfs (/dev/shm) when there is one, because the disk of a shared
machine (here 150-350 MB/s for new files) would otherwise be what is measured; set
TFRECNP_BENCH_OUT to write elsewhere. The "limit" row writes as many bytes of the source to
a new file in the same place with plain os.write: the cost of the I/O alone (page
allocation and copy), which bounds every writer of raw rows. Last, a subprocess streams a
>= 2 GiB .npy memmap through tn.convert(encoding="raw") and reports how much its peak RSS
grew.

Targets: >= 30x seed 003 records/s on the 10 floats, >= 3x on raw rows; RSS flat.

    python benchmarks/bench_write.py [--runs N] [--no-peers] [--no-rss]
    python benchmarks/run.py write
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, Result, peer_report, print_table, run_peer, timed, warm_page_cache

# name -> (rows, row shape, encoding)
CASES = {
    "10 floats": (1_000_000, (10,), None),
    "raw 64x64": (20_000, (64, 64), "raw"),
}
SEED = "seed 003 (tf.train.Example loop)"
LIMIT = "write() of as many bytes (limit)"
LIMIT_PIECE = 2 << 20
OURS = "tfrecnp write"
TARGETS = {"10 floats": 30.0, "raw 64x64": 3.0}
RSS_BYTES = 2 << 30  # the memmap streamed for the RSS measurement
RSS_FLAT_MIB = 256  # "flat": peak RSS grows by less than this while streaming 2 GiB


def out_dir() -> Path:
    base = os.environ.get("TFRECNP_BENCH_OUT")
    if base is None and os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        base = "/dev/shm"
    return Path(tempfile.mkdtemp(prefix="tfrecnp-bench-write-", dir=base))


def source(rows: int, shape: tuple[int, ...]) -> Path:
    """The cached .npy input for a case (random float32), written on first use."""
    path = DATA_DIR / f"write-{rows}x{'x'.join(map(str, shape))}-float32.npy"
    if not path.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        print(f"writing {path} (once) ...", flush=True)
        rng = np.random.default_rng(0)
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, *shape))
        step = max(1, (64 << 20) // (4 * int(np.prod(shape))))
        for a in range(0, rows, step):
            out[a : a + step] = rng.random((min(step, rows - a), *shape), dtype=np.float32)
        out.flush()
        del out
    return path


def time_ours(src: Path, encoding: str | None, dst: Path, runs: int) -> tuple[list[float], int]:
    import tfrecnp as tn

    seconds, size = [], 0
    for _ in range(runs):
        data = np.load(src, mmap_mode="r")
        t0 = time.perf_counter()
        result = tn.write(dst, {"data": data}, encoding=encoding, progress=False)
        seconds.append(time.perf_counter() - t0)
        size = os.path.getsize(result.paths[0])
        if result.records != len(data):
            raise AssertionError(f"tfrecnp wrote {result.records} records, not {len(data)}")
        os.unlink(dst)
    return seconds, size


def time_limit(src: Path, size: int, dst: Path, runs: int) -> list[float]:
    """Seconds to write `size` bytes of the source to a new file with plain os.write in
    2 MiB pieces: the I/O floor any writer of this output pays."""
    flat = np.load(src, mmap_mode="r").reshape(-1).view(np.uint8)
    seconds = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            done = 0
            while done < size:
                piece = flat[done % len(flat) :][: min(LIMIT_PIECE, size - done)]
                done += os.write(fd, piece)
        finally:
            os.close(fd)
        seconds.append(time.perf_counter() - t0)
        os.unlink(dst)
    return seconds


def bench_case(label: str, runs: int, peers: bool, folder: Path) -> dict[str, Result]:
    rows, shape, encoding = CASES[label]
    src = source(rows, shape)
    warm_page_cache(src)
    dst = folder / "out.tfrecord"
    seconds, size = time_ours(src, encoding, dst, runs)
    results = [
        Result(LIMIT, time_limit(src, size, dst, runs), size, rows, note="os.write, no encoding"),
        Result(OURS, seconds, size, rows, note=f"encoding={encoding!r}, memmap source"),
    ]
    if peers:
        for name, peer in ((SEED, "seed"), ("vahidk tfrecord writer", "vahidk")):
            out = run_peer(Path(__file__), [peer, str(src), str(dst), label, str(runs)])
            if "skip" in out:
                print(f"  note: {name} skipped on {label}: {out['skip']}")
                continue
            if out["records"] != rows:
                raise AssertionError(f"{name} wrote {out['records']} records, not {rows}")
            results.append(Result(name, out["seconds"], out.get("bytes", size), rows))
    title = (
        f"{label}: {rows:,} rows of {'x'.join(map(str, shape))} float32 "
        f"({'raw bytes' if encoding else 'float_list'}), output in {folder.parent}; medians"
    )
    print_table(title, results, limit=LIMIT, peer=SEED)
    return {r.name: r for r in results}


def peer_main(argv: list[str]) -> int:
    """Subprocess side: run one peer's write loop `runs` times; print one JSON line."""
    kind, src, dst, label, runs = argv[0], argv[1], argv[2], argv[3], int(argv[4])
    raw = CASES[label][2] == "raw"
    mm = np.load(src, mmap_mode="r")
    if kind == "seed":
        import tensorflow as tf

        def create_example(row):
            if raw:
                value = tf.train.BytesList(value=[row.tobytes()])
                return tf.train.Example(
                    features=tf.train.Features(feature={"data": tf.train.Feature(bytes_list=value)})
                )
            value = tf.train.FloatList(value=row)
            return tf.train.Example(
                features=tf.train.Features(feature={"data": tf.train.Feature(float_list=value)})
            )

        def loop() -> int:
            n = 0
            with tf.io.TFRecordWriter(dst) as writer:
                for row in mm:
                    writer.write(create_example(row).SerializeToString())
                    n += 1
            return n

    elif kind == "vahidk":
        try:
            from tfrecord.writer import TFRecordWriter
        except ImportError:
            print(json.dumps({"skip": "not installed (pip install tfrecord)"}))
            return 0

        def loop() -> int:
            n = 0
            writer = TFRecordWriter(dst)
            for row in mm:
                writer.write({"data": (row.tobytes(), "byte") if raw else (row, "float")})
                n += 1
            writer.close()
            return n

    else:
        raise SystemExit(f"unknown peer {kind}")
    sizes = []
    seconds, n = timed(
        loop, runs, after=lambda: (sizes.append(os.path.getsize(dst)), os.unlink(dst))
    )
    peer_report(seconds, n, bytes=sizes[-1])
    return 0


RSS_SCRIPT = """
import json, sys, time
import numpy as np
import tfrecnp as tn

def peak_kib():  # VmHWM: this process's peak RSS (ru_maxrss would include the parent's)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))

src, dst = sys.argv[1], sys.argv[2]
tn.write(dst, {"x": np.zeros((64, 4096), np.float32)}, encoding="raw", progress=False)
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak mark to the current RSS
before = peak_kib()
t0 = time.perf_counter()
result = tn.convert(src, dst, encoding="raw", progress=False)
seconds = time.perf_counter() - t0
print(json.dumps({"before_kib": before, "after_kib": peak_kib(), "seconds": seconds,
                  "records": result.records}))
"""


def bench_rss(folder: Path) -> dict:
    """Stream a 2 GiB .npy memmap through tn.convert in a fresh process. The source is a
    sparse file on disk (bench-data/, nothing to write), read through the page cache."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    src = DATA_DIR / "write-rss-source.npy"
    rows = RSS_BYTES // (4 * 4096)
    if not src.exists():
        arr = np.lib.format.open_memmap(src, mode="w+", dtype=np.float32, shape=(rows, 4096))
        arr[::4096] = 1.0  # a few real pages; the rest reads as zeros
        arr.flush()
        del arr
    try:
        proc = subprocess.run(
            [sys.executable, "-c", RSS_SCRIPT, str(src), str(folder / "rss.tfrecord")],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        (folder / "rss.tfrecord").unlink(missing_ok=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    grown = (out["after_kib"] - out["before_kib"]) / 1024
    print(
        f"\npeak RSS while streaming a {RSS_BYTES / 2**30:.0f} GiB .npy memmap "
        f"({out['records']:,} raw rows of 16 KiB) through tn.convert: "
        f"{out['before_kib'] / 1024:,.0f} MiB before, {out['after_kib'] / 1024:,.0f} MiB peak "
        f"(+{grown:,.0f} MiB) in {out['seconds']:.1f} s"
    )
    return {"grown_mib": grown, **out}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--peer"]:
        return peer_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per case (>= 3)")
    parser.add_argument("--no-peers", action="store_true", help="skip seed 003 and vahidk")
    parser.add_argument("--no-rss", action="store_true", help="skip the 2 GiB RSS measurement")
    parser.add_argument("--only", choices=sorted(CASES), help="benchmark one case only")
    args, _ = parser.parse_known_args(argv)
    runs = max(3, args.runs)
    folder = out_dir()
    try:
        results = {}
        for label in CASES:
            if args.only in (None, label):
                results[label] = bench_case(label, runs, not args.no_peers, folder)
        rss = None if args.no_rss else bench_rss(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("\ntargets (issue 5):")
    for label, rows in results.items():
        if SEED not in rows:
            continue
        ratio = rows[OURS].records_per_s / rows[SEED].records_per_s
        met = ratio >= TARGETS[label]
        ceiling = rows[LIMIT].records_per_s / rows[SEED].records_per_s
        print(
            f"  {label}: tfrecnp = {ratio:.1f}x seed 003 records/s (target >= "
            f"{TARGETS[label]:.0f}x): {'met' if met else 'MISSED'}; plain write() of the "
            f"same bytes = {ceiling:.1f}x seed, tfrecnp at "
            f"{rows[OURS].records_per_s / rows[LIMIT].records_per_s:.0%} of it"
        )
    if rss is not None:
        flat = rss["grown_mib"] < RSS_FLAT_MIB
        print(
            f"  RSS: +{rss['grown_mib']:,.0f} MiB streaming {RSS_BYTES / 2**30:.0f} GiB "
            f"(flat means < {RSS_FLAT_MIB} MiB): {'met' if flat else 'MISSED'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
