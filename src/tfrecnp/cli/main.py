"""The `tfrecnp` command: a thin shell over the public API.

Every subcommand has --help; --json prints one JSON document for scripts. Exit status:
0 success, 1 corrupt data found (verify), 2 usage or input errors.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

from .._util import fs
from .._util.optional import wrapped_interrupt
from .._util.progress import Progress
from .._util.text import format_count, format_size
from .._version import __version__
from ..errors import CorruptRecordError, TFRecordError
from ..format.index import write_index
from ..format.inflate_index import index_checkpoints
from ..format.paths import expand_paths
from ..format.reader import file_compression, scan_file
from ..format.verify import verify
from . import arrayrecord
from .arrayrecord import array_record_paths
from .show import (
    count_lines,
    describe_column,
    disk_size,
    jsonable,
    record_lines,
    summarize,
    table_lines,
)


def _add_common(p: argparse.ArgumentParser, *, paths: bool = True) -> None:
    if paths:
        p.add_argument(
            "paths",
            nargs="+",
            metavar="PATH",
            help="TFRecord (or ArrayRecord) files, globs or directories",
        )
        p.add_argument(
            "--compression",
            default="auto",
            choices=["auto", "none", "GZIP", "ZLIB"],
            help="compression of the inputs (default: detected per file)",
        )
    p.add_argument("--json", action="store_true", help="print one JSON document instead of text")


def _add_key(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--key", metavar="NAME", help="array files: the HDF5 / .npz / Zarr dataset or group"
    )


def _add_no_progress(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (it is shown only on a terminal, on stderr)",
    )


def _compression(args: argparse.Namespace) -> str | None:
    return None if args.compression == "none" else args.compression


def cmd_count(args: argparse.Namespace) -> int:
    found = array_record_paths(args)
    if found is not None:
        return arrayrecord.count(found, args)
    rows = [
        {"path": p, "records": len(scan_file(p, compression=_compression(args)))}
        for p in expand_paths(args.paths)
    ]
    print("\n".join(count_lines(rows, args.json)))
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    rows = []
    paths = expand_paths(args.paths)
    sizes = [fs.size(p) for p in paths]
    show = not (args.json or args.no_progress)
    with Progress("index", total_bytes=sum(sizes), enabled=show) as bar:
        for path, size in zip(paths, sizes, strict=True):
            compression = file_compression(path, _compression(args))
            # GZIP / ZLIB shards get inflate checkpoints too, and their .idx from that pass
            made = index_checkpoints(path, compression) if compression else None
            index = scan_file(path, compression=compression, use_index=made is not None)
            row = {"path": path, "index": write_index(index), "records": len(index)}
            rows.append(row if made is None else {**row, "checkpoints": made})
            bar.update(len(index), size)
    if args.json:
        print(json.dumps({"files": rows}))
    else:
        for r in rows:
            print(f"{r['index']}: {format_count(r['records'])} records")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    found = array_record_paths(args)
    if found is not None:
        return arrayrecord.verify(found, args)
    report = verify(
        args.paths,
        salvage=args.salvage,
        compression=_compression(args),
        progress=not (args.json or args.no_progress),
    )
    files = [
        {
            "path": f.path,
            "records": f.records,
            "payload_bytes": f.payload_bytes,
            "seconds": round(f.seconds, 3),
            "corrupt": [
                {
                    "record": e.record,
                    "offset": e.offset,
                    "reason": e.reason,
                    "skipped_bytes": e.skipped,
                }
                for e in f.damage
            ],
        }
        for f in report.files
    ]
    bad = len(report.damage)
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
        if args.salvage:
            n = format_count(report.salvaged_records)
            print(f"salvaged {n} good records to {args.salvage}")
    return 0 if report.ok else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    if not args.json:
        return run_demo(args.out, args.records)
    steps: list[str] = []
    status = run_demo(args.out, args.records, say=steps.append)
    doc = {"ok": status == 0, "out": args.out, "records": args.records, "steps": steps}
    print(json.dumps(doc))
    return status


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
    from ..arrays.sources import array_format  # imported here: keeps the other commands light
    from ..data.convert import convert_arrays as convert
    from ..example.spec import spec_to_json

    if arrayrecord.is_records_copy(args):  # TFRecord <-> ArrayRecord, record for record
        return arrayrecord.convert(args)
    if len(args.src) > 1 or array_format(args.src[0]) is None:
        return convert_records(args)
    src = args.src[0]
    started = time.perf_counter()
    try:
        result = convert(
            src,
            args.dst,
            feature=args.feature,
            key=args.key,
            encoding=_encoding_arg(args.encoding),
            compression=_compression(args),
            records_per_shard=args.records_per_shard,
            index=args.index,
            progress=not args.json and not args.quiet,
            verify=args.verify,
            format=args.format if args.format in ("array_record", "tfrecord") else None,
            group_size=args.group_size,
        )
    except (KeyError, ImportError, NotImplementedError) as e:
        print(f"tfrecnp convert: error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - started
    if args.json:
        print(
            json.dumps(
                {
                    "source": src,
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


_ARRAY_ONLY = (
    "feature",
    "key",
    "encoding",
    "records_per_shard",
    "index",
    "verify",
    "group_size",
)


def convert_records(args: argparse.Namespace) -> int:
    """TFRecord files -> .npy folder / .npz / HDF5 / Zarr (Dataset.save)."""
    from ..arrays.load import load
    from ..arrays.sinks import output_format
    from ..data.opener import open as open_dataset

    given = [f"--{o.replace('_', '-')}" for o in _ARRAY_ONLY if getattr(args, o)]
    if args.compression != "none":
        given.append("--compression")
    if given:
        raise ValueError(
            f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to converting arrays "
            "to TFRecord files; the sources here are TFRecord files (their compression is "
            "detected)"
        )
    fmt = output_format(args.dst, args.format)
    started = time.perf_counter()
    try:
        ds = open_dataset(args.src, args.spec)
        if args.select:
            ds = ds.select([name.strip() for name in args.select.split(",") if name.strip()])
        path = ds.save(
            args.dst,
            fmt,
            progress=not (args.json or args.quiet),
            overwrite=args.overwrite,
            batch_size=args.batch_size,
        )
    except (KeyError, ImportError, NotImplementedError, FileExistsError) as e:
        print(f"tfrecnp convert: error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - started
    with load(path) as arrays:
        records = arrays.records
        columns = {name: describe_column(col) for name, col in arrays.items()}
    size = disk_size(path)
    if args.json:
        print(
            json.dumps(
                {
                    "sources": ds.paths,
                    "output": path,
                    "format": fmt,
                    "records": records,
                    "bytes": size,
                    "seconds": round(seconds, 3),
                    "columns": columns,
                }
            )
        )
        return 0
    rate = records / seconds if seconds > 0 else 0.0
    print(
        f"wrote {format_count(records)} records from {len(ds.paths)} file"
        f"{'s' * (len(ds.paths) != 1)} to {path} ({fmt}, {format_size(size)}) in "
        f"{seconds:.2f}s ({format_count(round(rate))} records/s)"
    )
    for name, desc in columns.items():
        print(f"  {name!r}: {desc}")
    print(f"open with tn.load({path!r})")
    return 0


def _array_dataset(args: argparse.Namespace) -> Any:
    """The array file of `paths` opened as a Dataset, or None when they are TFRecords."""
    from ..data.opener import is_array_source, open

    if len(args.paths) != 1 or not is_array_source(args.paths[0]):
        if args.key is not None:
            raise SystemExit(f"tfrecnp {args.command}: error: --key applies to array files")
        return None
    return open(args.paths[0], key=args.key)


def _inspect_arrays(ds: Any, args: argparse.Namespace) -> int:
    from ..example.spec import Sequence, spec_to_json

    if args.json:
        print(spec_to_json(ds.spec))
        return 0
    path = args.paths[0]
    print(f"{path}: {format_count(len(ds))} records, {format_size(disk_size(path))}, arrays")
    first = ds[0] if len(ds) else {}
    spec = ds.spec.context | ds.spec.sequence if isinstance(ds.spec, Sequence) else ds.spec
    rows = [("name", "spec", "example")]
    for name, feature in spec.items():
        rows.append((name, feature.spell(), summarize(first[name], 40) if first else "-"))
    print("\n".join(table_lines(rows)))
    print(f"\nread it with: tn.open({path!r}{_key_arg(args)})")
    return 0


def _key_arg(args: argparse.Namespace) -> str:
    return "" if args.key is None else f", key={args.key!r}"


def cmd_inspect(args: argparse.Namespace) -> int:
    from ..example.infer import inspect
    from ..example.spec import spec_to_json

    ds = _array_dataset(args)
    if ds is not None:
        return _inspect_arrays(ds, args)
    # damage in the sample is warned about, not fatal: `verify` is the command for damage
    found = array_record_paths(args)
    if found is not None:
        report = arrayrecord.inspect(found, args)
    else:
        report = inspect(args.paths, args.sample, compression=_compression(args), on_error="warn")
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
    print("\n".join(table_lines(rows)))
    print("\nsave this spec with: tfrecnp inspect PATH --json > spec.json")
    return 0


def cmd_preview(args: argparse.Namespace) -> int:
    from ..example.columns import BytesColumn
    from ..example.image import Image
    from ..example.infer import infer_spec
    from ..example.spec import Sequence
    from ..images.codecs import image_format
    from .preview import contact_sheet, sheet_size, write_sheet

    spec = infer_spec(args.paths, compression=_compression(args), on_error="warn")
    if isinstance(spec, Sequence):
        spec = spec.context
    name = args.feature
    if name is None:  # the first bytes feature whose first value is a JPEG or PNG
        raw = {k: f for k, f in spec.items() if getattr(f, "dtype", "") == "bytes"}
        first = _first_records(args.paths, raw or spec, 1, _compression(args))
        if not first:
            raise ValueError("no records to preview")
        firsts = first[0][2] if raw else {}
        name = next((k for k, v in firsts.items() if image_format(v or b"")), None)
        if name is None:
            raise ValueError("found no JPEG or PNG feature; name one with --feature")
    if name not in spec:
        raise ValueError(f"no feature {name!r}; features: {', '.join(spec)}")
    image = Image(3)
    wanted = {name: image.decode_as()}  # its bytes: only the images shown are decoded
    if args.label:
        if args.label not in spec:
            raise ValueError(f"no feature {args.label!r} for --label; features: {', '.join(spec)}")
        wanted[args.label] = spec[args.label]
    records = _first_records(args.paths, wanted, args.n, _compression(args))
    if not records:
        raise ValueError("no records to preview")
    blobs = BytesColumn.from_list([values[name] for _, _, values in records])
    with warnings.catch_warnings():  # images of different sizes are fine here
        warnings.simplefilter("ignore", UserWarning)
        images = list(image.finish(blobs, name=name, where=lambda row: records[row][:2]))
    indices = [index for _, index, _ in records]
    labels = [values[args.label] for _, _, values in records] if args.label else None
    write_sheet(contact_sheet(images, indices, labels), args.output)
    width, height, columns = sheet_size(len(images))
    if args.json:
        print(
            json.dumps(
                {
                    "output": args.output,
                    "feature": name,
                    "images": len(images),
                    "width": width,
                    "height": height,
                    "columns": columns,
                }
            )
        )
    else:
        print(f"{args.output}: {len(images)} images of {name!r}, {width}x{height} pixels")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import cmd_bench as run

    return run(args)


def _first_records(
    paths: list[str], spec: Any, n: int, compression: str | None
) -> list[tuple[str, int, dict[str, Any]]]:
    """The first n records of TFRecord files, decoded with spec, as (path, index in that
    file, {name: value}). Each file is opened as a Dataset of its own, so a row's index is
    its place in the pass, without counting the files before it. Damage after the first
    record ends the list there (what was read is shown); damage before it raises."""
    from ..data.opener import open as open_dataset

    records: list[tuple[str, int, dict[str, Any]]] = []
    try:
        for path in expand_paths(paths):
            if len(records) == n:
                break
            ds = open_dataset(path, spec, compression=compression)
            spec = ds.spec  # a spec file read once
            rows = ds.batches(1, prefetch=0)
            try:
                for index, row in enumerate(itertools.islice(rows, n - len(records))):
                    records.append((path, index, {k: col[0] for k, col in row.items()}))
            finally:
                rows.close()
    except CorruptRecordError:
        if not records:
            raise
    return records


def cmd_head(args: argparse.Namespace) -> int:
    from ..example.infer import infer_spec

    ds = _array_dataset(args)
    if ds is not None:
        records = [(args.paths[0], i, ds[i]) for i in range(min(args.n, len(ds)))]
    elif (found := array_record_paths(args)) is not None:
        records = arrayrecord.head(found, args.spec, args.n)
    else:
        spec = args.spec or infer_spec(args.paths, compression=_compression(args), on_error="warn")
        records = _first_records(args.paths, spec, args.n, _compression(args))
    if not records:
        print("no records")
        return 0
    if args.json:
        print(
            json.dumps(
                [
                    {"path": p, "record": i, **{k: jsonable(v) for k, v in vals.items()}}
                    for p, i, vals in records
                ]
            )
        )
        return 0
    for path, index, values in records:
        print("\n".join(record_lines(f"record {index} of {path}", values)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfrecnp",
        description="Move data between TFRecord files and NumPy arrays, fast, in bounded memory.",
        epilog="Run `tfrecnp COMMAND --help` for each command's options. Paths may be URLs "
        "(s3://, gs://, memory://, any fsspec filesystem); their options come from fsspec's "
        'environment variables, e.g. FSSPEC_S3=\'{"client_kwargs": {"endpoint_url": ...}}\'.',
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
        "vahidk/tfrecord use. tfrecnp reads these sidecars for fast counting and random access. "
        "A GZIP / ZLIB file's offsets count its decompressed stream, and it also gets "
        "PATH.zran.idx, the inflate checkpoints that read it by position (needs the gzip extra).",
    )
    _add_common(p)
    _add_no_progress(p)
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
    _add_no_progress(p)
    p.set_defaults(run=cmd_verify)

    p = sub.add_parser(
        "convert",
        help="convert TFRecord files to .npy / .npz / HDF5 / Zarr, or arrays to TFRecord files",
        description="Two directions, chosen by SRC. TFRecord files (paths, globs, folders) -> "
        "arrays at DST: a folder of .npy files (no extension or a trailing /), .npz, .h5 or "
        ".zarr (or --format), streamed in bounded memory and renamed into place when complete "
        "(options --format, --spec, --select, --batch-size, --overwrite). An array file "
        "(.npy, opened through its header and memory-mapped; .npz; HDF5; Zarr; a folder of "
        ".npy files) -> TFRecord files of tf.train.Example at DST, one record per row, each "
        "array a feature; prints the spec that reads the result back (options --feature, "
        "--key, --encoding, --records-per-shard, --compression, --index, --verify).",
    )
    p.add_argument(
        "src",
        nargs="+",
        metavar="SRC",
        help="TFRecord files, globs or folders; or one array file or folder",
    )
    p.add_argument(
        "dst",
        metavar="DST",
        help="output: for TFRecord sources a .npy folder, .npz, .h5 or .zarr; for arrays a "
        "TFRecord file (with --records-per-shard: the name shards are derived from, e.g. "
        "out/data.tfrecord -> out/data-00000-of-00004.tfrecord)",
    )
    p.add_argument(
        "--format",
        choices=["npy", "npz", "hdf5", "zarr", "array_record", "tfrecord"],
        help="output format (default: from DST's extension; none: npy); array_record / "
        "tfrecord copy the records of TFRecord / ArrayRecord files",
    )
    p.add_argument(
        "--spec",
        metavar="FILE",
        help="spec file for TFRecord sources (from `tfrecnp inspect --json`, or a TFX "
        "schema.pbtxt; default: inferred)",
    )
    p.add_argument(
        "--select",
        metavar="A,B",
        help="TFRecord sources: convert only these features (comma-separated)",
    )
    p.add_argument(
        "--batch-size",
        type=_at_least_one,
        metavar="N",
        help="TFRecord sources: records per batch (default: about 8 MiB of records)",
    )
    p.add_argument(
        "--overwrite", action="store_true", help="replace DST if it exists (TFRecord sources)"
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
        type=_at_least_one,
        metavar="N",
        help="split the output into shards of N records, named like TensorFlow's",
    )
    p.add_argument(
        "--compression",
        default="none",
        type=arrayrecord.compression_arg,
        metavar="{none,GZIP,ZLIB,zstd[:N],brotli[:N],snappy,uncompressed}",
        help="compress the output files (default: none; ArrayRecord output: zstd:3)",
    )
    p.add_argument(
        "--group-size",
        type=_at_least_one,
        metavar="N",
        help="ArrayRecord output: records per chunk (default 1, as TFDS writes)",
    )
    p.add_argument(
        "--index", action="store_true", help="write a DST.idx sidecar (offset length) per file"
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="re-read what was written and check count, bytes and values before renaming",
    )
    p.add_argument(
        "--quiet", "--no-progress", action="store_true", help="no progress line on the terminal"
    )
    p.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    p.set_defaults(run=cmd_convert)

    p = sub.add_parser(
        "inspect",
        help="files, record counts and a table of features; --json prints a spec file",
        description="Describe TFRecord files: records, bytes and compression per file, then "
        "one row per feature from a sample of records (kind, proposed spec, value counts, how "
        "often present, an example, notes such as images or raw array bytes). An array file "
        "(.npy, .npz, HDF5 with --key for one dataset or group, Zarr, a saved folder) is "
        "described by its columns, as tn.open reads it. With --json, print the (proposed) "
        "spec as a spec file for --spec.",
    )
    _add_common(p)
    _add_key(p)
    p.add_argument(
        "--sample",
        type=_at_least_one,
        default=1024,
        help="records to sample (default: %(default)s)",
    )
    p.set_defaults(run=cmd_inspect)

    p = sub.add_parser(
        "head",
        help="print the first records, decoded",
        description="Print the first N records decoded (arrays summarised, bytes shortened). "
        "The spec is inferred unless --spec names a spec file (from `tfrecnp inspect --json`). "
        "Array files (.npy, .npz, HDF5, Zarr, saved folders) print their first rows.",
    )
    _add_common(p)
    _add_key(p)
    p.add_argument(
        "-n", type=_at_least_one, default=5, help="records to print (default: %(default)s)"
    )
    p.add_argument(
        "--spec", metavar="FILE", help="spec file to decode with (or a TFX schema.pbtxt)"
    )
    p.set_defaults(run=cmd_head)

    p = sub.add_parser(
        "preview",
        help="write a contact sheet PNG of the first images, with index and label",
        description="Decode the first N images of a JPEG / PNG feature and write them as a "
        "grid of thumbnails (128x128, aspect kept), each with its record number and, with "
        "--label, that feature's value underneath. Example: tfrecnp preview train.tfrecord "
        "--label label -o sheet.png",
    )
    _add_common(p)
    p.add_argument("--feature", help="the image feature (default: the first JPEG / PNG one)")
    p.add_argument(
        "-n", type=_at_least_one, default=64, help="images to show (default: %(default)s)"
    )
    p.add_argument(
        "-o", "--output", default="sheet.png", help="PNG to write (default: %(default)s)"
    )
    p.add_argument("--label", metavar="NAME", help="a scalar feature to print under each image")
    p.set_defaults(run=cmd_preview)

    p = sub.add_parser(
        "bench",
        help="time reading your files with tfrecnp and with TensorFlow, side by side",
        description="Read and decode your own files at your batch size with tfrecnp "
        "(tn.open(...).batches(...)) and with TensorFlow's best pipeline on the same files "
        "(TFRecordDataset -> batch -> map(parse_example, AUTOTUNE) -> prefetch), each for up "
        "to --seconds or one pass, and print records/s, MB/s, batches/s and the ratio. "
        "TensorFlow is used only when installed. Example: tfrecnp bench data/*.tfrecord "
        "--batch-size 32 --shuffle 10000",
    )
    _add_common(p)
    p.add_argument(
        "--spec",
        metavar="FILE",
        help="spec file, or a TFX schema.pbtxt (default: inferred from the files)",
    )
    p.add_argument("--select", metavar="A,B", help="read only these features (comma-separated)")
    p.add_argument(
        "--batch-size", type=_at_least_one, default=32, metavar="N", help="default: %(default)s"
    )
    p.add_argument(
        "--shuffle", type=_at_least_one, metavar="N", help="a shuffle buffer of N records"
    )
    p.add_argument(
        "--seconds",
        type=float,
        default=5.0,
        metavar="S",
        help="time each side for at most S seconds (default: %(default)s)",
    )
    p.set_defaults(run=cmd_bench)

    p = sub.add_parser(
        "demo",
        help="write a sample dataset, verify it, convert it to .npy and load it back",
        description="Write a sample TFRecord file of tf.train.Example records (images, labels, "
        "token lists, raw float32 tensors), count it from its headers, verify every record, "
        "convert it to a folder of .npy files, load that memory-mapped, and stream shuffled, "
        "padded batches, printing what it did and how fast.",
    )
    p.add_argument(
        "--out", default="demo-output", help="folder for the sample (default: %(default)s)"
    )
    p.add_argument(
        "--records",
        type=_at_least_one,
        default=50_000,
        help="records to write (default: %(default)s)",
    )
    _add_common(p, paths=False)
    p.set_defaults(run=cmd_demo)

    from .tfds import add_tfds  # TFDS folders: --split on inspect / head / convert (cli/tfds.py)

    add_tfds(sub)
    return parser


def _at_least_one(text: str) -> int:
    """An argparse type: a count of 1 or more (argparse names the option in its error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    shown = warnings.formatwarning  # for this run only: main() may run inside a program
    warnings.formatwarning = _warning_line(args.command)
    try:
        return _run(args)
    finally:
        warnings.formatwarning = shown


def _warning_line(command: str) -> Any:
    """warnings.formatwarning for the command line: one `tfrecnp CMD: warning: ...` line,
    not the file, line number and source line of the tfrecnp code that warned."""

    def format_warning(message: Any, category: Any, filename: Any, lineno: Any, line=None) -> str:
        return f"tfrecnp {command}: warning: {message}\n"

    return format_warning


def _run(args: argparse.Namespace) -> int:
    try:
        return args.run(args)
    except (TFRecordError, ValueError, KeyError) as e:
        message = e.args[0] if isinstance(e, KeyError) and e.args else e  # no quotes around it
        print(f"tfrecnp {args.command}: error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as e:  # a write error names its output (a full disk, `ulimit -f`, ...)
        print(f"tfrecnp {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: outputs were built under hidden names and removed
        return _interrupted(args.command)
    except RuntimeError as e:  # lazy imports outside `require` (tensorflow, PIL) too
        if wrapped_interrupt(e) is not None:
            return _interrupted(args.command)
        raise


def _interrupted(command: str) -> int:
    print(f"tfrecnp {command}: interrupted; nothing that looks complete was left", file=sys.stderr)
    return 130  # 128 + SIGINT, as shells report it


if __name__ == "__main__":
    sys.exit(main())
