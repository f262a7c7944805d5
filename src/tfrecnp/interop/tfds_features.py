"""TFDS's ``features.json`` -> a tfrecnp spec that reads what ``tfds.as_numpy`` gives.

tensorflow-datasets describes a dataset's records in ``features.json``: a tree of feature
connectors (``FeaturesDict``, ``Sequence``, ``Tensor``, ``Image``, ...), each serialised
into the tf.train.Example by fixed rules (``example_serializer.py`` / ``example_parser.py``
in TFDS). This module reads the tree and gives, for every leaf, the tfrecnp feature that
decodes its wire form into the value TFDS decodes:

=========================================  ===================================================
TFDS leaf (in ``s`` nested Sequences)      wire form -> tfrecnp feature
=========================================  ===================================================
Tensor / Scalar / ClassLabel / BBox /      a flat int64 / float / bytes list -> FixedLen
Text, every dimension known                (dtype cast as TFDS casts: bool, int8, float16 ..)
the same, optional=True                    FixedLen with TFDS's default_value where missing
the same, the first dimension unknown      -> VarLen(dtype, inner_shape) (a Ragged column)
uint64 Tensor / Scalar                     the values' bits as int64 -> `Bits64`
Tensor(encoding="bytes")                   one bytes value of raw array bytes -> Raw
Tensor(encoding="zlib")                    the same, zlib-compressed -> `ZlibTensor`
Tensor(encoding=...) of several unknown    ``{name}/shape`` + ``{name}/value`` -> `ShapedTensor`
dimensions                                 (an object column: one array per record)
Sequence(Tensor(encoding=...))             one bytes value per element -> `TensorList`
Image (uint8, uint16; JPEG, PNG)           one encoded image -> tn.Image(channels, dtype)
Image(dtype=float32)                       a 4-channel PNG of the floats' bytes -> `FloatImage`
Sequence(Sequence(...))                    flat values + ragged_row_lengths_k -> VarLen with
                                           RowLengths partitions (a Ragged of Ragged)
Video, Sequence(Image)                     one encoded image per frame -> `Frames`
Sequence(Sequence(Image))                  the same, in flat values + row lengths ->
                                           `NestedFrames` (a Ragged of Ragged of images)
Audio (no file encoding)                   a flat int list -> VarLen
Translation / TranslationVariableLanguages FeaturesDicts of Text / Sequence(Text)
=========================================  ===================================================

`ShapedTensor` and `NestedFrames` are `Joined`: made of several wire features of a record,
which no single decoder feature reads; the TFDS source reads their `reads(name)` and joins
them per block (`tfrecnp.data.tfds`). Nested ``FeaturesDict`` keys are flattened with "/"
(``objects/bbox``), as TFDS names them in the record and as a batch's columns are named: one
flat dict of columns is what every tfrecnp sink and adapter takes. A leaf this module
cannot decode (a custom connector, a Sequence of float32 images or of tensors of several
unknown dimensions, a Sequence of Sequences of uint64) is read as its wire features, under
their own keys, and listed in `TfdsFeatures.left` with the reason, so the rest of the
dataset opens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..example.image import Image
from ..example.spec import Feature, FixedLen, Raw, VarLen
from .tfds_types import (
    Bits64,
    FloatImage,
    Frames,
    NestedFrames,
    ShapedTensor,
    TensorList,
    ZlibTensor,
    json_shape,
)

__all__ = ["TfdsFeatures", "TfdsLeaf", "parse_features"]

# TFDS's dtype names that are not NumPy's
_DTYPES = {"string": "bytes", "str": "bytes", "object": "bytes", "bytes": "bytes"}


@dataclass
class TfdsLeaf:
    """One feature of the tree as TFDS describes it, and how it is read.

    name: the flat column name ("objects/bbox"). tfds_type: the connector's class name
    ("ClassLabel"). shape / dtype: the value of one record, as tfds.as_numpy gives it (None
    for an unknown dimension). names: a ClassLabel's class names (TFDS's "0" .. "n-1" when
    the folder lists none). spec: the tfrecnp feature that reads it (None: left, see `reason`).
    """

    name: str
    tfds_type: str
    shape: tuple[int | None, ...]
    dtype: str
    detail: str = ""
    names: list[str] | None = None
    spec: Feature | None = None
    reason: str = ""
    wire: dict[str, Feature] = field(default_factory=dict)

    @property
    def num_classes(self) -> int | None:
        return None if self.names is None else len(self.names)

    def describe(self) -> str:
        """How `tfrecnp inspect` shows it: "ClassLabel(int64, (), 10 classes)"."""
        shape = "(" + ", ".join("None" if d is None else str(d) for d in self.shape) + ")"
        if len(self.shape) == 1:
            shape = shape[:-1] + ",)"
        parts = [self.dtype, shape]
        if self.names is not None:
            parts.append(f"{len(self.names)} classes")
        if self.detail:
            parts.append(self.detail)
        return f"{self.tfds_type}({', '.join(parts)})"


@dataclass
class TfdsFeatures:
    """What features.json says: the spec to read with, every leaf by its column name, and
    the leaves left (read as their wire features)."""

    spec: dict[str, Feature]
    leaves: dict[str, TfdsLeaf]
    tree: dict[str, Any]
    # {name: lengths (None: any) of the Sequences there, outer first}: "objects" for a
    # Sequence of a FeaturesDict, a leaf's own name for a Sequence of that leaf
    sequences: dict[str, list[int | None]] = field(default_factory=dict)

    @property
    def left(self) -> dict[str, str]:
        """{leaf name: why it is read as its wire features}."""
        return {n: leaf.reason for n, leaf in self.leaves.items() if leaf.spec is None}

    def __getitem__(self, name: str) -> TfdsLeaf:
        return self.leaves[name]

    def __contains__(self, name: object) -> bool:
        return name in self.leaves

    def __iter__(self):
        return iter(self.leaves)


# --- features.json ----------------------------------------------------------------------


def _class_name(node: dict) -> str:
    return str(node.get("pythonClassName", "")).rsplit(".", 1)[-1]


def _dims(shape: Any) -> tuple[int | None, ...]:
    dims = (shape or {}).get("dimensions", []) if isinstance(shape, dict) else shape or []
    return tuple(None if int(d) < 0 else int(d) for d in dims)


def _dtype(name: Any) -> str:
    name = str(name or "int64")
    return _DTYPES.get(name, name)


class _Reader:
    """Walks the tree once, collecting leaves; labels(key) -> a ClassLabel's names."""

    def __init__(self, labels: Callable[[str], list[str] | None]):
        self.labels = labels
        self.leaves: dict[str, TfdsLeaf] = {}
        self.sequences: dict[str, list[int | None]] = {}

    def node(self, node: dict, name: str, seq: tuple[int | None, ...], meta: str) -> Any:
        """The tree below `node` ({key: subtree} or a leaf's type), leaves collected.
        seq: lengths of the Sequences around it (outer first); meta: the labels-file
        prefix TFDS's save_metadata gives it."""
        kind = _class_name(node)
        if "featuresDict" in node:
            out = {}
            for key, child in node["featuresDict"].get("features", {}).items():
                sub = key.replace("/", ".")
                out[key] = self.node(
                    child, f"{name}/{key}" if name else key, seq, f"{meta}-{sub}" if meta else sub
                )
            return out
        if "sequence" in node:
            inner = node["sequence"]
            length = int(inner.get("length", -1))
            self.sequences.setdefault(name, []).append(None if length < 0 else length)
            return self.node(inner["feature"], name, (*seq, None if length < 0 else length), meta)
        if "translation" in node:
            t = node["translation"]
            langs = list(t.get("languages", []))
            if t.get("variableLanguagesPerExample"):
                out = {}
                for key in ("language", "translation"):
                    out[key] = self.text(f"{name}/{key}", (*seq, None), kind, detail=key)
                return out
            return {lang: self.text(f"{name}/{lang}", seq, kind, detail=lang) for lang in langs}
        if "video" in node:
            v = node["video"]
            shape = _dims(v.get("shape"))
            return self.image(name, (*seq, shape[0]), shape[1:], v, "Video")
        if "image" in node:
            return self.image(name, seq, _dims(node["image"].get("shape")), node["image"], kind)
        if "classLabel" in node:
            names = self.labels(meta or name)
            n = int(node["classLabel"].get("numClasses", 0) or 0)
            leaf = self.tensor(name, seq, (), "int64", "none", kind)
            # no labels file: TFDS names the classes "0" .. "n-1"
            leaf.names = names if names is not None else [str(i) for i in range(n)]
            return kind
        if "text" in node:
            return self.text(name, seq, kind)
        for key in ("tensor", "boundingBox", "audio"):
            if key in node:
                t = node[key]
                encoding = str(t.get("encoding", "none")).lower()
                dtype = _dtype(t.get("dtype", "float32" if key == "boundingBox" else "int64"))
                optional = bool(t.get("optional", False))
                self.tensor(name, seq, _dims(t.get("shape")), dtype, encoding, kind, optional)
                return kind
        self.leaves[name] = TfdsLeaf(
            name, kind or "unknown", (), "bytes", reason=f"unknown TFDS feature {kind or node!r}"
        )
        return kind or "unknown"

    def text(self, name: str, seq: tuple, kind: str, detail: str = "") -> str:
        self.tensor(name, seq, (), "bytes", "none", kind)
        self.leaves[name].detail = detail
        return kind

    def image(self, name: str, seq: tuple, shape: tuple, info: dict, kind: str) -> str:
        dtype = _dtype(info.get("dtype", "uint8"))
        fmt = info.get("encodingFormat") or ""
        full = (*seq, *shape)
        leaf = TfdsLeaf(name, kind, full, dtype, detail=fmt)
        self.leaves[name] = leaf
        channels = shape[-1] if shape else None
        image = _image(channels, dtype)
        if channels not in (None, 1, 3, 4):
            leaf.reason = f"{channels}-channel images"
        elif dtype == "float32" and channels in (None, 1) and not seq:
            leaf.spec = FloatImage(shape or (None, None, 1))
        elif image is None:
            where = "a Sequence of " if seq else ""
            leaf.reason = f"{where}{dtype} images (tn.Image decodes uint8 / uint16 pixels)"
        elif len(seq) > 1:
            leaf.spec = NestedFrames(image, len(seq))
        else:
            leaf.spec = Frames(image, seq[0], shape) if seq else image
        if leaf.spec is None:
            leaf.wire = {name: VarLen("bytes") if seq else FixedLen((), "bytes")}
        return kind

    def tensor(
        self,
        name: str,
        seq: tuple,
        shape: tuple,
        dtype: str,
        encoding: str,
        kind: str,
        optional: bool = False,
    ) -> TfdsLeaf:
        full = (*seq, *shape)
        leaf = TfdsLeaf(name, kind, full, dtype)
        details = [f"encoding={encoding}"] if encoding not in ("none", "") else []
        leaf.detail = ", ".join(details + ["optional"] * optional)
        self.leaves[name] = leaf
        if encoding in ("none", ""):
            self.plain(leaf, seq, dtype, optional)
            if leaf.wire:
                return leaf
        elif encoding not in ("bytes", "zlib"):
            leaf.reason = f"Tensor encoding {encoding!r}"
        elif seq:
            if len(seq) == 1 and shape.count(None) < 2 and None not in shape[1:]:
                leaf.spec = TensorList(dtype, shape, encoding, seq[0])
            else:
                leaf.reason = f"a Sequence of encoding={encoding} tensors of shape {shape}"
        elif shape.count(None) > 1:
            leaf.spec = ShapedTensor(dtype, shape, encoding)
        elif encoding == "bytes" and None not in shape[1:]:
            leaf.spec = Raw(dtype, tuple(json_shape(shape)))
        elif None in shape[1:]:
            leaf.reason = f"an unknown dimension that is not the first, in shape {shape}"
        else:
            leaf.spec = ZlibTensor(dtype, shape)
        if leaf.spec is None and not leaf.wire:
            if encoding in ("none", ""):
                leaf.wire = {name: VarLen(_wire(dtype))}
            else:
                leaf.wire = {name: VarLen("bytes")}
        return leaf

    def plain(self, leaf: TfdsLeaf, seq: tuple, dtype: str, optional: bool) -> None:
        """A Tensor of encoding "none": its values in one list of the wire kind (uint64
        values as their int64 bits), reshaped; in nested Sequences, flat values and row
        lengths. Sets leaf.spec, or leaf.reason (and leaf.wire for nested ones left)."""
        full = leaf.shape
        unknown = full.count(None)
        read_as = "int64" if dtype == "uint64" else dtype
        if unknown == 0:
            leaf.spec = FixedLen(full, read_as, _missing(dtype, full) if optional else None)
        elif unknown == 1 and full[0] is None:
            if dtype != "bytes" or not full[1:]:
                leaf.spec = VarLen(read_as, full[1:])
            else:
                leaf.reason = "a list of strings of more than one dimension"
        elif unknown == 1:
            leaf.reason = f"an unknown dimension that is not the first, in shape {full}"
        elif len(seq) > 1:
            # uint64: a Bits64 takes no row partitions (the decoder would not assemble them)
            nested = (
                None if dtype == "uint64" else _nested(leaf.name, dtype, full[len(seq) :], len(seq))
            )
            leaf.spec = nested
            if nested is None:
                leaf.reason = (
                    "a Sequence of Sequences (flat values + ragged_row_lengths) of "
                    f"{dtype} {full[len(seq) :]}: no nested Ragged column reads it"
                )
                leaf.wire = {f"{leaf.name}/ragged_flat_values": VarLen(_wire(dtype))}
                leaf.wire.update(
                    {
                        f"{leaf.name}/ragged_row_lengths_{k}": VarLen("int64")
                        for k in range(len(seq) - 1)
                    }
                )
        else:
            leaf.reason = f"shape {full} has several unknown dimensions"
        if dtype == "uint64" and leaf.spec is not None:
            leaf.spec = Bits64(leaf.spec)  # type: ignore[arg-type]


def _wire(dtype: str) -> str:
    """The dtype of the list TFDS writes a dtype's values into."""
    if dtype == "bytes":
        return "bytes"
    return "float32" if np.dtype(dtype).kind == "f" else "int64"


def _missing(dtype: str, shape: tuple) -> Any:
    """What TFDS gives for an optional feature missing from a record: its default_value
    (tensor_feature._default_value): b"" for strings, the dtype's least value for integers
    (uint64: 0), False for bool; for floats the least value as the float32 list holds it
    (float64's is -inf there, and so in tfds.as_numpy)."""
    if dtype == "bytes":
        value: Any = b""
    elif dtype == "bool":
        value = False
    elif np.dtype(dtype).kind in "iu":
        value = int(np.iinfo(dtype).min)
    else:
        with np.errstate(over="ignore"):
            value = float(np.float32(np.finfo(dtype).min))
    return np.full(shape, value, dtype=object if dtype == "bytes" else None) if shape else value


def _image(channels: int | None, dtype: str) -> Image | None:
    """The tn.Image that decodes as TFDS's decode_image(channels, dtype) does: libjpeg's
    fast integer IDCT (decode_image takes no dct_method). None for float32 images (TFDS
    stores them as 4-channel PNGs of their bits) and dtypes tn.Image lacks."""
    if dtype == "float32" or channels not in (None, 1, 3, 4):
        return None
    try:
        return Image(channels, dtype=dtype, dct_method="INTEGER_FAST")
    except (TypeError, ValueError):  # a tn.Image without dct_method or this dtype
        return Image(channels) if dtype == "uint8" else None


def _nested(name: str, dtype: str, inner: tuple, levels: int) -> Feature | None:
    """A Sequence of Sequences, as TFDS writes it (``{name}/ragged_flat_values`` and a
    ``{name}/ragged_row_lengths_{k}`` per inner level, as tf.RaggedTensor's
    from_nested_row_lengths takes them) -> a VarLen with RowLengths partitions: a Ragged
    column of `levels` ragged levels. None where VarLen has no partitions (or the values
    are strings of a shape, or the inner shape is not known)."""
    row_lengths = getattr(VarLen, "RowLengths", None)
    if row_lengths is None or None in inner or (dtype == "bytes" and inner):
        return None
    partitions = [row_lengths(f"{name}/ragged_row_lengths_{k}") for k in range(levels - 1)]
    return VarLen(dtype, inner, partitions=partitions, key=f"{name}/ragged_flat_values")


def parse_features(
    features_json: dict, labels: Callable[[str], list[str] | None] | None = None
) -> TfdsFeatures:
    """features.json (parsed) -> the spec, every leaf, and the tree.

    Parameters
    ----------
    features_json : dict
        The parsed features.json of a prepared TFDS dataset.
    labels : callable, optional
        labels(prefix) -> the class names TFDS saved in ``{prefix}.labels.txt``, or None.
    """
    reader = _Reader(labels or (lambda _: None))
    tree = reader.node(features_json, "", (), "")
    if not isinstance(tree, dict):  # a dataset of one feature, not a FeaturesDict
        tree = {"": tree}
    spec: dict[str, Feature] = {}
    for name, leaf in reader.leaves.items():
        if leaf.spec is not None:
            spec[name] = leaf.spec
        else:
            spec.update(leaf.wire)  # unknown connectors: none yet (the caller surveys)
    return TfdsFeatures(spec, reader.leaves, tree, reader.sequences)
