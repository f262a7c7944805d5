"""`tfrecnp bench`: time reading and decoding the user's own files at their batch size, with
tfrecnp and with TensorFlow's best pipeline on the same files, and print the ratio. People
pick a loader by trying it on their data.

TensorFlow's side is `TFRecordDataset(paths)[.shuffle(N)].batch(B).map(parse_example,
AUTOTUNE).prefetch(2)`, every output turned into NumPy, with the spec translated to
tf.io feature specs; TensorFlow is imported only here, and only when installed.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..example.columns import BytesColumn, Ragged
from ..example.spec import FixedLen, Raw, Sequence, VarLen

TF_MISSING = (
    "TensorFlow is not installed, so only tfrecnp was timed; to compare, "
    "pip install tensorflow-cpu (or pip install 'tfrecnp[tf]')"
)


# What TensorFlow writes to stderr as it starts: absl's notice that its logging is not set
# up yet, and information lines (oneDNN's notice) written before TF_CPP_MIN_LOG_LEVEL counts.
STARTUP_NOISE = re.compile(
    rb"WARNING: All log messages before absl::InitializeLog\(\) is called"
    rb"|I\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [\w.]+:\d+\] "
)


def import_tensorflow() -> Any:
    """import tensorflow, without its start-up log above the table the user came for.
    TF_CPP_MIN_LOG_LEVEL=2 quiets its information and warning lines from then on; the lines
    written before absl's logging starts ignore it and go straight to file descriptor 2, so
    they are caught during the import and all but those are passed on. A level the user
    set is kept, with everything shown; TF_ENABLE_ONEDNN_OPTS is not touched."""
    if "tensorflow" in sys.modules or "TF_CPP_MIN_LOG_LEVEL" in os.environ:
        import tensorflow

        return tensorflow
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    with tempfile.TemporaryFile() as caught:
        sys.stderr.flush()
        kept = os.dup(2)
        os.dup2(caught.fileno(), 2)
        try:
            import tensorflow
        finally:
            os.dup2(kept, 2)
            os.close(kept)
            caught.seek(0)
            said = [ln for ln in caught.read().splitlines(True) if not STARTUP_NOISE.match(ln)]
            sys.stderr.write(b"".join(said).decode(errors="replace"))
    return tensorflow


@dataclass
class Timing:
    records: int
    seconds: float
    batches: int
    nbytes: int

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


def _touch(col: Any) -> None:
    """Make sure a column is materialised as NumPy, as a training step would need it."""
    if isinstance(col, Ragged):
        _touch(col.values)
    elif isinstance(col, BytesColumn):
        np.asarray(col.data)
    else:
        np.asarray(col)


def time_tfrecnp(ds: Any, batch_size: int, shuffle: int, seconds: float) -> Timing:
    records = batches = 0
    started = time.perf_counter()
    for batch in ds.batches(batch_size, shuffle=shuffle, seed=0):
        for col in batch.values():
            _touch(col)
        records += len(next(iter(batch.values()))) if batch else 0
        batches += 1
        if time.perf_counter() - started >= seconds:
            break
    return Timing(records, time.perf_counter() - started, batches, 0)


def tf_features(spec: Any) -> tuple[dict, dict, list[str]]:
    """(tf.io feature specs, post-processing per feature, features TensorFlow cannot read)."""
    import tensorflow as tf

    dtypes = {"bytes": tf.string, "float32": tf.float32, "int64": tf.int64}
    features, post, unsupported = {}, {}, []
    if isinstance(spec, Sequence):
        return {}, {}, list(spec.context) + list(spec.sequence)
    for name, f in spec.items():
        if isinstance(f, FixedLen):
            wire = "bytes" if f.dtype == "bytes" else ("float32" if "float" in f.dtype else "int64")
            features[name] = tf.io.FixedLenFeature(list(f.shape), dtypes[wire])
        elif isinstance(f, VarLen):
            wire = "bytes" if f.dtype == "bytes" else ("float32" if "float" in f.dtype else "int64")
            features[name] = tf.io.RaggedFeature(dtypes[wire])
        elif isinstance(f, Raw) and not f.ragged and f.shape is not None:
            features[name] = tf.io.FixedLenFeature([], tf.string)
            post[name] = _raw_decoder(tf.as_dtype(f.dtype), [-1, *f.shape])
        else:
            unsupported.append(name)
    return features, post, unsupported


def _raw_decoder(dtype: Any, shape: list[int]) -> Any:
    import tensorflow as tf

    return lambda x: tf.reshape(tf.io.decode_raw(x, dtype), shape)


def time_tensorflow(
    paths: list[str], spec: Any, batch_size: int, shuffle: int, seconds: float, compression: Any
) -> tuple[Timing | None, list[str]]:
    import tensorflow as tf

    features, post, unsupported = tf_features(spec)
    if not features:
        return None, unsupported

    def parse(serialized):
        out = tf.io.parse_example(serialized, features)
        return {k: post[k](v) if k in post else v for k, v in out.items()}

    kinds = {"GZIP": "GZIP", "ZLIB": "ZLIB"}
    ds = tf.data.Dataset.from_tensor_slices(paths).interleave(
        lambda p: tf.data.TFRecordDataset(p, compression_type=kinds.get(compression, "")),
        cycle_length=1,
    )
    if shuffle:
        ds = ds.shuffle(shuffle, seed=0)
    ds = ds.batch(batch_size).map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)
    records = batches = nbytes = 0
    started = time.perf_counter()
    for batch in ds:
        for col in batch.values():
            (col.flat_values if isinstance(col, tf.RaggedTensor) else col).numpy()
        records += int(next(iter(batch.values())).shape[0])
        batches += 1
        if time.perf_counter() - started >= seconds:
            break
    return Timing(records, time.perf_counter() - started, batches, nbytes), unsupported


def cmd_bench(args: argparse.Namespace) -> int:
    import json

    from ..data.opener import open as open_dataset
    from ..example.padding import feature_names

    compression = None if args.compression == "none" else args.compression
    ds = open_dataset(args.paths, args.spec, compression=compression)
    if args.select:
        ds = ds.select(args.select.split(","))
    shuffle = args.shuffle or 0
    try:
        import_tensorflow()
    except ImportError:
        missing, unsupported = True, []
    else:
        missing = False
        unsupported = tf_features(ds.spec)[2]
    if unsupported and len(unsupported) < len(feature_names(ds.spec)):
        ds = ds.select([n for n in feature_names(ds.spec) if n not in unsupported])
    mean = ds.source.mean_record_bytes(0, None)  # bytes per frame, as the files count them
    ours = time_tfrecnp(ds, args.batch_size, shuffle, args.seconds)
    theirs = None
    if not missing:
        detected = next(iter(ds.source.compressions), None)
        theirs, _ = time_tensorflow(
            ds.paths, ds.spec, args.batch_size, shuffle, args.seconds, detected
        )
    for t in (ours, theirs):
        if t is not None:
            t.nbytes = int(t.records * mean)
    ratio = ours.rate / theirs.rate if theirs is not None and theirs.rate else None
    if args.json:
        print(
            json.dumps(
                {
                    "batch_size": args.batch_size,
                    "shuffle": shuffle,
                    "tfrecnp": asdict(ours) | {"records_per_s": ours.rate},
                    "tensorflow": None
                    if theirs is None
                    else asdict(theirs) | {"records_per_s": theirs.rate},
                    "ratio": ratio,
                    "tensorflow_cannot_read": unsupported,
                    "tensorflow_installed": not missing,
                }
            )
        )
        return 0
    what = f"batch {args.batch_size}" + (f", shuffle buffer {shuffle:,}" if shuffle else "")
    print(f"{len(ds.paths)} file(s), {what}, up to {args.seconds:g} s a side")
    for name, t in (("tfrecnp", ours), ("TensorFlow", theirs)):
        if t is None:
            continue
        print(
            f"  {name:<10} {t.rate:>14,.0f} records/s  {t.nbytes / t.seconds / 1e6:>9,.1f} MB/s  "
            f"{t.batches / t.seconds:>11,.0f} batches/s  ({t.records:,} records in "
            f"{t.seconds:.2f} s)"
        )
    if ratio is not None:
        print(f"  tfrecnp is {ratio:.1f}x TensorFlow here")
    if unsupported:
        print(
            f"  both sides read only what tf.io can express directly; left out: "
            f"{', '.join(unsupported)}"
        )
    if missing:
        print(f"  {TF_MISSING}")
    return 0
