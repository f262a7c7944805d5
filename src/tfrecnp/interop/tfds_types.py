"""The features TFDS connectors need beyond the spec language's own: each decodes the wire
features TFDS writes for one connector (zlib tensors, frames of images, 64-bit unsigned
values, float images, tensor lists, tensors and frames joined from several wire features)
into the arrays `tfds.as_numpy` gives. `tfds_features` picks them while reading
features.json; a spec saved as JSON names them by type and finds them here."""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from .._util.offsets import offsets_of
from ..errors import SchemaError
from ..example.columns import BytesColumn, Ragged
from ..example.image import Image
from ..example.spec import Feature, FixedLen, Raw, VarLen, register_feature_type

__all__ = [
    "Bits64",
    "FloatImage",
    "Frames",
    "Joined",
    "NestedFrames",
    "ShapedTensor",
    "TensorList",
    "ZlibTensor",
    "json_shape",
]


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


def json_shape(shape: Any) -> list[int]:
    """A shape with its unknown dimensions (None) as -1, as features.json and tn.Raw write them."""
    return [-1 if d is None else d for d in shape]


def _tensor_json(feature: Any) -> dict:
    """The JSON of an encoded TFDS tensor feature: its type, dtype, shape and encoding."""
    return {
        "type": feature.type_name,
        "dtype": feature.dtype,
        "shape": json_shape(feature.shape),
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
        return {"type": self.type_name, "shape": json_shape(self.shape)}

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
