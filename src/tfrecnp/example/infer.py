"""Schema inference: read a sample of records and propose the spec that decodes them.

Rules (per feature name, over the sampled records):

- kind and dtype come from the list the feature holds (bytes_list -> "bytes", float_list ->
  "float32", int64_list -> "int64"); one name holding different kinds is a SchemaError;
- present in every sampled record with one value count c > 0 -> ``FixedLen(() if c == 1
  else (c,), dtype)``; otherwise ``VarLen(dtype)`` (a missing VarLen is an empty row, so
  nothing is lost);
- in SequenceExample feature lists, c is the value count of each step;
- bytes features (of an Example or a SequenceExample's context) whose every sampled value
  is UTF-8 that looks like text (no control characters but tab and line breaks, nearly all
  printable: captions, names, file names) are proposed as ``tn.Text`` (str); images, raw
  array bytes and other binary never are (JPEG and PNG are not even UTF-8);
- notes flag what a spec cannot say alone: features missing from some records, bytes that
  begin with JPEG or PNG magic (images), and single bytes values all of one length that are
  not text (perhaps an array's raw bytes: ``tn.Raw(dtype, shape)``, float32 when they read
  as ordinary floats, else uint8), per record or per step of a feature list.

The sample is the first records of each file (up to 32 files, evenly chosen), so features
that appear only late in a file can be missed; pass a spec to be sure. Records with very
many features are sampled less: at most 250 000 (record, feature) pairs are looked at.
"""

from __future__ import annotations

import codecs
import math
from dataclasses import dataclass, field

import numpy as np

from .._util import fs
from .._util.text import format_count
from ..errors import SchemaError
from ..format.paths import Paths, expand_paths
from ..format.payloads import RecordBatch
from ..format.reader import RecordReader, file_compression, scan_file
from .decode import Decoder
from .spec import (
    KIND_BYTES,
    KIND_DTYPES,
    KIND_FLOAT,
    KIND_NAMES,
    Feature,
    FixedLen,
    Raw,
    Sequence,
    Spec,
    VarLen,
)
from .survey import Survey, survey
from .text import Text, looks_like_text

__all__ = [
    "FeatureStats",
    "Inspection",
    "infer_spec",
    "infer_spec_of",
    "inspect",
    "inspect_sample",
]

MAX_SAMPLED_FILES = 32
SAMPLE_BYTES = 32 << 20  # inference reads at most about this much (and at least a record a file)
REMOTE_SAMPLE_BYTES = 4 << 20  # ... of remote files (each byte costs the link's time)
PROBE_RECORDS = 4  # surveyed first, to see how many features a record holds
MAX_SURVEY_ENTRIES = 250_000  # (record, feature) pairs surveyed at most
IMAGE_MAGIC = {b"\xff\xd8\xff": "JPEG", b"\x89PNG\r\n\x1a\n": "PNG"}


@dataclass
class FeatureStats:
    """What the sample showed of one feature, and the spec proposed for it."""

    name: str
    sequence: bool
    kind: str
    feature: Feature | None
    present: float
    count_min: int
    count_median: float
    count_max: int
    notes: list[str] = field(default_factory=list)
    example: object = None
    first_row: int = -1  # first sampled record holding it


@dataclass
class Inspection:
    """Files (path, compression, records, bytes), sampled feature stats, proposed spec."""

    files: list[tuple[str, str | None, int, int]]
    sampled: int
    features: list[FeatureStats]
    spec: Spec


def _sample(
    paths: list[str], sample: int, compression: str | None, on_error: str = "raise"
) -> RecordBatch:
    """The first records of each chosen file; damaged ones raise, or are skipped (and
    warned about) by the reader under on_error="skip" / "warn"."""
    if sample < 1:
        raise ValueError(f"sample must be at least 1, not {sample}")
    step = max(1, len(paths) / MAX_SAMPLED_FILES)
    chosen = [paths[int(i * step)] for i in range(min(len(paths), MAX_SAMPLED_FILES))]
    quota = math.ceil(sample / len(chosen))
    remote = any(fs.is_url(path) for path in chosen)
    budget = (REMOTE_SAMPLE_BYTES if remote else SAMPLE_BYTES) // len(chosen)
    parts = []
    for path in chosen:  # up to quota records or about budget bytes (at least one record)
        have = taken = 0  # each: in batches of 1, 1, 2, 4 ... (so at most twice the budget)
        reader = RecordReader(path, compression=compression, on_error=on_error, expect_bytes=budget)
        records = reader.batches(quota, first=1)
        for batch in records:
            parts.append(batch)
            have, taken = have + len(batch), taken + len(batch.data)
            if have >= quota or taken >= budget:
                break
        records.close()
    if not parts:
        return RecordBatch(np.empty(0, np.uint8), np.zeros(1, np.int64))
    return RecordBatch.concat(parts).slice(0, min(sample, sum(map(len, parts))))


def _stats(s: Survey, rows: np.ndarray, firsts: np.ndarray, where: str) -> FeatureStats:
    """Stats of one feature from its survey entries `rows` (in record order)."""
    name_id, section = int(s.name[rows[0]]), int(s.section[rows[0]])
    kinds = s.kind[rows]
    present = kinds != 0
    name = s.names[name_id]
    seen = sorted({int(k) for k in kinds[present]})
    if len(seen) > 1 or 4 in seen:
        words = " and ".join(KIND_NAMES.get(k, "mixed kinds") for k in seen)
        raise SchemaError(
            f"feature {name!r} holds {words} in different records of {where}; a feature keeps "
            "one kind across a dataset: pass a spec that reads the records you want"
        )
    sequence = section == 1
    if not seen:
        return FeatureStats(name, sequence, "none", None, 0.0, 0, 0, 0, ["never holds a list"])
    kind = seen[0]
    dtype = KIND_DTYPES[kind]
    counts = s.count[rows][present]
    present_in = int(present.sum())
    stats = FeatureStats(
        name,
        sequence,
        KIND_NAMES[kind],
        None,
        present_in / max(s.records, 1),
        int(counts.min()),
        float(np.median(counts)),
        int(counts.max()),
    )
    stats.first_row = int(s.record[rows][present][0])
    if sequence:
        lo, hi = s.step_min[rows][present], s.step_max[rows][present]
        steps = s.steps[rows][present]
        per_step = {int(v) for v in np.concatenate([lo[steps > 0], hi[steps > 0]])}
        fixed = len(per_step) == 1 and per_step != {0}
        width = per_step.pop() if fixed else 0
        stats.count_min, stats.count_max = int(steps.min()), int(steps.max())
        stats.count_median = float(np.median(steps))
        stats.notes.append("counts are steps per record")
    else:
        fixed = present_in == s.records and stats.count_min == stats.count_max > 0
        width = stats.count_min
        if present_in < s.records:
            stats.notes.append(f"missing from {1 - stats.present:.0%} of records")
    shape = () if width == 1 else (width,)
    stats.feature = FixedLen(shape, dtype) if fixed else VarLen(dtype)
    if not fixed and not sequence and kind == KIND_FLOAT and _looks_like_boxes(name, counts):
        stats.feature = VarLen(dtype, inner_shape=(4,))
        stats.notes.append("boxes: every length is a multiple of 4, read as rows of 4")
    if kind == KIND_BYTES:
        firsts = [f for f in firsts[rows][present] if f]
        for magic, image in IMAGE_MAGIC.items():
            if firsts and all(f.startswith(magic) for f in firsts):
                stats.notes.append(f"{image} images: read pixels with tn.Image()")
        sizes = s.nbytes[rows][present]
        size = int(sizes[0])
        if (
            fixed
            and width == 1
            and sizes.min() == sizes.max() >= 8
            and not stats.notes
            and not _looks_like_text(firsts)
        ):
            guess = _raw_guess(size, firsts)
            stats.notes.append(
                f"every value is {format_count(size)} bytes: raw array bytes? e.g. "
                f"{guess.spell()} (or another dtype whose size divides {size})"
            )
    return stats


def _looks_like_text(firsts: list[bytes]) -> bool:
    """UTF-8 that is mostly printable (names, captions), not an array's bytes. The leading
    bytes kept by the survey may end inside a character, which is no error here."""
    chars = printable = 0
    for f in firsts:
        try:
            text = codecs.getincrementaldecoder("utf-8")().decode(f)
        except UnicodeDecodeError:
            return False
        chars += len(text)
        printable += sum(c.isprintable() or c.isspace() for c in text)
    return chars > 0 and printable >= 0.9 * chars


def _raw_guess(size: int, firsts: list[bytes]) -> Raw:
    """float32 when the leading bytes read as ordinary float32 numbers, else uint8 (bytes
    such as quantized embeddings read as floats of wild exponents, NaN and denormals)."""
    if size % 4 == 0:
        x = np.abs(np.frombuffer(b"".join(f[: len(f) // 4 * 4] for f in firsts), "<f4"))
        if len(x) and np.all((x == 0) | ((x > 1e-12) & (x < 1e12))):
            return Raw("float32", shape=(size // 4,))
    return Raw("uint8", shape=(size,))


def _note_raw_steps(stats: FeatureStats, s: Survey, rows: np.ndarray, firsts, batch) -> None:
    """A feature list whose every step holds one bytes value of one length (AudioSet's
    audio_embedding) gets a note proposing the Raw that reads each step as an array; the
    survey keeps only each record's byte total, so a decode of the sample checks it."""
    if stats.kind != KIND_NAMES[KIND_BYTES] or stats.feature != FixedLen((), "bytes"):
        return
    present = s.kind[rows] != 0
    steps, nbytes = s.steps[rows][present], s.nbytes[rows][present]
    firsts = [f for f in firsts[rows][present] if f]
    some = steps > 0
    if not some.any() or not firsts:
        return
    size, rest = divmod(int(nbytes[some][0]), int(steps[some][0]))
    if rest or size < 8 or np.any(nbytes != steps * size) or _looks_like_text(firsts):
        return
    if any(f.startswith(magic) for magic in IMAGE_MAGIC for f in firsts):
        return
    guess = _raw_guess(size, firsts)
    try:
        Decoder(Sequence(sequence={stats.name: guess})).decode(batch.slice(0, s.records))
    except SchemaError:
        return  # steps of different lengths that happen to add up
    stats.notes.append(
        f"every step is one value of {format_count(size)} bytes: raw array bytes? e.g. "
        f"{guess.spell()} per step (or another dtype whose size divides {size})"
    )


def _propose_text(stats: list[FeatureStats], batch: RecordBatch) -> None:
    """Bytes features whose sampled values all look like text become tn.Text: the sample's
    values are decoded whole (the survey keeps only each one's leading bytes) and checked."""
    candidates = {
        f.name: f
        for f in stats
        if not f.sequence
        and (f.feature == VarLen("bytes") or _bytes_fixed(f.feature))
        and not any("images" in note for note in f.notes)
    }
    if not candidates:
        return
    columns = Decoder({n: VarLen("bytes") for n in candidates}).decode(batch)
    for name, f in candidates.items():
        if looks_like_text(columns[name].values):
            fixed = isinstance(f.feature, FixedLen)
            f.feature = Text(f.feature.shape if fixed else None)
            f.notes = [n for n in f.notes if "raw array bytes" not in n]
            f.notes.append("UTF-8 text: read as str (tn.Bytes() keeps the bytes)")


def _bytes_fixed(f: Feature | None) -> bool:
    return isinstance(f, FixedLen) and f.dtype == "bytes"


BOX_NAMES = ("bbox", "box")  # float lists named like these, of lengths 4k, are boxes


def _looks_like_boxes(name: str, counts: np.ndarray) -> bool:
    words = name.lower().replace("/", "_").replace(".", "_").split("_")
    named = any(w.startswith(BOX_NAMES) or w.endswith(BOX_NAMES) for w in words)
    return named and counts.max(initial=0) > 0 and not np.any(counts % 4)


def _survey_stats(batch: RecordBatch, where: str) -> tuple[list[FeatureStats], Spec, int]:
    """Per-feature stats, the proposed spec, and how many records were surveyed."""
    s = survey(batch.slice(0, min(len(batch), PROBE_RECORDS)))
    per_record = len(s) / max(s.records, 1)
    keep = max(1, min(len(batch), int(MAX_SURVEY_ENTRIES / max(per_record, 1))))
    if keep > s.records:  # wide records are sampled less, so inference stays quick
        s = survey(batch.slice(0, keep))
    # One sort groups the entries by (section, feature); stable, so records stay in order.
    key = s.section * max(len(s.names), 1) + s.name
    order = np.argsort(key, kind="stable")
    groups = np.split(order, np.flatnonzero(np.diff(key[order])) + 1) if len(order) else []
    firsts = np.array(s.first, dtype=object)
    stats = [_stats(s, rows, firsts, where) for rows in groups]
    for f, rows in zip(stats, groups, strict=True):
        if f.sequence:
            _note_raw_steps(f, s, rows, firsts, batch)
    _propose_text(stats, batch.slice(0, s.records))
    stats.sort(key=lambda f: (f.sequence, f.name))
    context = {f.name: f.feature for f in stats if not f.sequence and f.feature is not None}
    sequence = {f.name: f.feature for f in stats if f.sequence and f.feature is not None}
    if sequence:
        both = sorted(set(context) & set(sequence))
        if both:  # legal protobuf, but one batch holds one column per name
            raise SchemaError(
                f"feature {both[0]!r} is both a context feature and a feature list in the "
                f"records of {where}; pass spec=tn.Sequence(...) with one of them, and read "
                "the other under a Sequence of its own"
            )
        return stats, Sequence(context=context, sequence=sequence), s.records
    if not context:
        raise SchemaError(
            f"no features found in the {format_count(len(batch))} sampled records of {where}"
        )
    return stats, context, s.records


def infer_spec(
    paths: Paths, sample: int = 1024, *, compression: str | None = "auto", on_error: str = "raise"
) -> Spec:
    """Propose a spec for TFRecord files from a sample of their records.

    The rules (which feature becomes FixedLen, VarLen, Raw or tn.Image) are in this
    module's docstring; `tfrecnp inspect` prints the same proposal with statistics.

    Parameters
    ----------
    paths : str, os.PathLike or list
        TFRecord files: a file, a glob, a directory or a list of them.
    sample : int
        Records surveyed at most, spread across up to 32 files, within about 32 MiB of
        payloads (4 MiB of remote files; at least one record a file): big records are
        sampled fewer.
    compression : {"auto", None, "GZIP", "ZLIB"}
        "auto" detects each file's compression from its first bytes.
    on_error : {"raise", "skip", "warn"}
        A damaged sampled record raises CorruptRecordError, or is skipped ("warn" also
        warns), as the reading that follows would treat it.

    Returns
    -------
    dict or tn.Sequence
        A dict of features, or a tn.Sequence for SequenceExample records.

    Raises
    ------
    SchemaError
        The files hold no records to infer from.
    """
    files = expand_paths(paths)
    batch = _sample(files, sample, compression, on_error)
    if not len(batch):
        raise SchemaError(f"{files[0]} holds no records to infer a spec from; pass spec={{...}}")
    return _survey_stats(batch, _where(files))[1]


def infer_spec_of(batch: RecordBatch, where: str) -> Spec:
    """Propose a spec from sampled payloads another container read (ArrayRecord chunks),
    by the same rules as `infer_spec`; where names them in errors."""
    if not len(batch):
        raise SchemaError(f"{where} holds no records to infer a spec from; pass spec={{...}}")
    return _survey_stats(batch, where)[1]


def inspect(
    paths: Paths, sample: int = 1024, *, compression: str | None = "auto", on_error: str = "raise"
) -> Inspection:
    """Files, record counts, per-feature statistics with an example value, and the
    proposed spec: what `tfrecnp inspect` prints. on_error: for sampled records, as in
    infer_spec."""
    paths = expand_paths(paths)
    files = []
    for path in paths:
        kind = file_compression(path, compression)
        records = len(scan_file(path, compression=kind))
        files.append((path, kind, records, fs.size(path)))
    return inspect_sample(files, _sample(paths, sample, compression, on_error))


def inspect_sample(files: list[tuple[str, str | None, int, int]], batch: RecordBatch) -> Inspection:
    """`inspect`'s report from the files' (path, kind, records, bytes) and a sample of
    their payloads (any container's: TFRecord frames, ArrayRecord chunks)."""
    if not len(batch):
        return Inspection(files, 0, [], {})
    stats, spec, surveyed = _survey_stats(batch, _where([f[0] for f in files]))
    columns = Decoder(spec).decode(batch.slice(0, surveyed))
    for f in stats:
        if f.feature is not None:
            f.example = columns[f.name][f.first_row]
    return Inspection(files, surveyed, stats, spec)


def _where(files: list[str]) -> str:
    return files[0] if len(files) == 1 else f"{files[0]} and {len(files) - 1} more files"
