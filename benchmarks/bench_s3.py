"""Buckets at the link's speed (issues 14 and 37): TFRecord datasets read from an S3 server
(moto's, in its own process on 127.0.0.1) through a loopback link of our own that adds a
set latency to every request and every new connection and carries at most a set
bandwidth, shared by all connections (`Link`, a proxy in its own process; it also counts
the requests and the bytes that cross it, independently of tfrecnp).

Data (made once into bench-data/, by TensorFlow's own writer, `.idx` sidecars from
`tfrecnp index`): 8 shards of small numeric records (full: 2.13 M records, 279 MB; quick:
320 k, 42 MB), one shard of 16 KiB raw records (full: 2 048 records, 34 MB; quick: 1 024),
and the numeric shards GZIP-compressed (`gzip`, with the `.zran.idx` checkpoint sidecars
`tfrecnp index` writes: reads by position fetch the compressed pieces between checkpoints,
about 4 MiB each, so a record costs its piece; no Ray row). Indexes and checkpoints are
cached in a temporary folder of the run's own (TFRECNP_CACHE), not the user's.

For each link (by default 20 ms / 200 MB/s, then 0 ms / 200 MB/s), in one run:

- link: the link's own limit, many 8 MiB ranged GETs in flight at once (s3fs.cat_ranges);
- sequential: ``batches(1024)`` to the end (the open before it not timed), MB/s and its
  ratio to the link;
- open / first batch: a fresh filesystem (no listing cached), the open then the first
  batch: requests, and the time in round trips of the link's latency;
- shuffle=True / shuffle=10_000: a whole epoch, its rate against sequential;
- 1 % sample by one ``ds[list]`` and by ``__getitems__`` of 256: bytes moved against the
  dataset's;
- Ray's ``read_tfrecords`` (pyarrow's S3 client) of the same files, beside them.

Each row gives requests and bytes as the link counted them (HTTP headers included; for a
pass, its open's too; requests left in flight by a case count for it) and as ``ds.stats()``
counted them (for a pass, the pass alone). Times are medians of --runs runs; the machine
is shared, so read ratios, not absolutes.

moto reads a whole object to answer any ranged GET of it, so its cost per request grows
with the shard's size: a request pattern of many small reads is slower here than on a real
store; the requests and bytes counted carry over to any store.

    python benchmarks/bench_s3.py [--quick] [--runs N] [--latency-ms 20] [--mbps 200]

Last run (--quick --runs 5, 2026-11-29 08:54, load 0.8 on 2 cores; the link's own limit
measured 158-167 MB/s of its 200 cap, moto and the proxy on the same cores), 20 ms:

- numeric: sequential 0.80 of the link in 13 GETs (0.94 on the full 277 MB, 42 GETs, 09:00);
  open / first batch 9 / 4 requests, 5.4 / 2.4 round trips; shuffle=True 1.0x the bytes
  (8 GETs) at 0.74 of sequential; 1 % samples 2.6 % of the bytes by payload (ds.stats),
  6.2 % on the wire: 2 600 requests' HTTP headers outweigh 130-byte records; Ray 497x.
- raw (16 KiB): sequential 0.66 of the link in 4 GETs, its runs' spread 61 %; on the full
  33.7 MB 0.76 (09:00, spread 73 %) and 0.83 (09:03), where Ray reaches 0.22 of the link:
  3.8x, and 5x Ray would ask 1.08 of the link; an open that infers the spec moves 6.3 MB
  of the 33.7 (the whole shard before its sample was bounded); samples 2.8 %.
- gzip: sequential 0.53 of the link (inflating); a 1 % sample moves 1.0x (every piece
  between checkpoints holds a sampled record: 2 per 3 MB shard); shuffle=True 1.0x the
  bytes in 16 GETs at 0.39 of sequential.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR

NUMERIC = {"full": (8, 266_250), "quick": (8, 40_000)}  # shards, records per shard
RAW = {"full": 2048, "quick": 1024}  # 16 KiB records in one shard
LINK_RANGE = 4 << 20  # the link's limit is measured with ranged GETs of this size
LINK_INFLIGHT = 16  # ... this many at once, over the dataset ...
LINK_PASSES = 3  # ... this many times in one go (a full pipe, not its filling)
BUCKET = "bench"


# --- the link: a proxy with latency and a bandwidth cap, in its own process -----------------


def _serve_link(target: int, port, latency, rate, counts, ready) -> None:
    """Serve HTTP on 127.0.0.1:port, each request forwarded to 127.0.0.1:target and its
    answer sent back on a kept-alive connection (as a store's; the server behind, werkzeug,
    closes each connection after one answer, so it is reached afresh each time, at no
    cost). A new connection waits `latency` seconds, so does each request; answers share
    `rate` bytes/s, sent in 64 KiB pieces. counts: connections, requests, bytes answered
    (status line and headers included)."""
    import http.client
    import http.server
    import threading

    lock = threading.Lock()
    free_at = [0.0]  # when the link has sent everything queued so far

    def send(wfile, data: bytes) -> None:
        for a in range(0, len(data), 1 << 16):
            piece = data[a : a + (1 << 16)]
            if rate.value:
                with lock:
                    now = time.monotonic()
                    free_at[0] = max(now, free_at[0]) + len(piece) / rate.value
                    wait = free_at[0] - now
                if wait > 0.0002:
                    time.sleep(wait)
            wfile.write(piece)
            counts[2] += len(piece)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            counts[0] += 1
            if latency.value:
                time.sleep(latency.value)

        def log_message(self, *args) -> None:
            pass

        def forward(self) -> None:
            counts[1] += 1
            if latency.value:
                time.sleep(latency.value)
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else None
            headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
            upstream = http.client.HTTPConnection("127.0.0.1", target, timeout=60)
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
            finally:
                upstream.close()
            head = [f"HTTP/1.1 {answer.status} {answer.reason}\r\n".encode()]
            for k, v in answer.getheaders():
                if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                    head.append(f"{k}: {v}\r\n".encode())
            length = answer.getheader("Content-Length") if self.command == "HEAD" else None
            head.append(f"Content-Length: {length or len(data)}\r\n\r\n".encode())
            send(self.wfile, b"".join(head) + (b"" if self.command == "HEAD" else data))

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = forward

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128

    server = Server(("127.0.0.1", 0), Handler)
    port.value = server.server_address[1]
    ready.set()
    server.serve_forever()


class Link:
    """The loopback link (see `_serve_link`): set its latency and bandwidth, read its counts."""

    def __init__(self, target: int):
        ctx = mp.get_context("spawn")
        self.port = ctx.Value("i", 0)
        self.latency = ctx.Value("d", 0.0)
        self.rate = ctx.Value("d", 0.0)
        self.counts = ctx.Array("q", 3, lock=False)
        ready = ctx.Event()
        args = (target, self.port, self.latency, self.rate, self.counts, ready)
        self.process = ctx.Process(target=_serve_link, args=args, daemon=True)
        self.process.start()
        ready.wait(30)

    def set(self, latency_ms: float, mbps: float) -> None:
        self.latency.value = latency_ms / 1000
        self.rate.value = mbps * 1e6

    def snapshot(self) -> tuple[int, int, int]:
        return tuple(self.counts)

    def stop(self) -> None:
        self.process.terminate()
        self.process.join(5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _moto() -> tuple[subprocess.Popen, int]:
    """moto's S3 server in a process of its own (its GIL is not ours), keeping connections
    alive as a store does (werkzeug's default, HTTP/1.0, closes each after one answer)."""
    import urllib.request

    port = _free_port()
    start = (
        "import sys; from werkzeug.serving import WSGIRequestHandler as H; "
        "H.protocol_version = 'HTTP/1.1'; from moto.server import main; "
        f"sys.exit(main(['-H', '127.0.0.1', '-p', '{port}']))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", start],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
            break
        except Exception:
            time.sleep(0.1)
    return proc, port


def _options(port: int) -> dict:
    return {
        "key": "bench",
        "secret": "bench",
        "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{port}", "region_name": "us-east-1"},
    }


# --- data -------------------------------------------------------------------------------------


def _tf_shards(name: str, case: str, shards: int, rows: int) -> list[str]:
    """`shards` files of `rows` TensorFlow-written records of a kind (common.tf_examples),
    with .idx sidecars from `tfrecnp index`; made once."""
    from common import tf_examples

    folder = DATA_DIR / name
    paths = sorted(str(p) for p in folder.glob("*.tfrecord"))
    if len(paths) == shards and all(Path(p + ".idx").exists() for p in paths):
        return paths
    import shutil

    import tensorflow as tf

    from tfrecnp.cli import main as cli

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    examples = tf_examples(case, shards * rows)
    paths = []
    for k in range(shards):
        path = str(folder / f"{case}-{k:05d}-of-{shards:05d}.tfrecord")
        with tf.io.TFRecordWriter(path) as w:
            for _ in range(rows):
                w.write(next(examples))
        paths.append(path)
    cli(["index", str(folder)])
    return paths


def _gzip_shards(paths: list[str], name: str) -> list[str]:
    """The shards GZIP-compressed (a gzip stream of the same frames, as TensorFlow's GZIP
    writer makes), with `.zran.idx` checkpoint and `.idx` sidecars from `tfrecnp index`;
    made once."""
    import gzip
    import shutil

    from tfrecnp.cli import main as cli

    folder = DATA_DIR / name
    out = [str(folder / (Path(p).name + ".gz")) for p in paths]
    if all(Path(p + ".zran.idx").exists() for p in out):
        return out
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for src, dst in zip(paths, out, strict=True):
        with open(src, "rb") as f, gzip.open(dst, "wb", compresslevel=6) as g:
            shutil.copyfileobj(f, g, 1 << 20)
    cli(["index", str(folder)])
    return out


# --- the cases --------------------------------------------------------------------------------


class Bench:
    def __init__(self, link: Link, options: dict, url: str, nbytes: int, runs: int):
        self.link, self.options, self.url, self.nbytes, self.runs = link, options, url, nbytes, runs

    def measure(self, fn, runs: int | None = None) -> dict:
        """fn() timed `runs` times: median seconds, and the link's counts of its last run
        (requests, bytes) with fn's own ds.stats() when it returns one."""
        secs = []
        for _ in range(runs or self.runs):
            c0 = self.link.snapshot()
            t0 = time.perf_counter()
            stats = fn()
            took = time.perf_counter() - t0
            if isinstance(stats, dict) and "seconds" in stats:  # timed by fn itself
                took = stats.pop("seconds")
            secs.append(took)
            c1 = self._settled()
        return {
            "s": statistics.median(secs),
            "spread": (max(secs) - min(secs)) / statistics.median(secs) if len(secs) > 1 else 0,
            "req": c1[1] - c0[1],
            "conn": c1[0] - c0[0],
            "bytes": c1[2] - c0[2],
            "stats": stats,
        }

    def _settled(self) -> tuple[int, int, int]:
        """The link's counts once nothing has crossed it for 0.3 s: requests a case left in
        flight (a pass stopped after its first batch) count for that case."""
        last = self.link.snapshot()
        while True:
            time.sleep(0.3)
            now = self.link.snapshot()
            if now == last:
                return now
            last = now


def _stats_of(ds) -> dict | None:
    stats = getattr(ds, "stats", None)
    return stats() if callable(stats) else None


def _forget_pieces() -> None:
    """Drop the GZIP pieces earlier cases fetched (kept by the process, 64 MiB: the quick
    dataset would be read from memory)."""
    from tfrecnp.format import inflate_index

    pieces = getattr(inflate_index, "_PIECES", None)  # (absent before GZIP from buckets)
    if pieces is not None:
        pieces.clear()


def _pass(url: str, options: dict, n: int, **kw):
    import tfrecnp as tn

    def run():
        _forget_pieces()
        ds = tn.open(url, storage_options=options)  # (not timed: see "open + first batch")
        if kw.get("shuffle") is True:
            len(ds)  # the index first (its sidecars fetched, as for the samples): the epoch's own
        before = _stats_of(ds)
        t0 = time.perf_counter()
        rows = 0
        for batch in ds.batches(1024, **kw):
            rows += len(batch["label"])
        took = time.perf_counter() - t0
        assert rows == n, (rows, n)
        after = _stats_of(ds)
        # the open's own requests (listing, heads, spec inferred) are in the link's count
        if after is None:  # (no ds.stats() before issue 37)
            return {"seconds": took}
        return {"seconds": took, **{k: after[k] - before[k] for k in after}}

    return run


def _open_then_first_batch(url: str, options: dict, link: Link, latency: float):
    """A fresh filesystem (nothing listed, no head kept): (open's requests, seconds),
    (the first batch's requests, seconds, MB) as the link counted them."""
    import s3fs

    import tfrecnp as tn
    from tfrecnp._util import fs as tfs

    s3fs.S3FileSystem(**options).invalidate_cache()
    getattr(tfs, "_HEADS", {}).clear()  # (absent before issue 37: run against older code)
    c0, t0 = link.snapshot(), time.perf_counter()
    ds = tn.open(url, storage_options=options)
    c1, t1 = link.snapshot(), time.perf_counter()
    it = iter(ds.batches(1024))
    next(it)
    c2, t2 = link.snapshot(), time.perf_counter()
    it.close()
    rtt = f"{(t1 - t0) / latency:.1f} / {(t2 - t1) / latency:.1f} RTT" if latency else ""
    return (
        f"{'open (cold) / first batch':30} {t1 - t0:8.2f} / {t2 - t1:.2f} s, "
        f"{c1[1] - c0[1]} / {c2[1] - c1[1]} requests, first batch moved "
        f"{(c2[2] - c1[2]) / 1e6:.1f} MB  {rtt}"
    )


def _sample(url: str, options: dict, n: int, per_call: int | None):
    import numpy as np

    import tfrecnp as tn

    ds = tn.open(url, storage_options=options)
    len(ds)  # the index first: the sample's cost is the records' own
    k = max(1, n // 100)

    def run():
        _forget_pieces()
        ids = np.random.default_rng(int(time.time())).choice(n, k, replace=False)
        before = _stats_of(ds)
        if per_call is None:
            got = ds[ids]
            assert len(got["label"]) == k
        else:
            for a in range(0, k, per_call):
                ds.__getitems__(ids[a : a + per_call].tolist())
        after = _stats_of(ds)
        if before is None:
            return None
        return {key: after[key] - before[key] for key in after}

    return run


def _link_limit(fs, keys: list[str], sizes: list[int]):
    def run():
        paths, starts, stops = [], [], []
        for key, size in zip(keys * LINK_PASSES, sizes * LINK_PASSES, strict=True):
            for a in range(0, size, LINK_RANGE):
                paths.append(key)
                starts.append(a)
                stops.append(min(size, a + LINK_RANGE))
        got = fs.cat_ranges(paths, starts, stops, batch_size=LINK_INFLIGHT)
        assert sum(map(len, got)) == LINK_PASSES * sum(sizes)

    return run


def _ray(port: int, paths: list[str], n: int):
    import pyarrow.fs
    import ray

    s3 = pyarrow.fs.S3FileSystem(
        access_key="bench",
        secret_key="bench",
        region="us-east-1",
        scheme="http",
        endpoint_override=f"127.0.0.1:{port}",
    )

    def run():
        ds = ray.data.read_tfrecords([p.removeprefix("s3://") for p in paths], filesystem=s3)
        rows = sum(len(b["label"]) for b in ds.iter_batches(batch_size=1024))
        assert rows == n, (rows, n)

    return run


def _row(name: str, got: dict, nbytes: int, link_rate: float | None, seq_rate=None) -> str:
    rate = nbytes / got["s"] / 1e6 if nbytes else 0.0
    stats = got["stats"] or {}
    ours = (
        f"{stats.get('requests', '-')!s:>6} {stats.get('bytes', 0) / 1e6:8.1f}"
        if stats
        else (f"{'-':>6} {'-':>8}")
    )
    vs_link = f"{rate / link_rate:6.2f}" if link_rate and nbytes else f"{'-':>6}"
    vs_seq = f"{rate / seq_rate:6.2f}" if seq_rate and nbytes else f"{'-':>6}"
    return (
        f"{name:30} {got['s']:8.2f} {100 * got['spread']:5.0f}% {rate:8.1f} {vs_link} {vs_seq} "
        f"{got['req']:7} {got['conn']:5} {got['bytes'] / 1e6:9.1f} {ours}"
    )


HEADER = (
    f"{'case':30} {'median s':>8} {'sprd':>6} {'MB/s':>8} {'xlink':>6} {'xseq':>6} "
    f"{'req':>7} {'conn':>5} {'link MB':>9} {'stats: req':>6} {'MB':>8}"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller data, fewer runs")
    parser.add_argument("--runs", type=int, default=None, help="runs per timed case")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--mbps", type=float, default=200.0, help="the link's cap, MB/s")
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--only", choices=("numeric", "raw", "gzip"), default=None)
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "full"
    import atexit
    import shutil
    import tempfile

    os.environ["TFRECNP_CACHE"] = tempfile.mkdtemp(prefix="tfrecnp-bench-s3-cache-")
    atexit.register(shutil.rmtree, os.environ["TFRECNP_CACHE"], True)
    runs = args.runs or (2 if args.quick else 3)

    moto, moto_port = _moto()
    link = Link(moto_port)
    try:
        import s3fs

        direct = _options(moto_port)
        options = _options(link.port.value)
        fs = s3fs.S3FileSystem(**direct)
        import boto3

        ep = direct["client_kwargs"]["endpoint_url"]
        boto3.client(
            "s3",
            endpoint_url=ep,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
            region_name="us-east-1",
        ).create_bucket(Bucket=BUCKET)
        shards, rows = NUMERIC[mode]
        data = {}
        if args.only in (None, "numeric"):
            numeric = _tf_shards(f"s3-numeric-{rows}", "numeric", shards, rows)
            data["numeric"] = (numeric, shards * rows)
        if args.only in (None, "raw"):
            data["raw"] = (_tf_shards(f"s3-raw-{RAW[mode]}", "raw", 1, RAW[mode]), RAW[mode])
        if args.only in (None, "gzip"):
            plain = _tf_shards(f"s3-numeric-{rows}", "numeric", shards, rows)
            data["gzip"] = (_gzip_shards(plain, f"s3-numeric-{rows}-gzip"), shards * rows)
        for kind, (paths, _) in data.items():
            for p in paths:
                for f in (p, p + ".idx", p + ".zran.idx"):
                    if Path(f).exists():
                        fs.put_file(f, f"{BUCKET}/{kind}/{Path(f).name}")
        ray_ready = False
        if not args.no_ray:
            import ray

            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            ray.data.DataContext.get_current().enable_progress_bars = False
            ray_ready = True
        print(f"bench_s3 ({mode}): {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
        for latency in (args.latency_ms, 0.0):
            link.set(latency, args.mbps)
            via = s3fs.S3FileSystem(**options)
            print(f"\n== link: {latency:g} ms per request and connection, {args.mbps:g} MB/s ==")
            for kind, (paths, n) in data.items():
                if args.only and kind != args.only:
                    continue
                keys = [f"{BUCKET}/{kind}/{Path(p).name}" for p in paths]
                sizes = [Path(p).stat().st_size for p in paths]
                nbytes = sum(sizes)
                url = f"s3://{BUCKET}/{kind}/"
                b = Bench(link, options, url, nbytes, runs)
                print(f"\n{kind}: {n:,} records in {len(paths)} files, {nbytes / 1e6:.1f} MB")
                print(HEADER)
                limit = b.measure(_link_limit(via, keys, sizes))
                link_rate = LINK_PASSES * nbytes / limit["s"] / 1e6
                name = f"link ({LINK_RANGE >> 20} MiB GETs, {LINK_INFLIGHT} at once)"
                print(_row(name, limit, LINK_PASSES * nbytes, link_rate))
                seq = b.measure(_pass(url, options, n))
                seq_rate = nbytes / seq["s"] / 1e6
                print(_row("sequential batches(1024)", seq, nbytes, link_rate, seq_rate))
                print(_open_then_first_batch(url, options, link, latency / 1000))
                b._settled()
                for label, kw in (
                    ("shuffle=True", {"shuffle": True, "seed": 0}),
                    ("shuffle=10_000", {"shuffle": 10_000, "seed": 0}),
                ):
                    got = b.measure(_pass(url, options, n, **kw), runs=1 if args.quick else None)
                    print(_row(label, got, nbytes, link_rate, seq_rate))
                for label, per in (
                    ("1% sample, one ds[list]", None),
                    ("1% by __getitems__(256)", 256),
                ):
                    got = b.measure(_sample(url, options, n, per), runs=1 if args.quick else None)
                    print(
                        _row(label, got, 0, None)
                        + f"  {got['bytes'] / nbytes:.3f}x the dataset's bytes"
                    )
                if ray_ready and kind != "gzip":
                    ray_paths = [f"s3://{k}" for k in keys[:1]] if args.quick else keys
                    ray_n = n // len(keys) if args.quick else n
                    ray_bytes = sizes[0] if args.quick else nbytes
                    got = b.measure(_ray(link.port.value, ray_paths, ray_n), runs=1)
                    rate = ray_bytes / got["s"] / 1e6
                    print(
                        _row(
                            f"ray read_tfrecords ({len(ray_paths)} files)",
                            got,
                            ray_bytes,
                            link_rate,
                            seq_rate,
                        )
                        + f"  tfrecnp sequential / ray: {seq_rate / rate:.1f}x"
                    )
        print(f"\nload at the end: {os.getloadavg()[0]:.2f}")
    finally:
        link.stop()
        moto.terminate()
        moto.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
