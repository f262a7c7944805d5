"""Arrow nulls read as TensorFlow reads a missing value.

Why this exists: a tf.train.Example has no null, only a feature that is there or not, while
pandas stores its missing values (NaN in a float column, NaN inside a list of floats, None
for a list) as Arrow nulls when it writes Parquet, and reads them back as NaN. So:

- a null float (a value, or inside a list) is NaN, pandas' meaning;
- a null list of a VarLen is a missing feature: an empty row (what ``tf.io.VarLenFeature``
  gives for one);
- a null value or row of a FixedLen is a missing feature: its default when it has one
  (what ``tf.io.FixedLenFeature(default_value=...)`` gives);
- any other null (a FixedLen without default, an integer or bytes inside a list) is a
  `_NullError` with its row, which `from_arrow` words with the column and file.

Nothing is copied for a column without nulls; a column with some is filled once by
``pyarrow.compute.fill_null``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["fill_row_nulls", "fill_value_nulls", "null_message"]


class _NullError(ValueError):
    """A null with no TFRecord meaning. row: its row in the array being read; inside: it is
    a value inside a row's list (else the row itself is null)."""

    def __init__(self, row: int, *, inside: bool = False, kind: Any = None):
        self.row, self.inside, self.kind = row, inside, kind
        what = f"holds a null inside its list of {kind}" if inside else "is null"
        fix = "fill the nulls (pyarrow.compute.fill_null) or drop those rows"
        super().__init__(f"row {row} {what}, which TFRecord has no value for: {fix}")


def _first_null(arr: Any) -> int:
    valid = np.asarray(arr.is_valid(), dtype=bool)
    return int(np.argmin(valid))


def fill_value_nulls(arr: Any, default: Any, *, inside: bool) -> Any:
    """A column of numbers or bytes without nulls: the default (a FixedLen's, at the row
    level only) where given, else NaN for floats; else _NullError at the first null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not arr.null_count:
        return arr
    if default is not None and not inside:
        value = np.asarray(default).reshape(-1)[0]
        value = value.item() if isinstance(value, np.generic) else value
        return pc.fill_null(arr, pa.scalar(value, arr.type))
    if pa.types.is_floating(arr.type):
        return pc.fill_null(arr, pa.scalar(float("nan"), arr.type))
    raise _NullError(_first_null(arr), inside=inside, kind=arr.type)


def fill_row_nulls(arr: Any, default: Any, *, dense: bool) -> Any:
    """A list column whose null rows are missing features: a FixedLen's default rows (dense:
    the feature is a FixedLen or Raw), or empty rows for a VarLen; _NullError when a dense
    feature has no default."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not arr.null_count:
        return arr
    if default is not None:
        return pc.fill_null(arr, pa.scalar(_as_list(default, arr.type), arr.type))
    if dense or pa.types.is_fixed_size_list(arr.type):
        raise _NullError(_first_null(arr))
    return pc.fill_null(arr, pa.scalar([], arr.type))


def _as_list(default: np.ndarray, kind: Any) -> list:
    """A FixedLen default as the Python value of one row of a list type: nested when the
    type is (fixed-size lists of fixed-size lists), flat for a variable list."""
    flat = np.asarray(default).reshape(-1).tolist()
    inner = kind.value_type
    sizes = []
    while hasattr(inner, "list_size") and inner.list_size >= 0:
        sizes.append(inner.list_size)
        inner = inner.value_type
    for size in reversed(sizes):
        flat = [flat[i : i + size] for i in range(0, len(flat), size)]
    return flat


def null_message(name: str, error: _NullError, feature: Any, where: str) -> str:
    """What SchemaError says of a null: column, row (and file), and what to do."""
    fix = "fill the nulls (pyarrow.compute.fill_null) or drop those rows"
    if error.inside:
        return (
            f"column {name!r} {where} holds a null inside its list of {error.kind}; TFRecord "
            f"has no null value and only a float can stand for one (NaN): {fix}"
        )
    if getattr(feature, "type_name", None) == "FixedLen":
        said = f" ({feature.spell()} has no default)"
        example = (
            f"spec={{{name!r}: tn.FixedLen({feature.shape!r}, {feature.dtype!r}, default=...)}}"
        )
    else:
        said, example = "", "a FixedLen with default= in spec="
    return (
        f"column {name!r} {where} is null, a missing feature{said}; give the feature a "
        f"default ({example}), or {fix}"
    )
