"""Padding variable-length (Ragged) columns into dense arrays for training:
`batches(pad={"tokens": 128})` gives a [n, 128] array plus a "tokens_length" column."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..errors import SchemaError
from ..example.columns import Column, Ragged
from ..example.spec import Raw, Sequence, VarLen

Batch = dict[str, Column]
LENGTH_SUFFIX = "_length"


def feature_names(spec: Any) -> list[str]:
    if isinstance(spec, Sequence):
        return [*map(spec.context_column, spec.context), *spec.sequence]
    return list(spec)


def ragged_features(spec: Any) -> dict[str, bool]:
    """name -> True when the feature decodes to a flat Ragged (paddable), False when to a
    Ragged of Ragged; features that decode to fixed-shape columns are left out."""

    def example(features: Mapping[str, Any]) -> dict[str, bool]:
        return {
            n: not (isinstance(f, VarLen) and f.partitions)  # partitions: rows of rows
            for n, f in features.items()
            if isinstance(f, VarLen) or (isinstance(f, Raw) and f.ragged)
        }

    if isinstance(spec, Sequence):
        context = {spec.context_column(n): ok for n, ok in example(spec.context).items()}
        return context | {n: not isinstance(f, VarLen) for n, f in spec.sequence.items()}
    return example(spec)


def _pad_values(spec: Any) -> dict[str, Any]:
    """name -> the value a VarLen with a default pads with (FixedLenSequenceFeature's
    default_value), for pad= where it gives no value of its own."""
    features = spec.context if isinstance(spec, Sequence) else spec
    return {
        n: f.default for n, f in features.items() if isinstance(f, VarLen) and f.default is not None
    }


def padder(
    spec: Any, pad: Any, *, truncate: bool = False
) -> tuple[Callable[..., Batch] | None, bool]:
    """(apply, per_block): apply(cols, where=None) pads a batch's Ragged columns as `pad`
    asks. A row longer than a fixed length raises SchemaError (naming the record through
    where(row), when given), as TensorFlow's padded_batch does, unless truncate=True.
    per_block is True when every length is fixed, so padding a whole decoded block once
    gives the same rows as padding each batch cut from it."""
    return _padder(ragged_features(spec), feature_names(spec), pad, truncate, _pad_values(spec))


def pad_columns(cols: Batch, pad: Any, *, truncate: bool = False) -> Batch:
    """A batch padded as `pad` asks, the flat Ragged columns read off the batch itself (for
    callers that hold batches without their spec, such as a DataLoader's collate)."""
    flat = {n: not isinstance(c.values, Ragged) for n, c in cols.items() if isinstance(c, Ragged)}
    apply, _ = _padder(flat, list(cols), pad, truncate)
    return apply(cols) if apply else cols


def pad_lengths(spec: Any, pad: Any) -> dict[str, tuple[int | None, Any]]:
    """pad= checked against the spec and spelled out: {name: (length or None, fill value)}
    for each column it pads (empty for None / False)."""
    return _wanted(ragged_features(spec), feature_names(spec), pad, _pad_values(spec))


def _padder(
    flat: dict[str, bool], names: list[str], pad: Any, truncate: bool, values: Any = None
) -> tuple[Callable[..., Batch] | None, bool]:
    if pad is None or pad is False:
        return None, True
    wanted = _wanted(flat, names, pad, values)

    def apply(cols: Batch, where: Callable[[int], tuple[str, int]] | None = None) -> Batch:
        out: dict[str, Any] = {}
        for name, col in cols.items():
            if name in wanted and isinstance(col, Ragged):
                length, value = wanted[name]
                lens = col.lengths
                if length is not None and not truncate and len(lens) and lens.max() > length:
                    raise _too_long(name, length, lens, where)
                out[name] = col.to_padded(length, value)
                out[name + LENGTH_SUFFIX] = lens if length is None else np.minimum(lens, length)
            else:
                out[name] = col
        return out

    return apply, all(length is not None for length, _ in wanted.values())


def _wanted(
    flat: dict[str, bool], names: list[str], pad: Any, values: Any = None
) -> dict[str, tuple[int | None, Any]]:
    if pad is None or pad is False:
        return {}
    values = values or {}
    if pad is True:
        wanted = {name: (None, values.get(name, 0)) for name, ok in flat.items() if ok}
    elif isinstance(pad, Mapping):
        wanted = {}
        for name, how in pad.items():
            if name not in names:
                raise KeyError(
                    f"pad names {name!r}, which is not in the spec; features: "
                    f"{', '.join(map(repr, names))}"
                )
            if name not in flat:
                raise ValueError(
                    f"pad: feature {name!r} decodes to a fixed-shape array already; pad applies "
                    "to variable-length (Ragged) features"
                )
            if not flat[name]:
                raise ValueError(
                    f"pad: feature {name!r} decodes to rows of rows (a Ragged of Ragged); "
                    "pad its inner rows yourself with tn.Ragged.to_padded"
                )
            if isinstance(how, tuple):
                if len(how) != 2:
                    raise ValueError(f"pad[{name!r}] must be a length or (length, value)")
                length, value = how
            else:
                length, value = how, values.get(name, 0)
            if length is not None and (not isinstance(length, (int, np.integer)) or length < 0):
                raise ValueError(f"pad[{name!r}]: the length must be an int >= 0 or None")
            wanted[name] = (length, value)
    else:
        raise TypeError(f"pad must be None, True or a dict of name -> length, not {pad!r}")
    for name in wanted:
        if name + LENGTH_SUFFIX in names:
            raise ValueError(
                f"pad: the lengths column {name + LENGTH_SUFFIX!r} would replace the feature "
                "of that name; select it away or rename one of them"
            )
    return wanted


def _too_long(name: str, length: int, lens: np.ndarray, where: Callable | None) -> SchemaError:
    r = int(np.flatnonzero(lens > length)[0])
    at = " at {} record {}".format(*where(r)) if where is not None else ""
    return SchemaError(
        f"feature {name!r} has a row of {int(lens[r])} values{at}, longer than the "
        f"{length} that pad={{{name!r}: {length}}} gives it (TensorFlow's padded_batch "
        f"refuses this too); pass truncate=True to cut rows to {length}, a larger length, "
        "or None to pad to each batch's longest row"
    )
