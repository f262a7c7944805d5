"""Training-shaped reading (issue 10): the path users call, side by side with TensorFlow.

tfrecnp: `tn.open(path, spec).batches(batch, shuffle=..., seed=0)`, every column touched as
NumPy. TensorFlow: its best practice on the same files,
`TFRecordDataset(path)[.shuffle(N, seed=0)].batch(batch).map(parse_example, AUTOTUNE)
.prefetch(2)`, with `.numpy()` of every output; shuffle=True is `.shuffle(len(dataset))`.
Both read the same files, written by TensorFlow's own TFRecordWriter:

- numeric: 200 000 records of an int64 label, 16 float32s and an 8-byte id;
- tokens: 200 000 records of 0..64 int64 tokens and a label;
- raw: 20 000 records of a 64x64 float32 tensor stored as raw bytes and a label.

Batch 32, 256, 1024 and 8192; unshuffled, shuffle=10_000 and shuffle=True. Each side runs
in its own process (so peak RSS is per side, and TensorFlow's threads do not compete with
ours); each case is the median of --runs passes. Also, tfrecnp only: `ds[i]` in random order,
`ds.__getitems__` of 32 random indices (PyTorch's batched fetch) and `iter(ds)`.

    python benchmarks/run.py training [--runs N] [--quick] [--kinds raw] [--batches 32,1024]
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
from common import DATA_DIR, format_rate, run_peer, warm_page_cache

KINDS = {"numeric": 200_000, "tokens": 200_000, "raw": 20_000}
BATCHES = (32, 256, 1024, 8192)
SHUFFLES = (0, 10_000, True)
SIDE = 64


def _path(kind: str, quick: bool) -> Path:
    return DATA_DIR / f"training-{kind}{'-quick' if quick else ''}.tfrecord"


def _write(kind: str, n: int, path: Path) -> None:
    """Write the file with TensorFlow's own writer (in this subprocess)."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    feature, F = tf.train.Feature, tf.train
    tmp = path.with_suffix(".part")
    with tf.io.TFRecordWriter(str(tmp)) as w:
        for i in range(n):
            f = {"label": feature(int64_list=F.Int64List(value=[i]))}
            if kind == "numeric":
                f["x"] = feature(float_list=F.FloatList(value=rng.random(16).tolist()))
                f["id"] = feature(bytes_list=F.BytesList(value=[b"%08d" % i]))
            elif kind == "tokens":
                tokens = rng.integers(0, 30_000, rng.integers(0, 65)).tolist()
                f["tokens"] = feature(int64_list=F.Int64List(value=tokens))
            else:
                raw = rng.random((SIDE, SIDE), dtype=np.float32).tobytes()
                f["data"] = feature(bytes_list=F.BytesList(value=[raw]))
            ex = F.Example(features=F.Features(feature=f))
            w.write(ex.SerializeToString())
    os.replace(tmp, path)


def _tn_side(kind: str, path: Path, runs: int, batches: list[int]) -> dict:
    import tfrecnp as tn

    spec = {
        "numeric": {
            "label": tn.FixedLen((), "int64"),
            "x": tn.FixedLen((16,), "float32"),
            "id": tn.Bytes(),
        },
        "tokens": {"label": tn.FixedLen((), "int64"), "tokens": tn.VarLen("int64")},
        "raw": {"label": tn.FixedLen((), "int64"), "data": tn.Raw("float32", shape=(SIDE, SIDE))},
    }[kind]
    ds = tn.open(path, spec)
    n = len(ds)
    out = {}

    def touch(batch: dict) -> int:
        for col in batch.values():
            np.asarray(col.values if isinstance(col, tn.Ragged) else col)
        return len(batch["label"])

    for batch in batches:
        for shuffle in SHUFFLES:
            rates = []
            for _ in range(runs):
                t0 = time.perf_counter()
                got = sum(touch(b) for b in ds.batches(batch, shuffle=shuffle, seed=0))
                rates.append(got / (time.perf_counter() - t0))
            out[f"{batch}/{shuffle}"] = statistics.median(rates)
    rng = np.random.default_rng(1)
    picks = rng.integers(0, n, min(n, 20_000)).tolist()
    t0 = time.perf_counter()
    for i in picks:
        ds[i]
    out["ds[i]"] = len(picks) / (time.perf_counter() - t0)
    lists = [rng.integers(0, n, 32) for _ in range(min(2000, n // 32))]
    t0 = time.perf_counter()
    for idx in lists:
        ds.__getitems__(idx)
    out["__getitems__(32)"] = 32 * len(lists) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    count = sum(1 for _ in ds)
    out["iter(ds)"] = count / (time.perf_counter() - t0)
    out["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    return out


def _tf_side(kind: str, path: Path, runs: int, batches: list[int]) -> dict:
    import tensorflow as tf

    FL = tf.io.FixedLenFeature
    spec = {
        "numeric": {"label": FL([], tf.int64), "x": FL([16], tf.float32), "id": FL([], tf.string)},
        "tokens": {"label": FL([], tf.int64), "tokens": tf.io.RaggedFeature(tf.int64)},
        "raw": {"label": FL([], tf.int64), "data": FL([], tf.string)},
    }[kind]

    def parse(s):
        out = tf.io.parse_example(s, spec)
        if kind == "raw":
            out["data"] = tf.reshape(tf.io.decode_raw(out["data"], tf.float32), [-1, SIDE, SIDE])
        return out

    n = sum(1 for _ in tf.data.TFRecordDataset(str(path)))
    out = {}
    for batch in batches:
        for shuffle in SHUFFLES:
            rates = []
            for _ in range(runs):
                ds = tf.data.TFRecordDataset(str(path))
                if shuffle:
                    ds = ds.shuffle(n if shuffle is True else shuffle, seed=0)
                ds = ds.batch(batch).map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)
                t0 = time.perf_counter()
                got = 0
                for b in ds:
                    for col in b.values():
                        (col.flat_values if isinstance(col, tf.RaggedTensor) else col).numpy()
                    got += len(b["label"])
                rates.append(got / (time.perf_counter() - t0))
            out[f"{batch}/{shuffle}"] = statistics.median(rates)
    out["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    return out


def _run_side(side: str, kind: str, path: Path, runs: int, batches: list[int]) -> dict:
    return run_peer(__file__, [side, kind, path, runs, ",".join(map(str, batches))], flag="--side")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_training", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="passes per case (median)")
    parser.add_argument("--quick", action="store_true", help="small files, for a smoke run")
    parser.add_argument("--kinds", default=",".join(KINDS), help="which files (default: all)")
    parser.add_argument(
        "--batches",
        default=",".join(map(str, BATCHES)),
        help="batch sizes, comma-separated (default: %(default)s)",
    )
    parser.add_argument("--side", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--write", nargs=3, help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args(argv)
    if args.write:
        _write(args.write[0], int(args.write[1]), Path(args.write[2]))
        return 0
    if args.side:
        side, kind, path, runs, sizes = args.side
        run = _tn_side if side == "tfrecnp" else _tf_side
        print(json.dumps(run(kind, Path(path), int(runs), [int(b) for b in sizes.split(",")])))
        return 0
    batches = [int(b) for b in args.batches.split(",")]
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    print(
        "Training-shaped reading: records/s of the path users call, tfrecnp against "
        "TensorFlow's best pipeline on the same TF-written files (medians)"
    )
    for kind in args.kinds.split(","):
        n = KINDS[kind] // 10 if args.quick else KINDS[kind]
        path = _path(kind, args.quick)
        if not path.exists():
            subprocess.run(
                [sys.executable, __file__, "--write", kind, str(n), str(path)], check=True
            )
        warm_page_cache(path)
        ours = _run_side("tfrecnp", kind, path, args.runs, batches)
        theirs = _run_side("tensorflow", kind, path, args.runs, batches)
        print(f"\n{kind}: {n:,} records, {path.stat().st_size / 1e6:.0f} MB")
        if "skip" in ours or "skip" in theirs:
            print(f"  failed: {ours.get('skip') or theirs.get('skip')}")
            continue
        print(f"  {'batch':>6} {'shuffle':>8} {'tfrecnp':>10} {'TensorFlow':>11} {'x TF':>6}")
        for batch in batches:
            for shuffle in SHUFFLES:
                key = f"{batch}/{shuffle}"
                a, b = ours[key], theirs[key]
                label = {0: "-", True: "True"}.get(shuffle, f"{shuffle:,}")
                print(
                    f"  {batch:>6} {label:>8} {format_rate(a):>10} {format_rate(b):>11} "
                    f"{a / b:>6.1f}"
                )
        for key in ("ds[i]", "__getitems__(32)", "iter(ds)"):
            print(f"  {key:<16} {format_rate(ours[key]):>10} records/s")
        print(f"  peak RSS: tfrecnp {ours['rss_mib']} MiB, TensorFlow {theirs['rss_mib']} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
