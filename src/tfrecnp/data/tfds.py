"""A prepared tensorflow-datasets folder as a Dataset, read by its own metadata.

A folder that ``tfds.load`` / ``download_and_prepare`` wrote
(``~/tensorflow_datasets/<name>/<version>/``) holds TFRecord shards
``<name>-<split>.tfrecord-00000-of-00016`` beside ``dataset_info.json`` (the splits, their
shard lengths and file template, the file format) and ``features.json`` (the feature tree;
`tfrecnp.interop.tfds_features` turns it into a spec). Nothing is sampled or guessed, and
TensorFlow is not needed. A folder is TFDS's when those files say so by their content
(`tfrecnp.data.tfds_meta`); ``spec=`` replaces the features it names, as TFDS's
``decoders=`` does (``{"image": tn.Bytes()}`` keeps the encoded images).

A folder prepared with ``file_format="array_record"`` holds ArrayRecord shards
(``<name>-<split>.array_record-00000-of-00004``) of the same serialized Examples; they are
read natively (`tfrecnp.data.arrayrecord`), in the order ``builder.as_data_source(split)``
gives: shard after shard, each in file order (a data source has no interleave).

Splits are spelled as TFDS spells them (``"train"``, ``"train[:10%]"``, ``"test[100:200]"``,
``"train[-5%:]+test"``, ``"all"``) and resolved by TFDS's rules: percent bounds rounded to
the closest record, each part a run of records over its split's shards in order. Records
come in the order ``as_dataset(split, shuffle_files=False)`` gives them: tf.data's
interleave of the shards the split touches, INTERLEAVE_CYCLE files at a time,
INTERLEAVE_BLOCK records from each in turn (one shard after another when the dataset was
prepared with ``disable_shuffling``). Where that order is a run of records in file order
(one shard, or shards read one after another) the source hands reads straight to the
`RecordSource`; otherwise it reads by position in that order.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util import fs
from .._util.offsets import offsets_of
from ..errors import CorruptRecordError, SchemaError
from ..example.infer import infer_spec, infer_spec_of
from ..example.spec import Feature, FixedLen, VarLen, as_spec, kind_of
from ..interop.tfds_features import TfdsFeatures, parse_features
from ..interop.tfds_types import Joined
from .arrayrecord import ArrayRecordFiles, ArrayRecordSource
from .blocks import Block, shuffle_blocks
from .dataset import Dataset
from .record_dataset import RecordSource, read_blocks
from .source import Shuffle, Source
from .tfds_meta import FEATURES_FILE, INFO_FILE, is_tfds_version, not_tfds

__all__ = ["TfdsDataset", "TfdsInfo", "TfdsSource", "is_tfds_folder", "open_tfds", "read_info"]

DEFAULT_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"
INTERLEAVE_CYCLE = 16  # TFDS's ReadConfig defaults: files read at once ...
INTERLEAVE_BLOCK = 16  # ... and records taken from each in turn
READ_FORMATS = ("tfrecord", "array_record")
OTHER_FORMATS = {
    "parquet": "Parquet (read it with pyarrow: pyarrow.parquet.read_table)",
    "riegeli": "Riegeli (read it with the riegeli package)",
}
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_PART = re.compile(r"^(?P<split>[\w-]+)(\[(?P<sel>[\d\w%:.-]+)\])?$")
_BOUND = re.compile(r"^((?P<val>-?[\d_.]+)(?P<unit>%|shard)?)?$")


@dataclass(frozen=True)
class TfdsSplit:
    """One split: its shard lengths and how its files are named."""

    name: str
    shard_lengths: tuple[int, ...]
    template: str
    num_bytes: int

    @property
    def num_examples(self) -> int:
        return sum(self.shard_lengths)


@dataclass
class TfdsInfo:
    """What dataset_info.json and features.json say about a prepared TFDS folder."""

    path: str
    name: str
    version: str
    file_format: str
    splits: dict[str, TfdsSplit]
    features: TfdsFeatures
    disable_shuffling: bool = False
    description: str = ""

    def shard_paths(self, split: str) -> list[str]:
        """The split's shard files, in order."""
        s = self.splits[split]
        n = len(s.shard_lengths)
        out = []
        for i in range(n):
            name = (
                s.template.replace("{DATASET}", self.name)
                .replace("{SPLIT}", split)
                .replace("{FILEFORMAT}", self.file_format)
                .replace("{SHARD_X_OF_Y}", f"{i:05d}-of-{n:05d}")
                .replace("{SHARD_INDEX}", f"{i:05d}")
                .replace("{NUM_SHARDS}", f"{n:05d}")
            )
            out.append(fs.join(self.path, name))
        return out


# --- the folder ---------------------------------------------------------------------------


def _read_json(path: Any) -> Any:
    return json.loads(fs.read_text(path))


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def is_tfds_folder(path: Any, storage_options: dict | None = None) -> bool:
    """Whether path is a prepared TFDS version folder (it holds dataset_info.json and
    features.json as TFDS writes them, judged by content in `tfrecnp.data.tfds_meta`: a
    folder of shards beside files of those names that another tool wrote stays a folder of
    shards) or a dataset folder holding such version folders."""
    if not isinstance(path, (str, os.PathLike)):
        return False
    try:
        url = fs.resolve(os.fspath(path), storage_options)
        if not fs.isdir(url):
            return False
        if _is_version(url):
            return True
        return bool(_versions(url))
    except (OSError, ValueError):
        return False


def _is_version(url: Any) -> bool:
    return is_tfds_version(url)


def _versions(url: Any) -> list[str]:
    out = []
    for child in fs.listdir(url):
        name = fs.basename(child)
        if _VERSION.match(name) and _is_version(fs.join(url, name)):
            out.append(name)
    return sorted(out, key=_version_key)


def resolve_version(url: Any) -> Any:
    """The version folder: url itself when it holds dataset_info.json, else its latest
    version folder."""
    if fs.exists(fs.join(url, INFO_FILE)):
        return url
    if not fs.isdir(url):
        raise FileNotFoundError(f"no such TFDS folder: {url}")
    versions = _versions(url)
    if not versions:
        raise FileNotFoundError(
            f"{url} is not a prepared TFDS folder: it holds no {INFO_FILE} and no version "
            "folders (such as 3.0.1/) holding one"
        )
    return fs.join(url, versions[-1])


def read_info(path: Any, storage_options: dict | None = None) -> TfdsInfo:
    """The metadata of a prepared TFDS folder (a version folder, or the dataset folder:
    its latest version).

    Parameters
    ----------
    path : str or os.PathLike
        A local folder or an fsspec URL.
    storage_options : dict, optional
        For URLs: passed to their fsspec filesystem.
    """
    url = resolve_version(fs.resolve(os.fspath(path), storage_options))
    info = _read_json(fs.join(url, INFO_FILE))
    feats_path = fs.join(url, FEATURES_FILE)
    if not fs.exists(feats_path):
        raise FileNotFoundError(f"{url} holds {INFO_FILE} but no {FEATURES_FILE}")
    features_json = _read_json(feats_path)
    why = not_tfds(info, features_json)
    if why is not None:
        raise SchemaError(
            f"{url} is not a folder tensorflow-datasets prepared: its {why}; open it "
            "without split= to read its shards as a folder of TFRecord files"
        )
    fmt = str(info.get("fileFormat") or "tfrecord").lower()
    if fmt not in READ_FORMATS:
        what = OTHER_FORMATS.get(fmt, f"the {fmt!r} file format")
        raise SchemaError(
            f"{url} was prepared by TFDS as {what}, not TFRecord or ArrayRecord; tfrecnp "
            "reads those folders (prepare it with download_and_prepare(file_format="
            "'tfrecord') or 'array_record')"
        )

    def labels(prefix: str) -> list[str] | None:
        p = fs.join(url, f"{prefix}.labels.txt")
        if not fs.exists(p):
            return None
        text = fs.read_text(p)
        return [line.strip() for line in text.splitlines() if line.strip()]

    features = parse_features(features_json, labels)
    splits = {}
    for s in info.get("splits", []):
        lengths = tuple(int(n) for n in s.get("shardLengths", []))
        splits[s["name"]] = TfdsSplit(
            s["name"],
            lengths,
            s.get("filepathTemplate") or DEFAULT_TEMPLATE,
            int(s.get("numBytes", 0)),
        )
    return TfdsInfo(
        path=url,
        name=info.get("name", ""),
        version=str(info.get("version", "")),
        file_format=fmt,
        splits=splits,
        features=features,
        disable_shuffling=bool(info.get("disableShuffling", False)),
        description=str(info.get("description", "")),
    )


# --- splits -------------------------------------------------------------------------------


def parse_split(split: str, info: TfdsInfo) -> list[tuple[str, int, int]]:
    """A TFDS split string -> [(split, first, stop)] record ranges, by TFDS's rules
    (tfds.core.splits: "closest" rounding of percents, negative bounds from the end,
    "shard" units, "all" for every split)."""
    parts = [p.strip() for p in re.split(r"\s*\+\s*", str(split).strip())]
    out = []
    for part in parts:
        if part == "all":
            out += [(name, 0, s.num_examples) for name, s in info.splits.items()]
            continue
        m = _PART.match(part)
        if not m:
            raise ValueError(
                f"split {split!r}: {part!r} is not a TFDS split (such as 'train', "
                "'train[:10%]', 'test[100:200]', 'train+test')"
            )
        name, sel = m.group("split"), m.group("sel")
        if name not in info.splits:
            raise ValueError(
                f"split {split!r}: {info.name} {info.version} has no split {name!r}; its "
                f"splits: {', '.join(info.splits)}"
            )
        out.append((name, *_bounds(info.splits[name], sel, split)))
    return out


def _bounds(s: TfdsSplit, sel: str | None, split: str) -> tuple[int, int]:
    n = s.num_examples
    if sel is None:
        return 0, n
    bounds = [_BOUND.match(x) for x in sel.split(":")]
    if not all(bounds) or len(bounds) > 2 or not any(b.group(0) for b in bounds if b):
        raise ValueError(f"split {split!r}: cannot read the slice [{sel}]")
    if len(bounds) == 1:
        b = bounds[0]
        if b["unit"] != "shard":
            raise ValueError(f"split {split!r}: [{sel}] needs a slice, such as [:{sel}]")
        lo_v, hi_v, unit = b["val"], str(int(b["val"]) + 1), "shard"
    else:
        lo_v, hi_v = bounds[0]["val"], bounds[1]["val"]
        unit = bounds[0]["unit"] or bounds[1]["unit"] or "abs"
    conv = float if unit == "%" else int
    lo = None if lo_v is None else conv(lo_v)
    hi = None if hi_v is None else conv(hi_v)
    if unit == "%":
        lo = 0 if lo is None else round(lo * n / 100.0)
        hi = n if hi is None else round(hi * n / 100.0)
    elif unit == "shard":
        lengths = s.shard_lengths
        lo = 0 if lo is None else sum(lengths[:lo])
        if hi is not None and hi <= 0:
            hi = len(lengths) + hi
        hi = n if hi is None else sum(lengths[:hi])
    else:
        lo = 0 if lo is None else lo
        hi = n if hi is None else hi
    if abs(lo) > n or abs(hi) > n:
        raise ValueError(
            f"split {split!r}: the slice [{sel}] does not fit the {n} records of {s.name!r}"
        )
    lo = n + lo if lo < 0 else lo
    hi = n + hi if hi < 0 else hi
    return lo, max(lo, hi)


def read_order(
    lengths: list[int], pieces: list[tuple[int, int, int]], cycle: int, block: int
) -> np.ndarray:
    """Global record numbers (over files of these lengths, one after another) in the order
    tf.data's interleave(cycle_length=cycle, block_length=block) reads the pieces (file,
    skip, take): slots filled as their turn comes, a finished piece's slot left empty until
    its next turn."""
    firsts = offsets_of(lengths)
    pending = [(int(firsts[f]) + skip, take) for f, skip, take in pieces if take > 0]
    slots: list[list[int] | None] = [None] * max(1, cycle)
    runs: list[tuple[int, int]] = []
    nxt, i, open_ = 0, 0, 0
    while nxt < len(pending) or open_:
        slot = slots[i]
        if slot is None and nxt < len(pending):
            start, take = pending[nxt]
            slots[i] = slot = [start, take]
            nxt += 1
            open_ += 1
        if slot is not None:
            k = min(block, slot[1])
            runs.append((slot[0], k))
            slot[0] += k
            slot[1] -= k
            if slot[1] == 0:  # exhausted: tf.data notices on the next turn, then moves on
                slots[i] = None
                open_ -= 1
        i = (i + 1) % len(slots)
    if not runs:
        return np.empty(0, np.int64)
    starts = np.array([r[0] for r in runs], np.int64)
    sizes = np.array([r[1] for r in runs], np.int64)
    ends = np.cumsum(sizes)
    return np.arange(int(ends[-1]), dtype=np.int64) + np.repeat(starts - (ends - sizes), sizes)


# --- the source -----------------------------------------------------------------------------


def wire_spec(spec: dict[str, Feature]) -> dict[str, Feature]:
    """The spec the record source reads for `spec`: each `Joined` feature replaced by the
    wire features it is made of."""
    out: dict[str, Feature] = {}
    for name, f in spec.items():
        out.update(f.reads(name) if isinstance(f, Joined) else {name: f})
    return out


class TfdsSource(Source):
    """Records of a TFDS split, in TFDS's order, read through a `RecordSource` (or, for
    ArrayRecord folders, an `ArrayRecordSource`) over the split's shards. `order` maps this
    source's record numbers to the record source's (None: records offset..offset + count
    of it, in file order). `spec`: the features served,
    where `Joined` ones (read through several wire features, `wire_spec`) are joined here
    after the record source decoded their parts."""

    def __init__(
        self,
        inner: Any,
        info: TfdsInfo,
        split: str,
        *,
        offset: int = 0,
        count: int = 0,
        order: np.ndarray | None = None,
        files_records: int = 0,
        spec: dict[str, Feature] | None = None,
    ):
        self.inner = inner
        self.info = info
        self.split = split
        self.spec = inner.spec if spec is None else spec
        self.joins = {n: f for n, f in self.spec.items() if isinstance(f, Joined)}
        self.offset = offset
        self._count = count if order is None else len(order)
        self.order = order
        self.files_records = files_records  # records in all the files read

    def select(self, spec: Any) -> TfdsSource:
        return TfdsSource(
            self.inner.select(wire_spec(spec)),
            self.info,
            self.split,
            offset=self.offset,
            count=self._count,
            order=self.order,
            files_records=self.files_records,
            spec=spec,
        )

    def _joined(self, cols: dict, where: Any = None) -> dict:
        """The batch the spec promises: Joined features made of their wire columns."""
        if not self.joins:
            return cols
        return {
            name: self.joins[name].join(name, cols, where) if name in self.joins else cols[name]
            for name in self.spec
        }

    def count(self) -> int:
        return self._count

    @property
    def paths(self) -> list[str]:
        return self.inner.paths

    @property
    def compressions(self) -> list[str | None]:
        return self.inner.compressions

    @property
    def corruptions(self) -> list[CorruptRecordError]:
        return self.inner.corruptions

    def close(self) -> None:
        self.inner.close()

    def check_random_access(self, what: str) -> None:
        self.inner.check_random_access(what)

    def may_read_ahead(self) -> bool:
        return self.inner.may_read_ahead()

    def empty(self) -> dict:
        return self._joined(self.inner.empty())

    def _inner_range(self, start: int, stop: int | None) -> tuple[int, int | None]:
        """A view's range in the record source's numbers (file order only); None: to the
        end of the files, which streams without an index."""
        a, b = self.span(start, stop)
        end = self.offset + b
        whole = stop is None and end == self.files_records
        return self.offset + a, None if whole else end

    def _ids(self, ids: np.ndarray) -> np.ndarray:
        self.inner.count()  # reads by position need the shards' index (len(ds) did not)
        return self.order[ids] if self.order is not None else ids + self.offset

    def read_one(self, i: int) -> dict[str, Any]:
        if self.joins:
            cols = self.read_ids(np.array([i], np.int64), "ds[i]")
            return {name: col[0] for name, col in cols.items()}
        return self.inner.read_one(int(self._ids(np.array([i]))[0]))

    def read_span(self, a: int, b: int) -> dict:
        if self.order is None:
            self.inner.count()
            return self._joined(self.inner.read_span(self.offset + a, self.offset + b))
        return self._joined(self.inner.read_ids(self.order[a:b], f"ds[{a}:{b}]"))

    def read_ids(self, ids: np.ndarray, what: str) -> dict:
        return self._joined(self.inner.read_ids(self._ids(ids), what))

    def makes_ahead(self, start: int, stop: int | None, shuffle: Shuffle) -> bool:
        if self.order is None:
            return self.inner.makes_ahead(*self._inner_range(start, stop), shuffle)
        return False

    def mean_record_bytes(self, start: int, stop: int | None) -> float:
        if self.order is None:
            return self.inner.mean_record_bytes(*self._inner_range(start, stop))
        return self.inner.mean_record_bytes(0, None)

    def estimate_nbytes(self, start: int, stop: int | None) -> tuple[int, int]:
        if self.order is None:
            return self.inner.estimate_nbytes(*self._inner_range(start, stop))
        size, sampled = self.inner.estimate_nbytes(0, None)
        a, b = self.span(start, stop)
        total = self.inner.count()
        return (int(size * (b - a) / total) if total else 0), sampled

    def blocks(
        self,
        start: int,
        stop: int | None,
        block: int,
        shuffle: Shuffle,
        *,
        threads: int | None = None,
        ahead: int = 0,
    ) -> Iterator[Block]:
        if self.order is None:
            a, b = self._inner_range(start, stop)
            blocks = self.inner.blocks(a, b, block, shuffle, threads=threads, ahead=ahead)
            if not self.joins:
                yield from blocks
                return
            for b_ in blocks:
                yield dataclasses.replace(b_, cols=self._joined(b_.cols, b_.where))
            return
        a, b = self.span(start, stop)
        if shuffle.kind == "all":
            ids = a + shuffle.rng().permutation(b - a)
        else:
            ids = np.arange(a, b, dtype=np.int64)

        def in_order() -> Iterator[Block]:
            for x in range(0, len(ids), block):
                cols = self.read_ids(ids[x : x + block], "batches()")
                yield Block(cols, len(next(iter(cols.values()), ())))

        if shuffle.kind == "buffer":
            yield from shuffle_blocks(in_order(), shuffle.size, shuffle.rng(), block)
        else:
            yield from in_order()


class TfdsDataset(Dataset):
    """A split of a prepared TFDS folder. Made by ``tn.open(folder, split=...)``.

    ``ds.info`` is the folder's metadata (name, version, splits); ``ds.features`` its
    feature tree, leaf by column name: ``ds.features["label"].names`` are a ClassLabel's
    class names.
    """

    source: TfdsSource  # type: ignore[assignment]

    @property
    def info(self) -> TfdsInfo:
        return self.source.info

    @property
    def features(self) -> TfdsFeatures:
        return self.source.info.features

    def __repr__(self) -> str:
        info = self.source.info
        return (
            f"Dataset(TFDS {info.name} {info.version}, split {self.source.split!r}, "
            f"{len(self)} records: {', '.join(self.spec)})"
        )

    def to_ray(self, **options: Any) -> Any:
        """A ray.data.Dataset of the split's records: tfrecnp.ray.read of its shards with
        this spec (options as there: task_bytes, preserve_order, ray_remote_args). Whole
        splits of whole shards only, and records come shard after shard (TFDS's
        ``shuffle_files=False`` order where the folder was prepared with disable_shuffling,
        else in another order than as_dataset's interleave: Ray schedules the shards)."""
        source = self.source
        joined = sorted(source.joins)
        if joined:
            raise ValueError(
                f"to_ray: TFDS feature{'s' * (len(joined) > 1)} {', '.join(map(repr, joined))} "
                "join several wire features of a record, which Ray's read tasks do not; "
                f"leave {'them' if len(joined) > 1 else 'it'} out (ds.select([...]).to_ray()), "
                "or save the split first (ds.save('out.parquet')) and read that in Ray"
            )
        if not self._whole() or source.count() != source.files_records:
            raise ValueError(
                f"to_ray reads whole shards; split {source.split!r} of {source.info.name} "
                "takes part of one: open a whole split (split='train'), take the part in Ray "
                "(.limit(n), .split(k)), or save the slice first (ds.save('out.parquet'))"
            )
        if source.info.file_format != "tfrecord":
            raise ValueError(
                f"to_ray reads TFRecord shards; {source.info.name} was prepared as "
                f"{source.info.file_format}: save the split first (ds.save('out.parquet')) "
                "and read that in Ray"
            )
        from ..adapters.ray import read

        files = source.inner.files
        return read(
            files.paths,
            source.inner.spec,
            read_part=read_blocks,
            compression=files.compression,
            verify_crc=files.verify_crc,
            on_error=files.on_error,
            **options,
        )


def _survey_unknown(info: TfdsInfo, paths: list[str], spec: dict[str, Feature]) -> None:
    """Unknown connectors: their wire features, as a survey of the first shard finds them,
    each read as its raw values, with a warning naming it: one bytes value in every record
    (what a custom connector usually serialises) is that bytes value (tn.Bytes()), other
    lists are Ragged of their wire kind."""
    unknown = [n for n, leaf in info.features.leaves.items() if leaf.spec is None and not leaf.wire]
    if not unknown or not paths:
        return
    if info.file_format == "array_record":
        first = ArrayRecordSource(ArrayRecordFiles(paths[:1]), {})
        found = infer_spec_of(first.sample(), paths[0])
    else:
        found = infer_spec(paths[:1])
    if not isinstance(found, dict):
        return
    for name in unknown:
        keys = [k for k in found if k == name or k.startswith(name + "/")]
        for k in keys:
            f = found[k].decode_as() or found[k]
            dtype = getattr(f, "dtype", "bytes")
            dtype = "bytes" if dtype == "bytes" else ("float32" if kind_of(dtype) == 2 else "int64")
            one = isinstance(f, FixedLen) and f.shape == () and f.default is None
            raw = FixedLen((), "bytes") if one and dtype == "bytes" else VarLen(dtype)
            spec[k] = info.features.leaves[name].wire[k] = raw


def _given_spec(spec: Any, info: TfdsInfo) -> dict[str, Feature]:
    """spec= of a TFDS folder as a dict of features (TensorFlow's feature specs converted)."""
    if spec is None:
        return {}
    given = as_spec(spec)
    if not isinstance(given, dict):
        raise TypeError(
            f"{info.path} holds tf.train.Examples; spec= replaces some of its features with a "
            "dict of name -> feature, not a tn.Sequence"
        )
    return given


def _replaced(spec: dict[str, Feature], given: dict[str, Feature], info: TfdsInfo) -> dict:
    """The folder's spec with the features given in spec= in place of those named alike."""
    wire = wire_spec(spec)
    unknown = [n for n in given if n not in spec and n not in wire]
    if unknown:
        raise KeyError(
            f"spec= names {unknown[0]!r}, which TFDS {info.name} {info.version} does not "
            f"hold; its features: {', '.join(map(repr, spec))}"
        )
    out = {}
    for name, f in spec.items():
        parts = f.reads(name) if isinstance(f, Joined) else {name: f}
        if name in given or not any(k in given for k in parts):
            out[name] = given.get(name, f)
        else:  # a wire key of a joined feature named: its wire features, as given
            out.update({k: given.get(k, p) for k, p in parts.items()})
    return out


def open_tfds(
    path: Any,
    split: str | None = None,
    *,
    spec: Any = None,
    verify_crc: bool = True,
    on_error: str = "raise",
    storage_options: dict | None = None,
) -> TfdsDataset:
    """A split of a prepared TFDS folder as a Dataset (see the module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        The version folder (``~/tensorflow_datasets/mnist/3.0.1``) or the dataset folder
        (its latest version), local or an fsspec URL.
    split : str, optional
        A TFDS split: "train", "train[:10%]", "test[100:200]", "train+test", "all". None
        opens the only split, or raises naming the splits there are.
    spec : dict, optional
        Features that replace those of the same name (or wire key) in features.json, as
        TFDS's ``decoders=`` skips or replaces a feature's decoding: ``{"image":
        tn.Bytes()}`` keeps the encoded images. The rest decode as features.json says.
    verify_crc, on_error, storage_options
        As for `tn.open`.
    """
    info = read_info(path, storage_options)
    if split is None:
        if len(info.splits) != 1:
            raise ValueError(
                f"{info.path} is TFDS {info.name} {info.version} with splits "
                f"{', '.join(info.splits)}: pass split=, e.g. tn.open(dir, split="
                f"{next(iter(info.splits), 'train')!r})"
            )
        split = next(iter(info.splits))
    parts = parse_split(split, info)
    paths: list[str] = []
    lengths: list[int] = []
    pieces: list[tuple[int, int, int]] = []
    for name, lo, hi in parts:
        files = info.shard_paths(name)
        first = 0
        for path_, n in zip(files, info.splits[name].shard_lengths, strict=True):
            skip, stop = max(lo - first, 0), min(hi - first, n)
            if n and stop > skip:
                if path_ not in paths:
                    paths.append(path_)
                    lengths.append(n)
                pieces.append((paths.index(path_), skip, stop - skip))
            first += n
    missing = [p for p in paths if not fs.exists(p)]
    if missing:
        raise FileNotFoundError(
            f"{info.path}: dataset_info.json lists shard {missing[0]}, which is not there "
            f"({len(missing)} of {len(paths)} shards missing); prepare the dataset again"
        )
    given = _given_spec(spec, info)
    spec = dict(info.features.spec)
    _survey_unknown(info, paths, spec)
    spec = _replaced(spec, given, info)
    for name, reason in info.features.left.items():
        if name in given or any(k in given for k in info.features.leaves[name].wire):
            continue  # the user said how to read it
        keys = ", ".join(info.features.leaves[name].wire) or "nothing"
        warnings.warn(
            f"TFDS feature {name!r} ({info.features.leaves[name].tfds_type}): {reason}; read as "
            f"its wire features ({keys}) instead",
            stacklevel=3,
        )
    if info.file_format == "array_record":  # read as tfds.data_source reads: shards in order
        files = ArrayRecordFiles(paths, on_error, verify_crc)
        inner: Source = ArrayRecordSource(files, wire_spec(spec))
        cycle = 1
    else:
        inner = RecordSource.of(paths, wire_spec(spec), verify_crc=verify_crc, on_error=on_error)
        cycle = 1 if info.disable_shuffling else INTERLEAVE_CYCLE
    firsts = offsets_of(lengths)
    runs = [(int(firsts[f]) + skip, take) for f, skip, take in pieces]
    contiguous = all(a + n == b for (a, n), (b, _) in itertools.pairwise(runs))
    total = sum(n for _, n in runs)
    if (len(pieces) == 1 or cycle == 1) and contiguous:
        offset = runs[0][0] if runs else 0
        source = TfdsSource(
            inner,
            info,
            split,
            offset=offset,
            count=total,
            files_records=int(firsts[-1]),
            spec=spec,
        )
    else:
        order = read_order(lengths, pieces, cycle, INTERLEAVE_BLOCK)
        source = TfdsSource(
            inner, info, split, order=order, files_records=int(firsts[-1]), spec=spec
        )
    return TfdsDataset(source)  # type: ignore[arg-type]
