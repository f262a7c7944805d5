"""What the compiled core is given: a spec's features compiled into its `Plan`, and payloads
as one contiguous uint8 buffer with int64 offsets.

Each spec feature becomes one `Compiled` entry: the core's op (dense, var, seq, raw, ...),
the wire kind it must hold, the value count or row divisor it checks, and a FixedLen's
default as wire bytes. A feature that reads as another (tn.Image reads one bytes value)
compiles as that one, with `outer` to finish its column. The core never sees a spec.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .._core import decode as _core
from .._util.offsets import pack_bytes
from ..format.payloads import RecordBatch
from .partitions import Assembly
from .spec import (
    KIND_BYTES,
    KIND_DTYPES,
    KIND_FLOAT,
    KIND_INT64,
    Feature,
    FixedLen,
    Raw,
    Spec,
    VarLen,
    kind_of,
)
from .spec import Sequence as SequenceSpec

__all__ = [
    "NAME_ENCODING",
    "WIRE_DTYPE",
    "Compiled",
    "as_batch",
    "compile_feature",
    "compile_spec",
    "make_plan",
]

NAME_ENCODING = ("utf-8", "surrogateescape")
WIRE_DTYPE = {KIND_FLOAT: np.dtype(np.float32), KIND_INT64: np.dtype(np.int64)}


@dataclass(frozen=True)
class Compiled:
    """One spec feature as the plan sees it."""

    name: str
    spec: Feature
    section: int  # 0 Example features / context, 1 feature lists
    op: str
    kind: int
    count: int = 0
    divisor: int = 1
    raw_bytes: int = 0
    default: tuple[bytes, list[int] | None] | None = None
    outer: Feature | None = None  # a feature decoded as `spec`, then finished by outer
    column: str | None = None  # its key in the decoded batch, when not `name`
    of: str | None = None  # the partitioned feature it is read for (values or partition)
    required: bool = False  # a feature list every record must hold

    @property
    def out(self) -> str:
        """The key of its column in the decoded batch."""
        return self.name if self.column is None else self.column

    @property
    def label(self) -> str:
        what = f"feature list {self.name!r}" if self.section else f"feature {self.name!r}"
        return what if self.of is None else f"{what} (read for {self.of!r})"


def compile_feature(name: str, f: Feature, section: int) -> Compiled:
    """The plan's entry for feature `name` of section 0 (features, context) or 1 (lists)."""
    base = f.decode_as() if not isinstance(f, (FixedLen, VarLen, Raw)) else None
    if base is not None:
        return dataclasses.replace(compile_feature(name, base, section), outer=f)
    kind = f.kind
    if isinstance(f, FixedLen):
        if section:
            return Compiled(name, f, 1, "seq_bytes" if kind == KIND_BYTES else "seq", kind, f.size)
        default = None
        if f.default is not None:
            if kind == KIND_BYTES:
                values = [bytes(v) for v in f.default.reshape(-1)]
                default = (b"".join(values), [len(v) for v in values])
            else:
                default = (np.ascontiguousarray(f.default, WIRE_DTYPE[kind]).tobytes(), None)
        op = "dense_bytes" if kind == KIND_BYTES else "dense"
        return Compiled(name, f, 0, op, kind, f.size, default=default)
    if isinstance(f, VarLen):
        if section:
            op = "seq_var_bytes" if kind == KIND_BYTES else "seq_var"
        else:
            op = "var_bytes" if kind == KIND_BYTES else "var"
        # bytes rows of inner_shape are counted and checked in Python (the core's splits
        # of bytes values count values)
        divisor = 1 if kind == KIND_BYTES else f.size
        return Compiled(name, f, section, op, kind, divisor=divisor)
    if isinstance(f, Raw):
        row = math.prod(f.row_shape) * f.itemsize
        if section:
            return Compiled(name, f, 1, "seq_raw", KIND_BYTES, 1, raw_bytes=row)
        if f.ragged:
            if row == 0:
                raise ValueError(f"feature {name!r}: {f.spell()} has rows of 0 bytes")
            return Compiled(name, f, 0, "raw_var", KIND_BYTES, 1, divisor=row)
        if -1 in f.shape:
            known = math.prod(d for d in f.shape if d != -1) * f.itemsize
            if known == 0:
                raise ValueError(f"feature {name!r}: {f.spell()} cannot resolve its -1")
            return Compiled(name, f, 0, "raw_any", KIND_BYTES, 1, divisor=known)
        return Compiled(name, f, 0, "raw", KIND_BYTES, 1, raw_bytes=row)
    raise TypeError(f"feature {name!r}: the decoder does not know {type(f).__name__}")


def _assembled(f: Feature) -> bool:
    """A VarLen read through other features: partitions, or values under another key."""
    return isinstance(f, VarLen) and (bool(f.partitions) or f.key is not None)


def _flat_reads(parts: list[tuple[str, str, Feature, int]]) -> set[tuple[int, str, int]]:
    """(section, key, wire kind) of every list a partitioned feature reads flat."""
    reads = set()
    for _, key, f, section in parts:
        if _assembled(f):
            assert isinstance(f, VarLen)
            reads.add((section, f.key or key, f.kind))
            reads.update((section, p.key, KIND_INT64) for p in f.partitions if p.key is not None)
    return reads


def _shares_flat(f: Feature, section: int, key: str, reads: set[tuple[int, str, int]]) -> bool:
    """Whether plain VarLen f (its own key, no partitions) is better built from the flat
    list a partitioned feature reads of the same key: with an inner_shape (TensorFlow's
    RaggedFeature with UniformRowLength) or a narrowed dtype it is that list reshaped or
    cast, as parse_example builds each RaggedFeature from one parsed list. A default
    (padding) is a dense read, which TensorFlow refuses beside a ragged one too."""
    return (
        type(f) is VarLen
        and f.default is None
        and (section, key, f.kind) in reads
        and f != VarLen(KIND_DTYPES[f.kind])
    )


def compile_spec(spec: Spec) -> tuple[list[Compiled], list[Assembly]]:
    """The plan's entries for a whole spec, and the partitioned features to assemble from
    them. A key is read once per section: a partitioned feature's values and partitions
    come from hidden VarLen entries, or from a spec feature that reads the same key as
    the same kind of list; a VarLen of that key with an inner_shape or another dtype is
    then assembled from the same list."""
    if isinstance(spec, SequenceSpec):
        required = set(spec.required)
        parts = [(spec.context_column(n), n, f, 0) for n, f in spec.context.items()]
        parts += [(n, n, f, 1) for n, f in spec.sequence.items()]
    else:
        required = set()
        parts = [(n, n, f, 0) for n, f in spec.items()]
    reads = _flat_reads(parts)
    entries = [
        (column, key, f, section, _assembled(f) or _shares_flat(f, section, key, reads))
        for column, key, f, section in parts
    ]
    features: list[Compiled] = []
    read: dict[tuple[int, str], Compiled] = {}
    for column, key, f, section, assembled in entries:
        if assembled:
            continue
        c = compile_feature(key, f, section)
        c = dataclasses.replace(
            c, column=None if column == key else column, required=key in required and section == 1
        )
        features.append(c)
        read[(section, key)] = c
    assemblies = []
    for column, key, f, section, assembled in entries:
        if not assembled:
            continue
        assert isinstance(f, VarLen)
        values = _hidden(features, read, column, f.key or key, f.dtype, section)
        keys = tuple(
            None if p.key is None else _hidden(features, read, column, p.key, "int64", section)
            for p in f.partitions
        )
        assemblies.append(Assembly(column, f, section, values, keys))
        if section == 1 and key in required:  # its values' list must be there
            c = read[(1, f.key or key)]
            features[features.index(c)] = read[(1, f.key or key)] = dataclasses.replace(
                c, required=True
            )
    return features, assemblies


def _hidden(
    features: list[Compiled],
    read: dict[tuple[int, str], Compiled],
    of: str,
    key: str,
    dtype: str,
    section: int,
) -> str:
    """The column key holding feature `key` read as a flat list of dtype's wire kind."""
    wire = VarLen(KIND_DTYPES[kind_of(dtype)])
    c = read.get((section, key))
    if c is None:
        c = compile_feature(key, wire, section)
        c = dataclasses.replace(c, column=f"\0{section}:{key}", of=of)
        features.append(c)
        read[(section, key)] = c
        return c.out
    if c.spec == wire and c.outer is None:
        return c.out
    where = "feature list" if section else "feature"
    raise ValueError(
        f"feature {of!r} reads {where} {key!r} as {wire.spell()}, but the spec reads it as "
        f"{(c.outer or c.spec).spell()} too; a key is read once, so read it as "
        f"{wire.spell()} for both"
    )


def make_plan(features: Sequence[Compiled], sequence: bool) -> _core.Plan:
    """The core's Plan for these features, in this order (a SequenceExample's if sequence)."""
    return _core.Plan(
        [c.name.encode(*NAME_ENCODING) for c in features],
        [c.section for c in features],
        [_core.OPS[c.op] for c in features],
        [c.kind for c in features],
        [c.count for c in features],
        [c.divisor for c in features],
        [c.raw_bytes for c in features],
        [c.default for c in features],
        sequence,
    )


def as_batch(batch: RecordBatch | Iterable[bytes]) -> RecordBatch:
    """A RecordBatch whose data is contiguous uint8 and offsets contiguous int64, as the
    core reads them (the batch itself when it already is, or when its payloads lie apart,
    as only readers make them), or one made from payloads."""
    if isinstance(batch, RecordBatch):
        if batch.offsets is None:
            return batch
        data = batch.data
        offsets = batch.offsets
        if (
            data.dtype == np.uint8
            and data.ndim == 1
            and data.flags.c_contiguous
            and offsets.dtype == np.int64
            and offsets.flags.c_contiguous
        ):
            return batch
        return RecordBatch(
            np.ascontiguousarray(data.reshape(-1).view(np.uint8)),
            np.ascontiguousarray(offsets, dtype=np.int64),
            batch.origins,
        )
    if isinstance(batch, (bytes, bytearray, memoryview, str)):
        raise TypeError("decode takes a list of payloads or a RecordBatch, not one payload")
    return RecordBatch(*pack_bytes([bytes(p) for p in batch]))
