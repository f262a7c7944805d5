"""Object stores (issue 14): the same dataset read from local files and from an S3 server
on the loopback address (moto's, started here on 127.0.0.1), through s3fs.

Data: 4 shards of 25 k tf.train.Example records (100 k rows, about 60 MB): label (int64),
x (64 float32), tokens (VarLen int64, 0..31 values), generated once into bench-data/.

- sequential: ``tn.open(src).batches(1024)`` to the end, local vs s3://: MB/s and the
  number of S3 requests it made (the reader asks for 8 MiB per request);
- shuffled epoch over s3://: ``batches(1024, shuffle=True)`` (a permutation of every record,
  read by position) and ``batches(1024, shuffle=10_000)`` (a streamed pool): requests
  against records;
- random reads: ``ds[ids]`` of 1024 random records: requests per call.

moto keeps objects in memory and answers on loopback, so this measures our request
pattern and the client's per-request cost, not a real store's latency or bandwidth; the
request counts carry over to any store.

    python benchmarks/bench_s3.py [--runs N]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import token_shards

SHARDS, ROWS = 4, 25_000


def _data() -> list[str]:
    return token_shards("s3", SHARDS, ROWS, width=64, tokens=(0, 32))


def _server():
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        region_name="us-east-1",
    ).create_bucket(Bucket="bench")
    options = {
        "key": "bench",
        "secret": "bench",
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
    }
    return server, options


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)

    import s3fs

    import tfrecnp as tn

    paths = _data()
    server, options = _server()
    try:
        fs = s3fs.S3FileSystem(**options)  # the instance tfrecnp gets for these options
        for p in paths:
            fs.put_file(p, "bench/data/" + Path(p).name)
        sent = [0]
        fs.s3.meta.events.register("before-send.s3", lambda **_: sent.__setitem__(0, sent[0] + 1))
        url = "s3://bench/data/"
        nbytes = sum(Path(p).stat().st_size for p in paths)
        n = SHARDS * ROWS

        def epoch(src, **kw):
            ds = tn.open(src, storage_options=options if src == url else None)
            rows = 0
            for batch in ds.batches(1024, **kw):
                rows += len(batch["label"])
            assert rows == n
            return rows

        times = {"local": [], "s3 (moto, loopback)": []}
        requests = 0
        epoch(str(Path(paths[0]).parent))  # warm the page cache
        for _ in range(args.runs):
            for name, src in (("local", str(Path(paths[0]).parent)), ("s3 (moto, loopback)", url)):
                before = sent[0]
                t0 = time.perf_counter()
                epoch(src)
                times[name].append(time.perf_counter() - t0)
                if src == url:
                    requests = sent[0] - before
        print(f"sequential batches(1024): {n:,} records, {nbytes / 1e6:.0f} MB, {args.runs} runs")
        print(f"{'source':22} {'median s':>9} {'MB/s':>8} {'records/s':>11}")
        rate = {}
        for name, secs in times.items():
            med = statistics.median(secs)
            rate[name] = nbytes / med / 1e6
            print(f"{name:22} {med:9.2f} {rate[name]:8.0f} {n / med:11,.0f}")
        print(
            f"s3 / local: {rate['s3 (moto, loopback)'] / rate['local']:.2f}x; "
            f"S3 requests per pass: {requests} ({nbytes / max(1, requests) / 2**20:.1f} MiB each)"
        )

        print("\nshuffled epochs over s3 (requests sent, records delivered)")
        for label, kw in (
            ("shuffle=True", {"shuffle": True, "seed": 0}),
            ("shuffle=10_000", {"shuffle": 10_000, "seed": 0}),
        ):
            before = sent[0]
            t0 = time.perf_counter()
            epoch(url, **kw)
            took = time.perf_counter() - t0
            got = sent[0] - before
            print(
                f"{label:16} {got:6} requests for {n:,} records "
                f"({n / max(1, got):,.0f} records per request, {took:.1f} s)"
            )

        ds = tn.open(url, storage_options=options)
        len(ds)  # the index, built once (a pass over the files)
        rng = np.random.default_rng(1)
        counts = []
        for _ in range(5):
            ids = rng.choice(n, 1024, replace=False)
            before = sent[0]
            ds[ids]
            counts.append(sent[0] - before)
        print(f"ds[1024 random ids]: {statistics.median(counts):.0f} requests per call (median)")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
