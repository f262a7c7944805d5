"""Big records against the machine's limit (issue 26): raw tensors and encoded images.

The limit: the file read from the page cache in 8 MiB chunks into one reused buffer, and
every frame's header and payload CRC32C checked by our core (`framing.check_frames`), one
thread, nothing decoded. Then tfrecnp's `tn.open(path, spec).batches(B)` (every column
touched as NumPy) for B = 32, 1024, 8192, unshuffled and with `shuffle=10_000`, as a
fraction of it: one case at a time, its passes taken in turns with the limit's, its dataset
kept open from pass to pass as a training run keeps it (one process; the limit row gathers
its passes from every case). Shuffled passes are also put beside a limit of their own: the
same records read by position in the order a shuffled pass reads them (`shuffled_limit_pass`),
the kernel's per-record work that no reader of a shuffled order escapes. Peers at batch 1024, each
in its own process: TensorFlow's best pipeline (`TFRecordDataset -> batch -> map(
parse_example + decode_raw, AUTOTUNE) -> prefetch`, every output's `.numpy()`), and
rustfrecord (a Rust reader into NumPy arrays, a record at a time; stacked, or joined, into
batches of 1024) when the interpreter named by TFRECNP_RUSTFRECORD_PYTHON has it (it pins
torch 2.2.0 and numpy 1.24.4, so it lives in a venv of its own).

Files, written once by our writer into bench-data/big-records/:

- raw16k: 64x64 float32 tensors (16 KiB) as one bytes value, read as tn.Raw("float32", (64, 64));
- raw256k: 256x256 float32 tensors (256 KiB), tn.Raw("float32", (256, 256));
- jpeg: ~16 KiB JPEG payloads, read as tn.Bytes() (not decoded);
- jpeg-raw: the same file read as a tn.Raw("uint8") column (a Ragged of bytes).

    python benchmarks/run.py big_records [--runs N] [--quick] [--cases raw16k,jpeg]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the rustfrecord side runs this file where tfrecnp is not installed
    from tfrecnp.framing import RecordIndex

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, Result, interleaved, print_table, run_peer, warm_page_cache

RECORD_MIB = 256  # file size of each case (MiB of payload); --quick: an eighth
BATCHES = (32, 1024, 8192)
SHUFFLES = (0, 10_000)
CHUNK = 8 << 20  # the limit's read size
PEER_BATCH = 1024
CASES = {  # name: (file, record bytes)
    "raw16k": ("raw16k", 64 * 64 * 4),
    "raw256k": ("raw256k", 256 * 256 * 4),
    "jpeg": ("jpeg16k", 16 << 10),
    "jpeg-raw": ("jpeg16k", 16 << 10),
}


def _spec(case: str):
    import tfrecnp as tn

    return {
        "raw16k": {"data": tn.Raw("float32", shape=(64, 64)), "label": tn.FixedLen((), "int64")},
        "raw256k": {
            "data": tn.Raw("float32", shape=(256, 256)),
            "label": tn.FixedLen((), "int64"),
        },
        "jpeg": {"image": tn.Bytes(), "label": tn.FixedLen((), "int64")},
        "jpeg-raw": {"image": tn.Raw("uint8"), "label": tn.FixedLen((), "int64")},
    }[case]


def _jpegs(count: int) -> list[bytes]:
    """`count` distinct JPEGs of about 16 KiB (noise over a gradient, 160x160, quality 90)."""
    import io

    from PIL import Image

    rng = np.random.default_rng(0)
    out = []
    ramp = np.linspace(0, 255, 160, dtype=np.float32)
    for _ in range(count):
        base = ramp[None, :, None] + ramp[:, None, None] * 0.5
        img = np.clip(base + rng.normal(0, 40, (160, 160, 3)), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=90)
        out.append(buf.getvalue())
    return out


def _path(name: str, quick: bool) -> Path:
    return DATA_DIR / "big-records" / f"{name}{'-quick' if quick else ''}.tfrecord"


def _make(name: str, record_bytes: int, quick: bool) -> Path:
    import tfrecnp as tn

    path = _path(name, quick)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    n = (RECORD_MIB << 20) // record_bytes // (8 if quick else 1)
    rng = np.random.default_rng(0)
    if name.startswith("jpeg"):
        pool = _jpegs(64)
        images = [pool[i % len(pool)] for i in range(n)]
        cols = {"image": images, "label": np.arange(n, dtype=np.int64)}
        encoding = None
    else:
        side = round((record_bytes // 4) ** 0.5)
        data = rng.random((n, side, side), dtype=np.float32)
        cols = {"data": data, "label": np.arange(n, dtype=np.int64)}
        encoding = {"data": "raw"}
    tmp = path.with_name(path.name + ".part")
    tn.write(tmp, cols, encoding=encoding, progress=False)
    os.replace(tmp, path)
    return path


def limit_pass(path: Path, buf: np.ndarray | None = None) -> int:
    """Read the file in CHUNK-byte reads into one buffer, checking every frame and payload
    CRC with the core; a frame cut by the chunk's end is moved to the front. Records."""
    from tfrecnp._core import framing

    if buf is None:
        buf = np.empty(CHUNK, np.uint8)
    starts = np.empty(CHUNK // 16 + 1, np.int64)
    ends = np.empty_like(starts)
    view = memoryview(buf)
    have, records = 0, 0
    with open(path, "rb", buffering=0) as f:
        while True:
            if have == len(buf):  # one frame larger than the buffer: grow it
                bigger = np.empty(2 * len(buf), np.uint8)
                bigger[:have] = buf[:have]
                buf, view = bigger, memoryview(bigger)
                starts = np.empty(len(buf) // 16 + 1, np.int64)
                ends = np.empty_like(starts)
            got = f.readinto(view[have:])
            if not got:
                break
            have += got
            _, pos, n, _, bad = framing.check_frames(
                buf[:have], 0, len(starts), starts, ends, 0, 0, True
            )
            if bad >= 0:
                raise ValueError(f"CRC mismatch at {bad}")
            records += n
            buf[: have - pos] = buf[pos:have]
            have -= pos
    return records


def shuffled_pieces(index: RecordIndex, shuffle: int, block: int = 1024) -> list[np.ndarray]:
    """The record numbers a `shuffle=` pass at batch `block` draws (`shuffle_numbers`, seed
    0), cut into pieces of about PIECE_BYTES, each sorted: the reads `batches(shuffle=)`
    makes, a piece at a time in file order."""
    from tfrecnp.data.blocks import PIECE_BYTES, shuffle_numbers
    from tfrecnp.format.frames import OVERHEAD_BYTES

    n = len(index)
    fed = (np.arange(a, min(n, a + block)) for a in range(0, n, block))
    order = np.concatenate(list(shuffle_numbers(fed, shuffle, np.random.default_rng(0), block)))
    piece = max(1, PIECE_BYTES // int(index.lengths.mean() + OVERHEAD_BYTES))
    return [np.sort(order[a : a + piece]) for a in range(0, n, piece)]


def shuffled_limit_pass(
    path: Path, index: RecordIndex, pieces: list[np.ndarray], buf: np.ndarray
) -> int:
    """Every record read with a positioned read of its own (one core call per piece, into
    buf, which holds the largest piece) and its CRC checked, one thread, nothing decoded:
    the pieces of `shuffled_pieces`. Records."""
    from tfrecnp._core import framing
    from tfrecnp.format.frames import FOOTER_BYTES, HEADER_BYTES, OVERHEAD_BYTES

    records = 0
    with open(path, "rb", buffering=0) as f:
        for ids in pieces:
            sizes = index.lengths[ids] + OVERHEAD_BYTES
            at = np.cumsum(sizes) - sizes
            framing.pread_runs(f.fileno(), index.offsets[ids], sizes, buf, at)
            if framing.check_payloads(buf, at + HEADER_BYTES, at + sizes - FOOTER_BYTES) >= 0:
                raise ValueError("CRC mismatch")
            records += len(ids)
    return records


def _touch(batch: dict) -> int:
    import tfrecnp as tn

    n = 0
    for col in batch.values():
        arr = col.values if isinstance(col, tn.Ragged) else col
        arr = arr.data if isinstance(arr, tn.BytesColumn) else arr
        np.asarray(arr)
        n = len(col)
    return n


def _tn_pass(ds, batch: int, shuffle: int) -> int:
    return sum(_touch(b) for b in ds.batches(batch, shuffle=shuffle, seed=0))


def _tf_side(case: str, path: str, runs: int) -> None:
    import tensorflow as tf

    FL = tf.io.FixedLenFeature
    key = "image" if case.startswith("jpeg") else "data"
    spec = {key: FL([], tf.string), "label": FL([], tf.int64)}
    side = {"raw16k": 64, "raw256k": 256}.get(case)

    def parse(s):
        out = tf.io.parse_example(s, spec)
        if side:
            out[key] = tf.reshape(tf.io.decode_raw(out[key], tf.float32), [-1, side, side])
        return out

    seconds, got = [], 0
    for _ in range(runs):
        ds = (
            tf.data.TFRecordDataset(path)
            .batch(PEER_BATCH)
            .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(2)
        )
        t0 = time.perf_counter()
        got = 0
        for b in ds:
            for col in b.values():
                col.numpy()
            got += len(b["label"])
        seconds.append(time.perf_counter() - t0)
    print(json.dumps({"seconds": seconds, "records": got}))


def _rust_side(case: str, path: str, runs: int) -> None:
    """rustfrecord: one dict of NumPy arrays per record (a bytes feature's single value as
    a uint8 array), stacked into batches of PEER_BATCH (encoded images joined into one
    buffer, as a tn.Bytes or ragged tn.Raw column holds them)."""
    from rustfrecord import Reader

    key = "image" if case.startswith("jpeg") else "data"
    side = {"raw16k": 64, "raw256k": 256}.get(case)
    seconds, got = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        got, rows, labels = 0, [], []
        for features in Reader(path, compressed=False):
            value = features[key]
            rows.append(value.view(np.float32).reshape(side, side) if side else value)
            labels.append(features["label"])
            if len(rows) == PEER_BATCH:  # one array per batch, as tfrecnp's columns are
                np.stack(rows) if side else np.concatenate(rows)
                np.concatenate(labels)
                got += len(rows)
                rows, labels = [], []
        got += len(rows)
        seconds.append(time.perf_counter() - t0)
    print(json.dumps({"seconds": seconds, "records": got}))


def _rust_python() -> str:
    """The interpreter that runs rustfrecord: TFRECNP_RUSTFRECORD_PYTHON, else a venv made
    once under bench-data/. rustfrecord's wheel pins torch 2.2.0 (a CUDA build of GBs) and
    numpy 1.24.4, but its compiled part links neither: it is installed without its pins,
    beside numpy < 2, and finds this venv's CPU torch through a .pth file."""
    python = os.environ.get("TFRECNP_RUSTFRECORD_PYTHON")
    if python:
        return python
    venv = DATA_DIR / "rustfrecord-venv"
    python = str(venv / "bin" / "python")
    if not (venv / ".ready").exists():
        import site
        import venv as venvs

        venvs.create(venv, with_pip=True, clear=True)
        pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, "--no-deps", "rustfrecord==0.1.7"], check=True)
        subprocess.run([*pip, "numpy<2"], check=True)
        found = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        )
        ours = next(p for p in site.getsitepackages() if Path(p, "torch").exists())
        Path(found.stdout.strip(), "tfrecnp-torch.pth").write_text(ours + "\n")
        (venv / ".ready").touch()
    return python


def _rust_peer(case: str, path: Path, runs: int) -> dict:
    try:
        python = _rust_python()
    except (OSError, subprocess.CalledProcessError, StopIteration) as e:
        return {"skip": f"rustfrecord could not be installed beside this venv's torch: {e}"}
    proc = subprocess.run(
        [python, __file__, "--side", "rustfrecord", case, str(path), str(runs)],
        capture_output=True,
        text=True,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode == 0 and lines:
        return json.loads(lines[-1])
    return {"skip": (proc.stderr.strip().splitlines() or ["no output"])[-1]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_big_records", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="passes per case (median)")
    parser.add_argument("--quick", action="store_true", help="small files, one batch size")
    parser.add_argument("--cases", default=",".join(CASES), help="which files and specs")
    parser.add_argument("--batches", default=None, help="batch sizes (default 32,1024,8192)")
    parser.add_argument("--shuffles", default=None, help="shuffle buffers (default 0,10000)")
    parser.add_argument("--no-peers", action="store_true", help="tfrecnp and the limit only")
    parser.add_argument("--side", nargs=4, help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args(argv)
    if args.side:
        side, case, path, runs = args.side
        (_tf_side if side == "tensorflow" else _rust_side)(case, path, int(runs))
        return 0
    import tfrecnp as tn
    from tfrecnp.format.frames import OVERHEAD_BYTES
    from tfrecnp.framing import scan_file

    batches = [int(b) for b in args.batches.split(",")] if args.batches else list(BATCHES)
    shuffles = [int(s) for s in args.shuffles.split(",")] if args.shuffles else list(SHUFFLES)
    runs = 1 if args.quick else args.runs
    if args.quick and not args.batches:
        batches = [32, 1024]
    print(
        "Big records: tfrecnp batches(B) as a fraction of the machine's limit (read in 8 MiB "
        "chunks + every CRC32C, one thread), TensorFlow and rustfrecord at batch 1024"
    )
    for case in args.cases.split(","):
        name, size = CASES[case]
        path = _make(name, size, args.quick)
        warm_page_cache(path)
        nbytes = path.stat().st_size
        buf = np.empty(CHUNK, np.uint8)
        index = scan_file(path)
        limit = "read + CRC32C (limit)"
        shuffled_limit = "reads by position, shuffled + CRC32C"
        timed: dict[str, tuple[list[float], list[float]]] = {limit: ([], [])}
        n = 0
        for b in batches:  # one case at a time, in turns with the limit, its dataset open
            for s in shuffles:  # for every pass as in a training run: its buffers reused
                label = f"tfrecnp batches({b})" + (f" shuffle={s:,}" if s else "")
                with tn.open(path, _spec(case)) as ds:
                    turns = {
                        limit: lambda path=path, buf=buf: limit_pass(path, buf),
                        label: lambda b=b, s=s, ds=ds: _tn_pass(ds, b, s),
                    }
                    if s:  # its draw and buffer made here, outside the timed passes
                        pieces = shuffled_pieces(index, s)
                        most = max(int(index.lengths[ids].sum()) for ids in pieces)
                        sbuf = np.empty(most + OVERHEAD_BYTES * max(map(len, pieces)), np.uint8)
                        turns[shuffled_limit] = functools.partial(
                            shuffled_limit_pass, path, index, pieces, sbuf
                        )
                    for fn in turns.values():  # warm-up: spares, page cache, the index
                        fn()
                    for row, (wall, cpu) in interleaved(turns, runs).items():
                        got = timed.setdefault(row, ([], []))
                        got[0].extend(wall)
                        got[1].extend(cpu)
                    n = len(ds)
        rows = [
            Result(label, wall, nbytes, n, extra={"cpu": cpu})
            for label, (wall, cpu) in timed.items()
        ]
        peer = "-"
        if not args.no_peers:
            tf = run_peer(__file__, ["tensorflow", case, path, runs], flag="--side")
            rust = _rust_peer(case, path, runs)
            peer = f"tf.data batch({PEER_BATCH})"
            for label, got in ((peer, tf), (f"rustfrecord batch({PEER_BATCH})", rust)):
                if "skip" in got:
                    rows.append(Result(label, [1.0], 0, 0, note=f"skipped: {got['skip']}"))
                else:
                    rows.append(Result(label, got["seconds"], nbytes, got["records"]))
        mib = nbytes / (1 << 20)
        print_table(
            f"{case}: {n:,} records, {mib:.0f} MiB ({_spec(case)})",
            rows,
            limit=limit,
            peer=peer,
        )
        _print_shuffled(rows, limit, shuffled_limit)
    return 0


def _print_shuffled(rows: list[Result], limit: str, shuffled_limit: str) -> None:
    """Each shuffled case as a fraction of the shuffled limit (its own access pattern)."""
    by_name = {r.name: r for r in rows}
    base = by_name.get(shuffled_limit)
    if base is None:
        return
    shares = [
        f"{r.name.removeprefix('tfrecnp ')} {r.mb_per_s / base.mb_per_s:.2f}"
        for r in rows
        if "shuffle=" in r.name
    ]
    share = base.mb_per_s / by_name[limit].mb_per_s
    print(f"  x the shuffled limit ({share:.2f} of the limit): " + ", ".join(shares))


if __name__ == "__main__":
    sys.exit(main())
