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

import math
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._util.offsets import offsets_of
from ..errors import SchemaError
from .columns import BytesColumn, Ragged
from .image import Image
from .spec import Feature, FixedLen, Raw, VarLen, register_feature_type

__all__ = [
    "Bits64",
    "FloatImage",
    "Frames",
    "Joined",
    "NestedFrames",
    "ShapedTensor",
    "TensorList",
    "TfdsFeatures",
    "TfdsLeaf",
    "ZlibTensor",
    "parse_features",
]

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
            return Ragged(values, offsets_of(sizes // max(row_bytes, 1)))
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
        flat, splits, frame_where = _flattened(column, self.length, where)
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


def _json_shape(shape: Any) -> list[int]:
    """A shape with its unknown dimensions (None) as -1, as features.json and tn.Raw write them."""
    return [-1 if d is None else d for d in shape]


def _tensor_json(feature: Any) -> dict:
    """The JSON of an encoded TFDS tensor feature: its type, dtype, shape and encoding."""
    return {
        "type": feature.type_name,
        "dtype": feature.dtype,
        "shape": _json_shape(feature.shape),
        "encoding": feature.encoding,
    }


def _flattened(
    column: Any, length: int | None, where: Callable[[int], tuple[str, int]] | None
) -> tuple[Any, np.ndarray, Callable[[int], tuple[str, int]]]:
    """A sequence of bytes values (a Ragged, or FixedLen((length,), "bytes"): an object
    array [N, length]) as (its values in one column, row splits, where(k) of value k: the
    path and record of its row)."""
    if isinstance(column, Ragged):
        flat, splits = column.values, np.asarray(column.row_splits, np.int64)
    else:
        flat = BytesColumn.from_list(list(np.asarray(column).reshape(-1)))
        splits = np.arange(len(column) + 1, dtype=np.int64) * (length or 0)

    def value_where(k: int) -> tuple[str, int]:
        row = int(np.searchsorted(splits, k, side="right")) - 1
        return where(row) if where is not None else ("", row)

    return flat, splits, value_where


@register_feature_type
class Bits64(Feature):
    """A TFDS uint64 Tensor / Scalar: TFDS stores the values' bits in an int64 list ->
    uint64 values with the same bits (tf.bitcast, as tfds.as_numpy gives them)."""

    type_name = "TfdsUint64"

    def __init__(self, base: FixedLen | VarLen):
        self.base = base

    @property
    def kind(self) -> int:
        return 3

    def decode_as(self) -> Feature:
        return self.base

    def finish(
        self, column: Any, *, name: str = "", where: Callable[[int], tuple[str, int]] | None = None
    ) -> Any:
        if isinstance(column, Ragged):
            return Ragged(np.asarray(column.values).view(np.uint64), column.row_splits)
        return np.asarray(column).view(np.uint64)

    def column_as(self) -> Feature:
        """The plain feature whose column this one's finished column is (for layouts)."""
        if isinstance(self.base, VarLen):
            return VarLen("uint64", self.base.inner_shape)
        return FixedLen(self.base.shape, "uint64")

    def to_json(self) -> dict:
        return {"type": self.type_name, "base": self.base.to_json()}

    @classmethod
    def from_json(cls, obj: dict) -> Bits64:
        base = obj["base"]
        return cls((VarLen if base["type"] == "VarLen" else FixedLen).from_json(base))

    def spell(self) -> str:
        return f"Bits64({self.base.spell()})"


@register_feature_type
class FloatImage(Feature):
    """A TFDS Image(dtype=float32): one channel of float32 pixels, stored by TFDS as a
    4-channel uint8 PNG of their bytes -> an ndarray [N, h, w, 1] float32 (the PNG
    decoded with 4 channels, then its bytes read as float32, as TFDS's tf.bitcast does)."""

    type_name = "TfdsFloatImage"

    def __init__(self, shape: Any = (None, None, 1)):
        self.shape = tuple(None if d is None or int(d) < 0 else int(d) for d in shape)

    @property
    def kind(self) -> int:
        return 1

    @property
    def dtype(self) -> str:
        return "float32"

    def decode_as(self) -> Feature:
        return FixedLen((), "bytes")

    def finish(
        self, column: Any, *, name: str = "", where: Callable[[int], tuple[str, int]] | None = None
    ) -> Any:
        with warnings.catch_warnings():  # its advice (size=) does not apply: said below
            warnings.filterwarnings("ignore", "images of a batch differ in size")
            pixels = Image(4, dct_method="INTEGER_FAST").finish(column, name=name, where=where)
        if pixels.dtype == object:  # images of several sizes: one array each
            warnings.warn(
                f"float32 images {name!r} of a batch differ in size; they come back as an "
                "object array of [h, w, 1] arrays (ds.select leaves them out of a batch that "
                "needs one array)",
                stacklevel=2,
            )
            out = np.empty(len(pixels), object)
            out[:] = [_as_float(p) for p in pixels]
            return out
        if len(pixels) == 0 and None not in self.shape:
            return np.empty((0, *self.shape), np.float32)
        return _as_float(pixels)

    def column_as(self) -> Feature | None:
        """The plain feature whose column this one's finished column is (for layouts)."""
        return None if None in self.shape else FixedLen(self.shape, "float32")

    def to_json(self) -> dict:
        return {"type": self.type_name, "shape": _json_shape(self.shape)}

    @classmethod
    def from_json(cls, obj: dict) -> FloatImage:
        return cls(obj.get("shape", (None, None, 1)))

    def spell(self) -> str:
        return f"FloatImage({self.shape!r})"


def _as_float(pixels: np.ndarray) -> np.ndarray:
    """[..., 4] uint8 -> [..., 1] float32 of the same bytes (little-endian, as TFDS wrote)."""
    return np.ascontiguousarray(pixels).view("<f4").astype(np.float32, copy=False)


@register_feature_type
class TensorList(Feature):
    """A TFDS Sequence of Tensor(encoding="bytes" / "zlib"): one bytes value per element
    (zlib-compressed for "zlib") holding the element's raw array bytes -> a Ragged
    [N, None, *shape] (an ndarray [N, length, *shape] for a Sequence of fixed length), as
    TFDS decodes each element with decode_raw and stacks them; an element shape whose first
    dimension is unknown gives a Ragged of Ragged."""

    type_name = "TfdsTensorList"

    def __init__(self, dtype: Any, shape: Any, encoding: str, length: int | None = None):
        self.dtype = np.dtype(dtype).name
        self.shape = tuple(None if d is None or int(d) < 0 else int(d) for d in shape)
        if None in self.shape[1:]:
            raise ValueError(f"TensorList shape {self.shape}: only the first may be unknown")
        if encoding not in ("bytes", "zlib"):
            raise ValueError(f"TensorList encoding must be 'bytes' or 'zlib', not {encoding!r}")
        self.encoding = encoding
        self.length = None if length is None or length < 0 else int(length)

    @property
    def kind(self) -> int:
        return 1

    def decode_as(self) -> Feature:
        return VarLen("bytes") if self.length is None else FixedLen((self.length,), "bytes")

    def finish(
        self, column: Any, *, name: str = "", where: Callable[[int], tuple[str, int]] | None = None
    ) -> Any:
        flat, splits, element_where = _flattened(column, self.length, where)
        zipped = ZlibTensor(self.dtype, self.shape) if self.encoding == "zlib" else None
        if zipped is not None:
            values = zipped.finish(flat, name=name, where=element_where)
        else:
            values = _raw_rows(flat, self.dtype, self.shape, name, element_where)
        if self.length is not None and not isinstance(values, Ragged):
            return values.reshape(len(splits) - 1, self.length, *values.shape[1:])
        return Ragged(values, splits)

    def column_as(self) -> Feature | None:
        """The plain feature whose column this one's finished column is (for layouts)."""
        if None in self.shape:
            return None
        if self.length is not None:
            return FixedLen((self.length, *self.shape), self.dtype)
        return VarLen(self.dtype, self.shape)

    def to_json(self) -> dict:
        return {**_tensor_json(self), "length": self.length}

    @classmethod
    def from_json(cls, obj: dict) -> TensorList:
        return cls(obj["dtype"], obj["shape"], obj["encoding"], obj.get("length"))

    def spell(self) -> str:
        return f"TensorList({self.dtype!r}, {self.shape!r}, {self.encoding!r})"


def _raw_rows(
    flat: BytesColumn, dtype: str, shape: tuple, name: str, where: Callable[[int], tuple]
) -> Any:
    """Raw array bytes per value -> [n, *shape] (a Ragged when shape[0] is unknown)."""
    item = np.dtype(dtype).itemsize
    row = math.prod(d for d in shape[1:] if d is not None) if shape else 1
    unit = item * (row if shape and shape[0] is None else math.prod(shape))
    sizes = np.diff(np.asarray(flat.offsets, np.int64))
    bad = np.flatnonzero(sizes % unit if shape and shape[0] is None else sizes != unit)
    if len(bad):
        path, record = where(int(bad[0]))
        raise SchemaError(
            f"feature {name!r} at {path} record {record}: a {dtype} tensor of shape "
            f"{shape} cannot be {int(sizes[bad[0]])} bytes; the record is damaged, or "
            "features.json does not describe it"
        )
    data = np.frombuffer(memoryview(flat.data)[: int(flat.offsets[-1])], dtype)
    data = data[int(flat.offsets[0]) // item :] if len(flat) else data[:0]
    if shape and shape[0] is None:
        return Ragged(data.reshape(-1, *shape[1:]), offsets_of(sizes // unit))
    return data.reshape(len(flat), *shape)


class Joined(Feature):
    """A TFDS feature read through several wire features of the record at once, which the
    decoder reads as `reads(name)` and the TFDS source joins into one column (`join`):
    no tfrecnp decoder reads it alone."""

    @property
    def kind(self) -> int:
        return 1

    def reads(self, name: str) -> dict[str, Feature]:
        """The wire features read for the column `name`."""
        raise NotImplementedError

    def join(
        self, name: str, cols: dict[str, Any], where: Callable[[int], tuple[str, int]] | None
    ) -> Any:
        """The column `name`, made of the columns of `reads(name)` in cols; where(row) ->
        (path, record) names a row in errors."""
        raise NotImplementedError

    def column_as(self) -> Feature | None:
        return None


@register_feature_type
class ShapedTensor(Joined):
    """A TFDS Tensor of several unknown dimensions (encoding "bytes" or "zlib"): its shape
    in ``{name}/shape`` and its raw (or zlib-compressed) array bytes in ``{name}/value``
    -> an object array of one ndarray per record, each of its own shape (tfds.as_numpy's)."""

    type_name = "TfdsShapedTensor"

    def __init__(self, dtype: Any, shape: Any, encoding: str):
        self.dtype = np.dtype(dtype).name
        self.shape = tuple(None if d is None or int(d) < 0 else int(d) for d in shape)
        self.encoding = encoding

    def reads(self, name: str) -> dict[str, Feature]:
        return {f"{name}/shape": VarLen("int64"), f"{name}/value": FixedLen((), "bytes")}

    def join(
        self, name: str, cols: dict[str, Any], where: Callable[[int], tuple[str, int]] | None
    ) -> Any:
        shapes, values = cols[f"{name}/shape"], cols[f"{name}/value"]
        out = np.empty(len(values), object)
        for i in range(len(values)):
            at = f"record {i} of the batch" if where is None else "{} record {}".format(*where(i))
            blob = values[i]
            if self.encoding == "zlib":
                try:
                    blob = zlib.decompress(blob)
                except zlib.error as e:
                    raise SchemaError(
                        f"feature {name!r} at {at}: the zlib-compressed tensor does not "
                        f"decompress ({e}); the record is damaged, or the feature is not "
                        "Tensor(encoding='zlib') (check features.json)"
                    ) from None
            shape = tuple(int(d) for d in shapes[i])
            want = tuple(d if d is not None else shape[k] for k, d in enumerate(self.shape))
            item = np.dtype(self.dtype).itemsize
            if len(shape) != len(self.shape) or len(blob) != math.prod(want) * item:
                raise SchemaError(
                    f"feature {name!r} at {at}: {len(blob)} bytes of shape {shape} are not "
                    f"a {self.dtype} tensor of shape {self.shape}; the record is damaged, or "
                    "features.json does not describe it"
                )
            out[i] = np.frombuffer(blob, self.dtype).reshape(want)
        return out

    def to_json(self) -> dict:
        return _tensor_json(self)

    @classmethod
    def from_json(cls, obj: dict) -> ShapedTensor:
        return cls(obj["dtype"], obj["shape"], obj["encoding"])

    def spell(self) -> str:
        return f"ShapedTensor({self.dtype!r}, {self.shape!r}, {self.encoding!r})"


@register_feature_type
class NestedFrames(Joined):
    """A TFDS Sequence of Sequences (of ...) of images: the encoded images of a record in
    ``{name}/ragged_flat_values``, one ``{name}/ragged_row_lengths_{k}`` per inner level
    -> a Ragged of Ragged (levels deep) of images, each decoded as `image` decodes it."""

    type_name = "TfdsNestedFrames"

    def __init__(self, image: Image, levels: int):
        self.image = image
        self.levels = int(levels)

    def reads(self, name: str) -> dict[str, Feature]:
        parts = [
            VarLen.RowLengths(f"{name}/ragged_row_lengths_{k}") for k in range(self.levels - 1)
        ]
        return {name: VarLen("bytes", partitions=parts, key=f"{name}/ragged_flat_values")}

    def join(
        self, name: str, cols: dict[str, Any], where: Callable[[int], tuple[str, int]] | None
    ) -> Any:
        def images(col: Any) -> Any:
            if isinstance(col, Ragged):
                return Ragged(images(col.values), col.row_splits)
            return self.image.finish(col, name=name)

        return images(cols[name])

    def to_json(self) -> dict:
        return {"type": self.type_name, "image": self.image.to_json(), "levels": self.levels}

    @classmethod
    def from_json(cls, obj: dict) -> NestedFrames:
        return cls(Image.from_json(obj["image"]), obj["levels"])

    def spell(self) -> str:
        return f"NestedFrames({self.image.spell()}, levels={self.levels})"


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
            leaf.spec = Raw(dtype, tuple(_json_shape(shape)))
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
