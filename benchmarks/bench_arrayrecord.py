"""ArrayRecord (issue 36): tfrecnp's native reader against the `array-record` package, on the
same files (written by array-record's ArrayRecordWriter, zstd:3, group_size 1 and 65 536).

Records are tf.train.Examples of about 230 bytes (an int64 id, 16 float32, 64 random bytes,
0-7 int64 tokens). Cases, each in records/s, tfrecnp decoding every feature to NumPy and
array-record returning serialized bytes only:

- random ``ds[i]`` against ``ArrayRecordDataSource[i]``, one record per call;
- ``ds[list]`` of 1024 random indices against ``ArrayRecordReader.read(indices)``;
- a sequential pass, ``ds.batches(1024)`` against ``ArrayRecordReader.read_all()``;
- TFRecord -> ArrayRecord: ``tn.convert`` against array-record's ``ArrayRecordWriter`` fed
  by tf.data (``TFRecordDataset``, ``.numpy()``, ``writer.write``), the same group size and
  zstd:3, in records/s of the conversion (the tf.data side in a subprocess that imports
  TensorFlow before its clock starts and converts the first 1000 records once untimed).

The reading sides run in one process, round-robin (`common.interleaved`); medians of --runs
rounds; "x" is the ratio of wall-clock rates, "x cpu" that of the CPU seconds each side
spent (every thread of the process: the steadier measure on a shared machine). The
conversion alternates ours and the subprocess's one run per round. Files are written once
into bench-data/ and read from the page cache.

    python benchmarks/run.py arrayrecord [--runs N] [--quick]

Last runs, 2026-11-29, a quiet 2-core machine (load ~1 at the start), records/s,
tfrecnp / array-record, x wall, x cpu. Full size (--runs 3: 400 000 records; the
group-65536 file is 7 chunks), one run:

    group 1      random ds[i]        88.2 k / 1.0 k       86.8  87.6
                 ds[list of 1024]   337.6 k / 257.1 k     1.31  2.11
                 batches(1024)       1.63 M / 590.1 k     2.77  3.65
                 convert            111.9 k / 9.8 k      11.5    (tf.data + ArrayRecordWriter)
    group 65536  random ds[i]       137.4 k / 68       2028    (array-record decompresses
                                                                the group for every record)
                 ds[list of 1024]   846.1 k / 21.4 k     39.5  66.8
                 batches(1024)       4.68 M / 2.71 M      1.72  1.47
                 convert            730.8 k / 14.8 k     49.3

--quick --runs 9 (40 000 records; the group-65536 file is ONE chunk of 7.6 MB), two runs:

    group 1      random ds[i]        57.0-84.0 k / 7.3-11.8 k      7.12-7.78  7.40-7.78
                 ds[list of 1024]   308.0-466.4 k / 257.4-359.9 k  0.86-1.81  1.47-2.18
                 batches(1024)      578.1-852.5 k / 380.7-457.3 k  1.52-1.86  2.90-3.18
                 convert             72.3-81.4 k / 3.9-7.9 k      10.3-18.6
    group 65536  random ds[i]       137.4-157.6 k / 100-112       1369-1409
                 ds[list of 1024]    1.09-1.38 M / 103.7-113.8 k  10.5-12.1  9.67-9.76
                 batches(1024)       1.47-2.02 M / 1.45-1.97 M     1.01-1.03  0.87-0.98
                 convert            261.3-398.3 k / 7.7-11.7 k    33.8-33.9

The group-65536 pass of the quick file is one zstd chunk decompressed (about 6.3 ms of
CPU, what read_all spends) and 40 000 records decoded, in two threads (the chunk streamed in
pieces of 2048, 4096, ... records, ArrayRecordFile.chunk_stream, so decoding starts ~0.5 ms
after the read): at parity in CPU, ahead only where the second core is free. It was 0.90x
(cpu 0.64x) in this script's order while each pass made its threads anew (their heaps
faulted in afresh: benchmarks/CONSTANTS.md, IDLE_STAGES). The quick ds[list] row at group 1
moves 0.86-1.81x from run to run at cpu 1.47-2.18x.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, format_rate, interleaved, peer_report, run_peer, warm_page_cache

GROUPS = (1, 65536)
RECORDS = 400_000
RANDOM_CALLS = 4000  # ds[i] calls per round
LIST = 1024  # indices per ds[list]
LISTS = 8  # ds[list] calls per round


def _varint(v: int) -> bytes:
    out = bytearray()
    v &= (1 << 64) - 1
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _field(tag: int, body: bytes) -> bytes:
    return bytes([tag]) + _varint(len(body)) + body


def _example(i: int, rng: np.random.Generator) -> bytes:
    """A serialized tf.train.Example (written by hand: the files are array-record's)."""
    features = {
        "id": _field(0x1A, _field(0x0A, _varint(i))),
        "x": _field(0x12, _field(0x0A, rng.standard_normal(16).astype("<f4").tobytes())),
        "blob": _field(0x0A, _field(0x0A, rng.integers(0, 256, 64, np.uint8).tobytes())),
        "tokens": _field(0x1A, _field(0x0A, b"".join(_varint(t) for t in range(i % 8)))),
    }
    entries = b"".join(
        _field(0x0A, _field(0x0A, k.encode()) + _field(0x12, v)) for k, v in features.items()
    )
    return _field(0x0A, entries)


def _write(path: Path, n: int, group: int) -> Path:
    if path.exists():
        return path
    import array_record.python.array_record_module as arm

    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    tmp = path.with_suffix(".tmp")
    w = arm.ArrayRecordWriter(str(tmp), f"group_size:{group},zstd:3")
    for i in range(n):
        w.write(_example(i, rng))
    w.close()
    tmp.rename(path)
    return path


def _write_tfrecord(path: Path, n: int) -> Path:
    """The same records as `_write`'s, in a TFRecord file (the conversion's source)."""
    if path.exists():
        return path
    import tfrecnp as tn

    rng = np.random.default_rng(0)
    tmp = path.with_suffix(".tmp")
    with tn.RecordWriter(str(tmp)) as w:
        for i in range(n):
            w.write(_example(i, rng))
    tmp.rename(path)
    return path


def peer_convert(argv: list[str]) -> int:
    """Subprocess side: TFRecord -> ArrayRecord through tf.data and ArrayRecordWriter, once
    untimed on the first 1000 records, then once timed; one JSON line."""
    import array_record.python.array_record_module as arm
    import tensorflow as tf

    src, dst, group = argv[0], argv[1], int(argv[2])

    def convert(take: int) -> int:
        writer = arm.ArrayRecordWriter(dst, f"group_size:{group},zstd:3")
        n = 0
        for record in tf.data.TFRecordDataset(src).take(take):
            writer.write(record.numpy())
            n += 1
        writer.close()
        return n

    convert(1000)
    t0 = time.perf_counter()
    n = convert(-1)
    peer_report([time.perf_counter() - t0], n)
    return 0


def bench_convert(n: int, group: int, runs: int) -> tuple[float, float] | None:
    """(ours, tf.data + ArrayRecordWriter) in records/s, medians of runs alternated."""
    import tfrecnp as tn

    src = _write_tfrecord(DATA_DIR / f"arrayrecord-{n}.tfrecord", n)
    warm_page_cache(src)
    ours_out = DATA_DIR / f"arrayrecord-convert-ours-g{group}.array_record"
    theirs_out = DATA_DIR / f"arrayrecord-convert-theirs-g{group}.array_record"
    ours, theirs = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        got = tn.convert(str(src), str(ours_out), group_size=group, progress=False)
        ours.append(time.perf_counter() - t0)
        if got.records != n:
            raise AssertionError(f"tn.convert wrote {got.records} records, not {n}")
        out = run_peer(Path(__file__), [str(src), str(theirs_out), group], flag="--convert")
        if "skip" in out:
            print(f"  note: the tf.data + ArrayRecordWriter side skipped: {out['skip']}")
            return None
        if out["records"] != n:
            raise AssertionError(f"tf.data + ArrayRecordWriter wrote {out['records']}, not {n}")
        theirs += out["seconds"]
    return n / statistics.median(ours), n / statistics.median(theirs)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--convert"]:
        return peer_convert(argv[1:])
    parser = argparse.ArgumentParser(prog="bench_arrayrecord", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="rounds (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="a tenth of the records and calls")
    args = parser.parse_args(argv)
    try:
        import array_record.python.array_record_data_source as ards
        import array_record.python.array_record_module as arm
    except ImportError:
        print("bench_arrayrecord needs the array-record package (pip install array-record)")
        return 0
    import tfrecnp as tn

    n = RECORDS // 10 if args.quick else RECORDS
    calls = RANDOM_CALLS // 10 if args.quick else RANDOM_CALLS
    runs = args.runs
    converts = min(runs, 3)  # each round of the tf.data side starts TensorFlow anew
    print(
        f"{n} records of ~230 B, zstd:3; tfrecnp decodes, array-record returns bytes; "
        f"medians of {runs} rounds ({converts} for the conversion)"
    )
    print(
        f"{'group':>6} {'case':<34} {'tfrecnp rec/s':>14} {'array-record':>13} {'x':>6}"
        f" {'x cpu':>6}"
    )
    for group in GROUPS:
        path = _write(DATA_DIR / f"arrayrecord-{n}-g{group}.array_record", n, group)
        warm_page_cache(path)
        ds = tn.open(str(path))
        source = ards.ArrayRecordDataSource([str(path)])
        reader = arm.ArrayRecordReader(str(path), "readahead_buffer_size:0")
        seq = arm.ArrayRecordReader(str(path))
        rng = np.random.default_rng(1)
        singles = rng.integers(0, n, calls).tolist()
        lists = [np.sort(rng.integers(0, n, LIST)).tolist() for _ in range(LISTS)]
        _ = ds[0], source[0]  # opened, footers read

        def ds_one(singles=singles, ds=ds):
            for i in singles:
                ds[i]

        def ar_one(singles=singles, source=source):
            for i in singles:
                source[i]

        def ds_list(lists=lists, ds=ds):
            for ids in lists:
                ds[ids]

        def ar_list(lists=lists, reader=reader):
            for ids in lists:
                reader.read(ids)

        def ds_pass(ds=ds):
            ds.source.close()  # a pass of its own: no group kept from the reads by position
            for b in ds.batches(1024):
                b["id"]

        def ar_pass(seq=seq):
            seq.read_all()

        cases = {
            "one": (ds_one, ar_one, calls, "random ds[i] / DataSource[i]"),
            "list": (ds_list, ar_list, LIST * LISTS, f"ds[list of {LIST}] / read(indices)"),
            "pass": (ds_pass, ar_pass, n, "batches(1024) / read_all()"),
        }
        for ours, theirs, count, label in cases.values():
            got = interleaved({"ours": ours, "theirs": theirs}, runs)
            a = count / statistics.median(got["ours"][0])
            b = count / statistics.median(got["theirs"][0])
            cpu = statistics.median(got["theirs"][1]) / statistics.median(got["ours"][1])
            print(
                f"{group:>6} {label:<34} {format_rate(a):>14} {format_rate(b):>13} {a / b:>6.2f}"
                f" {cpu:>6.2f}"
            )
        ds.source.close()
        reader.close()
        seq.close()
        rates = bench_convert(n, group, converts)
        if rates is not None:
            a, b = rates
            label = "convert TFRecord / tf.data+Writer"
            print(f"{group:>6} {label:<34} {format_rate(a):>14} {format_rate(b):>13} {a / b:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
