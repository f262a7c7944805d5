"""`tfrecnp preview`: a contact sheet of a dataset's images, to look at rather than read.

The sheet is a grid of COLUMNS = ceil(sqrt(n)) cells, each TILE x TILE pixels of image
(scaled to fit, aspect kept, centred on a dark background) above CAPTION pixels of text:
the record's index and, with --label, that feature's value. Cell k sits at
x = (k % COLUMNS) * TILE, y = (k // COLUMNS) * (TILE + CAPTION). Written as PNG under a
temporary name and renamed when complete.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._util.atomic import atomic_output
from .._util.optional import require

TILE = 128
CAPTION = 16
BACKGROUND = (24, 24, 24)
TEXT = (235, 235, 235)


def cell_origin(k: int, columns: int) -> tuple[int, int]:
    """(x, y) of cell k's image area on the sheet."""
    return (k % columns) * TILE, (k // columns) * (TILE + CAPTION)


def sheet_size(n: int) -> tuple[int, int, int]:
    """(width, height, columns) of a sheet of n cells."""
    columns = max(1, math.ceil(math.sqrt(n)))
    rows = max(1, math.ceil(n / columns))
    return columns * TILE, rows * (TILE + CAPTION), columns


def _caption(index: int, label: Any) -> str:
    if label is None:
        return f"#{index}"
    if isinstance(label, bytes):
        label = label.decode("utf-8", "replace")
    elif isinstance(label, np.ndarray):
        label = label.item() if label.size == 1 else label.tolist()
    elif isinstance(label, np.generic):
        label = label.item()
    return f"#{index} {label}"


def contact_sheet(images: list[np.ndarray], indices: list[int], labels: list | None) -> Any:
    """A Pillow image: the thumbnails of uint8 [h, w, 3] arrays with their captions."""
    PIL = require("PIL.Image", "images")
    draw_module = require("PIL.ImageDraw", "images")
    width, height, columns = sheet_size(len(images))
    sheet = PIL.new("RGB", (width, height), BACKGROUND)
    draw = draw_module.Draw(sheet)
    for k, image in enumerate(images):
        x, y = cell_origin(k, columns)
        thumb = PIL.fromarray(np.ascontiguousarray(image))
        h, w = image.shape[:2]
        f = min(TILE / w, TILE / h)
        size = (max(1, round(w * f)), max(1, round(h * f)))
        thumb = thumb.resize(size, PIL.Resampling.BILINEAR)
        sheet.paste(thumb, (x + (TILE - size[0]) // 2, y + (TILE - size[1]) // 2))
        text = _caption(indices[k], None if labels is None else labels[k])
        draw.text((x + 3, y + TILE + 2), text[:24], fill=TEXT)
    return sheet


def write_sheet(sheet: Any, path: str) -> None:
    with atomic_output(path) as tmp:
        sheet.save(tmp, "PNG")
