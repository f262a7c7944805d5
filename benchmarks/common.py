"""Shared pieces of the benchmarks: data cache, timing, peer subprocesses, the result table.

Each `bench_*.py` module defines ``main(argv) -> int``; `run.py` calls them in turn.
Peers (TensorFlow, vahidk's `tfrecord`) run in their own subprocess, because the two
cannot be imported into one process and because a peer's import cost should not count:
a peer script times its own loop and prints one JSON line.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
DATA_DIR = Path(os.environ.get("TFRECNP_BENCH_DATA", BENCH_DIR.parent / "bench-data"))
PEER_TIMEOUT = 600  # seconds; a peer that takes longer is reported as failed


def timed(
    fn: Callable[[], object], runs: int, *, after: Callable[[], object] | None = None
) -> tuple[list[float], object]:
    """Wall-clock seconds of `runs` calls of fn, and what the last call returned; `after`
    runs untimed after each call (to clean up its output)."""
    out, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        out.append(time.perf_counter() - t0)
        if after is not None:
            after()
    return out, result


def timings(fn: Callable[[], object], runs: int) -> list[float]:
    """Wall-clock seconds of `runs` calls of fn."""
    return timed(fn, runs)[0]


def interleaved(
    cases: dict[str, Callable[[], object]], runs: int
) -> dict[str, tuple[list[float], list[float]]]:
    """Wall-clock and CPU seconds of `runs` calls of each case, taken round-robin (one call
    of each case per round), so that a change in the machine's load affects all cases
    alike. CPU time leaves out the time the process waited for a core: on a shared machine
    it is the steadier measure of work done in this process."""
    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in cases}
    for _ in range(runs):
        for name, fn in cases.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            out[name][0].append(time.perf_counter() - t0)
            out[name][1].append(time.process_time() - c0)
    return out


def warm_page_cache(path: Path) -> None:
    """Put the file in the page cache as a read from disk leaves it, whatever wrote it:
    written back, dropped, then read once, so every timed run reads from the page cache in
    one known state. A file just written stays cached in the small pages its writes made,
    one read from disk comes in large folios where the kernel makes them, and reading from
    the second costs the kernel much less (the big-records limit: 5.3 -> 9.2 GB/s on the
    same file, benchmarks/README.md); left to chance, a file's history would move every
    figure measured on it."""
    with open(path, "rb", buffering=0) as f:
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        buf = bytearray(8 << 20)
        while f.readinto(buf):
            pass


@dataclass
class Result:
    """One row of a table: a case timed `len(seconds)` times over nbytes and nrecords."""

    name: str
    seconds: list[float]
    nbytes: int
    nrecords: int
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def mb_per_s(self) -> float:
        return self.nbytes / self.median / 1e6

    @property
    def records_per_s(self) -> float:
        return self.nrecords / self.median

    @property
    def cpu_median(self) -> float | None:
        """Median CPU seconds, when the case ran in this process (extra["cpu"])."""
        cpu = self.extra.get("cpu")
        return statistics.median(cpu) if cpu else None

    @property
    def spread(self) -> float:
        """(max - min) / median of the runs: large values mean a noisy measurement."""
        return (max(self.seconds) - min(self.seconds)) / self.median


def token_shards(
    name: str, shards: int, rows: int, *, width: int, tokens: tuple[int, int]
) -> list[str]:
    """`shards` TFRecord files of `rows` records each under DATA_DIR/name (made once, then
    reused): an int64 label, `width` float32s and a token list of tokens[0]..tokens[1] - 1
    int64s."""
    import shutil

    import numpy as np

    import tfrecnp as tn

    folder = DATA_DIR / name
    paths = sorted(str(p) for p in folder.glob("data-*.tfrecord"))
    if len(paths) == shards:
        return paths
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    n = shards * rows
    lengths = rng.integers(*tokens, n)
    cols = {
        "label": np.arange(n, dtype=np.int64),
        "x": rng.standard_normal((n, width)).astype(np.float32),
        "tokens": tn.Ragged.from_lengths(rng.integers(0, 30_000, int(lengths.sum())), lengths),
    }
    return tn.write(folder / "data.tfrecord", cols, records_per_shard=rows, progress=False).paths


def spec_of(case: str) -> dict:
    """The tfrecnp spec of the benchmarks' record kinds: numeric, tokens, raw."""
    import tfrecnp as tn

    if case == "numeric":
        return {
            "label": tn.FixedLen((), "int64"),
            "x": tn.FixedLen(16, "float32"),
            "id": tn.Bytes(),
        }
    if case == "raw":
        return {"label": tn.FixedLen((), "int64"), "data": tn.Raw("float32", shape=(64, 64))}
    return {"label": tn.FixedLen((), "int64"), "tokens": tn.VarLen("int64")}


def tf_examples(case: str, n: int):
    """n serialized tf.train.Examples of a benchmark record kind (numeric, tokens, raw),
    made by TensorFlow from seed 0: what `spec_of` and `tf_parser` read."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    feature = tf.train.Feature

    def ints(v):
        return feature(int64_list=tf.train.Int64List(value=v))

    def serialized(f: dict) -> bytes:
        return tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString()

    labels = rng.integers(0, 1000, n).tolist()
    if case == "numeric":
        floats = rng.random((n, 16), dtype=np.float32).tolist()
        ids = rng.bytes(8 * n)
        for i in range(n):
            yield serialized(
                {
                    "label": ints([labels[i]]),
                    "x": feature(float_list=tf.train.FloatList(value=floats[i])),
                    "id": feature(bytes_list=tf.train.BytesList(value=[ids[8 * i : 8 * i + 8]])),
                }
            )
    elif case == "raw":
        for i in range(n):
            blob = rng.random((64, 64), dtype=np.float32).tobytes()
            yield serialized(
                {
                    "label": ints([labels[i]]),
                    "data": feature(bytes_list=tf.train.BytesList(value=[blob])),
                }
            )
    else:
        lengths = rng.integers(0, 65, n)
        tokens = rng.integers(0, 50_000, int(lengths.sum())).tolist()
        at = 0
        for i in range(n):
            k = int(lengths[i])
            yield serialized({"label": ints([labels[i]]), "tokens": ints(tokens[at : at + k])})
            at += k


def tf_parser(case: str):
    """TensorFlow's parse of a batch of the benchmarks' record kinds (numeric, tokens,
    raw), as `spec_of` reads them: tf.io.parse_example, raw tensors through decode_raw."""
    import tensorflow as tf

    spec = {"label": tf.io.FixedLenFeature([], tf.int64)}
    if case == "numeric":
        spec["x"] = tf.io.FixedLenFeature([16], tf.float32)
        spec["id"] = tf.io.FixedLenFeature([], tf.string)
    elif case == "raw":
        spec["data"] = tf.io.FixedLenFeature([], tf.string)
    else:
        spec["tokens"] = tf.io.RaggedFeature(tf.int64)

    def parse(serialized):
        out = tf.io.parse_example(serialized, spec)
        if case == "raw":
            out["data"] = tf.reshape(tf.io.decode_raw(out["data"], tf.float32), [-1, 64, 64])
        return out

    return parse


def run_peer(script: Path | str, args: list[str], *, flag: str = "--peer") -> dict:
    """Run `python script <flag> ...args` and return the JSON object on its last stdout line
    (flag: "--peer" for another reader, "--side" for one side of a comparison).

    Returns {"skip": reason} when the peer cannot run (not installed, crashed, timed out).
    """
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore")
    try:
        proc = subprocess.run(
            [sys.executable, str(script), flag, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=PEER_TIMEOUT,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"skip": f"timed out after {PEER_TIMEOUT} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode == 0 and lines:
        try:
            return json.loads(lines[-1])
        except json.JSONDecodeError:
            pass
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"skip": f"exit status {proc.returncode}: {tail}"}


def peer_report(seconds: list[float], records: int, **extra) -> None:
    """What a peer subprocess prints: its run times and record count, as one JSON line."""
    print(json.dumps({"seconds": seconds, "records": records, **extra}), flush=True)


def format_rate(x: float) -> str:
    if x >= 1e9:
        return f"{x / 1e9:.2f} G"
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f} "


def print_table(title: str, rows: list[Result], *, limit: str, peer: str) -> None:
    """Print rows with MB/s, records/s, and ratios against the `limit` and `peer` rows."""
    by_name = {r.name: r for r in rows}
    base = by_name.get(limit)
    ref = by_name.get(peer)
    cpu = base is not None and base.cpu_median is not None  # CPU-time column when measured
    header = ("case", "MB/s", "records/s", "x limit", "cpu x limit", "x TF", "spread", "runs")
    body = []
    for r in rows:
        cpu_ratio = (
            f"{base.cpu_median / r.cpu_median:.2f}"
            if cpu and r.cpu_median and r.nbytes == base.nbytes
            else "-"
        )
        body.append(
            (
                r.name,
                f"{r.mb_per_s:,.0f}" if r.nbytes else "-",
                format_rate(r.records_per_s) if r.nrecords else "-",
                f"{r.mb_per_s / base.mb_per_s:.2f}" if base and r.nbytes else "-",
                cpu_ratio,
                f"{r.records_per_s / ref.records_per_s:.1f}" if ref and r.nrecords else "-",
                f"{100 * r.spread:.0f}%",
                str(len(r.seconds)),
            )
        )
    if not cpu:  # modules that do not measure CPU time keep their table as it was
        header = header[:4] + header[5:]
        body = [b[:4] + b[5:] for b in body]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    print(f"\n{title}")
    line = "  ".join(
        h.ljust(w) if i == 0 else h.rjust(w)
        for i, (h, w) in enumerate(zip(header, widths, strict=True))
    )
    print(line)
    print("-" * len(line))
    for b in body:
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(b, widths, strict=True))
            )
        )
    for r in rows:
        if r.note:
            print(f"  {r.name}: {r.note}")
