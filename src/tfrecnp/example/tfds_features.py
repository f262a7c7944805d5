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
Text, every dimension known                (dtype cast as TFDS casts: bool, uint8, float64)
the same, the first dimension unknown      -> VarLen(dtype, inner_shape) (a Ragged column)
Tensor(encoding="bytes")                   one bytes value of raw array bytes -> Raw
Tensor(encoding="zlib")                    the same, zlib-compressed -> `ZlibTensor`
Image (uint8, uint16; JPEG, PNG)           one encoded image -> tn.Image(channels, dtype)
Sequence(Sequence(...))                    flat values + ragged_row_lengths_k -> VarLen with
                                           RowLengths partitions (a Ragged of Ragged)
Video, Sequence(Image)                     one encoded image per frame -> `Frames`
Audio (no file encoding)                   a flat int list -> VarLen
Translation / TranslationVariableLanguages FeaturesDicts of Text / Sequence(Text)
=========================================  ===================================================

Nested ``FeaturesDict`` keys are flattened with "/" (``objects/bbox``), as TFDS names them in
the record and as a batch's columns are named: one flat dict of columns is what every
tfrecnp sink and adapter takes. A leaf this module cannot decode (a custom connector, a
Tensor of several unknown dimensions, float32 images, a Sequence of
encoding="bytes" / "zlib" tensors or of Sequences of images) is
read as its wire features, under their own keys, and listed in `TfdsFeatures.left` with the
reason, so the rest of the dataset opens.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import SchemaError
from .columns import BytesColumn, Ragged
from .image import Image
from .spec import Feature, FixedLen, Raw, VarLen, register_feature_type

__all__ = ["Frames", "TfdsFeatures", "TfdsLeaf", "ZlibTensor", "parse_features"]

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


# --- the features that need finishing ---------------------------------------------------


@register_feature_type
class ZlibTensor(Feature):
    """A TFDS Tensor(encoding="zlib"): one zlib-compressed bytes value of the array's raw
    bytes per record -> an ndarray [N, *shape] (a Ragged [N, None, *shape[1:]] when the
    first dimension is unknown), as tf.io.decode_compressed + decode_raw give it."""

    type_name = "TfdsZlibTensor"

    def __init__(self, dtype: Any, shape: Any = ()):
        self.dtype = np.dtype(dtype).name
        self.shape = tuple(-1 if d is None else int(d) for d in shape)
        if -1 in self.shape[1:]:
            raise ValueError(f"ZlibTensor shape {self.shape}: only the first may be unknown")

    @property
    def kind(self) -> int:
        return 1

    def decode_as(self) -> Feature:
        return FixedLen((), "bytes")

    def finish(
        self, column: Any, *, name: str = "", where: Callable[[int], tuple[str, int]] | None = None
    ) -> Any:
        data, offsets = column.data, column.offsets
        rows = []
        for i in range(len(column)):
            blob = data[int(offsets[i]) : int(offsets[i + 1])]
            try:
                rows.append(zlib.decompress(blob))
            except zlib.error as e:
                at = "" if where is None else " at {} record {}".format(*where(i))
                raise SchemaError(
                    f"feature {name!r}{at}: the zlib-compressed tensor does not decompress "
                    f"({e}); the record is damaged, or the feature is not "
                    "Tensor(encoding='zlib') (check features.json)"
                ) from None
        raw = Raw(self.dtype, self.shape)
        row_bytes = math.prod(raw.row_shape) * raw.itemsize
        sizes = np.fromiter(map(len, rows), np.int64, len(rows))
        if raw.ragged:
            if np.any(sizes % max(row_bytes, 1)):
                raise SchemaError(f"feature {name!r}: tensor bytes are not whole rows of {raw}")
            values = np.frombuffer(b"".join(rows), self.dtype).reshape(-1, *raw.row_shape)
            splits = np.zeros(len(rows) + 1, np.int64)
            np.cumsum(sizes // max(row_bytes, 1), out=splits[1:])
            return Ragged(values, splits)
        if np.any(sizes != row_bytes):
            i = int(np.flatnonzero(sizes != row_bytes)[0])
            raise SchemaError(
                f"feature {name!r}: a tensor of shape {self.shape} {self.dtype} is "
                f"{row_bytes} bytes, record's is {int(sizes[i])}"
            )
        return np.frombuffer(b"".join(rows), self.dtype).reshape(len(rows), *self.shape)

    def column_as(self) -> Feature:
        """The plain feature whose column this one's finished column is (for layouts)."""
        return Raw(self.dtype, self.shape)

    def to_json(self) -> dict:
        return {"type": self.type_name, "dtype": self.dtype, "shape": list(self.shape)}

    @classmethod
    def from_json(cls, obj: dict) -> ZlibTensor:
        return cls(obj["dtype"], obj.get("shape", ()))

    def spell(self) -> str:
        return f"ZlibTensor({self.dtype!r}, {self.shape!r})"


@register_feature_type
class Frames(Feature):
    """A TFDS Video or Sequence(Image): one encoded image per frame, a bytes list per
    record -> a Ragged [N, None, h, w, c] of frames (an ndarray [N, length, h, w, c] when
    the length is fixed), each frame decoded as `image` decodes it."""

    type_name = "TfdsFrames"

    def __init__(self, image: Image, length: int | None = None, frame_shape: Any = None):
        self.image = image
        self.length = None if length is None or length < 0 else int(length)
        self.frame_shape = None if frame_shape is None else tuple(frame_shape)

    @property
    def kind(self) -> int:
        return 1

    def decode_as(self) -> Feature:
        if self.length is not None:
            return FixedLen((self.length,), "bytes")
        return VarLen("bytes")

    def finish(
        self, column: Any, *, name: str = "", where: Callable[[int], tuple[str, int]] | None = None
    ) -> Any:
        if isinstance(column, Ragged):
            flat, splits = column.values, column.row_splits
        else:  # FixedLen((length,), "bytes"): an object array [N, length]
            flat = BytesColumn.from_list(list(np.asarray(column).reshape(-1)))
            splits = np.arange(len(column) + 1, dtype=np.int64) * (self.length or 0)

        def frame_where(k: int) -> tuple[str, int]:
            row = int(np.searchsorted(splits, k, side="right")) - 1
            return where(row) if where is not None else ("", row)

        frames = self.image.finish(flat, name=name, where=frame_where)
        if len(frames) == 0 and self.frame_shape is not None and None not in self.frame_shape:
            frames = np.empty((0, *self.frame_shape), self.image.dtype)
        if self.length is not None and frames.dtype != object:
            return frames.reshape(len(splits) - 1, self.length, *frames.shape[1:])
        return Ragged(frames, np.asarray(splits, np.int64))

    def column_as(self) -> Feature | None:
        """The plain feature whose column this one's finished column is (for layouts);
        None when the frames' size is not fixed."""
        shape = self.frame_shape
        if shape is None or None in shape:
            return None
        if self.length is not None:
            return FixedLen((self.length, *shape), self.image.dtype)
        return VarLen(self.image.dtype, shape)

    def to_json(self) -> dict:
        return {
            "type": self.type_name,
            "image": self.image.to_json(),
            "length": self.length,
            "frame_shape": None if self.frame_shape is None else list(self.frame_shape),
        }

    @classmethod
    def from_json(cls, obj: dict) -> Frames:
        return cls(Image.from_json(obj["image"]), obj.get("length"), obj.get("frame_shape"))

    def spell(self) -> str:
        return f"Frames({self.image.spell()}, length={self.length!r})"


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
                self.tensor(name, seq, _dims(t.get("shape")), dtype, encoding, kind)
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
        elif image is None:
            leaf.reason = f"{dtype} images (tn.Image decodes uint8 / uint16 pixels)"
        elif len(seq) > 1:
            leaf.reason = "a Sequence of Sequences of images"
        else:
            leaf.spec = Frames(image, seq[0], shape) if seq else image
        if leaf.spec is None:
            leaf.wire = {name: VarLen("bytes") if seq else FixedLen((), "bytes")}
        return kind

    def tensor(
        self, name: str, seq: tuple, shape: tuple, dtype: str, encoding: str, kind: str
    ) -> TfdsLeaf:
        full = (*seq, *shape)
        leaf = TfdsLeaf(name, kind, full, dtype)
        if encoding not in ("none", ""):
            leaf.detail = f"encoding={encoding}"
        self.leaves[name] = leaf
        wire = (
            "bytes" if dtype == "bytes" else ("float32" if dtype.startswith("float") else "int64")
        )
        unknown = full.count(None)
        if encoding in ("none", ""):
            if dtype == "uint64":
                leaf.reason = "uint64 values (TFDS stores their bits as int64)"
            elif unknown == 0:
                leaf.spec = FixedLen(full, dtype)
            elif unknown == 1 and full[0] is None:
                leaf.spec = VarLen(dtype, full[1:]) if dtype != "bytes" or not full[1:] else None
                if leaf.spec is None:
                    leaf.reason = "a list of strings of more than one dimension"
            elif unknown == 1:
                leaf.reason = f"an unknown dimension that is not the first, in shape {full}"
            elif len(seq) > 1:
                leaf.spec = _nested(name, dtype, full[len(seq) :], len(seq))
                if leaf.spec is not None:
                    return leaf
                leaf.reason = (
                    "a Sequence of Sequences (flat values + ragged_row_lengths) of "
                    f"{dtype} {full[len(seq) :]}: no nested Ragged column reads it"
                )
                leaf.wire = {f"{name}/ragged_flat_values": VarLen(wire)}
                leaf.wire.update(
                    {f"{name}/ragged_row_lengths_{k}": VarLen("int64") for k in range(len(seq) - 1)}
                )
                return leaf
            else:
                leaf.reason = f"shape {full} has several unknown dimensions"
        elif seq:
            leaf.reason = f"a Sequence of encoding={encoding} tensors"
        elif shape.count(None) > 1:
            leaf.reason = f"encoding={encoding} with several unknown dimensions (shape + value)"
            leaf.wire = {f"{name}/shape": VarLen("int64"), f"{name}/value": FixedLen((), "bytes")}
            return leaf
        elif encoding == "bytes":
            if None in shape[1:]:
                leaf.reason = f"an unknown dimension that is not the first, in shape {shape}"
            else:
                leaf.spec = Raw(dtype, tuple(-1 if d is None else d for d in shape))
        elif encoding == "zlib":
            if None in shape[1:]:
                leaf.reason = f"an unknown dimension that is not the first, in shape {shape}"
            else:
                leaf.spec = ZlibTensor(dtype, shape)
        else:
            leaf.reason = f"Tensor encoding {encoding!r}"
        if leaf.spec is None and not leaf.wire:
            if encoding in ("none", ""):
                leaf.wire = {name: VarLen(wire)}
            else:
                leaf.wire = {name: VarLen("bytes")}
        return leaf


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
    return TfdsFeatures(spec, reader.leaves, tree)
