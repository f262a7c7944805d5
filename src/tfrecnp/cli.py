"""The `tfrecnp` command: a thin shell over the public API.

Every subcommand has --help; --json prints one JSON document for scripts. Exit status:
0 success, 1 corrupt data found (verify), 2 usage or input errors.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
from collections.abc import Sequence

import numpy as np

from . import __version__
from .errors import TFRecordError, format_count, format_size
from .records import (
    RecordReader,
    RecordWriter,
    expand_paths,
    file_compression,
    scan_file,
    write_index,
)


def _add_common(p: argparse.ArgumentParser, *, paths: bool = True) -> None:
    if paths:
        p.add_argument(
            "paths", nargs="+", metavar="PATH", help="TFRecord files, globs or directories"
        )
        p.add_argument(
            "--compression",
            default="auto",
            choices=["auto", "none", "GZIP", "ZLIB"],
            help="compression of the inputs (default: detected per file)",
        )
    p.add_argument("--json", action="store_true", help="print one JSON document instead of text")


def _compression(args: argparse.Namespace) -> str | None:
    return None if args.compression == "none" else args.compression


def cmd_count(args: argparse.Namespace) -> int:
    rows = [
        {"path": p, "records": len(scan_file(p, compression=_compression(args)))}
        for p in expand_paths(args.paths)
    ]
    total = sum(r["records"] for r in rows)
    if args.json:
        print(json.dumps({"files": rows, "records": total}))
    else:
        for r in rows:
            print(f"{format_count(r['records']):>14}  {r['path']}")
        if len(rows) > 1:
            print(f"{format_count(total):>14}  total")
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    rows = []
    for path in expand_paths(args.paths):
        compression = file_compression(path, _compression(args))
        if compression:
            raise TFRecordError(
                f"{path} is {compression}-compressed: byte offsets only index uncompressed "
                "files; decompress it first (e.g. `gunzip`) or read it without an index"
            )
        index = scan_file(path, compression=None, use_index=False)
        rows.append({"path": path, "index": write_index(index), "records": len(index)})
    if args.json:
        print(json.dumps({"files": rows}))
    else:
        for r in rows:
            print(f"{r['index']}: {format_count(r['records'])} records")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    reader = RecordReader(args.paths, compression=_compression(args), on_error="skip")
    writer = RecordWriter(args.salvage) if args.salvage else None
    files = []
    try:
        for path in reader.paths:
            single = RecordReader(path, compression=_compression(args), on_error="skip")
            records = size = 0
            started = time.perf_counter()
            for batch in single.batches(4096):
                records += len(batch)
                size += int(batch.offsets[-1])
                if writer:
                    writer.write_batch(batch.data, batch.offsets)
            files.append(
                {
                    "path": path,
                    "records": records,
                    "payload_bytes": size,
                    "seconds": round(time.perf_counter() - started, 3),
                    "corrupt": [
                        {
                            "record": e.record,
                            "offset": e.offset,
                            "reason": e.reason,
                            "skipped_bytes": e.skipped,
                        }
                        for e in single.corruptions
                    ],
                }
            )
    except BaseException:
        if writer:
            writer.abort()
        raise
    if writer:
        writer.close()
    bad = sum(len(f["corrupt"]) for f in files)
    if args.json:
        print(json.dumps({"files": files, "corrupt": bad, "salvaged": args.salvage}))
    else:
        for f in files:
            status = "OK" if not f["corrupt"] else f"CORRUPT ({len(f['corrupt'])})"
            print(
                f"{status:<12} {f['path']}: {format_count(f['records'])} good records, "
                f"{format_size(f['payload_bytes'])}"
            )
            for c in f["corrupt"]:
                print(
                    f"    record {c['record']} at byte {format_count(c['offset'])}: {c['reason']}; "
                    f"skipped {format_count(c['skipped_bytes'])} bytes"
                )
        if writer:
            print(f"salvaged {format_count(writer.records)} good records to {args.salvage}")
    return 1 if bad else 0


def cmd_demo(args: argparse.Namespace) -> int:
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "sample.tfrecord")
    rng = np.random.default_rng(0)
    lengths = rng.integers(16, 512, args.records)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    data = rng.integers(0, 256, int(offsets[-1]), dtype=np.uint8)
    started = time.perf_counter()
    with RecordWriter(path) as writer:
        writer.write_batch(data, offsets)
    wrote = time.perf_counter() - started
    size = os.path.getsize(path)
    started = time.perf_counter()
    count = len(scan_file(path, use_index=False))
    counted = time.perf_counter() - started
    started = time.perf_counter()
    reader = RecordReader(path)
    same = all(
        np.array_equal(b.data, data[offsets[i] : offsets[i + len(b)]])
        for i, b in _numbered(reader.batches(8192))
    )
    verified = time.perf_counter() - started
    print(
        f"wrote    {path}: {format_count(args.records)} records, "
        f"{format_size(size)} in {wrote:.3f}s"
    )
    print(f"counted  {format_count(count)} records from frame headers in {counted:.3f}s")
    print(
        f"verified every CRC and payload in {verified:.3f}s "
        f"({size / verified / 1e6:,.0f} MB/s): {'all records match' if same else 'MISMATCH'}"
    )
    return 0 if same and count == args.records else 1


def _encoding_arg(values: list[str] | None) -> str | dict | None:
    """--encoding raw | list | NAME=raw ... -> write()'s encoding argument."""
    if not values:
        return None
    if len(values) == 1 and "=" not in values[0]:
        return values[0]
    out = {}
    for v in values:
        name, sep, how = v.rpartition("=")
        if not sep or not name:
            raise ValueError(f"--encoding {v!r}: give raw, list, or NAME=raw / NAME=list")
        out[name] = how
    return out


def cmd_convert(args: argparse.Namespace) -> int:
    from .arrays import array_format  # imported here: keeps the other commands light
    from .spec import spec_to_json
    from .writer import convert

    if array_format(args.src) is None:
        return convert_unsupported(args)
    started = time.perf_counter()
    try:
        result = convert(
            args.src,
            args.dst,
            feature=args.feature,
            key=args.key,
            encoding=_encoding_arg(args.encoding),
            compression=_compression(args),
            records_per_shard=args.records_per_shard,
            index=args.index,
            progress=not args.json and not args.quiet,
            verify=args.verify,
        )
    except (KeyError, ImportError) as e:
        print(f"tfrecnp convert: error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - started
    if args.json:
        print(
            json.dumps(
                {
                    "source": args.src,
                    "paths": result.paths,
                    "records": result.records,
                    "bytes": result.bytes,
                    "seconds": round(seconds, 3),
                    "spec": json.loads(spec_to_json(result.spec)),
                }
            )
        )
    else:
        where = result.paths[0] if len(result.paths) == 1 else f"{len(result.paths)} shards"
        print(
            f"wrote {format_count(result.records)} records ({format_size(result.bytes)}) "
            f"to {where} in {seconds:.2f}s"
        )
        if len(result.paths) > 1:
            print(f"  {result.paths[0]} ... {result.paths[-1]}")
        print("read back with spec:")
        for name, feature in result.spec.items():
            print(f"  {name!r}: {feature.spell()}")
    return 0


def convert_unsupported(args: argparse.Namespace) -> int:
    """Sources other than arrays: TFRecord -> arrays comes with Dataset.save."""
    if not os.path.exists(args.src):
        raise FileNotFoundError(f"no such file: {args.src}")
    print(
        f"tfrecnp convert: error: {args.src} is not an array file (.npy, .npz, HDF5, Zarr, "
        "folder of .npy); converting TFRecord files to arrays is not available yet",
        file=sys.stderr,
    )
    return 2


def summarize(value: object, width: int = 60) -> str:
    """One readable line for a decoded value: arrays summarised, bytes shortened."""
    if value is None:
        return "-"
    if isinstance(value, bytes):
        shown = repr(value[:24]) + ("..." if len(value) > 24 else "")
        return f"{shown} ({format_count(len(value))} byte{'s' if len(value) != 1 else ''})"
    if isinstance(value, np.ndarray) and value.dtype == object:
        value = value.tolist()
    if isinstance(value, (list, tuple)) or hasattr(value, "to_list"):
        items = value.to_list() if hasattr(value, "to_list") else list(value)
        inner = ", ".join(summarize(v, 20) for v in items[:4])
        return f"[{inner}{', ...' if len(items) > 4 else ''}] ({len(items)} items)"
    array = np.asarray(value)
    if array.ndim == 0:
        return str(array.item())
    text = np.array2string(
        array.ravel(), threshold=8, edgeitems=3, precision=4, separator=", ", max_line_width=10**6
    )
    shape = "x".join(map(str, array.shape))
    return f"{array.dtype}[{shape}] {text}"[: width + 40]


def cmd_inspect(args: argparse.Namespace) -> int:
    from .infer import inspect
    from .spec import spec_to_json

    report = inspect(args.paths, args.sample, compression=_compression(args))
    if args.json:
        print(spec_to_json(report.spec))
        return 0
    total = sum(f[2] for f in report.files)
    for path, compression, records, size in report.files:
        print(
            f"{path}: {format_count(records)} records, {format_size(size)}, "
            f"{compression or 'uncompressed'}"
        )
    if len(report.files) > 1:
        print(f"total: {format_count(total)} records in {len(report.files)} files")
    print(f"\nfeatures of {format_count(report.sampled)} sampled records:")
    rows = [("name", "kind", "spec", "len min/med/max", "present", "example")]
    for f in report.features:
        name = f.name + (" (sequence)" if f.sequence else "")
        lengths = f"{f.count_min}/{f.count_median:g}/{f.count_max}"
        example = summarize(f.example, 40) + ("; " + "; ".join(f.notes) if f.notes else "")
        spec = f.feature.spell() if f.feature is not None else "-"
        rows.append((name, f.kind, spec, lengths, f"{f.present:.0%}", example))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[5])
    print("\nsave this spec with: tfrecnp inspect PATH --json > spec.json")
    return 0


def cmd_head(args: argparse.Namespace) -> int:
    from .decode import Decoder
    from .infer import infer_spec
    from .spec import spec_from_json

    if args.spec:
        with open(args.spec) as f:
            spec = spec_from_json(f.read())
    else:
        spec = infer_spec(args.paths, compression=_compression(args))
    reader = RecordReader(args.paths, compression=_compression(args))
    batch = next(iter(reader.batches(args.n)), None)
    if batch is None:
        print("no records")
        return 0
    columns = Decoder(spec).decode(batch)
    records = []
    for row in range(len(batch)):
        path, index = batch.where(row)
        values = {name: column[row] for name, column in columns.items()}
        records.append((path, index, values))
    if args.json:
        print(
            json.dumps(
                [
                    {"path": p, "record": i, **{k: _jsonable(v) for k, v in vals.items()}}
                    for p, i, vals in records
                ]
            )
        )
        return 0
    for path, index, values in records:
        print(f"record {index} of {path}")
        width = max(map(len, values), default=0)
        for name, value in values.items():
            print(f"  {name.ljust(width)}  {summarize(value)}")
    return 0


def _jsonable(value: object) -> object:
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode()}
    if hasattr(value, "to_list"):
        return [_jsonable(v) for v in value.to_list()]
    if isinstance(value, np.ndarray):
        return value.tolist() if value.dtype != object else [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _numbered(batches):
    start = 0
    for b in batches:
        yield start, b
        start += len(b)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfrecnp",
        description="Move data between TFRecord files and NumPy arrays, fast, in bounded memory.",
        epilog="Run `tfrecnp COMMAND --help` for each command's options.",
    )
    parser.add_argument("--version", action="version", version=f"tfrecnp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "count",
        help="count records from frame headers (fast: seeks over payloads)",
        description="Count the records of TFRecord files. Uncompressed files are counted from "
        "their frame headers alone (or their .idx sidecars); compressed ones are decompressed.",
    )
    _add_common(p)
    p.set_defaults(run=cmd_count)

    p = sub.add_parser(
        "index",
        help="write PATH.idx sidecar index files",
        description="Write a PATH.idx file per input with one `offset length` line per record "
        "(length counts the whole frame), the format NVIDIA DALI's tfrecord2idx and "
        "vahidk/tfrecord use. tfrecnp reads these sidecars for fast counting and random access.",
    )
    _add_common(p)
    p.set_defaults(run=cmd_index)

    p = sub.add_parser(
        "verify",
        help="check every CRC; list corrupt records; optionally salvage the good ones",
        description="Read every record of every file, checking length and payload CRCs. Prints "
        "a summary per file and each damaged stretch with its offset. Exit status 1 when "
        "anything is corrupt.",
    )
    _add_common(p)
    p.add_argument(
        "--salvage",
        metavar="OUT",
        help="copy every good record of all inputs, in order, to the new TFRecord file OUT",
    )
    p.set_defaults(run=cmd_verify)

    p = sub.add_parser(
        "convert",
        help="convert arrays (.npy, .npz, HDF5, Zarr) to TFRecord files of tf.train.Example",
        description="Write each row of the arrays in SRC as one tf.train.Example record in "
        "DST. SRC is a .npy file (opened through its header, memory-mapped), a .npz, an HDF5 "
        "file, a Zarr store or a folder of .npy files; each array becomes a feature. Reads in "
        "slices, so sources larger than memory stream through. Prints the spec that reads the "
        "result back.",
    )
    p.add_argument("src", metavar="SRC", help="array file or folder to read")
    p.add_argument(
        "dst",
        metavar="DST",
        help="TFRecord file to write (with --records-per-shard: the name shards are derived "
        "from, e.g. out/data.tfrecord -> out/data-00000-of-00004.tfrecord)",
    )
    p.add_argument(
        "--feature",
        metavar="NAME",
        help="feature name for a single array (default: the array's name, or the .npy file "
        "name without .npy)",
    )
    p.add_argument(
        "--key",
        action="append",
        metavar="KEY",
        help="read only this dataset / member / array (repeat for several; default: all)",
    )
    p.add_argument(
        "--encoding",
        action="append",
        metavar="HOW",
        help="raw: store each record's array as one bytes value of its raw little-endian "
        "bytes (read back with tn.Raw); list (default): float_list / int64_list; NAME=raw "
        "for one feature (repeatable)",
    )
    p.add_argument(
        "--records-per-shard",
        type=int,
        metavar="N",
        help="split the output into shards of N records, named like TensorFlow's",
    )
    p.add_argument(
        "--compression",
        default="none",
        choices=["none", "GZIP", "ZLIB"],
        help="compress the output files (default: %(default)s)",
    )
    p.add_argument(
        "--index", action="store_true", help="write a DST.idx sidecar (offset length) per file"
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="re-read what was written and check count, bytes and values before renaming",
    )
    p.add_argument("--quiet", action="store_true", help="no progress line on the terminal")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    p.set_defaults(run=cmd_convert)

    p = sub.add_parser(
        "inspect",
        help="files, record counts and a table of features; --json prints a spec file",
        description="Describe TFRecord files: records, bytes and compression per file, then "
        "one row per feature from a sample of records (kind, proposed spec, value counts, how "
        "often present, an example, notes such as images or raw array bytes). With --json, "
        "print the proposed spec as a spec file for --spec.",
    )
    _add_common(p)
    p.add_argument(
        "--sample", type=int, default=1024, help="records to sample (default: %(default)s)"
    )
    p.set_defaults(run=cmd_inspect)

    p = sub.add_parser(
        "head",
        help="print the first records, decoded",
        description="Print the first N records decoded (arrays summarised, bytes shortened). "
        "The spec is inferred unless --spec names a spec file (from `tfrecnp inspect --json`).",
    )
    _add_common(p)
    p.add_argument("-n", type=int, default=5, help="records to print (default: %(default)s)")
    p.add_argument("--spec", metavar="FILE", help="spec file to decode with")
    p.set_defaults(run=cmd_head)

    p = sub.add_parser(
        "demo",
        help="write a sample TFRecord file, count and verify it",
        description="Write a sample TFRecord file, count it from its headers and verify every "
        "record, printing what it did and how fast.",
    )
    p.add_argument(
        "--out", default="demo-output", help="folder for the sample (default: %(default)s)"
    )
    p.add_argument(
        "--records", type=int, default=200_000, help="records to write (default: %(default)s)"
    )
    p.set_defaults(run=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (TFRecordError, FileNotFoundError, ValueError) as e:
        print(f"tfrecnp {args.command}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
