"""tn.Text: a bytes_list of UTF-8 read as `str`, so every door (NumPy, Arrow, Parquet,
pandas, polars, DuckDB, Hugging Face) speaks text as text.

The compiled core reads the feature as bytes (`decode_as`), as it reads tn.Bytes(); `finish`
turns each batch's bytes into `str` at once: the batch's whole buffer is decoded in one call
and cut at the values' offsets (char offsets from byte offsets by counting UTF-8
continuation bytes), so no Python loop runs per record. A value that is not UTF-8 is a
SchemaError naming file, record and feature, or U+FFFD with errors="replace".

Columns: Text() -> an object ndarray [N] of str; Text(shape=(k,)) -> [N, k]; Text(None)
(any number of values) -> a Ragged of str. Arrow: ``large_string`` (lists of it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import SchemaError
from .columns import BytesColumn, LazyBytes, Ragged
from .spec import (
    KIND_BYTES,
    Feature,
    FixedLen,
    VarLen,
    as_shape,
    default_from_json,
    default_to_json,
    register_feature_type,
)

__all__ = ["TEXT_ERRORS", "Text", "as_text", "looks_like_text", "strings_of"]

TEXT_ERRORS = ("strict", "replace")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # never in text a person wrote
PRINTABLE_SHARE = 0.98  # inference: at least this share of characters printable or space


@register_feature_type
class Text(Feature):
    """UTF-8 text per record -> `str` values.

    Parameters
    ----------
    shape : () for one string per record (a caption, a file name); (k, ...) for exactly
        that many; None (or a -1 first) for any number per record -> a Ragged of str.
    default : the string a record without the feature reads as (fixed shapes only; without
        one a missing feature is a SchemaError, as for tn.Bytes()).
    errors : "strict": a value that is not UTF-8 is a SchemaError naming file, record and
        feature; "replace": its bad bytes read as U+FFFD, as bytes.decode(errors="replace").
    """

    type_name = "Text"

    def __init__(self, shape: Any = (), *, default: Any = None, errors: str = "strict"):
        if errors not in TEXT_ERRORS:
            raise ValueError(f"Text errors must be one of {TEXT_ERRORS}, not {errors!r}")
        dims = None if shape is None else as_shape(shape, "Text shape", allow_unknown=True)
        if dims is not None and -1 in dims[1:]:
            raise ValueError(f"Text shape {shape!r}: only the first axis may vary (-1)")
        if dims is not None and dims[:1] == (-1,):
            dims = None if len(dims) == 1 else dims
        self.shape = dims
        self.errors = errors
        if default is not None and self.ragged:
            raise ValueError("Text default fills a missing fixed-shape feature; give a shape")
        base = self.decode_as()
        if default is not None:  # str is kept as its UTF-8 bytes, as the records hold it
            base = FixedLen(self.shape, "bytes", default)
        self._base = base

    @property
    def ragged(self) -> bool:
        """True when records hold any number of values (the column is a Ragged)."""
        return self.shape is None or self.shape[:1] == (-1,)

    @property
    def default(self) -> np.ndarray | None:
        """The default as str (what the column holds for a record without the feature)."""
        base = getattr(self, "_base", None)
        if not isinstance(base, FixedLen) or base.default is None:
            return None
        return _to_str(base.default, "replace")

    @property
    def kind(self) -> int:
        return KIND_BYTES

    def decode_as(self) -> Feature:
        base = getattr(self, "_base", None)
        if base is not None:
            return base
        if self.shape is None:
            return VarLen("bytes")
        if self.ragged:
            return VarLen("bytes", self.shape[1:])
        return FixedLen(self.shape, "bytes")

    def finish(
        self, column: Any, *, name: str = "", where: Callable[[int], tuple[str, int]] | None = None
    ) -> Any:
        return as_text(column, errors=self.errors, name=name, where=where)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"type": "Text"}
        if self.shape != ():
            out["shape"] = None if self.shape is None else list(self.shape)
        default = self.default
        if default is not None:
            out["default"] = default_to_json(default)
        if self.errors != "strict":
            out["errors"] = self.errors
        return out

    @classmethod
    def from_json(cls, obj: dict) -> Text:
        default = obj.get("default")
        return cls(
            obj.get("shape", ()),
            default=None if default is None else default_from_json(default),
            errors=obj.get("errors", "strict"),
        )

    def spell(self) -> str:
        args = []
        if self.shape is None:
            args.append("None")
        elif self.shape != ():
            args.append(repr(self.shape))
        if self.default is not None:
            value = self.default
            args.append(f"default={value.item() if value.ndim == 0 else value.tolist()!r}")
        if self.errors != "strict":
            args.append(f"errors={self.errors!r}")
        return f"tn.Text({', '.join(args)})"


# --- bytes -> str, a batch at a time --------------------------------------------------------


def as_text(
    column: Any,
    *,
    errors: str = "strict",
    name: str = "",
    where: Callable[[int], Any] | None = None,
) -> Any:
    """A bytes column (BytesColumn, object ndarray of bytes, or a Ragged of either) as its
    str column: an object ndarray of str of the same shape, or a Ragged of one. A value
    that is not UTF-8 raises SchemaError naming the feature and the record (``where(row)``
    -> (path, record), or the row) unless errors="replace"."""
    if isinstance(column, Ragged):
        splits = np.asarray(column.row_splits, np.int64)

        def row_of(i: int) -> int:
            return int(np.searchsorted(splits, i, side="right")) - 1

        def inner(i: int) -> Any:
            row = row_of(i)
            return where(row) if where is not None else row

        values = as_text(column.values, errors=errors, name=name, where=inner)
        return Ragged.from_row_splits(values, splits, validate=False)
    if isinstance(column, LazyBytes):
        column = column[0 : len(column)]
    if isinstance(column, BytesColumn):
        return strings_of(column, errors=errors, name=name, where=where)
    arr = np.asarray(column)
    if arr.dtype.kind in "UT":  # NumPy str arrays
        return arr.astype(object)
    flat = arr.reshape(-1)
    if arr.dtype.kind == "O" and all(isinstance(v, str) for v in flat):
        return arr  # text already
    per_row = math.prod(arr.shape[1:]) if arr.ndim > 1 else 1

    def row(i: int) -> Any:
        r = i // max(per_row, 1)
        return where(r) if where is not None else r

    items = [bytes(v) if not isinstance(v, str) else v.encode("utf-8") for v in flat.tolist()]
    col = BytesColumn.from_list(items)
    return strings_of(col, errors=errors, name=name, where=row).reshape(arr.shape)


def strings_of(
    col: BytesColumn,
    *,
    errors: str = "strict",
    name: str = "",
    where: Callable[[int], Any] | None = None,
) -> np.ndarray:
    """A BytesColumn's values as an object ndarray of str: its buffer decoded once, cut at
    char offsets (no loop per value but the one that makes the str objects, in C)."""
    n = len(col)
    out = np.empty(n, dtype=object)
    if n == 0:
        return out
    offsets = np.asarray(col.offsets, np.int64)
    data = col.data[int(offsets[0]) : int(offsets[-1])]
    offsets = offsets - offsets[0]
    raw = data.tobytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and len(text) != len(raw):  # not all ASCII: count the chars
        follow = ((data & 0xC0) == 0x80).view(np.uint8)  # UTF-8 continuation bytes
        lengths = np.diff(offsets)
        starts = offsets[:-1][lengths > 0]
        if np.any(follow[starts]):
            text = None  # a value starts inside a char: some values are not UTF-8 alone
        else:  # a value's chars: its bytes less its continuation bytes
            within = np.zeros(n, np.int64)
            within[lengths > 0] = np.add.reduceat(follow, starts, dtype=np.int64)
            offsets = np.zeros(n + 1, np.int64)
            np.cumsum(lengths - within, out=offsets[1:])
    if text is None:
        return _one_by_one(col, errors, name, where)
    bounds = offsets.tolist()
    out[:] = list(map(text.__getitem__, map(slice, bounds[:-1], bounds[1:])))
    return out


def _one_by_one(
    col: BytesColumn, errors: str, name: str, where: Callable[[int], Any] | None
) -> np.ndarray:
    """The slow way, for a batch holding a value that is not UTF-8: find it, or replace."""
    values = col.to_list()
    out = np.empty(len(values), dtype=object)
    if errors == "replace":
        out[:] = [v.decode("utf-8", "replace") for v in values]
        return out
    for i, v in enumerate(values):
        try:
            v.decode("utf-8")
        except UnicodeDecodeError as e:
            place = where(i) if where is not None else i
            if isinstance(place, tuple) and len(place) == 2:
                place = f"record {place[1]} of {place[0]}"
            elif not isinstance(place, str):
                place = f"row {place}"
            raise SchemaError(
                f"feature {name!r} {place} is not UTF-8 text: {e.reason} at byte {e.start} "
                f"of {v[:40]!r}; read it with tn.Text(errors='replace') to get U+FFFD for "
                "the bad bytes, or as tn.Bytes() to keep the bytes"
            ) from None
    raise AssertionError("a batch that did not decode has a value that does not")


def _to_str(arr: np.ndarray, errors: str) -> np.ndarray:
    flat = [v.decode("utf-8", errors) if isinstance(v, bytes) else v for v in arr.reshape(-1)]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(arr.shape)


# --- what looks like text (inference) -------------------------------------------------------


def looks_like_text(col: BytesColumn) -> bool:
    """Whether every value is UTF-8 that a person would call text: no control characters
    but tab and line breaks, nearly all characters printable, something non-empty. Images,
    arrays' raw bytes and other binary fail (a JPEG or PNG is not even UTF-8)."""
    if len(col) == 0 or int(col.offsets[-1] - col.offsets[0]) == 0:
        return False
    try:
        values = strings_of(col)
    except SchemaError:
        return False
    text = "\n".join(values.tolist())
    if _CONTROL.search(text):
        return False
    if text.isascii():
        return True  # no controls left: all printable or space
    shown = sum(c.isprintable() or c.isspace() for c in text)
    return shown >= PRINTABLE_SHARE * len(text)
