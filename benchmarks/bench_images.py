"""Images (issue 13): JPEG records -> batches of 32 arrays, tfrecnp against the seeds.

- tfrecnp: `tn.open(path, {"image": tn.Image(...), "label": ...}).batches(32)`.
- TensorFlow, seed 001's pipeline: `TFRecordDataset.map(parse_single_example ->
  decode_jpeg(channels=3) [-> convert_image_dtype -> resize], AUTOTUNE).batch(32)
  .prefetch(AUTOTUNE)`, `.numpy()` of every batch.
- Pillow, seed 002's loop: records from TFRecordDataset, parse_single_example, then
  `np.array(Image.open(BytesIO(bytes)))` per record [+ resize, / 255], stacked per batch.

Cases: 128x128 and 512x512 JPEGs -> uint8 [32, h, w, 3]; 512x512 -> float32 [32, 224,
224, 3] in [0, 1] (bilinear). Files written by TensorFlow (encode_jpeg, quality 90). Each
side runs in its own process on all cores, the sides in turn for --runs rounds; a round
times a side's second (warm) pass; images/s are medians over the rounds.

    python benchmarks/run.py images [--runs N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, format_rate, run_peer, warm_page_cache

FILES = {128: 4096, 512: 512}  # side -> images
CASES = (("128 uint8", 128, None), ("512 uint8", 512, None), ("512->224 float32", 512, 224))
BATCH = 32
SIDES = ("tfrecnp", "tensorflow", "pillow")


def _path(side: int, quick: bool) -> Path:
    return DATA_DIR / f"images-{side}{'-quick' if quick else ''}.tfrecord"


def _write(side: int, n: int, path: Path) -> None:
    import tensorflow as tf

    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:side, 0:side]
    F = tf.train
    tmp = path.with_suffix(".part")
    with tf.io.TFRecordWriter(str(tmp)) as w:
        for i in range(n):
            base = np.stack([x * 255 // side, y * 255 // side, (x + y + 7 * i) % 256], -1)
            img = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
            jpeg = tf.io.encode_jpeg(img, quality=90).numpy()
            f = {
                "image": F.Feature(bytes_list=F.BytesList(value=[jpeg])),
                "label": F.Feature(int64_list=F.Int64List(value=[i % 10])),
            }
            w.write(F.Example(features=F.Features(feature=f)).SerializeToString())
    os.replace(tmp, path)


def _tfrecnp(path: Path, resize: int | None, runs: int) -> list[float]:
    import tfrecnp as tn

    image = tn.Image(3, (resize, resize), dtype="float32") if resize else tn.Image(3)
    ds = tn.open(str(path), {"image": image, "label": tn.FixedLen((), "int64")})
    rates = []
    for _ in range(runs):
        t0 = time.perf_counter()
        got = 0
        for b in ds.batches(BATCH):
            assert b["image"].shape[1:] == ((resize,) * 2 if resize else b["image"].shape[1:3]) + (
                3,
            )
            got += len(b["image"])
        rates.append(got / (time.perf_counter() - t0))
    return rates


def _tensorflow(path: Path, resize: int | None, runs: int) -> list[float]:
    import tensorflow as tf

    spec = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(proto):
        ex = tf.io.parse_single_example(proto, spec)
        image = tf.io.decode_jpeg(ex["image"], channels=3)
        if resize:
            image = tf.image.convert_image_dtype(image, tf.float32)
            image = tf.image.resize(image, [resize, resize])
        return image, ex["label"]

    rates = []
    for _ in range(runs):
        ds = tf.data.TFRecordDataset(str(path)).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
        ds = ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)
        t0 = time.perf_counter()
        got = 0
        for images, labels in ds:
            got += len(images.numpy())
            labels.numpy()
        rates.append(got / (time.perf_counter() - t0))
    return rates


def _pillow(path: Path, resize: int | None, runs: int) -> list[float]:
    import io

    import tensorflow as tf
    from PIL import Image

    spec = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    rates = []
    for _ in range(runs):
        t0 = time.perf_counter()
        got = 0
        images, labels = [], []
        for record in tf.data.TFRecordDataset(str(path)):
            ex = tf.io.parse_single_example(record, spec)
            im = Image.open(io.BytesIO(ex["image"].numpy()))
            if resize:
                im = im.resize((resize, resize), Image.BILINEAR)
                images.append(np.asarray(im, np.float32) / 255.0)
            else:
                images.append(np.array(im))
            labels.append(ex["label"].numpy())
            if len(images) == BATCH:
                np.stack(images), np.array(labels)
                got += len(images)
                images, labels = [], []
        if images:
            got += len(np.stack(images))
        rates.append(got / (time.perf_counter() - t0))
    return rates


SIDE_FNS = {"tfrecnp": _tfrecnp, "tensorflow": _tensorflow, "pillow": _pillow}


def _run_side(side: str, path: Path, resize: int | None, runs: int) -> dict:
    return run_peer(__file__, [side, path, resize or 0, runs], flag="--side")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_images", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="passes per case (median)")
    parser.add_argument("--quick", action="store_true", help="small files, for a smoke run")
    parser.add_argument("--side", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--write", nargs=3, help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args(argv)
    if args.write:
        _write(int(args.write[0]), int(args.write[1]), Path(args.write[2]))
        return 0
    if args.side:
        side, path, resize, runs = args.side
        rates = SIDE_FNS[side](Path(path), int(resize) or None, int(runs))
        print(json.dumps({"rates": rates}))
        return 0
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    print(
        f"Images: JPEG records -> batches of {BATCH}, images/s (median of {args.runs} rounds); "
        "tfrecnp against seed 001's tf.data pipeline and seed 002's Pillow loop"
    )
    print(
        f"  {'case':<18} {'images':>6} {'tfrecnp':>9} {'TF':>9} {'Pillow':>9} "
        f"{'x TF':>6} {'x Pillow':>8}"
    )
    for name, side, resize in CASES:
        n = FILES[side] // 8 if args.quick else FILES[side]
        path = _path(side, args.quick)
        if not path.exists():
            subprocess.run(
                [sys.executable, __file__, "--write", str(side), str(n), str(path)], check=True
            )
        warm_page_cache(path)
        rates: dict[str, list[float]] = {who: [] for who in SIDES}
        for _ in range(args.runs):  # rounds: one process per side, in turn, so that a
            for who in SIDES:  # change in the shared machine's load hits every side alike
                got = _run_side(who, path, resize, 2)  # the second pass: warm
                if "skip" in got:
                    print(f"  {name}: {who} failed: {got['skip']}")
                    rates[who].append(float("nan"))
                else:
                    rates[who].append(got["rates"][-1])
        med = {who: statistics.median(r) for who, r in rates.items()}
        a, b, c = med["tfrecnp"], med["tensorflow"], med["pillow"]
        print(
            f"  {name:<18} {n:>6} {format_rate(a):>9} {format_rate(b):>9} {format_rate(c):>9} "
            f"{a / b:>6.2f} {a / c:>8.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
