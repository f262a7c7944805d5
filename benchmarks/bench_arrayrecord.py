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

Last run (--quick --runs 7: 40 000 records; the 2-core machine shared with other work at
load 5-6, so wall-clock rates move by up to 2x from run to run), records/s, tfrecnp /
array-record, x wall, x cpu:

    group 1      random ds[i]        38.9 k / 6.7 k       5.82  7.14
                 ds[list of 1024]   361.5 k / 211.8 k     1.71  1.71
                 batches(1024)      575.9 k / 359.4 k     1.60  2.32
                 convert             86.1 k / 5.8 k      14.7   (tf.data + ArrayRecordWriter)
    group 65536  random ds[i]        92.2 k / 58       1589    (array-record decompresses
                                                                the group for every record)
                 ds[list of 1024]   535.0 k / 51.2 k     10.5  10.1
                 batches(1024)      990.5 k / 1.23 M      0.81  0.83
                 convert            199.2 k / 7.8 k      25.7

Four earlier runs of the same hour: group 1 ds[i] 4.8-12.8x (cpu 6.9-7.4), ds[list]
1.00-1.44x (cpu 1.42-2.05; before chunks a few bytes apart were read together), batches
1.59-2.09x; group 65536 batches 0.67-0.90x (cpu 0.68-0.90). The group-65536 pass is one
zstd chunk of 7.6 MB decompressed (6.2 ms of CPU, as array-record spends) and 40 000
records decoded: its CPU is at parity with read_all's bytes-only pass, and any lead comes
from decompressing the chunk in one thread while another decodes the pieces already out
(ArrayRecordFile.chunk_stream), which a machine busy with other work does not give; the
pass and read_all alone, round-robin (9-15 rounds, the same load), measured 0.9-1.5x.
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
