"""Record layer (issue 2): reading TFRecord frames against the page-cache limit and peers.

Two files, generated once into bench-data/ with our RecordWriter and reused: 1 M small
records (payloads of 256..768 random bytes, 528 MB) and 20 k records of 16 KiB (328 MB).
For each file, with the file in the page cache:

- read: plain readinto() of the whole file into one reused buffer;
- read + CRC32C: the same plus our crc32c over every byte (the limit for a CRC-checked read);
- tfrecnp batches: RecordReader(path).batches(1024), payload CRCs checked, each batch touched;
- tfrecnp iter bytes: iterating RecordReader(path), one bytes object per record;
- tfrecnp count: count_records(path), the header-only scan that seeks over payloads;
- tf.data: iterating tf.data.TFRecordDataset(path) (it checks CRCs), in its own process;
- vahidk tfrecord: iterating tfrecord.reader.tfrecord_iterator(path) (it checks no CRC),
  in its own process, when the package is installed.

Targets: tfrecnp batches >= 0.8x the read + CRC limit, and >= 10x tf.data's records/s on
the small records.

    python benchmarks/run.py records [--runs N] [--no-peers]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    DATA_DIR,
    Result,
    peer_report,
    print_table,
    run_peer,
    timings,
    warm_page_cache,
)

# name -> (records, shortest payload, longest payload)
FILES = {
    "small": (1_000_000, 256, 768),
    "16 KiB": (20_000, 16 << 10, 16 << 10),
}
READ_CHUNK = 1 << 20  # reused buffer of the read and read + CRC rows
BATCH = 1024
WRITE_BATCH = 1 << 16
TARGET_LIMIT_RATIO = 0.8
TARGET_TF_RATIO = 10.0
LIMIT = "read + CRC32C (limit)"
TF = "tf.data.TFRecordDataset"


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


def read_batches(path: Path) -> int:
    import tfrecnp as tn

    n = 0
    for batch in tn.RecordReader(path).batches(BATCH):
        n += len(batch.offsets) - 1
        batch.data[-1:].sum()  # touch the batch's payload buffer
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
    for stale in (path.with_name(path.name + ".idx"),):
        stale.unlink(missing_ok=True)  # a sidecar would turn count into an index read
    size = path.stat().st_size
    warm_page_cache(path)
    rows = [
        Result("read (page cache)", timings(checked(read_all, path, size), runs), size, records),
        Result(
            LIMIT, timings(checked(lambda p: read_all(p, True), path, size), runs), size, records
        ),
        Result(
            "tfrecnp batches(1024)",
            timings(checked(read_batches, path, records), runs),
            size,
            records,
        ),
        Result(
            "tfrecnp iter bytes", timings(checked(iter_bytes, path, records), runs), size, records
        ),
        Result("tfrecnp count_records", timings(checked(count, path, records), runs), 0, records),
    ]
    if peers:
        for name, peer, note in (
            (TF, "tf", "checks CRCs; one tf.Tensor per record"),
            ("vahidk tfrecord", "vahidk", "checks no CRC; one memoryview per record"),
        ):
            out = run_peer(Path(__file__), [peer, str(path), str(max(3, runs - 2))])
            if "skip" in out:
                print(f"  note: {name} skipped on {label} records: {out['skip']}")
                continue
            if out["records"] != records:
                raise AssertionError(f"{name} saw {out['records']} records, expected {records}")
            rows.append(Result(name, out["seconds"], size, records, note))
    title = (
        f"{label} records: {records:,} records of {lo}..{hi} bytes, "
        f"{size / 1e6:,.0f} MB ({path.name}); medians"
    )
    print_table(title, rows, limit=LIMIT, peer=TF)
    return {r.name: r for r in rows}


def peer_main(argv: list[str]) -> int:
    """Subprocess side: time one peer's iteration over a file, print one JSON line."""
    kind, path, runs = argv[0], argv[1], int(argv[2])
    if kind == "tf":
        import tensorflow as tf

        def loop() -> int:
            n = 0
            for _ in tf.data.TFRecordDataset(path):
                n += 1
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
    seconds, n = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        n = loop()
        seconds.append(time.perf_counter() - t0)
    peer_report(seconds, n)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--peer"]:
        return peer_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per case (>= 3)")
    parser.add_argument("--no-peers", action="store_true", help="skip TF and vahidk tfrecord")
    parser.add_argument("--only", choices=sorted(FILES), help="benchmark one file only")
    args = parser.parse_args(argv)
    runs = max(3, args.runs)
    results = {}
    for label, (records, lo, hi) in FILES.items():
        if args.only in (None, label):
            results[label] = bench_file(label, records, lo, hi, runs, not args.no_peers)
    print("\ntargets (issue 2):")
    for label, rows in results.items():
        ours, limit = rows["tfrecnp batches(1024)"], rows[LIMIT]
        ratio = ours.mb_per_s / limit.mb_per_s
        verdict = "met" if ratio >= TARGET_LIMIT_RATIO else "MISSED"
        print(
            f"  {label}: batches = {ratio:.2f}x the read + CRC limit "
            f"(target >= {TARGET_LIMIT_RATIO}): {verdict}"
        )
    if "small" in results and TF in results["small"]:
        rows = results["small"]
        ratio = rows["tfrecnp batches(1024)"].records_per_s / rows[TF].records_per_s
        verdict = "met" if ratio >= TARGET_TF_RATIO else "MISSED"
        print(
            f"  small: batches = {ratio:.1f}x tf.data records/s "
            f"(target >= {TARGET_TF_RATIO:.0f}): {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
