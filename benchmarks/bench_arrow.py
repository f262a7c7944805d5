"""Arrow and Parquet (issue 27): TFRecord -> Parquet by tfrecnp against the tf.data + pandas
recipe and against Ray Data (read_tfrecords().write_parquet()), each case in its own process
(its peak RSS is its own); and the Arrow door's cost: batches per second of
ds.arrow_reader(1024) against ds.batches(1024), interleaved in one process (medians).

Two kinds of record, each written once as shards of about 32 MiB under --data:
numeric (label int64, x 16 float32) and tokens (label int64, tokens: VarLen int64 of 2..255
values below 50 000).

The recipes users copy: the careful one (issue 35), TFRecordDataset.batch(1024).map(
parse_example, AUTOTUNE), a DataFrame per batch appended to a pyarrow ParquetWriter; and the
common one, a loop over tf.data.TFRecordDataset, tf.io.parse_single_example per record, a
dict of NumPy values per row appended to a list, pandas.DataFrame(rows), then to_parquet:
the whole dataset in memory, Python objects per row. They and Ray run on a prefix
of the shards (--peer-mib) when the input is larger: at their rates the whole input would
take hours; the output says so and compares rates (MiB/s of TFRecord input). tfrecnp runs
on the prefix too (same input) and on everything. Ray's peak RSS is the largest sum over
its process tree (driver, raylet, workers), sampled every 0.2 s; the others' is ru_maxrss.

Rows per second and the cores used (CPU seconds over wall seconds, this process's threads)
are printed beside MiB/s.

Targets (issue 35): >= 10x the batched recipe, tfrecnp's peak RSS <= 300 MiB whatever the size,
on >= 2 GiB; the Arrow door <= 20% over NumPy batches.

    python benchmarks/bench_arrow.py --mib 2048 --data /tmp/bench-arrow --clean
    python benchmarks/bench_arrow.py --mib 64 --doors-only --runs 9
    python benchmarks/bench_arrow.py --encodings --runs 7

--encodings times each (encoding, codec) of tfrecnp's ladder (parquet_write.LADDER) on a
million values of a few kinds of column, in this process (CPU ns per value, medians), with
the bits each value takes and the pair chosen: the measurements behind the ladder's order.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import contextlib

from common import DATA_DIR

SHARD_BYTES = 32 << 20
PEERS = ("tf.data batched+pandas", "tf.data+pandas", "ray")
IMPORTS = {
    "tfrecnp": ("tfrecnp", "pyarrow.parquet"),
    "tf.data+pandas": ("pandas", "tensorflow", "pyarrow.parquet"),
    "tf.data batched+pandas": ("pandas", "tensorflow", "pyarrow.parquet"),
    "ray": ("ray", "ray.data"),
}
KINDS = {
    # kind: (about the bytes of one Example, spec as JSON)
    "numeric": (
        110,
        {
            "label": {"type": "FixedLen", "shape": [], "dtype": "int64"},
            "x": {"type": "FixedLen", "shape": [16], "dtype": "float32"},
        },
    ),
    "tokens": (
        360,
        {
            "label": {"type": "FixedLen", "shape": [], "dtype": "int64"},
            "tokens": {"type": "VarLen", "dtype": "int64"},
        },
    ),
}


def _data(root: Path, kind: str, mib: int) -> Path:
    """Shards of about `mib` MiB of `kind` records, written once."""
    import numpy as np

    import tfrecnp as tn

    folder = root / f"arrow-{kind}-{mib}"
    done = folder / ".done"
    if done.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    record, _ = KINDS[kind]
    per_shard = SHARD_BYTES // record
    n = max(per_shard, (mib << 20) // record)
    rng = np.random.default_rng(0)
    step = 100_000
    with tn.Writer(folder / "data.tfrecord", records_per_shard=per_shard, progress=False) as w:
        for a in range(0, n, step):
            m = min(step, n - a)
            cols: dict = {"label": np.arange(a, a + m, dtype=np.int64)}
            if kind == "numeric":
                cols["x"] = rng.standard_normal((m, 16)).astype(np.float32)
            else:
                lengths = rng.integers(2, 256, m)
                values = rng.integers(0, 50_000, int(lengths.sum()))
                cols["tokens"] = tn.Ragged.from_lengths(values, lengths)
            w.write_batch(cols)
    done.touch()
    return folder


def _shards(folder: Path, mib: int | None = None) -> list[Path]:
    """The shards, or the first ones holding at least `mib` MiB."""
    paths = sorted(folder.glob("*.tfrecord"))
    if mib is None:
        return paths
    out, size = [], 0
    for p in paths:
        out.append(p)
        size += p.stat().st_size
        if size >= mib << 20:
            break
    return out


def _tree_rss() -> int:
    """RSS of this process and all its descendants, in bytes."""
    import psutil

    me = psutil.Process()
    total = 0
    for p in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


def _case(name: str, kind: str, out: str, paths: list[str]) -> None:
    """One conversion in this process; prints {"seconds", "rss_mib"}."""
    spec_json = json.dumps(KINDS[kind][1])
    peak = [0]
    sampling = name == "ray"
    if sampling:

        def sample() -> None:
            while sampling:
                peak[0] = max(peak[0], _tree_rss())
                time.sleep(0.2)

        threading.Thread(target=sample, daemon=True).start()
    # Imports before the clock: a fixed cost (TensorFlow's is seconds) that a prefix's rate
    # would spread over the whole input.
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    for module in IMPORTS[name]:
        importlib.import_module(module)
    before = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    if name == "tfrecnp":
        import tfrecnp as tn

        tn.convert(paths, out, spec=tn.spec_from_json(spec_json), progress=False)
    elif name == "tf.data+pandas":
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        import pandas as pd
        import tensorflow as tf

        features = {"label": tf.io.FixedLenFeature([], tf.int64)}
        if kind == "numeric":
            features["x"] = tf.io.FixedLenFeature([16], tf.float32)
        else:
            features["tokens"] = tf.io.VarLenFeature(tf.int64)
        rows = []
        for raw in tf.data.TFRecordDataset(paths):
            ex = tf.io.parse_single_example(raw, features)
            row = {"label": int(ex["label"])}
            if kind == "numeric":
                row["x"] = ex["x"].numpy()
            else:
                row["tokens"] = ex["tokens"].values.numpy()
            rows.append(row)
        pd.DataFrame(rows).to_parquet(out)
    elif name == "tf.data batched+pandas":
        _batched_recipe(kind, out, paths)
    elif name == "ray":
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        ray.data.read_tfrecords(paths).write_parquet(out)
    else:
        raise ValueError(name)
    seconds = time.perf_counter() - t0
    sampling = False
    usage = resource.getrusage(resource.RUSAGE_SELF)
    rss = max(usage.ru_maxrss << 10, peak[0]) >> 20
    import pyarrow.dataset as pds

    found = pds.dataset(out, format="parquet")
    rows = found.count_rows()
    size = sum(os.path.getsize(f) for f in found.files) / (1 << 20)
    # this process's threads (not Ray's workers), from the clock's start
    cpu = usage.ru_utime + usage.ru_stime - before.ru_utime - before.ru_stime
    print(json.dumps({"seconds": seconds, "rss_mib": rss, "rows": rows, "cpu": cpu, "out": size}))


def _batched_recipe(kind: str, out: str, paths: list[str]) -> None:
    """The careful user's recipe (issue 35): TFRecordDataset.batch(1024).map(parse_example,
    AUTOTUNE), a DataFrame per batch, each appended to one pyarrow ParquetWriter (its
    defaults). Memory stays at a batch; the time goes to TensorFlow's parse, pandas and one
    core of Parquet encoding."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
    import tensorflow as tf

    features = {"label": tf.io.FixedLenFeature([], tf.int64)}
    if kind == "numeric":
        features["x"] = tf.io.FixedLenFeature([16], tf.float32)
    else:
        features["tokens"] = tf.io.RaggedFeature(tf.int64)
    parsed = (
        tf.data.TFRecordDataset(paths)
        .batch(1024)
        .map(lambda raw: tf.io.parse_example(raw, features), num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )
    writer = None
    for batch in parsed:
        frame = {"label": batch["label"].numpy()}
        if kind == "numeric":
            frame["x"] = list(batch["x"].numpy())
        else:
            tokens = batch["tokens"]
            frame["tokens"] = np.split(tokens.flat_values.numpy(), tokens.row_splits.numpy()[1:-1])
        table = pa.Table.from_pandas(pd.DataFrame(frame), preserve_index=False)
        if writer is None:
            writer = pq.ParquetWriter(out, table.schema)
        writer.write_table(table)
    if writer is not None:
        writer.close()


def _run(name: str, kind: str, paths: list[Path], timeout: float) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="bench-arrow-", dir=paths[0].parent.parent))
    out = scratch / ("out.parquet" if name != "ray" else "out")
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--case", name, kind, str(out), *map(str, paths)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
        if done.returncode or not lines:
            return {"error": (done.stderr or done.stdout).strip().splitlines()[-1:]}
        got = json.loads(lines[-1])
        got["mib"] = sum(p.stat().st_size for p in paths) / (1 << 20)
        return got
    except subprocess.TimeoutExpired:
        return {"error": [f"over {timeout:.0f} s"]}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _doors(kind: str, paths: list[Path], runs: int) -> dict[str, float]:
    """Median batches per second of batches(1024) and arrow_reader(1024), interleaved."""
    import tfrecnp as tn

    ds = tn.open([str(p) for p in paths], tn.spec_from_json(json.dumps(KINDS[kind][1])))
    cases = {
        "batches(1024)": lambda: sum(1 for _ in ds.batches(1024)),
        "arrow_reader(1024)": lambda: sum(1 for _ in ds.arrow_reader(1024)),
    }
    rates: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(runs):
        for k, fn in cases.items():
            t0 = time.perf_counter()
            n = fn()
            rates[k].append(n / (time.perf_counter() - t0))
    return {k: statistics.median(v) for k, v in rates.items()}


def _encodings(runs: int) -> None:
    """CPU ns per value and bits per value of each ladder pair, on kinds of column."""
    import numpy as np
    import pyarrow as pa

    from tfrecnp.data import parquet_write as pw

    rng = np.random.default_rng(0)
    n = 1 << 20
    columns = {
        "row ids": np.arange(n),
        "labels of 10": rng.integers(0, 10, n),
        "tokens of 50k": rng.integers(0, 50_000, n),
        "zipf words": np.minimum(rng.zipf(1.2, n), 50_000),
        "normal float32": rng.standard_normal(n).astype(np.float32),
        "tags of 3": [(b"cat", b"dog", b"emu")[k] for k in rng.integers(0, 3, n // 8)],
        "captions": [f"caption {i}".encode() for i in range(n // 8)],
    }
    print("Encodings: CPU ns per value (median) and bits per value; * the pair chosen")
    for name, data in columns.items():
        values = pa.chunked_array([pa.array(data)])
        chosen = pw.choose_encoding(values)
        cells = []
        for encoding, codec in pw.LADDER:
            if encoding == (pw.PLAIN if pa.types.is_integer(values.type) else pw.DELTA):
                continue
            times = []
            for _ in range(runs):
                t0 = time.process_time()
                size = pw._encoded_size(values, encoding, codec)
                times.append(time.process_time() - t0)
            mark = "*" if (encoding, codec) == chosen else " "
            ns = statistics.median(times) * 1e9 / len(values)
            short = {"DELTA_BINARY_PACKED": "delta", "dictionary": "dict"}.get(encoding, "plain")
            cells.append(f"{mark}{short}+{codec} {ns:5.1f} ns {size * 8 / len(values):5.1f} b")
        print(f"  {name:<15} " + " | ".join(cells))


def _conversions(folder: Path, kind: str, args: argparse.Namespace) -> None:
    full = _shards(folder)
    prefix = _shards(folder, min(args.peer_mib, args.mib))
    size = sum(p.stat().st_size for p in full) / (1 << 20)
    psize = sum(p.stat().st_size for p in prefix) / (1 << 20)
    print(f"{kind}: TFRecord -> Parquet, {size:.0f} MiB in {len(full)} shards")
    if len(prefix) < len(full) and not args.skip_peers:
        print(
            f"  (the peers run on the first {psize:.0f} MiB, {len(prefix)} shards, not on all "
            f"{size:.0f} MiB: see the time each would take at its rate; rates are compared; "
            "the recipe's RSS grows with its input, since it holds every row)"
        )
    runs = [("tfrecnp", full)]
    if len(prefix) < len(full):
        runs.append(("tfrecnp", prefix))
    if not args.skip_peers:
        runs += [(name, prefix) for name in args.peers.split(",")]
    results = [(name, _run(name, kind, paths, args.timeout)) for name, paths in runs]
    base = next((r["mib"] / r["seconds"] for n, r in results if "seconds" in r), None)
    for name, got in results:
        if "error" in got:
            print(f"  {name:<22} failed: {got['error']}")
            continue
        rate = got["mib"] / got["seconds"]
        ratio = f"tfrecnp {base / rate:6.1f}x faster" if name != "tfrecnp" and base else ""
        if got["mib"] < size - 1 and name != "tfrecnp":
            ratio += f"; all {size:.0f} MiB would take ~{size / rate / 60:.0f} min"
        print(
            f"  {name:<22} on {got['mib']:6.0f} MiB {got['seconds']:8.2f} s {rate:7.2f} MiB/s  "
            f"{got['rows'] / got['seconds'] / 1e3:7.0f} k rows/s  "
            f"CPU {got['cpu'] / got['seconds']:4.2f} cores  "
            f"peak RSS {got['rss_mib']:5d} MiB  Parquet {got['out']:6.0f} MiB  {ratio}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64, help="MiB of each kind (issue: 2048)")
    parser.add_argument("--peer-mib", type=int, default=32, help="input the peers convert")
    parser.add_argument("--data", type=Path, default=DATA_DIR, help="where the shards live")
    parser.add_argument("--clean", action="store_true", help="delete the shards at the end")
    parser.add_argument("--kinds", default="numeric,tokens", help="numeric, tokens or both")
    parser.add_argument("--runs", type=int, default=7, help="rounds of the Arrow-door timing")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds a case may take")
    parser.add_argument("--skip-peers", action="store_true", help="only tfrecnp's cases")
    parser.add_argument(
        "--peers", default=",".join(PEERS), help=f"peers to run, of {', '.join(PEERS)}"
    )
    parser.add_argument("--doors-only", action="store_true", help="only the Arrow door's cost")
    parser.add_argument("--encodings", action="store_true", help="only the encodings' costs")
    parser.add_argument("--case", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.encodings:
        _encodings(args.runs)
        return 0
    if args.case:
        name, kind, out, *paths = args.case
        _case(name, kind, out, paths)
        return 0
    kinds = args.kinds.split(",")
    folders = {kind: _data(args.data, kind, args.mib) for kind in kinds}
    try:
        if not args.doors_only:
            for kind in kinds:
                _conversions(folders[kind], kind, args)
        print("The Arrow door: batches per second (median of interleaved runs)")
        for kind in kinds:
            paths = _shards(folders[kind], min(64, args.mib))
            doors = _doors(kind, paths, args.runs)
            cost = doors["batches(1024)"] / doors["arrow_reader(1024)"] - 1
            print(
                f"  {kind:<8} batches(1024) {doors['batches(1024)']:7.0f}/s  arrow_reader(1024) "
                f"{doors['arrow_reader(1024)']:7.0f}/s  the Arrow door costs {cost:+.0%}"
            )
    finally:
        if args.clean:
            for folder in folders.values():
                shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
