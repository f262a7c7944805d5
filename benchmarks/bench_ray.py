"""Ray Data (issue 14): tfrecnp.ray.read / write against Ray's own read_tfrecords /
write_tfrecords, on a local Ray with 2 CPUs, the same files for both.

Data: 8 shards of 25 k tf.train.Example records (200 k rows, about 34 MB): label (int64),
x (16 float32), tokens (VarLen int64, 2..15 values: Ray's reader takes a list of one value
for a scalar and then fails to join its blocks), generated once into bench-data/.

Read: each contender builds its dataset and iterates it to the end in NumPy batches of 1024
rows (ds.iter_batches(batch_size=1024, batch_format="numpy")), so planning, read tasks,
decoding, conversion and the hand-off to the driver all count. Write: one materialised
dataset (the rows above) written as 8 shards by each contender into a fresh folder.
Runs are interleaved (one run of each contender per round); medians and ratios are printed.

Target: tfrecnp >= 5x Ray's rows/s, reading and writing.

    python benchmarks/bench_ray.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import token_shards

SHARDS, ROWS = 8, 25_000
BATCH = 1024


def _data() -> tuple[list[str], object]:
    import tfrecnp as tn

    # 2+ tokens: Ray's own reader infers a scalar from a one-value list
    paths = token_shards("ray", SHARDS, ROWS, width=16, tokens=(2, 16))
    spec = {
        "label": tn.FixedLen((), "int64"),
        "x": tn.FixedLen((16,), "float32"),
        "tokens": tn.VarLen("int64"),
    }
    return paths, spec


def _drain(ds) -> int:
    rows = 0
    for batch in ds.iter_batches(batch_size=BATCH, batch_format="numpy"):
        rows += len(batch["label"])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import ray

    import tfrecnp.ray as tnray

    paths, spec = _data()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        n = SHARDS * ROWS
        readers = {
            "tfrecnp.ray.read": lambda: _drain(tnray.read(paths, spec)),
            "ray.data.read_tfrecords": lambda: _drain(ray.data.read_tfrecords(paths)),
        }
        _drain(tnray.read(paths, spec))  # warm: workers started, files in the page cache
        read_times = {name: [] for name in readers}
        for _ in range(args.runs):
            for name, fn in readers.items():
                t0 = time.perf_counter()
                got = fn()
                read_times[name].append(time.perf_counter() - t0)
                assert got == n, (name, got)
        source = tnray.read(paths, spec).materialize()
        out = Path(tempfile.mkdtemp(prefix="tfrecnp-bench-ray-", dir=_scratch()))
        writers = {
            "tfrecnp.ray.write": lambda d: tnray.write(source, d / "data.tfrecord", num_shards=8),
            "Dataset.write_tfrecords": lambda d: source.repartition(8).write_tfrecords(str(d)),
        }
        write_times = {name: [] for name in writers}
        for _ in range(args.runs):
            for name, fn in writers.items():
                target = out / name
                target.mkdir()
                t0 = time.perf_counter()
                fn(target)
                write_times[name].append(time.perf_counter() - t0)
                shutil.rmtree(target)
        shutil.rmtree(out, ignore_errors=True)
    finally:
        ray.shutdown()

    ok = True
    for title, times, ours, peer in (
        (
            "read (iter_batches 1024, numpy)",
            read_times,
            "tfrecnp.ray.read",
            "ray.data.read_tfrecords",
        ),
        ("write (8 shards)", write_times, "tfrecnp.ray.write", "Dataset.write_tfrecords"),
    ):
        print(f"\n{title}: {n:,} rows, {args.runs} runs, local Ray num_cpus=2")
        print(f"{'contender':28} {'median s':>9} {'rows/s':>12} {'spread':>7}")
        rate = {}
        for name, secs in times.items():
            med = statistics.median(secs)
            rate[name] = n / med
            spread = (max(secs) - min(secs)) / med
            print(f"{name:28} {med:9.2f} {rate[name]:12,.0f} {spread:7.0%}")
        ratio = rate[ours] / rate[peer]
        met = ratio >= 5
        ok &= met
        print(f"ratio {ours} / {peer}: {ratio:.1f}x (target >= 5x: {'met' if met else 'NOT met'})")
    return 0


def _scratch() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") else None


if __name__ == "__main__":
    sys.exit(main())
