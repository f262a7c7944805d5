"""Hugging Face `datasets`: Features <-> spec, and a ``datasets.Dataset`` as columns.

Both directions go through Arrow (`tfrecnp.interop.arrow`), column by column, never a
Python loop per record: a datasets.Dataset is an Arrow table (memory-mapped from its
cache), and the table of a tfrecnp Dataset is one too.

Features -> spec (what `tn.write` writes an HF dataset as, and reads it back with):

=================================  ============================================
HF feature                         spec / column
=================================  ============================================
Value (ints, floats, bool)         FixedLen((), dtype)
Value("string" / "large_string")   tn.Text() (str)
Value("binary" / "large_binary")   bytes (tn.Bytes)
ClassLabel                         FixedLen((), "int64") (the names are not kept)
Image                              its encoded bytes, read back with tn.Image()
List / Sequence / LargeList        VarLen(dtype), or FixedLen((k,)) with a length
Array2D .. Array5D                 FixedLen(shape) (first dim None: VarLen of the rest)
=================================  ============================================

Refused by name (no Example feature holds them): Audio, Video, Pdf, Nifti, Json,
Translation, TranslationVariableLanguages, nested dicts of features, lists of lists.

spec -> Features (`features_of_spec`, for `Dataset.to_hf`): FixedLen of 2..5 axes ->
ArrayND, of one axis -> List(length=k), scalars -> Value, bytes -> Value("large_binary")
(or "large_string" for tn.Text and the features named in text=), VarLen -> LargeList,
tn.Image with size= -> Array3D of its pixels; without size= (its images have no one
shape) -> Image(mode= its channels) holding the records' encoded bytes, which HF decodes
with Pillow when read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .._util.optional import require
from ..errors import SchemaError
from ..example.columns import Ragged
from ..example.image import Image
from ..example.spec import FixedLen, Raw, VarLen
from ..example.text import Text
from .arrow import from_arrow

__all__ = [
    "encoded_images",
    "features_of_spec",
    "hf_columns",
    "is_hf_dataset",
    "spec_of_features",
    "to_hf",
]

IMAGE_MODES = {1: "L", 3: "RGB", 4: "RGBA"}  # tn.Image channels -> the PIL mode HF decodes to
REFUSED = ("Audio", "Video", "Pdf", "Nifti", "Json", "Translation", "Mesh", "BioSequence")


def _datasets() -> Any:
    return require("datasets", "hf")


def is_hf_dataset(obj: Any) -> bool:
    """Whether obj is a ``datasets.Dataset`` (without importing datasets)."""
    return (type(obj).__module__ or "").startswith("datasets.") and hasattr(obj, "features")


# --- spec -> Features ----------------------------------------------------------------------


def features_of_spec(
    spec: Mapping[str, Any], *, text: Iterable[str] | bool = (), labels: Mapping | None = None
) -> Any:
    """The ``datasets.Features`` of a spec's columns (see the module docstring).
    labels: {feature: class names} made ClassLabel (a TFDS folder's ds.features gives them)."""
    hf = _datasets()
    strings = set(spec) if text is True else set(text or ())
    out = {}
    for name, feature in spec.items():
        if labels and name in labels:
            out[name] = hf.ClassLabel(names=list(labels[name]))
        else:
            out[name] = _hf_feature(hf, name, feature, name in strings)
    return hf.Features(out)


def _hf_feature(hf: Any, name: str, feature: Any, text: bool) -> Any:
    if isinstance(feature, Text):  # its bytes' layout, as strings
        return _hf_feature(hf, name, feature.decode_as(), True)
    if isinstance(feature, Image):
        if feature.size is None:
            if feature.dtype != "uint8":
                raise SchemaError(
                    f"feature {name!r} is a tn.Image of {feature.dtype} pixels without size=: "
                    "an HF Image() gives 8-bit images; read it with dtype='uint8', or give "
                    "size=(h, w) to get an Array3D of these pixels"
                )
            return hf.Image(mode=IMAGE_MODES.get(feature.channels))
        h, w = feature.size
        return hf.Array3D((h, w, feature.channels), np.dtype(feature.dtype).name)
    shape: tuple = ()
    if isinstance(feature, Raw):
        if feature.shape is None or -1 in feature.shape:
            raise SchemaError(
                f"feature {name!r} is a tn.Raw without a fixed shape; give shape= to map it"
            )
        shape, dtype = feature.shape, feature.dtype
    elif isinstance(feature, (FixedLen, VarLen)):
        dtype = feature.dtype
        shape = feature.shape if isinstance(feature, FixedLen) else ()
    else:
        raise SchemaError(f"feature {name!r} ({feature!r}) has no Hugging Face feature here")
    value = hf.Value(
        ("large_string" if text else "large_binary") if dtype == "bytes" else np.dtype(dtype).name
    )
    if isinstance(feature, VarLen):
        if feature.ragged_rank != 1:
            raise SchemaError(f"feature {name!r}: a VarLen of several ragged levels has no map")
        inner = value
        for size in reversed(tuple(feature.inner_shape or ())):
            inner = hf.List(inner, length=size)
        return hf.LargeList(inner)
    if len(shape) == 0:
        return value
    if len(shape) == 1 or dtype == "bytes":
        for size in reversed(shape):
            value = hf.List(value, length=size)
        return value
    if len(shape) > 5:
        raise SchemaError(f"feature {name!r} has {len(shape)} axes; HF arrays have 2 to 5")
    kind = getattr(hf, f"Array{len(shape)}D")
    return kind(tuple(shape), np.dtype(dtype).name)


def to_hf(
    table: Any, spec: Mapping[str, Any], *, text: Iterable[str] | bool = (), labels: Any = None
) -> Any:
    """An Arrow table of a spec's columns as an in-memory ``datasets.Dataset`` with the
    Features of `features_of_spec` (one cast of the table, no loop per record)."""
    hf = _datasets()
    from datasets.table import table_cast

    features = features_of_spec(spec, text=text, labels=labels)
    for name in encoded_images(spec):
        table = table.set_column(
            table.column_names.index(name), name, _image_structs(table.column(name))
        )
    table = table_cast(table, features.arrow_schema)
    return hf.Dataset(table, info=hf.DatasetInfo(features=features))


def encoded_images(spec: Mapping[str, Any]) -> list[str]:
    """The tn.Image features without size= that `to_hf` gives as HF ``Image()``: the table
    it takes holds their encoded bytes (read as tn.Bytes()), which HF stores as they are and
    decodes (with Pillow) when a row is read; no pixels are decoded or encoded again."""
    return [
        name
        for name, f in spec.items()
        if isinstance(f, Image) and f.size is None and f.dtype == "uint8"
    ]


def _image_structs(column: Any) -> Any:
    """A column of encoded images (binary) as HF Image's storage: {bytes, path: null}."""
    pa = require("pyarrow", "arrow")
    chunks = []
    for chunk in column.chunks:
        chunks.append(
            pa.StructArray.from_arrays(
                [chunk.cast(pa.binary()), pa.nulls(len(chunk), pa.string())],
                names=["bytes", "path"],
            )
        )
    return pa.chunked_array(chunks, pa.struct([("bytes", pa.binary()), ("path", pa.string())]))


# --- Features -> spec; an HF dataset as columns --------------------------------------------


def spec_of_features(features: Mapping[str, Any]) -> dict[str, Any]:
    """The spec that reads back what `tn.write` writes for these Features."""
    return {name: _spec_feature(name, f) for name, f in features.items()}


def _spec_feature(name: str, f: Any) -> Any:
    kind = type(f).__name__
    if kind == "Value":
        dtype = str(f.dtype)
        if dtype in ("string", "large_string"):
            return Text()
        if dtype in ("binary", "large_binary"):
            return FixedLen((), "bytes")
        try:
            return FixedLen((), np.dtype(dtype).name)
        except TypeError:
            raise SchemaError(_refused(name, f)) from None
    if kind == "ClassLabel":
        return FixedLen((), "int64")
    if kind == "Image":
        return Image()
    if kind in ("List", "Sequence", "LargeList"):
        inner = _spec_feature(name, f.feature)
        length = getattr(f, "length", -1)
        if isinstance(inner, FixedLen) and length not in (None, -1):
            return FixedLen((length, *inner.shape), inner.dtype)
        if isinstance(inner, FixedLen):
            return VarLen(inner.dtype, inner.shape)
        if isinstance(inner, Text) and not inner.ragged:  # lists of strings
            return Text((length if length not in (None, -1) else -1, *inner.shape))
        raise SchemaError(_refused(name, f, "a list of variable lists"))
    if kind.startswith("Array") and kind.endswith("D"):
        shape = tuple(f.shape)
        if shape[0] is None:
            return VarLen(str(f.dtype), shape[1:])
        return FixedLen(shape, str(f.dtype))
    raise SchemaError(_refused(name, f))


def _refused(name: str, f: Any, what: str = "") -> str:
    kind = type(f).__name__ if not isinstance(f, dict) else "a dict of features"
    what = what or (f"an HF {kind}" if kind in REFUSED else kind)
    return (
        f"column {name!r} is {what}, which no tf.train.Example feature holds; drop it "
        f"(ds.remove_columns([{name!r}])) or cast it to numbers, bytes or lists first"
    )


def hf_columns(hf_ds: Any) -> dict[str, Any]:
    """A ``datasets.Dataset`` as columns `tn.write` takes: its Arrow table (memory-mapped,
    the numbers zero-copy; a selected / shuffled one gathered once), images as their
    encoded bytes, ArrayND as dense arrays."""
    features = hf_ds.features
    spec = spec_of_features(features)  # refuses what cannot be written, by name
    table = hf_ds.with_format("arrow")[:]
    out = {}
    for name in table.column_names:
        f, want = features[name], spec[name]
        column = table.column(name)
        if isinstance(want, Image):
            column = column.combine_chunks()
            if column.field("bytes").null_count:
                raise SchemaError(
                    f"column {name!r} holds images stored by path only; load their bytes "
                    f"first (ds.cast_column({name!r}, datasets.Image(decode=True)) and save)"
                )
            column = column.field("bytes")
        pa_table = table.select([name]).set_column(0, name, column)
        col = from_arrow(pa_table)[name]
        if type(f).__name__.startswith("Array") and isinstance(col, Ragged):
            col = _dense(col, tuple(f.shape), len(table))
        out[name] = col
    return out


def _dense(col: Ragged, shape: tuple, n: int) -> Any:
    """An ArrayND column (lists of lists in its storage) as [n, *shape], or Ragged rows of
    shape[1:] when its first dimension varies."""
    flat = col
    while isinstance(flat, Ragged):
        flat = flat.values
    flat = np.asarray(flat)
    if shape[0] is None:
        rows = col.row_splits
        return Ragged.from_row_splits(flat.reshape(-1, *shape[1:]), rows, validate=False)
    return flat.reshape(n, *shape)
