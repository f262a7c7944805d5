"""Feature specs: what to read from each record, and what column it becomes.

A spec is a ``dict[str, feature]`` for tf.train.Example records, or a `Sequence` for
tf.train.SequenceExample records. Features, named as in ``tf.io``:

=============================  ==========================  ==================================
spec                           in the record               column
=============================  ==========================  ==================================
FixedLen(shape, dtype)         a list of exactly           ndarray [N, *shape]
                               prod(shape) values
VarLen(dtype, inner_shape)     a list of any length that   Ragged [N, None, *inner_shape]
                               is a multiple of
                               prod(inner_shape)
VarLen(..., partitions=[...],  that list (of feature key)  Ragged [N, None, ..., None,
       key=...)                cut by int64 lists of the   *inner_shape], a level per
                               record (RaggedFeature)      partition
Raw(dtype, shape)              one bytes value holding     ndarray [N, *shape]; Ragged
                               an array's raw little-      [N, None, *shape[1:]] when
                               endian bytes                shape[0] is -1 (or shape is None)
Bytes()                        one bytes value             BytesColumn [N]
=============================  ==========================  ==================================

dtype is "int64", "float32" or "bytes" (the three kinds of tf.train.Feature), or any NumPy
integer, bool or float dtype as the output type: int64 values are range-checked when
narrowed, float32 values are cast. Raw takes any fixed-size NumPy dtype.

In a `Sequence`, each sequence feature gives per record one value per step: FixedLen(shape)
and Raw(dtype, shape) become Ragged [N, None, *shape] (steps per record), VarLen becomes a
Ragged of Ragged [N, None, None, *inner_shape].

Specs have a JSON form (`spec_to_json`, `spec_from_json`) for files and the command line.
`as_spec` also takes TensorFlow's own feature objects (`tf_spec.spec_from_tf`, read by their
fields) and TFX / TF Metadata schemas (`tfx_schema.spec_from_schema`: schema.pbtxt).
"""

from __future__ import annotations

import base64
import functools
import importlib
import json
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

import numpy as np

from .._util.optional import interop
from .._util.text import format_shape

__all__ = [
    "Bytes",
    "Feature",
    "FixedLen",
    "Raw",
    "Sequence",
    "Spec",
    "VarLen",
    "as_spec",
    "spec_from_json",
    "spec_to_json",
]

# Wire kinds of tf.train.Feature (its oneof field numbers).
KIND_BYTES, KIND_FLOAT, KIND_INT64 = 1, 2, 3
KIND_NAMES = {
    0: "missing",
    KIND_BYTES: "bytes_list",
    KIND_FLOAT: "float_list",
    KIND_INT64: "int64_list",
}
KIND_DTYPES = {KIND_BYTES: "bytes", KIND_FLOAT: "float32", KIND_INT64: "int64"}

SPEC_FORMAT = "tfrecnp.spec/1"
CONTEXT_PREFIX = "context/"  # a context column whose name is a feature list's too


def as_shape(shape: Any, what: str, *, allow_unknown: bool = False) -> tuple[int, ...]:
    """An int or a sequence of ints -> a tuple of ints >= 0 (one -1 if allow_unknown)."""
    if shape is None:
        raise ValueError(f"{what} must be a tuple of ints, not None")
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(-1 if d is None else int(d) for d in shape)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a tuple of ints, not {shape!r}") from None
    unknown = sum(d == -1 for d in dims)
    if any(d < -1 for d in dims) or (unknown and not allow_unknown) or unknown > 1:
        allowed = "ints >= 0 with at most one -1" if allow_unknown else "ints >= 0"
        raise ValueError(f"{what} must hold {allowed}, not {shape!r}")
    return dims


def dtype_name(dtype: Any) -> str:
    """ "bytes", or a NumPy dtype name; TensorFlow DTypes and "string" are understood."""
    if dtype is bytes or dtype is np.bytes_:
        return "bytes"
    name = getattr(dtype, "name", None) if not isinstance(dtype, (str, np.dtype)) else None
    if isinstance(name, str) and type(dtype).__module__.startswith("tensorflow"):
        dtype = name  # a tf.DType: its name is the NumPy name, or "string"
    if isinstance(dtype, str) and dtype in ("bytes", "string", "tf.string"):
        return "bytes"
    if isinstance(dtype, str) and dtype.startswith("tf."):
        dtype = dtype[3:]
    if isinstance(dtype, str) and "," in dtype:
        # NumPy reads a comma as a structured dtype (and its repeats with ast.literal_eval,
        # which raises SyntaxError on junk); a feature holds one scalar type.
        raise ValueError(f"unknown dtype {dtype!r}: one scalar type, such as 'int64'")
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError, SyntaxError):
        raise ValueError(f"unknown dtype {dtype!r}") from None
    if dt.kind in "SO":
        return "bytes"
    return dt.newbyteorder("=").name if dt.byteorder not in "=|" else dt.name


def value_dtype(dtype: Any) -> str:
    """A FixedLen/VarLen dtype: "bytes" or a NumPy bool/integer/float dtype name."""
    name = dtype_name(dtype)
    if name != "bytes" and np.dtype(name).kind not in "biuf":
        raise ValueError(
            f"dtype must be 'int64', 'float32', 'bytes' or a NumPy integer, bool or float "
            f"dtype, not {name!r}"
        )
    return name


def kind_of(dtype: str) -> int:
    """The tf.train.Feature kind that holds values of this output dtype."""
    if dtype == "bytes":
        return KIND_BYTES
    return KIND_FLOAT if np.dtype(dtype).kind == "f" else KIND_INT64


def default_to_json(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list):
        return [default_to_json(v) for v in value]
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}  # "nan", "inf", "-inf": strict JSON has none of them
    return value


def default_from_json(value: Any) -> Any:
    if isinstance(value, list):
        return [default_from_json(v) for v in value]
    if isinstance(value, dict) and "base64" in value:
        return base64.b64decode(value["base64"])
    if isinstance(value, dict) and "float" in value:
        return float(value["float"])
    return value


class Feature:
    """Base of the feature specs. Subclasses say which wire kind they read.

    A feature built on another one (tn.Image reads a bytes value, then decodes pixels)
    returns that one from decode_as(); the decoder reads it and hands the column to
    finish(), which returns this feature's column.
    """

    type_name: ClassVar[str] = ""

    def decode_as(self) -> Feature | None:
        """The FixedLen / VarLen / Raw the decoder reads for this feature (None: itself)."""
        return None

    def finish(
        self, column: Any, *, name: str = "", where: Callable[[int], tuple[str, int]] | None = None
    ) -> Any:
        """Turn the column read for decode_as() into this feature's column. name: the
        feature's; where(row) -> (path, record) names a row in errors."""
        return column

    def to_json(self) -> dict:
        raise NotImplementedError

    @classmethod
    def from_json(cls, obj: dict) -> Feature:
        raise NotImplementedError

    def spell(self) -> str:
        """How to write this spec in code, e.g. "tn.FixedLen((10,), 'float32')"."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.spell().removeprefix("tn.")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.to_json() == self.to_json()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_json(), sort_keys=True))

    @property
    def kind(self) -> int:
        """The tf.train.Feature kind read: 1 bytes_list, 2 float_list, 3 int64_list."""
        raise NotImplementedError


class FixedLen(Feature):
    """Exactly prod(shape) values per record -> an ndarray [N, *shape].

    dtype "int64", "float32", "bytes", or any NumPy integer / bool / float dtype as the
    output type. default fills records where the feature is missing; without one a missing
    feature is a SchemaError. A present but empty list is not missing (TensorFlow's rule).
    """

    type_name = "FixedLen"

    def __init__(self, shape: Any, dtype: Any, default: Any = None):
        self.shape = as_shape(shape, "FixedLen shape")
        self.dtype = value_dtype(dtype)
        self.default = None if default is None else self._check_default(default)

    def _check_default(self, default: Any) -> np.ndarray:
        if self.dtype == "bytes":
            flat = np.asarray(default, dtype=object).reshape(-1)
            items = []
            for v in flat:
                if isinstance(v, str):
                    v = v.encode("utf-8")
                if not isinstance(v, (bytes, bytearray, np.bytes_)):
                    raise ValueError(f"default of a bytes feature must hold bytes, not {v!r}")
                items.append(bytes(v))
            arr = np.empty(len(items), dtype=object)
            arr[:] = items
            arr = arr.reshape(np.shape(default))
        else:
            raw = np.asarray(default)
            if raw.dtype.kind not in "biuf":
                raise ValueError(
                    f"default of a {self.dtype} feature must be numbers, not {default!r}"
                )
            arr = raw.astype(self.dtype)
            if raw.dtype.kind in "biu" and not np.array_equal(arr, raw):
                raise ValueError(f"default {default!r} does not fit in {self.dtype}")
        if arr.size == 0 and math.prod(self.shape) == 0:
            return np.empty(self.shape, arr.dtype)  # nothing to fill; [] in JSON
        if arr.size == math.prod(self.shape) and arr.shape != self.shape:
            return arr.reshape(self.shape).copy()  # a flat default, as TensorFlow reshapes it
        try:
            return np.broadcast_to(arr, self.shape).copy()
        except ValueError:
            raise ValueError(
                f"default of shape {arr.shape} does not fit FixedLen shape {self.shape}"
            ) from None

    @property
    def kind(self) -> int:
        return kind_of(self.dtype)

    @property
    def size(self) -> int:
        """Values per record: prod(shape)."""
        return math.prod(self.shape)

    def to_json(self) -> dict:
        out = {"type": "FixedLen", "shape": list(self.shape), "dtype": self.dtype}
        if self.default is not None:
            out["default"] = default_to_json(self.default)
        return out

    @classmethod
    def from_json(cls, obj: dict) -> FixedLen:
        default = obj.get("default")
        return cls(
            obj["shape"], obj["dtype"], None if default is None else default_from_json(default)
        )

    def spell(self) -> str:
        if self.shape == () and self.dtype == "bytes" and self.default is None:
            return "tn.Bytes()"
        default = "" if self.default is None else f", default={self.default.tolist()!r}"
        return f"tn.FixedLen({format_shape(self.shape)}, {self.dtype!r}{default})"


class Partition:
    """One row partition of a `VarLen` (TensorFlow's RaggedFeature partitions): how the
    values (or the rows of the partition inside it) group into rows, read from the int64
    feature `key` of the same record, or a fixed row length."""

    kind: ClassVar[str] = ""

    def __init__(self, key: str):
        if not isinstance(key, str) or not key:
            raise ValueError(f"{type(self).__name__} needs a feature name, not {key!r}")
        self.key = key

    def to_json(self) -> dict:
        return {self.kind: self.key}

    def spell(self) -> str:
        return f"tn.VarLen.{type(self).__name__}({self.key!r})"

    def __repr__(self) -> str:
        return self.spell().removeprefix("tn.VarLen.")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.to_json() == self.to_json()

    def __hash__(self) -> int:
        return hash((type(self).__name__, *self.to_json().values()))


class RowSplits(Partition):
    """Row i is items[splits[i]:splits[i + 1]]: n + 1 offsets from 0 to the item count."""

    kind = "row_splits"


class RowLengths(Partition):
    """Row i holds lengths[i] items; the lengths add up to the item count."""

    kind = "row_lengths"


class RowStarts(Partition):
    """Row i starts at starts[i] (the first 0) and ends where the next starts."""

    kind = "row_starts"


class RowLimits(Partition):
    """Row i ends at limits[i] (the last the item count) and starts where the last ended."""

    kind = "row_limits"


class ValueRowIds(Partition):
    """Item j is in row rowids[j] (never decreasing); rows = the last id + 1."""

    kind = "value_rowids"


class UniformRowLength(Partition):
    """Every row holds `length` items (no feature read)."""

    kind = "uniform_row_length"

    def __init__(self, length: int):
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
            raise ValueError(f"UniformRowLength needs a length >= 1, not {length!r}")
        self.length = int(length)

    @property
    def key(self) -> None:  # type: ignore[override]
        return None

    def to_json(self) -> dict:
        return {self.kind: self.length}

    def spell(self) -> str:
        return f"tn.VarLen.UniformRowLength({self.length})"


PARTITION_TYPES: dict[str, type[Partition]] = {
    cls.kind: cls
    for cls in (RowSplits, RowLengths, RowStarts, RowLimits, ValueRowIds, UniformRowLength)
}


def as_partition(obj: Any) -> Partition:
    """A Partition from itself, its JSON ({"row_lengths": "key"}) or TensorFlow's
    tf.io.RaggedFeature.RowLengths(...) and kin (read by their fields)."""
    if isinstance(obj, Partition):
        return obj
    if isinstance(obj, Mapping) and len(obj) == 1:
        ((kind, arg),) = obj.items()
        if kind in PARTITION_TYPES:
            return PARTITION_TYPES[kind](arg)
    name = type(obj).__name__
    by_name = {cls.__name__: cls for cls in PARTITION_TYPES.values()}
    if name in by_name and type(obj).__module__.startswith("tensorflow"):
        if name == "UniformRowLength":
            return UniformRowLength(obj.length)
        return by_name[name](obj.key)
    raise ValueError(
        f"not a row partition: {obj!r}; use tn.VarLen.RowSplits(key), RowLengths(key), "
        "RowStarts(key), RowLimits(key), ValueRowIds(key) or UniformRowLength(n)"
    )


class VarLen(Feature):
    """Any number of values per record -> a Ragged column.

    With inner_shape (bounding boxes: (4,)), each record's count must be a multiple of
    prod(inner_shape) and rows are [k, *inner_shape]. A missing feature is an empty row.

    partitions (TensorFlow's RaggedFeature partitions, outermost first) nest the rows: each
    record's values are cut into rows by int64 features of the same record
    (``VarLen.RowLengths("key")`` and kin) or a fixed length (``VarLen.UniformRowLength(n)``),
    and the column is a Ragged with one more ragged level per partition; fixed lengths
    innermost become inner_shape. key reads the values from another feature than the spec
    entry's name (TensorFlow's value_key). default, a scalar, pads each user batch's rows to
    its longest, giving a dense [n, longest, *inner_shape] array (FixedLenSequenceFeature's
    default_value in tf.io.parse_example).
    """

    type_name = "VarLen"
    RowSplits = RowSplits
    RowLengths = RowLengths
    RowStarts = RowStarts
    RowLimits = RowLimits
    ValueRowIds = ValueRowIds
    UniformRowLength = UniformRowLength

    def __init__(
        self,
        dtype: Any,
        inner_shape: Any = (),
        *,
        partitions: Any = (),
        key: str | None = None,
        default: Any = None,
    ):
        self.dtype = value_dtype(dtype)
        inner = as_shape(inner_shape, "VarLen inner_shape")
        parts = [as_partition(p) for p in partitions]
        while parts and isinstance(parts[-1], UniformRowLength):
            inner = (parts.pop().length, *inner)  # fixed rows innermost: an inner shape
        self.inner_shape = inner
        self.partitions = tuple(parts)
        if math.prod(self.inner_shape) == 0:
            raise ValueError(f"VarLen inner_shape {self.inner_shape} holds no values")
        if key is not None and (not isinstance(key, str) or not key):
            raise ValueError(f"VarLen key must be a feature name, not {key!r}")
        self.key = key
        self.default = None if default is None else self._check_default(default)

    def _check_default(self, default: Any) -> Any:
        if self.partitions:
            raise ValueError("VarLen default pads rows of values; it takes no partitions")
        arr = np.asarray(default, dtype=object if self.dtype == "bytes" else None)
        if arr.size != 1:
            raise ValueError(
                f"VarLen default is the one value rows are padded with, not {default!r}"
            )
        value = arr.reshape(-1)[0]
        if self.dtype == "bytes":
            value = value.encode("utf-8") if isinstance(value, str) else value
            if not isinstance(value, (bytes, np.bytes_)):
                raise ValueError(f"default of a bytes feature must be bytes, not {default!r}")
            return bytes(value)
        if np.asarray(value).dtype.kind not in "biuf":
            raise ValueError(f"default of a {self.dtype} feature must be a number, not {default!r}")
        out = np.asarray(value).astype(self.dtype)
        if np.asarray(value).dtype.kind in "biu" and out != value:
            raise ValueError(f"default {default!r} does not fit in {self.dtype}")
        return out.item()

    @property
    def kind(self) -> int:
        return kind_of(self.dtype)

    @property
    def size(self) -> int:
        """Values per inner row: prod(inner_shape)."""
        return math.prod(self.inner_shape)

    @property
    def ragged_rank(self) -> int:
        """Ragged levels of the column: the records' rows, and one per partition."""
        return 1 + len(self.partitions)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"type": "VarLen", "dtype": self.dtype}
        if self.inner_shape:
            out["inner_shape"] = list(self.inner_shape)
        if self.partitions:
            out["partitions"] = [p.to_json() for p in self.partitions]
        if self.key is not None:
            out["key"] = self.key
        if self.default is not None:
            out["default"] = default_to_json(self.default)
        return out

    @classmethod
    def from_json(cls, obj: dict) -> VarLen:
        default = obj.get("default")
        return cls(
            obj["dtype"],
            obj.get("inner_shape", ()),
            partitions=obj.get("partitions", ()),
            key=obj.get("key"),
            default=None if default is None else default_from_json(default),
        )

    def spell(self) -> str:
        inner = f", inner_shape={format_shape(self.inner_shape)}" if self.inner_shape else ""
        if self.partitions:
            inner += f", partitions=[{', '.join(p.spell() for p in self.partitions)}]"
        if self.key is not None:
            inner += f", key={self.key!r}"
        if self.default is not None:
            inner += f", default={self.default!r}"
        return f"tn.VarLen({self.dtype!r}{inner})"


class Raw(Feature):
    """One bytes value holding an array's raw little-endian bytes, like tf.io.decode_raw
    followed by a reshape.

    With a known shape every record must hold exactly prod(shape) * itemsize bytes and the
    column is an ndarray [N, *shape]. shape None means (-1,). A -1 first gives a Ragged
    column of rows [k, *shape[1:]]; a -1 elsewhere is resolved from the byte count, and all
    records of a batch must agree.
    """

    type_name = "Raw"

    def __init__(self, dtype: Any, shape: Any = None):
        name = dtype_name(dtype)
        if name == "bytes" or np.dtype(name).kind not in "biufc":
            raise ValueError(
                f"Raw dtype must be a NumPy number or bool dtype, not {name!r} "
                "(for the bytes themselves use tn.Bytes())"
            )
        self.dtype = name
        self.shape = None if shape is None else as_shape(shape, "Raw shape", allow_unknown=True)

    @property
    def kind(self) -> int:
        return KIND_BYTES

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def ragged(self) -> bool:
        """True when the first axis varies per record (the column is Ragged)."""
        return self.shape is None or (len(self.shape) > 0 and self.shape[0] == -1)

    @property
    def row_shape(self) -> tuple[int, ...]:
        """The shape below the varying axis (ragged), or the whole shape."""
        if self.shape is None:
            return ()
        return self.shape[1:] if self.ragged else self.shape

    def to_json(self) -> dict:
        return {
            "type": "Raw",
            "dtype": self.dtype,
            "shape": None if self.shape is None else list(self.shape),
        }

    @classmethod
    def from_json(cls, obj: dict) -> Raw:
        return cls(obj["dtype"], obj.get("shape"))

    def spell(self) -> str:
        shape = "" if self.shape is None else f", shape={format_shape(self.shape)}"
        return f"tn.Raw({self.dtype!r}{shape})"


def Bytes(*, default: bytes | None = None) -> FixedLen:
    """One bytes value per record -> a BytesColumn. Same as FixedLen((), "bytes")."""
    return FixedLen((), "bytes", default)


class Sequence:
    """The spec of tf.train.SequenceExample records.

    context: features of the whole record, as for an Example. sequence: features with one
    value per step (FixedLen without default, VarLen, Raw with a shape whose first axis is
    known); a record without the feature list has zero steps, unless its name is in
    required (TensorFlow's FixedLenSequenceFeature with allow_missing=False), where it is a
    SchemaError naming feature and record. A name may be both a context feature and a
    feature list (the two maps of the record are apart): the batch then holds the context
    column as "context/<name>" (`context_column`).
    """

    type_name = "Sequence"

    def __init__(
        self,
        context: Mapping[str, Any] | None = None,
        sequence: Mapping[str, Any] | None = None,
        *,
        required: Iterable[str] = (),
    ):
        if isinstance(required, str):
            required = (required,)
        tf_required = interop("tf_spec").required  # TensorFlow's, as TF requires them
        required = (*required, *tf_required(sequence or {}))
        self.context = as_spec(dict(context or {}), _where="Sequence context")
        self.sequence = as_spec(dict(sequence or {}), _where="Sequence sequence", _steps=True)
        for name, f in self.sequence.items():
            if type(f) not in (FixedLen, VarLen, Raw):
                raise ValueError(
                    f"sequence feature {name!r}: {f.spell()} is read once per record, not per "
                    "step; put it in the context, or read the steps as tn.VarLen('bytes')"
                )
            if isinstance(f, FixedLen) and f.default is not None:
                raise ValueError(f"sequence feature {name!r}: a sequence feature takes no default")
            if isinstance(f, VarLen) and f.default is not None:
                raise ValueError(f"sequence feature {name!r}: a sequence VarLen takes no default")
            if isinstance(f, VarLen) and f.dtype == "bytes" and f.inner_shape:
                raise ValueError(
                    f"sequence feature {name!r}: tn.VarLen('bytes') in a sequence takes no "
                    "inner_shape; read the steps as tn.FixedLen(shape, 'bytes')"
                )
            if isinstance(f, Raw) and (f.ragged or (f.shape and -1 in f.shape)):
                raise ValueError(
                    f"sequence feature {name!r}: Raw in a sequence needs a known shape, "
                    f"not {f.shape}"
                )
        if not self.context and not self.sequence:
            raise ValueError("Sequence spec has no features")
        self.required = tuple(dict.fromkeys(required))
        unknown = [n for n in self.required if n not in self.sequence]
        if unknown:
            raise ValueError(
                f"required names {unknown[0]!r}, which is not a sequence feature; required "
                f"lists the feature lists every record must hold ({', '.join(self.sequence)})"
            )
        for name in set(self.context) & set(self.sequence):
            column = CONTEXT_PREFIX + name
            if column in self.context or column in self.sequence:
                raise ValueError(
                    f"feature {name!r} is both a context feature and a feature list, and its "
                    f"context column {column!r} is a feature name too; read one of them "
                    "under a Sequence of its own"
                )

    def context_column(self, name: str) -> str:
        """The batch's column for context feature `name`: the name, or "context/<name>"
        when a feature list has that name too."""
        return CONTEXT_PREFIX + name if name in self.sequence else name

    def to_json(self) -> dict:
        out = {
            "type": "Sequence",
            "context": {k: v.to_json() for k, v in self.context.items()},
            "sequence": {k: v.to_json() for k, v in self.sequence.items()},
        }
        if self.required:
            out["required"] = list(self.required)
        return out

    @classmethod
    def from_json(cls, obj: dict) -> Sequence:
        return cls(
            {k: feature_from_json(v) for k, v in obj.get("context", {}).items()},
            {k: feature_from_json(v) for k, v in obj.get("sequence", {}).items()},
            required=obj.get("required", ()),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and other.to_json() == self.to_json()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_json(), sort_keys=True))

    def __repr__(self) -> str:
        required = f", required={list(self.required)!r}" if self.required else ""
        return f"Sequence(context={self.context!r}, sequence={self.sequence!r}{required})"


Spec = dict[str, Feature] | Sequence

FEATURE_TYPES: dict[str, type[Feature]] = {"FixedLen": FixedLen, "VarLen": VarLen, "Raw": Raw}


def register_feature_type(cls: type[Feature]) -> type[Feature]:
    """Make a Feature subclass known to spec_from_json (e.g. tn.Image)."""
    FEATURE_TYPES[cls.type_name] = cls
    return cls


# Feature kinds defined in modules built on this one, imported when their JSON is read (by
# name, so this module does not import them).
LAZY_FEATURE_TYPES = {
    "Image": "tfrecnp.example.image",
    "Text": "tfrecnp.example.text",
    **dict.fromkeys(
        [
            "TfdsZlibTensor",
            "TfdsFrames",
            "TfdsUint64",
            "TfdsFloatImage",
            "TfdsTensorList",
            "TfdsShapedTensor",
            "TfdsNestedFrames",
        ],
        "tfrecnp.interop.tfds_types",
    ),
}


def feature_from_json(obj: dict) -> Feature:
    kind = obj.get("type") if isinstance(obj, dict) else None
    if kind in LAZY_FEATURE_TYPES and kind not in FEATURE_TYPES:
        importlib.import_module(LAZY_FEATURE_TYPES[kind])
    if not isinstance(obj, dict) or obj.get("type") not in FEATURE_TYPES:
        known = ", ".join(sorted({*FEATURE_TYPES, *LAZY_FEATURE_TYPES}))
        raise ValueError(f"not a feature spec: {obj!r} (expected a dict with type one of {known})")
    try:
        return FEATURE_TYPES[obj["type"]].from_json(obj)
    except KeyError as e:
        raise ValueError(f"feature spec {obj!r} lacks {e.args[0]!r}") from None


def spec_to_json(spec: Any) -> str:
    """The JSON text of a spec (dict or Sequence), for spec files and --spec: one line per
    feature, so spec files read and diff well."""
    spec = as_spec(spec)
    if isinstance(spec, Sequence):
        sections = {"type": "Sequence", "context": spec.context, "sequence": spec.sequence}
        if spec.required:
            sections["required"] = list(spec.required)
    else:
        sections = {"type": "Example", "features": spec}
    lines = ["{", f'  "format": {json.dumps(SPEC_FORMAT)},']
    for key, value in sections.items():
        if isinstance(value, (str, list)):
            lines.append(f'  "{key}": {json.dumps(value, ensure_ascii=False)},')
            continue
        dump = functools.partial(json.dumps, ensure_ascii=False)
        items = [f"    {dump(k)}: {dump(v.to_json())}" for k, v in value.items()]
        lines.append(f'  "{key}": {{' + ("\n" + ",\n".join(items) + "\n  }," if items else "},"))
    lines[-1] = lines[-1].rstrip(",")
    return "\n".join([*lines, "}"])


def spec_from_json(text: str | bytes | Mapping) -> Spec:
    """A spec back from spec_to_json's text (or its parsed dict). A bare mapping of
    feature name -> feature JSON is accepted too."""
    obj = json.loads(text) if isinstance(text, (str, bytes)) else dict(text)
    if obj.get("type") == "Sequence":
        return Sequence.from_json(obj)
    features = (
        obj["features"] if "features" in obj and obj.get("type") in (None, "Example") else obj
    )
    if "format" in features and features is obj:
        features = {k: v for k, v in obj.items() if k not in ("format", "type")}
    return {str(k): feature_from_json(v) for k, v in features.items()}


def _is_spec_json(spec: Any) -> bool:
    """Whether spec is the parsed JSON of a spec file, or a bare mapping of feature JSON."""
    if not isinstance(spec, Mapping) or not spec:
        return False
    if spec.get("format") == SPEC_FORMAT:
        return True
    known = {*FEATURE_TYPES, *LAZY_FEATURE_TYPES}
    return all(isinstance(v, Mapping) and v.get("type") in known for v in spec.values())


def as_spec(spec: Any, *, _where: str = "spec", _steps: bool = False) -> Spec:
    """Check a spec and convert TensorFlow feature objects in it; returns a dict or Sequence.

    A pair (context, sequence) of dicts, as tf.io.parse_sequence_example takes them, is a
    Sequence; _steps: the features are per step (a Sequence's sequence features)."""
    tf, tfx = interop("tf_spec"), interop("tfx_schema")
    if isinstance(spec, Sequence):
        return spec
    if tfx.is_schema(spec):  # a TFX / TF Metadata schema.pbtxt (a path, its text, a Schema)
        return tfx.spec_from_schema(spec)
    if isinstance(spec, (str, bytes)):
        return spec_from_json(spec)
    if _is_spec_json(spec):  # a spec file's parsed JSON (`tfrecnp inspect --json`), as-is
        return spec_from_json(spec)
    if isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(d, Mapping) for d in spec):
        return tf.spec_from_tf(*spec)  # as tf.io.parse_sequence_example takes them
    if not isinstance(spec, Mapping):
        raise TypeError(
            f"{_where} must be a dict of name -> feature, a tn.Sequence, or a pair (context, "
            f"sequence) of dicts, not {type(spec).__name__}"
        )
    out: dict[str, Feature] = {}
    for name, f in spec.items():
        if not isinstance(name, str):
            raise TypeError(f"{_where}: feature names must be str, not {name!r}")
        if isinstance(f, Feature):
            out[name] = f
        elif tf.is_tf_feature(f):
            out[name] = tf.tf_feature(name, f, sequence=_steps)
        else:
            raise TypeError(
                f"{_where}: feature {name!r} is {f!r}; expected tn.FixedLen, tn.VarLen, "
                "tn.Raw, tn.Bytes() or a TensorFlow feature spec"
            )
    return out
