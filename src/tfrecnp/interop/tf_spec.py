"""TensorFlow's feature objects (tf.io.FixedLenFeature, VarLenFeature,
FixedLenSequenceFeature, RaggedFeature) as tfrecnp features, read by their fields: TensorFlow
is never imported here. Apart from spec.py because it is a door of its own, like TFX schemas
(`tfx_schema`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..example.spec import Feature, FixedLen, Sequence, Spec, VarLen, as_spec, value_dtype

__all__ = ["is_tf_feature", "required", "spec_from_tf", "tf_feature"]

_TF_TYPES = ("FixedLenFeature", "VarLenFeature", "FixedLenSequenceFeature", "RaggedFeature")


def is_tf_feature(obj: Any) -> bool:
    return type(obj).__module__.startswith("tensorflow") and type(obj).__name__ in (
        *_TF_TYPES,
        "SparseFeature",
    )


def tf_feature(name: str, obj: Any, *, sequence: bool) -> Feature:
    try:
        return _tf_feature_of(name, obj, sequence=sequence)
    except ValueError as e:
        if str(e).startswith(f"feature {name!r}"):
            raise
        raise ValueError(f"feature {name!r}: {e}") from None


def _tf_feature_of(name: str, obj: Any, *, sequence: bool) -> Feature:
    kind = type(obj).__name__
    if kind == "SparseFeature":
        return _unsupported(name, obj, "any arguments")
    dtype = value_dtype(obj.dtype)
    if kind == "FixedLenFeature":
        if obj.shape is None:
            raise ValueError(
                f"feature {name!r}: FixedLenFeature has no shape (missing shape); give it "
                "one, e.g. () for one value per record"
            )
        if any(d is None or d == -1 for d in _tf_shape(obj.shape)):
            raise ValueError(
                f"feature {name!r}: FixedLenFeature shape {obj.shape} has an unknown dimension"
                "; for a varying first axis use FixedLenSequenceFeature (tn.VarLen)"
            )
        return FixedLen(_tf_shape(obj.shape), dtype, obj.default_value)
    if kind == "VarLenFeature":
        return VarLen(dtype)
    if kind == "FixedLenSequenceFeature":
        shape = _tf_shape(obj.shape)
        if sequence:
            if obj.default_value is not None:
                raise ValueError(
                    f"feature {name!r}: FixedLenSequenceFeature default_value in a sequence "
                    "is not supported (records keep their own number of steps)"
                )
            return FixedLen(shape, dtype)
        if not obj.allow_missing:
            raise ValueError(
                f"feature {name!r}: FixedLenSequenceFeature in an Example requires "
                "allow_missing=True (tf.io.parse_example refuses it too)"
            )
        return VarLen(dtype, shape, default=obj.default_value)
    if kind == "RaggedFeature":
        key = getattr(obj, "value_key", None)
        return VarLen(dtype, partitions=obj.partitions, key=None if key in (None, name) else key)
    return _unsupported(name, obj, "this feature type")


def _unsupported(name: str, obj: Any, what: str) -> Feature:
    raise ValueError(
        f"feature {name!r}: {type(obj).__name__} with {what} is not supported; "
        "supported are FixedLenFeature, VarLenFeature, FixedLenSequenceFeature and "
        "RaggedFeature. A SparseFeature(index_key, value_key, ...) reads as "
        "{'index': tn.VarLen('int64'), 'value': tn.VarLen(dtype)} (one Ragged each)"
    )


def _tf_shape(shape: Any) -> tuple[int, ...]:
    dims = getattr(shape, "as_list", lambda: shape)()
    if isinstance(dims, (int, np.integer)):
        return (int(dims),)
    return tuple(-1 if d is None else int(d) for d in dims)


def required(features: Mapping[str, Any]) -> list[str]:
    """The feature lists TensorFlow requires: FixedLenSequenceFeature(allow_missing=False)."""
    return [
        name
        for name, f in features.items()
        if is_tf_feature(f)
        and type(f).__name__ == "FixedLenSequenceFeature"
        and not f.allow_missing
    ]


def spec_from_tf(
    features: Mapping[str, Any], sequence_features: Mapping[str, Any] | None = None
) -> Spec:
    """Convert TensorFlow feature specs (the dicts given to tf.io.parse_example, or the
    context and sequence dicts of tf.io.parse_sequence_example) to a tfrecnp spec.

    FixedLenFeature -> FixedLen; VarLenFeature -> VarLen; FixedLenSequenceFeature -> VarLen
    with inner_shape in an Example (its default_value pads, as TensorFlow pads), FixedLen
    in a sequence (a required feature list unless allow_missing=True); RaggedFeature ->
    VarLen with its partitions and value_key. SparseFeature is not supported.
    """
    context = {
        name: tf_feature(name, f, sequence=False) if is_tf_feature(f) else f
        for name, f in features.items()
    }
    if sequence_features is None:
        return as_spec(context)
    seq = {
        name: tf_feature(name, f, sequence=True) if is_tf_feature(f) else f
        for name, f in sequence_features.items()
    }
    return Sequence(context, seq, required=required(sequence_features))
