"""Dataset (issue 4): converting TFRecords to .npy in bounded memory, and shuffled batches,
against the seed recipes.

Data, generated once into bench-data/ with tn.Writer and reused:

- "raw" files: records of a 32x32 float32 tensor stored as raw bytes (4 KiB) plus an int64
  label, the layout of seed 000; a >= 2 GiB file (524 288 records) and one 4x smaller;
- a "tokens" file: 300 000 records of a list of 0..64 int64 tokens plus an int64 label, the
  features of seed 001's text example.

Cases (medians of --runs runs, each in a fresh subprocess so peak RSS is per run):

- convert memory: `tn.convert(file, folder, spec=...)` to a .npy folder for both raw files;
  peak RSS (ru_maxrss) of each. Target: flat in the file size and <= 300 MiB.
- convert speed: the same on the smaller file against the seed 000 recipe
  (TFRecordDataset.map(parse_single_example + decode_raw + reshape).batch(32), `.numpy()` of
  each batch into lists, then np.save of the concatenation), in its own subprocess.
  Target: >= 5x its records/s.
- shuffled batches: `ds.batches(1024, shuffle=10_000)` (Ragged tokens) and with
  `pad={"sequence": 128}` (the seed's dense output), against seed 001's pipeline
  (map(parse_single_example + sparse.to_dense).shuffle(10_000).padded_batch(1024, ([128],
  [])).prefetch(AUTOTUNE), `.numpy()` of each batch). Target: >= 4x its records/s.

Disk: the inputs take about 2.8 GB in bench-data/ (the benchmark checks for 6 GB free
first). Outputs (up to 2.2 GB, deleted after each run) go to /dev/shm when it has room, as
in bench_write, so the disk's writeback (shared with whatever else runs) does not decide the
timings; the seed recipe writes there too. Page-cache pages of written files do not count
towards a process's RSS either way.

    python benchmarks/run.py dataset [--runs N] [--no-peers] [--quick]
    python benchmarks/bench_dataset.py [--runs N] [--no-peers] [--quick]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, PEER_TIMEOUT, run_peer, timed, warm_page_cache

SIDE = 32  # raw tensors are SIDE x SIDE float32
BIG_RECORDS = 524_288  # 2.17 GB of 4 KiB tensors: >= 2 GiB
SMALL_RECORDS = BIG_RECORDS // 4
TOKEN_RECORDS = 300_000
MAX_TOKENS = 64
PAD = 128  # seed 001's max_length
SHUFFLE = 10_000
BATCH = 1024
WRITE_ROWS = 8192
NEED_FREE = 6 << 30
TARGET_RSS_MIB = 300
TARGET_CONVERT = 5.0
TARGET_SHUFFLE = 4.0


def raw_spec():
    import tfrecnp as tn

    return {"data": tn.Raw("float32", shape=(SIDE, SIDE)), "label": tn.FixedLen((), "int64")}


def token_spec():
    import tfrecnp as tn

    return {"sequence": tn.VarLen("int64"), "label": tn.FixedLen((), "int64")}


def raw_file(records: int) -> Path:
    path = DATA_DIR / f"dataset-{records}x{SIDE}x{SIDE}-float32.tfrecord"
    if path.exists():
        return path
    import tfrecnp as tn

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    print(f"writing {path} (once) ...", flush=True)
    rng = np.random.default_rng(0)
    with tn.Writer(path, encoding={"data": "raw"}, progress=False) as writer:
        for first in range(0, records, WRITE_ROWS):
            n = min(WRITE_ROWS, records - first)
            data = rng.random((n, SIDE, SIDE), dtype=np.float32)
            writer.write_batch({"data": data, "label": np.arange(first, first + n)})
    return path


def token_file(records: int) -> Path:
    path = DATA_DIR / f"dataset-tokens-{records}.tfrecord"
    if path.exists():
        return path
    import tfrecnp as tn

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    print(f"writing {path} (once) ...", flush=True)
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, MAX_TOKENS + 1, records)
    tokens = tn.Ragged.from_lengths(rng.integers(1, 30_000, int(lengths.sum())), lengths)
    tn.write(path, {"sequence": tokens, "label": rng.integers(0, 2, records)}, progress=False)
    return path


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# --- subprocess sides ----------------------------------------------------------------------


def child_main(argv: list[str]) -> int:
    """One tfrecnp conversion in a fresh process: print seconds, records and peak RSS."""
    src, dst = argv
    import tfrecnp as tn

    t0 = time.perf_counter()
    out = tn.convert(src, dst, spec=raw_spec(), progress=False)
    seconds = time.perf_counter() - t0
    with tn.load(out) as arrays:
        records = arrays.records
    print(json.dumps({"seconds": seconds, "records": records, "rss_mib": peak_rss_mib()}))
    return 0


def peer_main(argv: list[str]) -> int:
    kind = argv[0]
    import tensorflow as tf

    if kind == "seed000":
        src, dst, runs = argv[1], Path(argv[2]), int(argv[3])

        def parse(example_proto):
            description = {
                "data": tf.io.FixedLenFeature([], tf.string),
                "label": tf.io.FixedLenFeature([], tf.int64),
            }
            example = tf.io.parse_single_example(example_proto, description)
            data = tf.reshape(tf.io.decode_raw(example["data"], tf.float32), [SIDE, SIDE])
            return data, example["label"]

        def loop() -> int:
            dataset = tf.data.TFRecordDataset(src).map(parse).batch(32)
            datas, labels = [], []
            for data, label in dataset:
                datas.append(data.numpy())
                labels.append(label.numpy())
            dst.mkdir(parents=True, exist_ok=True)
            np.save(dst / "data.npy", np.concatenate(datas))
            np.save(dst / "label.npy", np.concatenate(labels))
            return sum(len(x) for x in labels)

    elif kind == "seed001":
        src, runs = argv[1], int(argv[2])

        def parse(example_proto):
            features = {
                "sequence": tf.io.VarLenFeature(dtype=tf.int64),
                "label": tf.io.FixedLenFeature([], dtype=tf.int64),
            }
            parsed = tf.io.parse_single_example(example_proto, features)
            return tf.sparse.to_dense(parsed["sequence"]), parsed["label"]

        def loop() -> int:
            dataset = tf.data.TFRecordDataset(src).map(parse).shuffle(SHUFFLE)
            zero = tf.constant(0, tf.int64)
            dataset = dataset.padded_batch(
                BATCH, padded_shapes=([PAD], []), padding_values=(zero, zero)
            )
            dataset = dataset.prefetch(tf.data.AUTOTUNE)
            n = 0
            for sequences, labels in dataset:
                sequences.numpy()
                n += len(labels.numpy())
            return n

    else:
        raise SystemExit(f"unknown peer {kind}")
    cleanup = (lambda: shutil.rmtree(dst, ignore_errors=True)) if kind == "seed000" else None
    seconds, n = timed(loop, runs, after=cleanup)
    print(json.dumps({"seconds": seconds, "records": n, "rss_mib": peak_rss_mib()}), flush=True)
    return 0


# --- the parent -----------------------------------------------------------------------------


def out_dir(name: str, size: int) -> Path:
    """Where outputs go: /dev/shm when it has room for `size` bytes and some, else bench-data."""
    shm = Path("/dev/shm")
    if shm.is_dir() and shutil.disk_usage(shm).free > 2 * size + (1 << 30):
        return shm / f"tfrecnp-bench-dataset-{name}"
    return DATA_DIR / f"out-{name}"


def convert_runs(src: Path, runs: int) -> dict:
    """`runs` conversions of src, each in a fresh subprocess; output removed after each."""
    dst = out_dir(src.stem, src.stat().st_size)
    seconds, rss, records = [], [], 0
    for _ in range(runs):
        shutil.rmtree(dst, ignore_errors=True)
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(src), str(dst)],
            capture_output=True,
            text=True,
            timeout=PEER_TIMEOUT,
        )
        shutil.rmtree(dst, ignore_errors=True)
        if proc.returncode != 0:
            raise RuntimeError(f"conversion of {src} failed: {proc.stderr.strip()[-2000:]}")
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        seconds.append(out["seconds"])
        rss.append(out["rss_mib"])
        records = out["records"]
    return {"seconds": seconds, "rss": rss, "records": records}


def shuffle_runs(path: Path, runs: int, pad: bool) -> list[float]:
    import tfrecnp as tn

    ds = tn.open(path, token_spec())
    len(ds)  # the index is built once, as a training loop would reuse it
    out = []
    for run in range(runs):
        t0 = time.perf_counter()
        n = 0
        kwargs = {"pad": {"sequence": PAD}} if pad else {}
        for batch in ds.batches(BATCH, shuffle=SHUFFLE, seed=run, **kwargs):
            n += len(batch["label"])
        out.append(time.perf_counter() - t0)
        if n != len(ds):
            raise AssertionError(f"saw {n} records, expected {len(ds)}")
    return out


def row(name: str, seconds: list[float], records: int, size: int, extra: str = "") -> dict:
    median = statistics.median(seconds)
    return {
        "name": name,
        "median": median,
        "rps": records / median,
        "mbps": size / median / 1e6,
        "spread": (max(seconds) - min(seconds)) / median,
        "runs": len(seconds),
        "extra": extra,
    }


def print_rows(title: str, rows: list[dict], ref: str | None) -> None:
    base = next((r for r in rows if r["name"] == ref), None)
    print(f"\n{title}")
    header = f"{'case':<52} {'seconds':>8} {'records/s':>11} {'MB/s':>7} {'x seed':>7} "
    header += f"{'spread':>6} {'runs':>4}  peak RSS"
    print(header)
    print("-" * len(header))
    for r in rows:
        ratio = f"{r['rps'] / base['rps']:.1f}" if base else "-"
        print(
            f"{r['name']:<52} {r['median']:>8.2f} {r['rps']:>11,.0f} {r['mbps']:>7,.0f} "
            f"{ratio:>7} {100 * r['spread']:>5.0f}% {r['runs']:>4}  {r['extra']}"
        )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return child_main(argv[1:])
    if argv[:1] == ["--peer"]:
        return peer_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per case (>= 3)")
    parser.add_argument("--no-peers", action="store_true", help="skip the TensorFlow recipes")
    parser.add_argument(
        "--quick", action="store_true", help="files 16x smaller (a smoke run; no 2 GiB file)"
    )
    args = parser.parse_args(argv)
    runs = max(3, args.runs)
    scale = 16 if args.quick else 1
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(DATA_DIR).free
    big_needed = not raw_file_path(BIG_RECORDS // scale).exists()
    if free < NEED_FREE // scale and big_needed:
        print(f"skipped: {free / 2**30:.1f} GiB free in {DATA_DIR}, need {NEED_FREE >> 30} GiB")
        return 0
    big, small = raw_file(BIG_RECORDS // scale), raw_file(SMALL_RECORDS // scale)
    tokens = token_file(TOKEN_RECORDS // scale)

    # conversion: memory at two sizes, speed against seed 000 on the smaller file
    results = {}
    for label, path in (("4x smaller", small), ("big", big)):
        warm_page_cache(path)
        results[label] = (path, convert_runs(path, runs))
    rows = []
    for label, (path, res) in results.items():
        size = path.stat().st_size
        rss = f"{max(res['rss']):,.0f} MiB"
        name = f"tfrecnp convert -> .npy, {label} ({size / 2**30:.2f} GiB)"
        rows.append(row(name, res["seconds"], res["records"], size, rss))
    small_size = small.stat().st_size
    seed_name = "seed 000: tf.data + .numpy() + np.save"
    if not args.no_peers:
        dst = out_dir("seed000", small_size)
        out = run_peer(Path(__file__), ["seed000", str(small), str(dst), str(runs)])
        shutil.rmtree(dst, ignore_errors=True)
        if "skip" in out:
            print(f"  note: seed 000 recipe skipped: {out['skip']}")
        else:
            extra = f"{out['rss_mib']:,.0f} MiB"
            rows.append(
                row(f"{seed_name} (4x smaller)", out["seconds"], out["records"], small_size, extra)
            )
    print_rows(
        f"convert {SIDE}x{SIDE} float32 raw tensors + int64 label to .npy; medians",
        rows,
        f"{seed_name} (4x smaller)",
    )

    # shuffled batches against seed 001
    warm_page_cache(tokens)
    size = tokens.stat().st_size
    n = TOKEN_RECORDS // scale
    shuffle_rows = [
        row(
            f"tfrecnp batches({BATCH}, shuffle={SHUFFLE:_})",
            shuffle_runs(tokens, runs, False),
            n,
            size,
        ),
        row(f"tfrecnp same, pad={{'sequence': {PAD}}}", shuffle_runs(tokens, runs, True), n, size),
    ]
    seed1 = "seed 001: map, shuffle, padded_batch, prefetch"
    if not args.no_peers:
        out = run_peer(Path(__file__), ["seed001", str(tokens), str(runs)])
        if "skip" in out:
            print(f"  note: seed 001 pipeline skipped: {out['skip']}")
        else:
            if out["records"] != n:
                raise AssertionError(f"seed 001 saw {out['records']} records, expected {n}")
            shuffle_rows.append(row(seed1, out["seconds"], n, size))
    print_rows(
        f"shuffled batches of {BATCH}: {n:,} records of 0..{MAX_TOKENS} int64 tokens + label, "
        f"{size / 1e6:,.0f} MB; medians",
        shuffle_rows,
        seed1,
    )

    # verdicts
    print("\ntargets (issue 4):")
    rss = {label: max(res["rss"]) for label, (_, res) in results.items()}
    flat = rss["big"] <= 1.25 * rss["4x smaller"] + 16
    verdict = "met" if flat and max(rss.values()) <= TARGET_RSS_MIB else "MISSED"
    print(
        f"  convert peak RSS {rss['4x smaller']:,.0f} MiB (4x smaller) vs {rss['big']:,.0f} MiB "
        f"(>= 2 GiB): {'flat' if flat else 'NOT flat'}, target <= {TARGET_RSS_MIB} MiB: {verdict}"
    )
    by_name = {r["name"]: r for r in rows}
    seed_row = by_name.get(f"{seed_name} (4x smaller)")
    if seed_row:
        ours = rows[0]
        ratio = ours["rps"] / seed_row["rps"]
        verdict = "met" if ratio >= TARGET_CONVERT else "MISSED"
        print(
            f"  convert at {ratio:.1f}x the seed 000 recipe's records/s "
            f"(target >= {TARGET_CONVERT:.0f}x): {verdict}"
        )
    if len(shuffle_rows) == 3:
        for ours in shuffle_rows[:2]:
            ratio = ours["rps"] / shuffle_rows[2]["rps"]
            verdict = "met" if ratio >= TARGET_SHUFFLE else "MISSED"
            print(
                f"  {ours['name']} at {ratio:.1f}x seed 001's records/s "
                f"(target >= {TARGET_SHUFFLE:.0f}x): {verdict}"
            )
    return 0


def raw_file_path(records: int) -> Path:
    return DATA_DIR / f"dataset-{records}x{SIDE}x{SIDE}-float32.tfrecord"


if __name__ == "__main__":
    sys.exit(main())
