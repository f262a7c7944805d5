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

Specs have a JSON form (`spec_to_json`, `spec_from_json`) for files and the command line, and
TensorFlow's own feature objects convert with `spec_from_tf` (TensorFlow is never imported
for this: the objects are read by their fields).
"""

from __future__ import annotations

import base64
import functools
import importlib
import json
import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

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
    "spec_from_tf",
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


def _shape(shape: Any, what: str, *, allow_unknown: bool = False) -> tuple[int, ...]:
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


def _value_dtype(dtype: Any) -> str:
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


def _encode_default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list):
        return [_encode_default(v) for v in value]
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}  # "nan", "inf", "-inf": strict JSON has none of them
    return value


def _decode_default(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode_default(v) for v in value]
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
        self.shape = _shape(shape, "FixedLen shape")
        self.dtype = _value_dtype(dtype)
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
            out["default"] = _encode_default(self.default)
        return out

    @classmethod
    def from_json(cls, obj: dict) -> FixedLen:
        default = obj.get("default")
        return cls(
            obj["shape"], obj["dtype"], None if default is None else _decode_default(default)
        )

    def spell(self) -> str:
        if self.shape == () and self.dtype == "bytes" and self.default is None:
            return "tn.Bytes()"
        default = "" if self.default is None else f", default={self.default.tolist()!r}"
        return f"tn.FixedLen({format_shape(self.shape)}, {self.dtype!r}{default})"


class VarLen(Feature):
    """Any number of values per record -> a Ragged column.

    With inner_shape (bounding boxes: (4,)), each record's count must be a multiple of
    prod(inner_shape) and rows are [k, *inner_shape]. A missing feature is an empty row.
    """

    type_name = "VarLen"

    def __init__(self, dtype: Any, inner_shape: Any = ()):
        self.dtype = _value_dtype(dtype)
        self.inner_shape = _shape(inner_shape, "VarLen inner_shape")
        if self.dtype == "bytes" and self.inner_shape:
            raise ValueError("VarLen('bytes') takes no inner_shape")
        if math.prod(self.inner_shape) == 0:
            raise ValueError(f"VarLen inner_shape {self.inner_shape} holds no values")

    @property
    def kind(self) -> int:
        return kind_of(self.dtype)

    @property
    def size(self) -> int:
        """Values per inner row: prod(inner_shape)."""
        return math.prod(self.inner_shape)

    def to_json(self) -> dict:
        out = {"type": "VarLen", "dtype": self.dtype}
        if self.inner_shape:
            out["inner_shape"] = list(self.inner_shape)
        return out

    @classmethod
    def from_json(cls, obj: dict) -> VarLen:
        return cls(obj["dtype"], obj.get("inner_shape", ()))

    def spell(self) -> str:
        inner = f", inner_shape={format_shape(self.inner_shape)}" if self.inner_shape else ""
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
        self.shape = None if shape is None else _shape(shape, "Raw shape", allow_unknown=True)

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
    known); a record without the feature list has zero steps.
    """

    type_name = "Sequence"

    def __init__(
        self, context: Mapping[str, Any] | None = None, sequence: Mapping[str, Any] | None = None
    ):
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
            if isinstance(f, Raw) and (f.ragged or (f.shape and -1 in f.shape)):
                raise ValueError(
                    f"sequence feature {name!r}: Raw in a sequence needs a known shape, "
                    f"not {f.shape}"
                )
        if not self.context and not self.sequence:
            raise ValueError("Sequence spec has no features")
        both = sorted(set(self.context) & set(self.sequence))
        if both:
            raise ValueError(
                f"feature {both[0]!r} is both a context and a sequence feature; a batch has "
                "one column per name, so read one of them under a Sequence of its own"
            )

    def to_json(self) -> dict:
        return {
            "type": "Sequence",
            "context": {k: v.to_json() for k, v in self.context.items()},
            "sequence": {k: v.to_json() for k, v in self.sequence.items()},
        }

    @classmethod
    def from_json(cls, obj: dict) -> Sequence:
        return cls(
            {k: feature_from_json(v) for k, v in obj.get("context", {}).items()},
            {k: feature_from_json(v) for k, v in obj.get("sequence", {}).items()},
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and other.to_json() == self.to_json()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_json(), sort_keys=True))

    def __repr__(self) -> str:
        return f"Sequence(context={self.context!r}, sequence={self.sequence!r})"


Spec = dict[str, Feature] | Sequence

FEATURE_TYPES: dict[str, type[Feature]] = {"FixedLen": FixedLen, "VarLen": VarLen, "Raw": Raw}


def register_feature_type(cls: type[Feature]) -> type[Feature]:
    """Make a Feature subclass known to spec_from_json (e.g. tn.Image)."""
    FEATURE_TYPES[cls.type_name] = cls
    return cls


# Feature kinds defined in modules built on this one, imported when their JSON is read (by
# name, so this module does not import them).
LAZY_FEATURE_TYPES = {"Image": "tfrecnp.example.image"}


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
    else:
        sections = {"type": "Example", "features": spec}
    lines = ["{", f'  "format": {json.dumps(SPEC_FORMAT)},']
    for key, value in sections.items():
        if isinstance(value, str):
            lines.append(f'  "{key}": {json.dumps(value)},')
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


# --- TensorFlow's spec objects ---------------------------------------------------------

_TF_TYPES = ("FixedLenFeature", "VarLenFeature", "FixedLenSequenceFeature", "RaggedFeature")


def _is_tf_feature(obj: Any) -> bool:
    return type(obj).__module__.startswith("tensorflow") and type(obj).__name__ in (
        *_TF_TYPES,
        "SparseFeature",
    )


def _tf_feature(name: str, obj: Any, *, sequence: bool) -> Feature:
    kind = type(obj).__name__
    dtype = _value_dtype(obj.dtype)
    if kind == "FixedLenFeature":
        if any(d is None or d == -1 for d in _tf_shape(obj.shape)):
            raise ValueError(
                f"feature {name!r}: FixedLenFeature shape {obj.shape} has an unknown dimension"
            )
        return FixedLen(_tf_shape(obj.shape), dtype, obj.default_value)
    if kind == "VarLenFeature":
        return VarLen(dtype)
    if kind == "FixedLenSequenceFeature":
        if obj.default_value is not None:
            raise ValueError(
                f"feature {name!r}: FixedLenSequenceFeature default_value is not supported "
                "(missing values give shorter rows of a Ragged column)"
            )
        shape = _tf_shape(obj.shape)
        if sequence:
            return FixedLen(shape, dtype)
        if dtype == "bytes" and shape:
            return _unsupported(name, obj, f"bytes and shape {shape}")
        return VarLen(dtype, shape)
    if kind == "RaggedFeature":
        key = getattr(obj, "value_key", None)
        if key not in (None, name):
            raise ValueError(
                f"feature {name!r}: RaggedFeature value_key={key!r} is not supported; "
                f"name the spec entry {key!r} instead"
            )
        inner = []
        for p in obj.partitions:
            if type(p).__name__ != "UniformRowLength":
                raise ValueError(
                    f"feature {name!r}: RaggedFeature partition {type(p).__name__} is not "
                    "supported (only UniformRowLength); read the values and the partition "
                    "feature as tn.VarLen and build nested rows with tn.Ragged.from_lengths"
                )
            inner.append(int(p.length))
        return VarLen(dtype, tuple(inner))
    return _unsupported(name, obj, "this feature type")


def _unsupported(name: str, obj: Any, what: str) -> Feature:
    raise ValueError(
        f"feature {name!r}: {type(obj).__name__} with {what} is not supported; "
        "supported are FixedLenFeature, VarLenFeature, FixedLenSequenceFeature and "
        "RaggedFeature (no partitions or UniformRowLength)"
    )


def _tf_shape(shape: Any) -> tuple[int, ...]:
    dims = getattr(shape, "as_list", lambda: shape)()
    if isinstance(dims, (int, np.integer)):
        return (int(dims),)
    return tuple(-1 if d is None else int(d) for d in dims)


def spec_from_tf(
    features: Mapping[str, Any], sequence_features: Mapping[str, Any] | None = None
) -> Spec:
    """Convert TensorFlow feature specs (the dicts given to tf.io.parse_example, or the
    context and sequence dicts of tf.io.parse_sequence_example) to a tfrecnp spec.

    FixedLenFeature -> FixedLen; VarLenFeature -> VarLen; FixedLenSequenceFeature -> VarLen
    with inner_shape in an Example, FixedLen in a sequence; RaggedFeature (no partitions, or
    UniformRowLength ones) -> VarLen. Missing values come back as Ragged rows, not padding.
    """
    context = {
        name: _tf_feature(name, f, sequence=False) if _is_tf_feature(f) else f
        for name, f in features.items()
    }
    if sequence_features is None:
        return as_spec(context)
    seq = {
        name: _tf_feature(name, f, sequence=True) if _is_tf_feature(f) else f
        for name, f in sequence_features.items()
    }
    return Sequence(context, seq)


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
    if isinstance(spec, Sequence):
        return spec
    if isinstance(spec, (str, bytes)):
        return spec_from_json(spec)
    if _is_spec_json(spec):  # a spec file's parsed JSON (`tfrecnp inspect --json`), as-is
        return spec_from_json(spec)
    if isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(d, Mapping) for d in spec):
        return Sequence(*spec)
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
        elif _is_tf_feature(f):
            out[name] = _tf_feature(name, f, sequence=_steps)
        else:
            raise TypeError(
                f"{_where}: feature {name!r} is {f!r}; expected tn.FixedLen, tn.VarLen, "
                "tn.Raw, tn.Bytes() or a TensorFlow feature spec"
            )
    return out
