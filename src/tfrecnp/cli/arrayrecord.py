"""`tfrecnp count / inspect / head / verify` on ArrayRecord files: the same reports as for
TFRecord shards, from the files' footers and chunks (`tfrecnp.format.arrayrecord`)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from .._util import fs
from .._util.text import format_count, format_size
from ..errors import CorruptRecordError, TFRecordError
from ..format.arrayrecord import ArrayRecordFile, is_array_record_source, list_array_record
from .show import count_lines

__all__ = ["array_record_paths", "count", "head", "inspect", "verify"]

VERIFY_BYTES = 32 << 20  # chunks checked per read


def array_record_paths(args: argparse.Namespace) -> list[str] | None:
    """The ArrayRecord files the command's paths name, or None when they name others."""
    if not is_array_record_source(list(args.paths)):
        return None
    return [str(p) for p in list_array_record(list(args.paths))]


def _codec(options: str) -> str:
    """'zstd:3, group_size 1' from a footer's writer_options."""
    parts = dict(p.split(":", 1) if ":" in p else (p, "") for p in options.split(","))
    codec = next(
        (f"{k}:{v}" if v else k for k, v in parts.items() if k in ("zstd", "brotli", "snappy")),
        "uncompressed",
    )
    group = parts.get("group_size")
    return f"ArrayRecord {codec}" + (f", group_size {group}" if group else "")


def count(paths: list[str], args: argparse.Namespace) -> int:
    rows = [{"path": p, "records": ArrayRecordFile(p).footer.records} for p in paths]
    print("\n".join(count_lines(rows, args.json)))
    return 0


def verify(paths: list[str], args: argparse.Namespace) -> int:
    """Every chunk's header and data hashes, and its records decoded (sizes add up)."""
    if getattr(args, "salvage", None):
        raise SystemExit(
            "tfrecnp verify: error: --salvage writes TFRecord files from TFRecord inputs; for "
            "ArrayRecord files, copy the good records with tn.open(..., on_error='skip')"
        )
    files, bad = [], 0
    for path in paths:
        t0 = time.perf_counter()
        damage: list[CorruptRecordError] = []
        good = payload = 0
        f = ArrayRecordFile(path)
        try:
            footer = f.footer
        except (CorruptRecordError, TFRecordError) as e:
            damage.append(e if isinstance(e, CorruptRecordError) else CorruptRecordError(str(e)))
            footer = None
        if footer is not None:
            sizes = footer.ends - footer.offsets
            k = 0
            while k < len(sizes):
                take = max(1, int(np.searchsorted(np.cumsum(sizes[k:]), VERIFY_BYTES)))
                got = f.chunk_records(np.arange(k, min(len(sizes), k + take)))
                good += len(got.batch)
                payload += got.batch.nbytes
                damage += got.errors
                k += take
        f.close()
        bad += len(damage)
        files.append(
            {
                "path": path,
                "records": good,
                "payload_bytes": payload,
                "seconds": round(time.perf_counter() - t0, 3),
                "corrupt": [
                    {"record": e.record, "offset": e.offset, "reason": e.reason} for e in damage
                ],
            }
        )
    if args.json:
        print(json.dumps({"files": files, "corrupt": bad, "salvaged": None}))
    else:
        for r in files:
            status = "OK" if not r["corrupt"] else f"CORRUPT ({len(r['corrupt'])})"
            print(
                f"{status:<12} {r['path']}: {format_count(r['records'])} good records, "
                f"{format_size(r['payload_bytes'])}"
            )
            for c in r["corrupt"]:
                print(f"    byte {format_count(c['offset'])}: {c['reason']}")
    return 1 if bad else 0


def inspect(paths: list[str], args: argparse.Namespace) -> Any:
    """`tfrecnp inspect`'s report (an `Inspection`) for ArrayRecord files."""
    from ..data.arrayrecord import ArrayRecordFiles, ArrayRecordSource
    from ..example.infer import inspect_sample

    files = ArrayRecordFiles(paths, on_error="warn")
    rows = [
        (p, _codec(f.footer.writer_options), f.footer.records, fs.size(p))
        for p, f in zip(paths, files.files, strict=True)
    ]
    return inspect_sample(rows, ArrayRecordSource(files, {}).sample().slice(0, args.sample))


def head(paths: list[str], spec: Any, n: int) -> list[tuple[str, int, dict[str, Any]]]:
    """The first n records as (path, index in that file, {name: value})."""
    from ..data.opener import open as open_dataset

    ds = open_dataset(paths, spec)
    out = []
    for i in range(min(n, len(ds))):
        path, record = ds.source.files.origins(np.array([i])).where(0)
        out.append((path, record, ds[i]))
    return out


# --- convert: records copied between TFRecord and ArrayRecord ------------------------------

_TFRECORD_CODECS = {"none": "none", "gzip": "GZIP", "zlib": "ZLIB"}


def compression_arg(text: str) -> str:
    """--compression of `convert`: none / GZIP / ZLIB (TFRecord output) or an ArrayRecord
    codec (zstd[:N], brotli[:N], snappy, uncompressed)."""
    if text.lower() in _TFRECORD_CODECS:
        return _TFRECORD_CODECS[text.lower()]
    from ..format.arrayrecord_write import parse_compression

    try:
        parse_compression(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give none, GZIP or ZLIB (TFRecord output), or zstd[:N], brotli[:N], "
            "snappy or uncompressed (ArrayRecord output)"
        ) from e
    return text


def is_records_copy(args: argparse.Namespace) -> bool:
    """Whether `convert` copies records: TFRecord -> ArrayRecord or ArrayRecord -> TFRecord."""
    from ..arrays.sources import array_format
    from ..data.convert_records import is_records_conversion

    fmt = args.format if args.format in ("array_record", "tfrecord") else None
    if len(args.src) == 1 and array_format(args.src[0]) is not None:
        return False  # arrays -> files: tn.write's path
    return is_records_conversion(list(args.src), args.dst, {"format": fmt})


def convert(args: argparse.Namespace) -> int:
    """`tfrecnp convert` of TFRecord files to ArrayRecord, or back: the records as they are."""
    from ..data.convert_records import copy_records

    given = [
        f"--{o.replace('_', '-')}"
        for o in ("feature", "key", "encoding", "index", "verify", "select", "batch_size", "split")
        if getattr(args, o, None)
    ]
    if given:
        raise ValueError(
            f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to converting arrays "
            "or to arrays; TFRecord <-> ArrayRecord copies the records as they are"
        )
    started = time.perf_counter()
    compression = None if args.compression == "none" else args.compression
    result = copy_records(
        list(args.src),
        args.dst,
        format=args.format if args.format in ("array_record", "tfrecord") else None,
        compression=compression,
        group_size=args.group_size,
        records_per_shard=args.records_per_shard,
        progress=not (args.json or args.quiet),
        spec=args.spec,
    )
    seconds = time.perf_counter() - started
    if args.json:
        print(
            json.dumps(
                {
                    "sources": list(args.src),
                    "paths": result.paths,
                    "records": result.records,
                    "bytes": result.bytes,
                    "seconds": round(seconds, 3),
                }
            )
        )
        return 0
    where = result.paths[0] if len(result.paths) == 1 else f"{len(result.paths)} shards"
    print(
        f"wrote {format_count(result.records)} records ({format_size(result.bytes)}) to "
        f"{where} in {seconds:.2f}s"
    )
    if len(result.paths) > 1:
        print(f"  {result.paths[0]} ... {result.paths[-1]}")
    return 0
