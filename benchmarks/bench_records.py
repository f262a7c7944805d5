"""Record layer (issue 2): reading TFRecord frames against the page-cache limit and peers.

Two files, generated once into bench-data/ with our RecordWriter and reused: 1 M small
records (payloads of 256..768 random bytes, 528 MB) and 20 k records of 16 KiB (328 MB).
For each file, with the file in the page cache:

- read: plain readinto() of the whole file into one reused 1 MiB buffer;
- read + CRC32C: the same plus our crc32c over every byte: the limit for a CRC-checked read;
- tfrecnp batches(1024): RecordReader(path).batches(1024), payload CRCs checked, a byte of
  each batch touched;
- tfrecnp iter bytes: iterating RecordReader(path), one bytes object per record;
- tfrecnp count_records: the header-only scan that seeks over payloads (records/s only);
- tf.data per record: iterating tf.data.TFRecordDataset(path) eagerly, one tf.Tensor per
  record (it checks CRCs); timed over the first PER_RECORD_LIMIT records, being slow;
- tf.data batch(1024): TFRecordDataset(path).batch(1024), iterated (TensorFlow's fastest
  way to the records, so the "x TF" column compares against it);
- vahidk tfrecord: iterating tfrecord.reader.tfrecord_iterator(path), one memoryview per
  record (it checks no CRC), when the package is installed.

TensorFlow and vahidk's tfrecord each run in a subprocess of their own (they cannot share
one) that times only its loops, not its imports.

Targets: tfrecnp batches >= 0.8x the read + CRC limit, and >= 10x TensorFlow's records/s
on the small records.

    python benchmarks/run.py records [--runs N] [--no-peers] [--only small]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    DATA_DIR,
    Result,
    interleaved,
    peer_report,
    print_table,
    run_peer,
    timed,
    warm_page_cache,
)

# name -> (records, shortest payload, longest payload)
FILES = {
    "small": (1_000_000, 256, 768),
    "16 KiB": (20_000, 16 << 10, 16 << 10),
}
READ_CHUNK = 1 << 20  # reused buffer of the read and read + CRC rows (the fastest size here)
BATCH = 1024
WRITE_BATCH = 1 << 16
PER_RECORD_LIMIT = 100_000  # records timed for tf.data's per-record iteration
PEER_RUNS = 3
TARGET_LIMIT_RATIO = 0.8
TARGET_TF_RATIO = 10.0
LIMIT = "read + CRC32C (limit)"
OURS = "tfrecnp batches(1024)"
TF = "tf.data batch(1024)"
PEERS = (
    # row name, peer argument, note
    ("tf.data per record", "tf", "checks CRCs; one tf.Tensor per record, eager"),
    (TF, "tf-batch", "checks CRCs; one tf.Tensor of 1024 strings per batch"),
    ("vahidk tfrecord", "vahidk", "checks no CRC; one memoryview per record"),
)


def data_file(records: int, lo: int, hi: int) -> Path:
    """The cached benchmark file for these parameters, written on first use."""
    path = DATA_DIR / f"records-{records}x{lo}-{hi}.tfrecord"
    if path.exists():
        return path
    import tfrecnp as tn

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    print(f"writing {path} (once) ...", flush=True)
    rng = np.random.default_rng(0)
    with tn.RecordWriter(path) as w:
        for first in range(0, records, WRITE_BATCH):
            n = min(WRITE_BATCH, records - first)
            lengths = rng.integers(lo, hi + 1, n)
            offsets = np.concatenate([[0], np.cumsum(lengths)])
            data = np.frombuffer(rng.bytes(int(offsets[-1])), np.uint8)
            w.write_batch(data, offsets)
    return path


def read_all(path: Path, crc: bool = False) -> int:
    from tfrecnp._core import framing

    buf = bytearray(READ_CHUNK)
    view = memoryview(buf)
    value = total = 0
    with open(path, "rb", buffering=0) as f:
        while got := f.readinto(buf):
            if crc:
                value = framing.crc32c(view[:got], value)
            total += got
    return total


def read_crc(path: Path) -> int:
    return read_all(path, crc=True)


def read_batches(path: Path) -> int:
    import tfrecnp as tn

    n = 0
    for batch in tn.RecordReader(path).batches(BATCH):
        n += len(batch.offsets) - 1
        if len(batch.data):
            batch.data[-1]  # touch the batch's payload buffer
    return n


def iter_bytes(path: Path) -> int:
    import tfrecnp as tn

    n = 0
    for _ in tn.RecordReader(path):
        n += 1
    return n


def count(path: Path) -> int:
    import tfrecnp as tn

    return tn.count_records(path)


def checked(fn, path: Path, expected: int):
    """fn(path) as a thunk that fails loudly when it does not see `expected` items."""

    def run():
        got = fn(path)
        if got != expected:
            raise AssertionError(f"{fn.__name__}({path.name}) saw {got}, expected {expected}")

    return run


def bench_file(label: str, records: int, lo: int, hi: int, runs: int, peers: bool) -> dict:
    path = data_file(records, lo, hi)
    path.with_name(path.name + ".idx").unlink(missing_ok=True)  # count must scan, not read it
    size = path.stat().st_size
    warm_page_cache(path)

    cases = {  # name: (function, what it returns, bytes it reads)
        "read (page cache)": (read_all, size, size),
        LIMIT: (read_crc, size, size),
        OURS: (read_batches, records, size),
        "tfrecnp iter bytes": (iter_bytes, records, size),
        "tfrecnp count_records": (count, records, 0),
    }
    times = interleaved({k: checked(f, path, want) for k, (f, want, _) in cases.items()}, runs)
    rows = [
        Result(k, times[k][0], nbytes, records, extra={"cpu": times[k][1]})
        for k, (_, _, nbytes) in cases.items()
    ]
    if peers:
        for name, peer, note in PEERS:
            out = run_peer(Path(__file__), [peer, str(path), str(PEER_RUNS)])
            if "skip" in out:
                print(f"  note: {name} skipped on the {label} records: {out['skip']}")
                continue
            seen = out["records"]
            expected = min(records, PER_RECORD_LIMIT) if peer == "tf" else records
            if seen != expected:
                raise AssertionError(f"{name} saw {seen} records, expected {expected}")
            if seen < records:
                note += f"; first {seen:,} records"
            rows.append(Result(name, out["seconds"], size * seen // records, seen, note))
    title = (
        f"{label} records: {records:,} records of {lo}..{hi} bytes, "
        f"{size / 1e6:,.0f} MB ({path.name}); medians"
    )
    print_table(title, rows, limit=LIMIT, peer=TF)
    return {r.name: r for r in rows}


def peer_main(argv: list[str]) -> int:
    """Subprocess side: time one peer's iteration over a file, print one JSON line."""
    kind, path, runs = argv[0], argv[1], int(argv[2])
    if kind in ("tf", "tf-batch"):
        import tensorflow as tf

        if kind == "tf":

            def loop() -> int:
                n = 0
                for _ in tf.data.TFRecordDataset(path).take(PER_RECORD_LIMIT):
                    n += 1
                return n

        else:

            def loop() -> int:
                n = 0
                for batch in tf.data.TFRecordDataset(path).batch(BATCH):
                    n += int(batch.shape[0])
                return n

    elif kind == "vahidk":
        try:
            from tfrecord.reader import tfrecord_iterator
        except ImportError:
            print('{"skip": "not installed (pip install tfrecord)"}')
            return 0

        def loop() -> int:
            n = 0
            for _ in tfrecord_iterator(path):
                n += 1
            return n

    else:
        raise SystemExit(f"unknown peer {kind}")
    seconds, n = timed(loop, runs)
    peer_report(seconds, n)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--peer"]:
        return peer_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="timed runs per case (>= 3)")
    parser.add_argument("--no-peers", action="store_true", help="skip TensorFlow and vahidk")
    parser.add_argument("--only", choices=sorted(FILES), help="benchmark one file only")
    args = parser.parse_args(argv)
    runs = max(3, args.runs)
    results = {}
    for label, (records, lo, hi) in FILES.items():
        if args.only in (None, label):
            results[label] = bench_file(label, records, lo, hi, runs, not args.no_peers)
    print("\ntargets (issue 2):")
    for label, rows in results.items():
        ratio = rows[OURS].mb_per_s / rows[LIMIT].mb_per_s
        cpu_ratio = rows[LIMIT].cpu_median / rows[OURS].cpu_median
        verdict = "met" if ratio >= TARGET_LIMIT_RATIO else "MISSED"
        print(
            f"  {label}: batches at {ratio:.2f}x the read + CRC limit "
            f"(target >= {TARGET_LIMIT_RATIO}): {verdict} (in CPU time {cpu_ratio:.2f}x)"
        )
    if "small" in results and TF in results["small"]:
        rows = results["small"]
        ratio = rows[OURS].records_per_s / rows[TF].records_per_s
        verdict = "met" if ratio >= TARGET_TF_RATIO else "MISSED"
        print(
            f"  small: batches at {ratio:.1f}x the records/s of {TF}, TensorFlow's fastest "
            f"(target >= {TARGET_TF_RATIO:.0f}): {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
