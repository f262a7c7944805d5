"""What the `tfrecnp` commands print: a value, a column, a record, a table, in one line each
where it fits; and the same values as JSON. No reading here: the commands hand in what the
library gave them."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Sequence

import numpy as np

from .._util.text import format_count

__all__ = [
    "count_lines",
    "describe_column",
    "disk_size",
    "jsonable",
    "record_lines",
    "summarize",
    "table_lines",
]


def summarize(value: object, width: int = 60) -> str:
    """One readable line for a decoded value: arrays summarised, bytes shortened."""
    if value is None:
        return "-"
    if isinstance(value, bytes):
        shown = repr(value[:24]) + ("..." if len(value) > 24 else "")
        return f"{shown} ({format_count(len(value))} byte{'s' if len(value) != 1 else ''})"
    if isinstance(value, np.ndarray) and value.dtype == object:
        value = value.tolist()
    if isinstance(value, (list, tuple)) or hasattr(value, "to_list"):
        items = value.to_list() if hasattr(value, "to_list") else list(value)
        inner = ", ".join(summarize(v, 20) for v in items[:4])
        return f"[{inner}{', ...' if len(items) > 4 else ''}] ({len(items)} items)"
    array = np.asarray(value)
    if array.ndim == 0:
        return str(array.item())
    text = np.array2string(
        array.ravel(), threshold=8, edgeitems=3, precision=4, separator=", ", max_line_width=10**6
    )
    shape = "x".join(map(str, array.shape))
    return f"{array.dtype}[{shape}] {text}"[: width + 40]


def jsonable(value: object) -> object:
    """A decoded value as JSON holds it: bytes as {"base64": ...}, arrays as lists."""
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode()}
    if hasattr(value, "to_list"):
        return [jsonable(v) for v in value.to_list()]
    if isinstance(value, np.ndarray):
        return value.tolist() if value.dtype != object else [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value


def record_lines(title: str, values: dict[str, object]) -> list[str]:
    """A record as `head` prints it: the title, then one `name  value` line per feature."""
    width = max(map(len, values), default=0)
    return [title] + [
        f"  {name.ljust(width)}  {summarize(value)}" for name, value in values.items()
    ]


def table_lines(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as aligned columns, two spaces apart; the last column (examples) is not padded."""
    last = len(rows[0]) - 1
    widths = [max(len(r[i]) for r in rows) for i in range(last)]
    return [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[last]
        for r in rows
    ]


def describe_column(col: object) -> str:
    """'int64 [N, 3]', 'Ragged int64 (N rows, 1 234 values)', 'bytes (N values, 12 KiB)'."""
    from ..example.columns import BytesColumn, LazyBytes, LazyRagged, Ragged

    if isinstance(col, (Ragged, LazyRagged)):
        values = col.values
        if isinstance(values, (Ragged, LazyRagged)):
            return f"Ragged of Ragged ({format_count(len(col))} rows)"
        if isinstance(values, (BytesColumn, LazyBytes)):
            n, k = format_count(len(col)), format_count(len(values))
            return f"Ragged bytes ({n} rows, {k} values)"
        inner = "".join(f", {d}" for d in values.shape[1:])
        return (
            f"Ragged {values.dtype} [N, None{inner}] ({format_count(len(col))} rows, "
            f"{format_count(values.shape[0])} values)"
        )
    if isinstance(col, (BytesColumn, LazyBytes)):
        return f"bytes ({format_count(len(col))} values)"
    shape = ", ".join(str(d) for d in col.shape)
    return f"{col.dtype} [{shape}]"


def disk_size(path: str) -> int:
    """Bytes of a file, or of every file under a folder (what a saved output takes)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(
        os.path.getsize(os.path.join(folder, name))
        for folder, _, names in os.walk(path)
        for name in names
    )


def count_lines(rows: list[dict], as_json: bool) -> list[str]:
    """`tfrecnp count`'s output for rows of {"path", "records"} (any container): a line a
    file and the total, or one JSON object."""
    total = sum(r["records"] for r in rows)
    if as_json:
        return [json.dumps({"files": rows, "records": total})]
    lines = [f"{format_count(r['records']):>14}  {r['path']}" for r in rows]
    return [*lines, f"{format_count(total):>14}  total"] if len(rows) > 1 else lines
