"""TFDS folders (issue 25): a prepared tensorflow-datasets image folder read to NumPy batches
of 32, tensorflow-datasets against tfrecnp.

- tfds: `tfds.as_numpy(builder_from_directory(dir).as_dataset(split, shuffle_files=False)
  .batch(32))`, every batch's arrays.
- tfrecnp: `tn.open(dir, split=split).batches(32)` (no TensorFlow imported).

Cases: 128x128 RGB JPEGs in 4 shards (read in TFDS's interleaved order, so by position),
and 28x28 grey PNGs in one shard (read as a stream). Folders written by TFDS's own writer
into bench-data/. Each side runs in a process of its own, the sides in turn for --runs
rounds: a round reports the side's import + first batch (from the process's start) and its
images/s over a whole pass (the second, warm one); medians over the rounds.

    python benchmarks/run.py tfds [--runs N] [--quick]

Last run (2-core build machine shared with other work, load about 4, --runs 3): JPEG case
3.8 k against 3.2 k images/s (1.16x), import + first batch 0.73 s against 4.95 s (6.7x);
PNG case 9.8 k against 9.4 k images/s (1.04x), 1.61 s against 5.34 s (3.3x). Without the
images (labels only) tfrecnp reads the JPEG folder in TFDS's interleaved order at about
48 k records/s: the pixels set the pace, as for plain TFRecord files.
"""

from __future__ import annotations

import time

START = time.perf_counter()  # a side's latency counts from here, imports included

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, format_rate, run_peer, warm_page_cache  # noqa: E402

BATCH = 32
CASES = {  # name -> (images, side, channels, format, shards)
    "jpeg 128x128x3, 4 shards": (4096, 128, 3, "jpeg", 4),
    "png 28x28x1, 1 shard": (8192, 28, 1, "png", 1),
}
SIDES = ("tfds", "tfrecnp")


def _folder(case: str, quick: bool) -> Path:
    n, side, _, fmt, shards = CASES[case]
    n = n // 8 if quick else n
    return DATA_DIR / f"tfds-{fmt}{side}-{n}-{shards}" / "bench_images" / "1.0.0"


def _prepare(case: str, quick: bool) -> Path:
    folder = _folder(case, quick)
    if (folder / "dataset_info.json").exists():
        return folder
    import tensorflow_datasets as tfds

    n, side, channels, fmt, shards = CASES[case]
    n = n // 8 if quick else n

    class BenchImages(tfds.core.GeneratorBasedBuilder, skip_registration=True):
        VERSION = tfds.core.Version("1.0.0")

        def _info(self):
            f = tfds.features
            image = f.Image(shape=(side, side, channels), encoding_format=fmt)
            return tfds.core.DatasetInfo(
                builder=self,
                features=f.FeaturesDict({"image": image, "label": f.ClassLabel(num_classes=10)}),
            )

        def _split_generators(self, dl_manager):
            return {"train": self._generate_examples()}

        def _generate_examples(self):
            rng = np.random.default_rng(0)
            y, x = np.mgrid[0:side, 0:side]
            for i in range(n):
                base = np.stack([x * 255 // side, y * 255 // side, (x + y + 7 * i) % 256], -1)
                img = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
                yield i, {"image": img[..., :channels], "label": i % 10}

    builder = BenchImages(data_dir=str(folder.parent.parent))
    config = tfds.download.DownloadConfig(num_shards=shards)
    builder.download_and_prepare(file_format="tfrecord", download_config=config)
    return Path(builder.data_dir)


def _side_tfds(folder: str, runs: int) -> dict:
    import tensorflow_datasets as tfds

    builder = tfds.builder_from_directory(folder)

    def batches():
        ds = builder.as_dataset(split="train", shuffle_files=False).batch(BATCH)
        return tfds.as_numpy(ds)

    first = next(iter(batches()))
    latency = time.perf_counter() - START
    return {"latency": latency, "rates": _passes(batches, runs), "first": first["label"].tolist()}


def _side_tfrecnp(folder: str, runs: int) -> dict:
    import tfrecnp as tn

    ds = tn.open(folder, split="train")
    first = next(iter(ds.batches(BATCH)))
    latency = time.perf_counter() - START
    return {
        "latency": latency,
        "rates": _passes(lambda: ds.batches(BATCH), runs),
        "first": first["label"].tolist(),
    }


def _passes(batches, runs: int) -> list[float]:
    rates = []
    for _ in range(runs + 1):  # the first pass warms up, and is not counted
        t0 = time.perf_counter()
        got = 0
        for b in batches():
            got += len(b["image"])
            np.asarray(b["label"])
        rates.append(got / (time.perf_counter() - t0))
    return rates[1:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_tfds", description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="rounds (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="an eighth of the images")
    parser.add_argument("--side", nargs=3, metavar=("SIDE", "FOLDER", "RUNS"), help="internal")
    args = parser.parse_args(argv)
    if args.side:
        side, folder, runs = args.side
        fn = _side_tfds if side == "tfds" else _side_tfrecnp
        print(json.dumps(fn(folder, int(runs))), flush=True)
        return 0
    print(
        f"{'case':<26} {'side':<8} {'import+1st batch':>17} {'images/s':>10} "
        f"{'x tfds (speed)':>15} {'x tfds (latency)':>17}"
    )
    for case in CASES:
        folder = _prepare(case, args.quick)
        for shard in folder.glob("*.tfrecord-*"):
            warm_page_cache(shard)
        got: dict[str, list[dict]] = {s: [] for s in SIDES}
        for _ in range(args.runs):
            for side in SIDES:
                r = run_peer(__file__, [side, folder, 1], flag="--side")
                if "skip" in r:
                    print(f"{case}: {side} skipped: {r['skip']}")
                    return 1
                got[side].append(r)
        firsts = {s: got[s][0]["first"] for s in SIDES}
        if firsts["tfds"] != firsts["tfrecnp"]:  # the same records, in the same order
            print(f"{case}: first batches differ: {firsts}")
            return 1
        summary = {
            s: (
                statistics.median(r["latency"] for r in got[s]),
                statistics.median(x for r in got[s] for x in r["rates"]),
            )
            for s in SIDES
        }
        base_latency, base_rate = summary["tfds"]
        for side in SIDES:
            latency, rate = summary[side]
            print(
                f"{case:<26} {side:<8} {latency:>15.2f} s {format_rate(rate):>10} "
                f"{rate / base_rate:>14.2f}x {base_latency / latency:>16.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
