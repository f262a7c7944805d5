"""`tfrecnp inspect | head | convert` on a prepared tensorflow-datasets folder.

`add_tfds` gives those three commands a ``--split`` option and routes them here when their
path is a TFDS folder (it holds dataset_info.json and features.json as TFDS writes them,
or version folders holding them) or a split is given; any other path goes to the command
as before. The folder is read through `tfrecnp.data.tfds` (imported when a TFDS folder is
met, so other commands stay light); what they print is made by `cli/show.py`'s helpers, as
for every other command (tables, records, JSON values).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from collections.abc import Callable
from typing import Any

from .._util.text import format_count, format_size
from .show import jsonable, record_lines, table_lines

__all__ = ["add_tfds", "looks_like_tfds"]


def looks_like_tfds(path: str) -> bool:
    """A cheap look (only `tfrecnp.data.tfds_meta`, not the reader): a local folder holding
    TFDS's metadata files as TFDS writes them (by content: a folder of shards beside files
    of those names another tool wrote is no TFDS folder), or a folder of version folders
    holding them."""
    from ..data.tfds_meta import is_tfds_version

    if not os.path.isdir(path):
        return False
    if is_tfds_version(path):
        return True
    return any(is_tfds_version(os.path.join(path, c)) for c in os.listdir(path) if c[:1].isdigit())


def add_tfds(sub: Any) -> None:
    """Give `inspect`, `head` and `convert` (subparsers of `sub`) a --split option and send
    them here for a TFDS folder."""
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "inspect": inspect_tfds,
        "head": head_tfds,
        "convert": convert_tfds,
    }
    for name, command in commands.items():
        p = sub.choices[name]
        p.add_argument(
            "--split",
            metavar="SPLIT",
            help="a prepared tensorflow-datasets folder (holding dataset_info.json): the split, "
            "as TFDS spells it (train, train[:10%%], test[100:200], train+test)",
        )
        p.set_defaults(run=_routed(p.get_default("run"), command))


def _routed(
    plain: Callable[[argparse.Namespace], int], tfds: Callable[[argparse.Namespace], int]
) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        paths = args.src if args.command == "convert" else args.paths
        if args.split is not None or (len(paths) == 1 and looks_like_tfds(paths[0])):
            if len(paths) != 1:
                raise ValueError("--split reads one TFDS folder; give one path")
            return tfds(args)
        return plain(args)

    return run


def _open(path: str, split: str | None) -> Any:
    from ..data.tfds import open_tfds, read_info

    if split is None:
        info = read_info(path)
        split = "train" if "train" in info.splits else next(iter(info.splits), None)
    return open_tfds(path, split)


def inspect_tfds(args: argparse.Namespace) -> int:
    """Name, version, splits with their record counts, the feature tree with TFDS's types."""
    from ..data.tfds import read_info

    info = read_info(args.paths[0])
    feats = info.features
    if args.json:
        doc = {
            "name": info.name,
            "version": info.version,
            "path": str(info.path),
            "splits": {name: s.num_examples for name, s in info.splits.items()},
            "sequences": feats.sequences,
            "features": {
                name: {
                    "type": leaf.tfds_type,
                    "dtype": leaf.dtype,
                    "shape": list(leaf.shape),
                    **({"names": leaf.names} if leaf.names is not None else {}),
                    **({"spec": leaf.spec.spell()} if leaf.spec is not None else {}),
                    **({"left": leaf.reason} if leaf.spec is None else {}),
                }
                for name, leaf in feats.leaves.items()
            },
        }
        print(json.dumps(doc, ensure_ascii=False))
        return 0
    total = sum(s.num_examples for s in info.splits.values())
    print(f"{info.name} {info.version} ({info.path}): {format_count(total)} records, TFDS folder")
    splits = [("split", "records", "shards", "size")]
    for name, s in info.splits.items():
        shards = len(s.shard_lengths)
        splits.append((name, format_count(s.num_examples), str(shards), format_size(s.num_bytes)))
    print("\n".join(line.rstrip() for line in table_lines(splits)))
    print("\nfeatures:")
    rows = [("name", "TFDS feature", "notes")]
    for name, leaf, described in _described(feats):
        if leaf is None:  # a Sequence of a FeaturesDict: its row, before its features
            rows.append((name, described, ""))
            continue
        notes = []
        if leaf.names is not None:
            notes.append(
                "[" + ", ".join(leaf.names[:5]) + (", ...]" if len(leaf.names) > 5 else "]")
            )
        if leaf.spec is None:
            notes.append(f"read as its wire features: {leaf.reason}")
        rows.append((name, described, "; ".join(notes)))
    print("\n".join(line.rstrip() for line in table_lines(rows)))
    print(f"\nopen with tn.open({str(info.path)!r}, split={next(iter(info.splits), '')!r})")
    return 0


def _described(feats: Any) -> list[tuple[str, Any, str]]:
    """(name, leaf or None, how inspect shows it) in the tree's order: a Sequence of a
    FeaturesDict as a row of its own ("objects", None, "Sequence(FeaturesDict)") before
    its features; a leaf in Sequences of its own as "Sequence(Text(bytes, ()))", the
    shape of one element inside."""

    def sequence(inner: str, lengths: list) -> str:
        for length in reversed(lengths):
            inner = (
                f"Sequence({inner})" if length is None else f"Sequence({inner}, length={length})"
            )
        return inner

    out: list[tuple[str, Any, str]] = []
    shown: set[str] = set()
    for name, leaf in feats.leaves.items():
        parts = name.split("/")
        for k in range(1, len(parts)):
            group = "/".join(parts[:k])
            if group in feats.sequences and group not in shown:
                shown.add(group)
                out.append((group, None, sequence("FeaturesDict", feats.sequences[group])))
        lengths = feats.sequences.get(name, [])
        if lengths:
            inner = dataclasses.replace(leaf, shape=leaf.shape[len(lengths) :])
            out.append((name, leaf, sequence(inner.describe(), lengths)))
        else:
            out.append((name, leaf, leaf.describe()))
    return out


def head_tfds(args: argparse.Namespace) -> int:
    """The first records of a split, as tfds.as_numpy gives them."""
    ds = _open(args.paths[0], args.split)
    n = min(args.n, len(ds))
    records = [ds[i] for i in range(n)]
    if args.json:
        print(json.dumps([{k: jsonable(v) for k, v in r.items()} for r in records]))
        return 0
    if not records:
        print("no records")
    for i, values in enumerate(records):
        print("\n".join(record_lines(f"record {i} of split {ds.source.split!r}", values)))
    return 0


def convert_tfds(args: argparse.Namespace) -> int:
    """A split -> a .npy folder / .npz / HDF5 / Zarr (Dataset.save)."""
    from ..arrays.sinks import output_format

    fmt = output_format(args.dst, args.format)
    started = time.perf_counter()
    ds = _open(args.src[0], args.split)
    if args.select:
        ds = ds.select([name.strip() for name in args.select.split(",") if name.strip()])
    path = ds.save(
        args.dst,
        fmt,
        progress=not (args.json or args.quiet),
        overwrite=args.overwrite,
        batch_size=args.batch_size,
    )
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps({"output": path, "format": fmt, "records": len(ds), "seconds": seconds}))
    else:
        print(
            f"wrote {format_count(len(ds))} records of split {ds.source.split!r} to {path} "
            f"({fmt}) in {seconds:.2f}s\nopen with tn.load({path!r})"
        )
    return 0
