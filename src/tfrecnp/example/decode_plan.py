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
from ..format.reader import RecordBatch
from .spec import KIND_BYTES, KIND_FLOAT, KIND_INT64, Feature, FixedLen, Raw, VarLen

__all__ = ["NAME_ENCODING", "WIRE_DTYPE", "Compiled", "as_batch", "compile_feature", "make_plan"]

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

    @property
    def label(self) -> str:
        return f"feature list {self.name!r}" if self.section else f"feature {self.name!r}"


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
        return Compiled(name, f, section, op, kind, divisor=f.size)
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
    core reads them (the batch itself when it already is), or one made from payloads."""
    if isinstance(batch, RecordBatch):
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
    payloads = [bytes(p) for p in batch]
    lengths = np.fromiter(map(len, payloads), np.int64, len(payloads))
    offsets = np.zeros(len(payloads) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return RecordBatch(np.frombuffer(b"".join(payloads), np.uint8), offsets)
