"""Frameworks (issue 12): tf.data, PyTorch, against what users do today, in one run.

1. Seed 004: a large .npy into tf.data at batch 32. The seed's recipe (its header bug fixed:
   `np.load(mmap_mode="r")`, chunks of 10 000 rows from a generator into `from_generator`,
   `.unbatch().batch(32).prefetch(AUTOTUNE)`) against `tn.open("big.npy").to_tf(32)`, on a
   2 GiB float32 .npy (--quick: 256 MiB): records/s (medians of --runs, the sides in turns)
   and peak RSS (each in its own process); and tf.data's own floor at batch 32 (batches of
   zeros made in the graph), which bounds what any producer can reach.
2. `to_tf(32)` and `to_tf(1024)` over TFRecords against TensorFlow's best pipeline
   (`TFRecordDataset -> batch -> map(parse_example, AUTOTUNE) -> prefetch`) on the same
   TF-written files as bench_training (numeric and tokens), interleaved in one process.
3. A PyTorch DataLoader over TFRecords, 2 workers, batch 32: tfrecnp as a map-style dataset
   (plain `DataLoader(ds, batch_size=32, num_workers=2)`, the default collate, and with
   `collate_fn=tn.torch_collate()`) and as `to_torch(32)`, against vahidk's
   `tfrecord.torch.TFRecordDataset` given its index (so that its workers split the file
   rather than each read all of it): records/s delivered, all tensors. Also `to_torch(32)`
   with num_workers=0 ("to_torch-0"): tfrecnp reads and decodes in its own threads without
   the GIL, so it needs no worker processes, and skips the DataLoader's hand-over of each
   tensor from a worker through shared memory (about 0.3-0.6 ms per tensor here).

    python benchmarks/run.py adapters [--runs N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, format_rate, run_peer

WIDTH = 256  # float32 values per row of the big .npy (1 KiB rows)


def _big_npy(quick: bool) -> Path:
    rows = (256 if quick else 2048) * 1024
    path = DATA_DIR / f"adapters-big-{rows}.npy"
    if not path.exists():
        tmp = path.with_suffix(".part.npy")
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(rows, WIDTH))
        for a in range(0, rows, 65536):
            out[a : a + 65536] = np.float32(a)
        out.flush()
        del out
        os.replace(tmp, path)
    return path


def _seed_side(path: str) -> dict:
    import tensorflow as tf

    mm = np.load(path, mmap_mode="r")

    def chunks():
        for i in range(0, len(mm), 10_000):
            yield tf.constant(mm[i : i + 10_000], dtype=tf.float32)

    data = tf.data.Dataset.from_generator(
        chunks, output_signature=tf.TensorSpec((None, *mm.shape[1:]), tf.float32)
    )
    data = data.unbatch().batch(32).prefetch(tf.data.AUTOTUNE)
    return _drain(data, lambda b: b, tf)


def _floor_side(path: str) -> dict:
    """tf.data's own cost per batch: batches of zeros made in the graph, read from nothing.
    No producer of batches of 32 rows can be iterated faster than this."""
    import tensorflow as tf

    rows = len(np.load(path, mmap_mode="r"))
    data = tf.data.Dataset.range(rows // 32).map(lambda i: tf.zeros((32, WIDTH), tf.float32))
    return _drain(data.prefetch(tf.data.AUTOTUNE), lambda b: b, tf)


def _ours_side(path: str) -> dict:
    import tensorflow as tf

    import tfrecnp as tn

    data = tn.open(path).to_tf(32)
    return _drain(data, lambda b: next(iter(b.values())), tf)


def _drain(data, first, tf) -> dict:
    """records/s iterated from Python (a training loop of one's own) and inside the graph
    (as model.fit consumes it), and the peak RSS."""
    t0 = time.perf_counter()
    n = 0
    for batch in data:
        n += int(first(batch).shape[0])
    python = n / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    n = int(data.reduce(np.int64(0), lambda k, b: k + tf.shape(first(b), tf.int64)[0]))
    graph = n / (time.perf_counter() - t0)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    return {"rate": python, "graph": graph, "rss_mib": rss}


def _tf_specs(kind: str):
    import tensorflow as tf

    import tfrecnp as tn

    FL = tf.io.FixedLenFeature
    if kind == "numeric":
        ours = {"label": tn.FixedLen((), "int64"), "x": tn.FixedLen((16,), "float32"),
                "id": tn.Bytes()}  # fmt: skip
        theirs = {"label": FL([], tf.int64), "x": FL([16], tf.float32), "id": FL([], tf.string)}
    else:
        ours = {"label": tn.FixedLen((), "int64"), "tokens": tn.VarLen("int64")}
        theirs = {"label": FL([], tf.int64), "tokens": tf.io.RaggedFeature(tf.int64)}
    return ours, theirs


def _to_tf_side(kind: str, path: str, runs: int) -> dict:
    import tensorflow as tf

    import tfrecnp as tn

    ours, theirs = _tf_specs(kind)
    ds = tn.open(path, ours)

    def drain(data) -> float:
        t0, n = time.perf_counter(), 0
        for b in data:
            n += int(b["label"].shape[0])
        return n / (time.perf_counter() - t0)

    out = {}
    for batch in (32, 1024):
        cases = {
            "tfrecnp": lambda b=batch: ds.to_tf(b),
            "tensorflow": lambda b=batch: (
                tf.data.TFRecordDataset(path)
                .batch(b)
                .map(lambda s: tf.io.parse_example(s, theirs), num_parallel_calls=tf.data.AUTOTUNE)
                .prefetch(tf.data.AUTOTUNE)
            ),
        }
        rates = {name: [] for name in cases}
        for _ in range(runs):
            for name, make in cases.items():
                rates[name].append(drain(make()))
        out[str(batch)] = {name: statistics.median(r) for name, r in rates.items()}
    return out


def _torch_side(which: str, path: str, runs: int) -> dict:
    from torch.utils.data import DataLoader

    if which == "vahidk":
        from tfrecord.torch.dataset import TFRecordDataset

        def loader():
            data = TFRecordDataset(
                path, path + ".idx", {"label": "int", "x": "float", "id": "byte"}
            )
            return DataLoader(data, batch_size=32, num_workers=2)
    else:
        import tfrecnp as tn

        ds = tn.open(path, _spec_numeric())

        def loader():
            if which == "plain":  # the first line a PyTorch user types: default collate
                return DataLoader(ds, batch_size=32, num_workers=2)
            if which == "map-style":
                return DataLoader(ds, batch_size=32, num_workers=2, collate_fn=tn.torch_collate())
            workers = 0 if which == "to_torch-0" else 2
            return DataLoader(ds.to_torch(32), batch_size=None, num_workers=workers)

    rates = []
    for _ in range(runs):
        t0, n = time.perf_counter(), 0
        for b in loader():
            n += len(b["label"])
        rates.append(n / (time.perf_counter() - t0))
    return {"rate": statistics.median(rates), "records": n}


def _spec_numeric():
    import tfrecnp as tn

    return {"label": tn.FixedLen((), "int64"), "x": tn.FixedLen((16,), "float32"),
            "id": tn.Bytes()}  # fmt: skip


def _side(*argv: str) -> dict:
    return run_peer(__file__, list(argv), flag="--side")


def _training_file(kind: str, quick: bool) -> Path:
    path = DATA_DIR / f"training-{kind}{'-quick' if quick else ''}.tfrecord"
    if not path.exists():
        n = 20_000 if quick else 200_000
        script = Path(__file__).with_name("bench_training.py")
        subprocess.run([sys.executable, script, "--write", kind, str(n), str(path)], check=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_adapters", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="passes per case (median)")
    parser.add_argument("--quick", action="store_true", help="small files, for a smoke run")
    parser.add_argument("--only", default="1,2,3", help="which parts to run (default: 1,2,3)")
    parser.add_argument("--side", nargs="+", help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args(argv)
    if args.side:
        what, *rest = args.side
        sides = {"seed": _seed_side, "ours": _ours_side, "floor": _floor_side,
                 "to_tf": _to_tf_side, "torch": _torch_side}  # fmt: skip
        rest = [int(r) if r.isdigit() else r for r in rest]
        print(json.dumps(sides[what](*rest)))
        return 0
    DATA_DIR.mkdir(parents=True, exist_ok=True)

    parts = set(args.only.split(","))
    if "1" in parts:
        _seed_004(args)
    if "2" in parts:
        _to_tf(args)
    if "3" in parts:
        _torch(args)
    return 0


def _seed_004(args: argparse.Namespace) -> None:
    big = _big_npy(args.quick)
    print(f"1. seed 004: {big.stat().st_size / 2**30:.2f} GiB .npy into tf.data, batch 32")
    # each side in its own process (its own peak RSS), the three in turns --runs times:
    # a shared machine's noise falls on all three alike, and the medians are compared
    runs = [{w: _side(w, str(big)) for w in ("seed", "ours", "floor")} for _ in range(args.runs)]
    failed = [r["skip"] for run in runs for r in run.values() if "skip" in r]
    if failed:
        print(f"  failed: {failed[0]}")
    else:
        seed, ours, floor = (_medians([run[w] for run in runs]) for w in ("seed", "ours", "floor"))
        print(f"  {'':<22} {'Python loop':>12} {'in graph':>10} {'peak RSS':>10}")
        rows = (("seed 004 recipe", seed), ("tn.open().to_tf(32)", ours),
                ("tf.data floor (zeros)", floor))  # fmt: skip
        for name, r in rows:
            rates = f"{format_rate(r['rate']):>12} {format_rate(r['graph']):>10}"
            print(f"  {name:<22} {rates} {r['rss_mib']:>6} MiB")
        print(
            f"  x seed: {ours['rate'] / seed['rate']:.1f} (Python loop), "
            f"{ours['graph'] / seed['graph']:.1f} (in graph); the floor, batches of zeros "
            f"from nothing: {floor['rate'] / seed['rate']:.1f}, "
            f"{floor['graph'] / seed['graph']:.1f}"
        )


def _medians(results: list[dict]) -> dict:
    """The median rates of a side's runs, and its largest peak RSS."""
    return {
        "rate": statistics.median(r["rate"] for r in results),
        "graph": statistics.median(r["graph"] for r in results),
        "rss_mib": max(r["rss_mib"] for r in results),
    }


def _to_tf(args: argparse.Namespace) -> None:
    print("\n2. to_tf over TFRecords against TensorFlow's pipeline (records/s, medians)")
    for kind in ("numeric", "tokens"):
        path = _training_file(kind, args.quick)
        got = _side("to_tf", kind, str(path), str(args.runs))
        if "skip" in got:
            print(f"  {kind}: failed: {got['skip']}")
            continue
        for batch, r in got.items():
            ratio = r["tfrecnp"] / r["tensorflow"]
            print(
                f"  {kind:<8} batch {batch:>5}: tfrecnp {format_rate(r['tfrecnp']):>8}  "
                f"TensorFlow {format_rate(r['tensorflow']):>8}  x TF {ratio:.1f}"
            )


def _torch(args: argparse.Namespace) -> None:
    print("\n3. PyTorch DataLoader, 2 workers, batch 32, numeric TFRecords (records/s)")
    path = _training_file("numeric", args.quick)
    index = Path(str(path) + ".idx")
    if not index.exists():
        subprocess.run([sys.executable, "-m", "tfrecnp", "index", str(path)], check=True)
    results = {w: _side("torch", w, str(path), str(args.runs)) for w in
               ("plain", "map-style", "to_torch", "to_torch-0", "vahidk")}  # fmt: skip
    peer = results["vahidk"].get("rate")
    for name, r in results.items():
        if "skip" in r:
            print(f"  {name:<10} failed: {r['skip']}")
            continue
        ratio = f"x vahidk {r['rate'] / peer:.1f}" if peer else ""
        print(f"  {name:<10} {format_rate(r['rate']):>10}  ({r['records']:,} records)  {ratio}")


if __name__ == "__main__":
    sys.exit(main())
