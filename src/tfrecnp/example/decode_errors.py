"""The decoder's messages: the core's status codes as errors that say what was found, what
the spec expects, where (file, record, payload byte), and what to write instead.

A SchemaError names the feature, the record and, where the values found fit another spec, a
" did you mean ...?" with that spec spelled as code to paste. A malformed payload is a
CorruptRecordError whose offset counts from the start of the record's payload.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._core import decode as _core
from .._util.text import format_count, format_shape
from ..errors import CorruptRecordError, SchemaError
from ..format.payloads import RecordBatch
from .columns import BytesColumn
from .decode_plan import Compiled
from .spec import KIND_BYTES, KIND_DTYPES, KIND_NAMES, Feature, FixedLen, Raw, VarLen

__all__ = [
    "MALFORMED_HINT",
    "bytes_rows",
    "corrupt",
    "malformed_reason",
    "missing_list",
    "out_of_range",
    "record_at",
    "scan_error",
    "schema_message",
    "uneven_raw",
]

MALFORMED_HINT = (
    "the payload is not a valid tf.train.Example; if `tfrecnp verify` finds its CRCs "
    "intact, the writer produced it this way"
)

_KIND_WORD = {0: "nothing", **KIND_NAMES, 4: "mixed kinds"}


def scan_error(
    features: Sequence[Compiled],
    sequence: bool,
    batch: RecordBatch,
    table: np.ndarray,
    status: tuple,
) -> Exception:
    """The error for the core scan's status (code, record, a, b), not OK."""
    code, r, a, b = status
    if code == _core.BAD_OFFSETS:
        return ValueError("the batch's offsets do not fit its data (decreasing, or past the end)")
    if code == _core.MALFORMED:
        reason_code, where_code, feature, x, y = b
        inside = f" of {features[feature].label}" if feature >= 0 else ""
        kind = "SequenceExample" if sequence else "Example"
        reason = malformed_reason(reason_code, where_code, x, y)
        path, record = batch.where(r)
        return corrupt(f"malformed {kind}: {reason}{inside}", path, record, a)
    c = features[a]
    row = table[r, a]
    return SchemaError(schema_message(c, _core.SCHEMA_CODES[b], row, record_at(batch, r)))


def uneven_raw(c: Compiled, batch: RecordBatch, r: int, found: int, first: int) -> SchemaError:
    """A tn.Raw with a -1 whose records of one batch hold different byte counts."""
    spec = c.spec
    return SchemaError(
        f"feature {c.name!r} holds {format_count(found)} bytes at "
        f"{record_at(batch, r)} but {format_count(first)} at {record_at(batch, 0)}; "
        f"{spec.spell()} needs one size per batch. Put the varying axis first "
        f"(a Ragged column): tn.Raw({spec.dtype!r}, shape={_varying_first(spec)})"
    )


def out_of_range(
    c: Compiled, value: int, batch: RecordBatch, r: int, dtype: np.dtype, lo: int, hi: int
) -> SchemaError:
    """A wire value that does not fit the narrower dtype the spec asks for."""
    return SchemaError(
        f"{c.label} value {value} at {record_at(batch, r)} does not fit in "
        f"{dtype.name} ({lo}..{hi}); use a wider dtype such as 'int64'"
    )


def malformed_reason(code: int, where_code: int, a: int, b: int) -> str:
    """The core's (reason, where, a, b) as words: "a varint runs past 10 bytes in ..."."""
    where = _core.WHERE[where_code]
    expected = {
        "an Int64List": "0 (varint) or 2 (packed)",
        "a FloatList": "5 (32-bit) or 2 (packed)",
    }.get(where, "2 (length-delimited)")
    a_, b_ = (format_count(x) if x > 9999 else str(x) for x in (a, b))
    reason = _core.MALFORMED_REASONS[code].format(a=a_, b=b_, expected=expected)
    return f"{reason} in {where}"


def corrupt(reason: str, path: str, record: int, offset: int) -> CorruptRecordError:
    """A CorruptRecordError whose offset counts from the start of the record's payload."""
    error = CorruptRecordError(reason, path=path, record=record, offset=offset, hint=MALFORMED_HINT)
    error.args = (
        f"{reason} at {path} record {record} (payload byte {format_count(offset)}); "
        f"{MALFORMED_HINT}",
    )
    return error


def record_at(batch: RecordBatch, r: int) -> str:
    path, record = batch.where(r)
    return f"{path} record {record}"


def _varying_first(spec: Raw) -> str:
    rest = tuple(d for d in spec.shape if d != -1)
    return format_shape((-1, *rest))


def _a(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _suggest(c: Compiled, kind: int, count: int, nbytes: int, steps: int = 0) -> str:
    """A spec that would read what was found, as ' did you mean ...?', or ''. The spec
    is printed as code to paste, so it must be one that the spec's place accepts (a
    feature list takes no Raw of a varying first axis)."""
    spec = c.spec
    found = KIND_DTYPES.get(kind)
    if found is None:
        return ""
    per = max(steps, 1) if c.section else 1  # lists found: a record's, or each step's
    guess: Feature | None = None
    if isinstance(spec, (FixedLen, VarLen)) and spec.dtype != "bytes" and kind == KIND_BYTES:
        itemsize = np.dtype(spec.dtype).itemsize
        n = nbytes // per // itemsize  # values in each bytes value, if they are one size
        if count == per and nbytes and nbytes % (per * itemsize) == 0:
            if isinstance(spec, FixedLen) and n == spec.size:
                guess = Raw(spec.dtype, shape=spec.shape)
            elif isinstance(spec, FixedLen) or (c.section and n % spec.size):
                guess = Raw(spec.dtype, shape=(n,))
            elif c.section:
                guess = Raw(spec.dtype, shape=(n // spec.size, *spec.inner_shape))
            else:
                guess = Raw(spec.dtype, shape=(-1, *spec.inner_shape))
        elif c.section:
            guess = VarLen("bytes")
    elif isinstance(spec, FixedLen):
        if count == spec.size * per or (found == "bytes" and count == per):
            shape = spec.shape if count == spec.size * per else ()
            guess = FixedLen(shape, found)
        else:
            guess = VarLen(found)
    elif isinstance(spec, VarLen):
        guess = VarLen(found)
    elif isinstance(spec, Raw):
        known = spec.shape and -1 not in spec.shape
        guess = (
            FixedLen(spec.shape, found)
            if known and count == math.prod(spec.shape) * per
            else VarLen(found)
        )
    return f"; did you mean {guess.spell()}?" if guess is not None else ""


def schema_message(c: Compiled, code: str, row: np.ndarray, where: str) -> str:
    count, nbytes = int(row[_core.ROW_COUNT]), int(row[_core.ROW_NBYTES])
    steps, bad_step = int(row[_core.ROW_STEPS]), int(row[_core.ROW_BAD_STEP])
    bad_value, kind = int(row[_core.ROW_BAD_VALUE]), int(row[_core.ROW_KIND]) & 0xFF
    spec = c.spec
    spelled = (c.outer or spec).spell()  # tn.Image(), not the tn.Bytes() it reads
    n_values = f"{format_count(count)} value" + ("" if count == 1 else "s")
    if code == "missing":
        if c.outer is not None:
            return (
                f"{c.label} is missing at {where}; {spelled} needs a value in every record "
                "(select the records that have one, or read it as tn.VarLen('bytes'))"
            )
        if isinstance(spec, Raw):
            return (
                f"{c.label} is missing at {where}; {spelled} reads one bytes value per record "
                "and has no default"
            )
        return (
            f"{c.label} is missing at {where} and {spelled} has no default; give it one "
            f"(default=...), or read it as tn.VarLen({spec.dtype!r}) to get empty rows "
            "where it is absent"
        )
    if code == "kind":
        expected = KIND_NAMES[c.kind]
        found = _KIND_WORD.get(kind, "?")
        size = f" ({format_count(nbytes)} bytes)" if kind == KIND_BYTES else ""
        return (
            f"{c.label} holds {_a(found)} of {n_values}{size} where {spelled} expects "
            f"{_a(expected)}, at {where}" + _suggest(c, kind, count, nbytes, steps)
        )
    if code == "count":
        hint = (
            " did you mean tn.VarLen('bytes')?"
            if spec.dtype == "bytes"
            else f" did you mean tn.VarLen({spec.dtype!r})?"
        )
        return (
            f"{c.label} has {n_values} where {spelled} expects {format_count(c.count)}, "
            f"at {where};{hint}"
        )
    if code == "multiple":
        return (
            f"{c.label} has {n_values}, not a multiple of {c.divisor} as {spelled} needs "
            f"(rows of shape {format_shape(spec.inner_shape)}), at {where}"
        )
    if code == "raw_count":
        what = "an empty bytes_list" if count == 0 else f"a bytes_list of {n_values}"
        hint = "; did you mean tn.VarLen('bytes')?" if count > 1 else ""
        return f"{c.label} holds {what} where {spelled} expects exactly one value, at {where}{hint}"
    if code == "raw_size":
        itemsize = spec.itemsize
        if c.op == "raw":
            want = (
                f"{format_count(c.raw_bytes)} ({format_count(c.raw_bytes // itemsize)} × "
                f"{itemsize} bytes)"
            )
        else:
            want = f"a multiple of {format_count(c.divisor)}"
        guess = ""
        if nbytes % itemsize == 0 and c.op == "raw":
            guess = f"; did you mean {Raw(spec.dtype, shape=(nbytes // itemsize,)).spell()}?"
        return (
            f"{c.label} holds {format_count(nbytes)} bytes where {spelled} expects {want}, "
            f"at {where}{guess}"
        )
    if code == "mixed":
        return (
            f"{c.label} mixes kinds at {where}: step {bad_step} holds "
            f"{_a(KIND_NAMES.get(bad_value, '?'))} after steps holding "
            f"{KIND_NAMES.get(kind, '?')}"
        )
    per = f"step {bad_step} of {format_count(steps)}"
    if code == "step_count":
        hint = (
            _suggest(c, kind, count, nbytes, steps)  # steps of another kind: read that kind
            if kind not in (0, c.kind)
            else f"; did you mean tn.VarLen({spec.dtype!r}) in the sequence?"
        )
        return (
            f"{c.label} {per} has {format_count(bad_value)} values where {spelled} expects "
            f"{format_count(c.count)} per step, at {where}{hint}"
        )
    if code == "step_multiple":
        hint = _suggest(c, kind, count, nbytes, steps) if kind not in (0, c.kind) else ""
        return (
            f"{c.label} {per} has {format_count(bad_value)} values, not a multiple of "
            f"{c.divisor} as {spelled} needs, at {where}{hint}"
        )
    if code == "step_raw_count":
        return (
            f"{c.label} {per} holds {format_count(bad_value)} bytes values where {spelled} "
            f"expects exactly one, at {where}"
        )
    return (
        f"{c.label} {per} holds {format_count(bad_value)} bytes where {spelled} expects "
        f"{format_count(c.raw_bytes)}, at {where}"
    )


def missing_list(c: Compiled, batch: RecordBatch, r: int) -> SchemaError:
    """A required feature list (FixedLenSequenceFeature without allow_missing) absent."""
    return SchemaError(
        f"{c.label} is missing at {record_at(batch, r)}, and the spec requires it "
        "(TensorFlow's FixedLenSequenceFeature with allow_missing=False); select the records "
        "that have it, or leave it out of required= (allow_missing=True) to read zero steps"
    )


def bytes_rows(
    c: Compiled, values: BytesColumn, splits: np.ndarray, batch: RecordBatch
) -> tuple[np.ndarray, np.ndarray]:
    """A VarLen('bytes', inner_shape)'s values as an object array [rows, *inner_shape] and
    its splits in rows; SchemaError when a record's count is not a multiple of the row."""
    size = math.prod(c.spec.inner_shape)
    counts = np.diff(splits)
    bad = counts % size != 0
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise SchemaError(
            f"{c.label} has {format_count(int(counts[r]))} bytes values, not a multiple of "
            f"{size} as {c.spec.spell()} needs (rows of shape "
            f"{format_shape(c.spec.inner_shape)}), at {record_at(batch, r)}"
        )
    return values.to_numpy().reshape(-1, *c.spec.inner_shape), splits // size
